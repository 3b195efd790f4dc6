"""A benchmark's results as rows: what `embedprobe results` prints and the API returns.

One row per (dataset, model) from each dataset's results.tsv (the aggregate's table), or with
`per_fold` one row per fold from the fold JSONs. Each row carries the task's headline (mean +-
SD), folds done/expected, the status, the headline's chance level where one is known and its
normalised score where the task sets a dummy (reporting/chance.py), and with a reference table
the published numbers beside ours. The JSON and CSV rows always have `chance` and `normalised`;
the table and markdown show `chance` where it differs by dataset (balanced accuracy: 1/C) and
`normalised` where the task has a dummy, as the reference's `results` does.

The task is handed in (reporting sits below tasks): its `metrics` (the first is the headline),
`lower_is_better`, `draws_chance` and `dummy` are all this module asks of it.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from embedprobe.core.errors import UsageError, read_failure_record
from embedprobe.core.paths import output_path
from embedprobe.reporting.aggregate import read_results, score_text
from embedprobe.reporting.chance import headline_chance, headline_normalised

FORMATS = ("table", "csv", "md", "json")
REFERENCE_COLUMNS = ("dataset", "model", "metric", "value")


def read_reference(path: Path, metrics) -> pd.DataFrame:
    """A table of published numbers: columns dataset, model, metric, value (TSV, or CSV when the
    file ends in .csv); each metric one the task reports."""
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"--reference {path}: no such file",
                         fix="name a TSV or CSV file with columns dataset, model, metric, value")
    sep = "," if path.suffix.lower() == ".csv" else "\t"
    try:
        table = pd.read_csv(path, sep=sep, dtype={"dataset": str, "model": str, "metric": str})
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise UsageError(f"--reference {path}: not a readable table ({exc})",
                         fix="write one row per number: dataset, model, metric, value") from None
    missing = [c for c in REFERENCE_COLUMNS if c not in table.columns]
    if missing:
        header = ("," if sep == "," else "<TAB>").join(REFERENCE_COLUMNS)
        raise UsageError(f"--reference {path}: no column {', '.join(missing)} (it has "
                         f"{', '.join(map(str, table.columns))})",
                         fix=f"give it the header line {header}")
    unknown = sorted(set(table["metric"]) - set(metrics))
    if unknown:
        raise UsageError(f"--reference {path}: metric {', '.join(unknown)} is not one this "
                         "benchmark reports", fix=f"use one of: {', '.join(metrics)}")
    values = pd.to_numeric(table["value"], errors="coerce")
    if values.isna().any():
        bad = table.loc[values.isna(), "value"].iloc[0]
        raise UsageError(f"--reference {path}: value {bad!r} is not a number",
                         fix="write each value as a number (0.71, not 71% or 0.71 +- 0.02)")
    return table.assign(value=values)


def result_rows(benchmark: str, bench: dict, task, roots: dict,
                reference: pd.DataFrame | None = None, configfile=(), assignments=()
                ) -> tuple[list[dict], list[str]]:
    """(one row per (dataset, model) of the benchmark's results.tsv tables, notes for stderr).

    No table at all is a usage error whose fix is the command that writes them, with the
    run's --configfile files and --config assignments."""
    tables, notes = _tables(benchmark, bench, roots, configfile, assignments)
    headline = task.metrics[0]
    rows = []
    for dataset, table in tables.items():
        for record in table.to_dict("records"):
            rows.append(_pair_row(benchmark, dataset, record, task, headline))
    return _with_reference(rows, reference, notes), notes


def fold_rows(benchmark: str, bench: dict, task, roots: dict,
              reference: pd.DataFrame | None = None, configfile=(), assignments=()
              ) -> tuple[list[dict], list[str]]:
    """(one row per fold of every pair in the benchmark's results.tsv tables, notes): the
    fold's status (ok; failed with its failure record's message; missing) and metrics."""
    tables, notes = _tables(benchmark, bench, roots, configfile, assignments)
    headline = task.metrics[0]
    rows = []
    for dataset, table in tables.items():
        # the table's `done/expected` folds: `folds: loso` has a count per dataset
        for model, folds in zip(table["model"].astype(str), table["folds"].astype(str),
                                strict=True):
            expected = int(folds.split("/")[1])
            for fold in range(expected):
                rows.append(_fold_row(benchmark, dataset, model, fold, expected, task,
                                      headline, roots))
    return _with_reference(rows, reference, notes), notes


def format_rows(rows: list[dict], task, fmt: str, per_fold: bool = False) -> str:
    """The rows as a table (aligned text), markdown, CSV or JSON (a list of objects)."""
    if fmt == "json":
        return json.dumps([{k: _plain(v) for k, v in row.items()} for row in rows], indent=2)
    if fmt == "csv":
        return pd.DataFrame(rows).to_csv(index=False)
    headline = task.metrics[0]
    columns, cells = _display(rows, task, per_fold)
    if fmt == "md":
        lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
        lines += ["| " + " | ".join(row) + " |" for row in cells]
    else:
        widths = [max(len(c), *(len(r[i]) for r in cells)) for i, c in enumerate(columns)]
        lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip()]
        lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip()
                  for row in cells]
    reasons = [f"{r['dataset']}/{r['model']}" + (f" fold {r['fold']}" if per_fold else "")
               + f" {r['status']}: {r['reason']}" for r in rows
               if r["status"] != "ok" and r.get("reason")]
    direction = "lower" if task.lower_is_better else "higher"
    title = (f"{rows[0]['benchmark']}: {headline} ({direction} is better)"
             + (", per fold" if per_fold else ", mean +- SD over folds") if rows else "")
    if fmt == "md":  # paragraphs and a list around the table
        return "\n".join([title, "", *lines, *([""] if reasons else []),
                          *(f"- {r}" for r in reasons)])
    return "\n".join([title, *lines, *(f"  {r}" for r in reasons)])


# ------------------------------------------------------------------------------ the rows


def _tables(benchmark: str, bench: dict, roots: dict, configfile=(), assignments=()
            ) -> tuple[dict[str, pd.DataFrame], list[str]]:
    tables, absent = {}, []
    for dataset in bench["datasets"]:
        path = output_path("results", roots, benchmark=benchmark, dataset=dataset)
        if path.is_file():
            tables[dataset] = read_results(path)
        else:
            absent.append(str(path))
    if not tables:
        raise UsageError(f"no results for benchmark '{benchmark}' yet: "
                         f"{', '.join(absent)} not written",
                         fix=snakemake_command(benchmark, configfile, assignments))
    notes = [f"note: no results yet for {Path(p).parent.name} ({p}); the other datasets "
             "are shown" for p in absent]
    return tables, notes


def snakemake_command(target: str, configfile=(), assignments=()) -> str:
    """The snakemake command that runs `target` with the --configfile files and --config
    assignments of the embedprobe command being run (a `fix:` to copy; a dotted key as the
    mapping snakemake takes)."""
    import shlex

    from embedprobe.core.overrides import for_snakemake

    settings = [for_snakemake(a) for a in assignments]
    return shlex.join(["snakemake", *(a for f in configfile for a in ("--configfile", f)),
                       target, *(["--config", *settings] if settings else [])])


def _pair_row(benchmark: str, dataset: str, record: dict, task, headline: str) -> dict:
    done, expected = (int(x) for x in str(record["folds"]).split("/"))
    status = record.get("status") if isinstance(record.get("status"), str) else "ok"
    mean, sd = _number(record.get(f"{headline}_mean")), _number(record.get(f"{headline}_sd"))
    row = {"benchmark": benchmark, "dataset": dataset, "model": str(record["model"]),
           "metric": headline, "mean": mean, "sd": sd if done else None,
           "folds": f"{done}/{expected}", "folds_done": done, "folds_expected": expected,
           "status": status or "ok", "chance": _pair_chance(task, record) if done else None,
           "normalised": headline_normalised(task, mean),
           "reason": _text(record.get("reason")), "fix": _text(record.get("fix"))}
    for metric in task.metrics:
        row[f"{metric}_mean"] = _number(record.get(f"{metric}_mean"))
        row[f"{metric}_sd"] = _number(record.get(f"{metric}_sd")) if done else None
    for metric in task.pooled:
        row[f"{metric}_pooled"] = _number(record.get(f"{metric}_pooled"))
    chosen = record.get("chosen")  # one fold's (a run of selected folds) reads as a number
    row["chosen"] = chosen if isinstance(chosen, str) else (
        f"{chosen:g}" if _number(chosen) is not None else "")
    return row


def _pair_chance(task, record: dict) -> float | None:
    """The chance column of results.tsv; computed for a table written before it had one."""
    if "chance" in record:
        return _number(record["chance"])
    return headline_chance(task, record)


def _fold_row(benchmark: str, dataset: str, model: str, fold: int, expected: int, task,
              headline: str, roots: dict) -> dict:
    path = output_path("fold_result", roots, benchmark=benchmark, dataset=dataset, model=model,
                       fold=fold)
    record, status, reason = {}, "missing", ""
    if path.is_file():
        record = json.loads(path.read_text())
        status = record.get("status", "ok")
    failure = read_failure_record(path) if status != "ok" else None
    if failure is not None:
        status = "failed"
        first_line = (failure.get("message") or "").partition("\n")[0]
        reason = f"{failure.get('category')}: {first_line}"
    metrics = record.get("metrics", {})
    flat = {**record, **metrics}
    score = _number(metrics.get(headline))
    row = {"benchmark": benchmark, "dataset": dataset, "model": model, "fold": fold,
           "folds_expected": expected, "status": status, "metric": headline, "value": score,
           "chance": headline_chance(task, flat) if record else None,
           "normalised": headline_normalised(task, score),
           "reason": reason}
    for metric in task.metrics:
        row[metric] = _number(metrics.get(metric))
    row["chosen"] = _number(record.get("chosen"))
    row["n_test"] = int(record["n_test"]) if "n_test" in record else None
    row["seconds"] = _number(record.get("seconds"))
    return row


def _with_reference(rows: list[dict], reference: pd.DataFrame | None,
                    notes: list[str]) -> list[dict]:
    """Each row with `reference_<metric>` for every metric the reference table gives."""
    if reference is None:
        return rows
    published = {(str(r.dataset), str(r.model), str(r.metric)): float(r.value)
                 for r in reference.itertuples()}
    metrics = list(dict.fromkeys(reference["metric"].astype(str)))
    ours = {(r["dataset"], r["model"]) for r in rows}
    unmatched = sorted({(d, m) for d, m, _ in published} - ours)
    if unmatched:
        notes.append("note: the reference's " + ", ".join(f"{d}/{m}" for d, m in unmatched)
                     + " match no row of ours")
    for row in rows:
        for metric in metrics:
            row[f"reference_{metric}"] = published.get((row["dataset"], row["model"], metric))
    return rows


# ------------------------------------------------------------------------- what is shown


def _display(rows: list[dict], task, per_fold: bool) -> tuple[list[str], list[list[str]]]:
    """The shown columns and their cells: `chance` only where it differs by dataset, and
    `normalised` only where the task has a dummy (the JSON and CSV rows keep both)."""
    headline = task.metrics[0]
    published = f"reference_{headline}"
    extra = [c for c, shown in (("chance", task.draws_chance),
                                ("normalised", task.dummy is not None)) if shown]
    if per_fold:
        columns = ["dataset", "model", "fold", headline, *extra, "status"]
    else:
        columns = ["dataset", "model", f"{headline} (mean +- SD)", "folds", "status", *extra]
    columns += ["published"] if any(published in r for r in rows) else []
    cells = []
    for r in rows:
        values = [_fixed(r[c]) for c in extra]
        if per_fold:
            line = [r["dataset"], r["model"], str(r["fold"]), _fixed(r["value"]), *values,
                    r["status"]]
        else:
            score = score_text(r["mean"], r["sd"])
            line = [r["dataset"], r["model"], score, r["folds"], r["status"], *values]
        cells.append(line + ([_fixed(r.get(published))] if "published" in columns else []))
    return columns, cells


def _number(value) -> float | None:
    """A finite float, or None (NaN, empty, absent, not a number)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _text(value) -> str:
    return value if isinstance(value, str) else ""


def _fixed(value) -> str:
    return "-" if value is None else f"{value:.3f}"


def _plain(value):
    """JSON-ready: numpy scalars as Python numbers, NaN as null."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
