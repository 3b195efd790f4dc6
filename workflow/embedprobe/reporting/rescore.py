"""`embedprobe rescore`: every fold's metrics recomputed from its saved predictions, nothing fitted.

For each (dataset, model) of a benchmark's results tables, each fold record with its `.npz`
gets the task's metrics computed again from the saved arrays (`Task.rescore`); its previous
metrics stay in the record under `rescored.previous_metrics`. Then the dataset's results.tsv is
rebuilt from the fold records, each pair keeping its status, and a before/after table of the
headline is printed. A fold whose arrays are missing, or whose task cannot rescore from them
(the seizure event scores need the recordings), is listed with the command that probes it
again. Records and tables are written whole to a temporary file and renamed: an interrupted
rescore leaves each file either as it was or rescored.

The task is handed in (reporting sits below tasks).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from embedprobe.core.errors import UsageError
from embedprobe.core.paths import output_path
from embedprobe.reporting.aggregate import aggregate_folds, read_results, score_text


@dataclass
class Rescored:
    """What one rescore did: a before/after row per pair, the folds it could not rescore."""

    rows: list[dict] = field(default_factory=list)
    not_rescored: list[dict] = field(default_factory=list)  # fold, reason, fix
    tables: list[Path] = field(default_factory=list)  # results.tsv files rewritten


def write_atomically(path: Path, text: str) -> None:
    """The whole text to a temporary file beside `path`, then renamed over it."""
    partial = path.with_name(f".{path.name}.rescore")
    partial.write_text(text)
    os.replace(partial, path)


def expected_folds(row: dict) -> int:
    """A results row's fold count: the `expected` of its `done/expected`."""
    return int(str(row["folds"]).split("/")[1])


def rescore_benchmark(benchmark: str, task, roots: dict, datasets=(), models=()) -> Rescored:
    """Rescore every fold of the benchmark's results tables (those of `datasets` and `models`
    where given; a name that has no table is a usage error)."""
    tables = _tables(benchmark, roots, datasets)
    found = sorted({str(m) for _, table in tables.values() for m in table["model"]})
    unknown = sorted(set(models) - set(found))
    if unknown:  # refused before any file is touched
        raise UsageError(f"rescore {benchmark}: no results of model {', '.join(unknown)}",
                         fix=f"use a model of the results tables: {', '.join(found)}")
    done = Rescored()
    for dataset, (path, table) in tables.items():
        pairs = [m for m in table["model"].astype(str) if not models or m in models]
        if not pairs:
            continue
        before = {str(r["model"]): r for r in table.to_dict("records")}
        for model in pairs:
            for fold in range(expected_folds(before[model])):
                _rescore_fold(benchmark, dataset, model, fold, task, roots, done)
        rebuilt = _rebuild(table, benchmark, dataset, task, roots)
        write_atomically(path, rebuilt.to_csv(sep="\t", index=False))
        done.tables.append(path)
        after = {str(r["model"]): r for r in rebuilt.to_dict("records")}
        headline = task.metrics[0]
        for model in pairs:
            done.rows.append({
                "dataset": dataset, "model": model,
                "before": score_text(before[model].get(f"{headline}_mean"),
                                     before[model].get(f"{headline}_sd")),
                "after": score_text(after[model].get(f"{headline}_mean"),
                                    after[model].get(f"{headline}_sd")),
                "folds": str(after[model]["folds"])})
    return done


def _tables(benchmark: str, roots: dict, datasets) -> dict[str, tuple[Path, pd.DataFrame]]:
    folder = output_path("results", roots, benchmark=benchmark, dataset="x").parent.parent
    found = {p.parent.name: p for p in sorted(folder.glob("*/results.tsv"))}
    if not found:
        raise UsageError(f"rescore {benchmark}: no results tables under {folder}",
                         fix=f"run the benchmark first: snakemake --cores all {benchmark}")
    unknown = sorted(set(datasets) - set(found))
    if unknown:
        raise UsageError(f"rescore {benchmark}: no results table of dataset "
                         f"{', '.join(unknown)} under {folder}",
                         fix=f"use a dataset with results: {', '.join(found)}")
    return {d: (p, read_results(p)) for d, p in found.items() if not datasets or d in datasets}


def _rescore_fold(benchmark: str, dataset: str, model: str, fold: int, task, roots: dict,
                  done: Rescored) -> None:
    values = {"benchmark": benchmark, "dataset": dataset, "model": model, "fold": fold}
    record_path = output_path("fold_result", roots, **values)
    arrays = output_path("fold_predictions", roots, **values)
    if not record_path.is_file():
        return  # a fold that did not finish: nothing to rescore (the table says so)
    record = json.loads(record_path.read_text())
    if record.get("status") != "ok":
        return
    if not arrays.is_file():
        metrics, why = None, f"its predictions file {arrays} is missing"
    else:
        with np.load(arrays) as saved:
            metrics = task.rescore(record, saved)
        why = task.rescore_needs
    if metrics is None:
        done.not_rescored.append({"fold": f"{dataset} {model} fold {fold}", "reason": why,
                                  "fix": f"probe it again: snakemake --cores all --forcerun "
                                         f"{record_path}"})
        return
    previous = record.get("rescored", {}).get("previous_metrics", record["metrics"])
    record["rescored"] = {"previous_metrics": previous}
    record["metrics"] = {**record["metrics"], **metrics}
    write_atomically(record_path, json.dumps(record, indent=2) + "\n")


def _rebuild(table: pd.DataFrame, benchmark: str, dataset: str, task,
             roots: dict) -> pd.DataFrame:
    """The dataset's results table from its fold records, each pair keeping its status."""
    kept, folds, expected = {}, [], 0
    for row in table.to_dict("records"):
        model = str(row["model"])
        expected = expected_folds(row)
        if row["status"] != "ok":
            kept[(dataset, model)] = {k: ("" if pd.isna(row.get(k)) else row.get(k))
                                      for k in ("status", "reason", "fix")}
        folds += [p for k in range(expected) if (p := output_path(
            "fold_result", roots, benchmark=benchmark, dataset=dataset, model=model,
            fold=k)).is_file()]
    return aggregate_folds(folds, task, expected, kept)


def format_rescored(done: Rescored, benchmark: str, headline: str) -> str:
    """The before/after table of the headline, then the folds left as they were."""
    lines = [f"{benchmark}: {headline} mean +- SD over folds, before and after rescoring",
             f"{'dataset':<22} {'model':<18} {'before':>16} {'after':>16} {'folds':>6}"]
    lines += [f"{r['dataset']:<22} {r['model']:<18} {r['before']:>16} {r['after']:>16} "
              f"{r['folds']:>6}" for r in done.rows]
    if done.not_rescored:
        lines.append(f"{len(done.not_rescored)} fold(s) kept their metrics:")
        lines += [f"  {f['fold']}: {f['reason']}\n    fix: {f['fix']}" for f in done.not_rescored]
    lines += [f"rewrote {path}" for path in done.tables]
    return "\n".join(lines)
