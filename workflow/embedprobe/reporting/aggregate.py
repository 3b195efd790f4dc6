"""Fold results -> one row per (dataset, model): mean +- SD over folds, folds done/expected."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

from embedprobe.reporting.chance import headline_chance, headline_normalised


def aggregate_folds(fold_paths: list[Path], task, expected: int,
                    not_run: dict | None = None, selected: list[int] | None = None
                    ) -> pd.DataFrame:
    """One row per pair. `not_run` maps (dataset, model) to {status, reason, fix} for pairs
    that did not finish (skipped before running, or failed): they get a row too, with their
    status and reason and the folds that did finish. Mean +- SD over folds of each of the
    task's metrics (the first is its headline; the SD with the task's `sd_ddof`: population SD
    but for seizures), its pooled scores, and the headline's `chance` level and `normalised`
    score (reporting/chance.py). `selected`: the folds a run chose (config `folds`): a pair
    that finished them all, but not every fold, is `partial` (folds 1/5), not failed."""
    records = [json.loads(Path(p).read_text()) for p in fold_paths]
    rows = []
    by_pair: dict[tuple[str, str], list[dict]] = {pair: [] for pair in (not_run or {})}
    for record in records:
        by_pair.setdefault((record["dataset"], record["model"]), []).append(record)
    for (dataset, model), folds in sorted(by_pair.items()):
        ok = sorted((f for f in folds if f.get("status") == "ok"), key=lambda f: f["fold"])
        trouble = (not_run or {}).get((dataset, model), {})
        status = trouble.get("status") or ("ok" if len(ok) == expected else "failed")
        row = {"dataset": dataset, "model": model, "folds": f"{len(ok)}/{expected}",
               "status": status, "reason": trouble.get("reason", ""),
               "fix": trouble.get("fix", "")}
        if status == "failed" and not trouble and selected is not None:
            row.update(_selected_folds(ok, selected, expected))
        if status != "ok" and not row["reason"]:
            row["reason"] = f"{expected - len(ok)} of {expected} folds did not finish"
        for metric in task.metrics:
            values = np.array([f["metrics"][metric] for f in ok], dtype=float)
            row[f"{metric}_mean"] = round(float(values.mean()), 4) if len(values) else np.nan
            row[f"{metric}_sd"] = spread(values, task.sd_ddof)
        if ok:
            row.update(task.pooled_scores(ok))
            if "n_classes" in ok[0]:
                row["n_classes"] = max(f["n_classes"] for f in ok)
        row.update(headline_columns(task, row))
        chosen = [f["chosen"] for f in ok]
        row["chosen"] = ",".join(f"{c:g}" for c in chosen)
        row["chosen_mode"] = Counter(chosen).most_common(1)[0][0] if chosen else np.nan
        row["chosen_name"] = task.chosen_name
        rows.append(row)
    return pd.DataFrame(rows)


def score_text(mean, sd=None) -> str:
    """A headline as the tables show it: mean +- SD, the mean alone where there is no SD (one
    value pooled over folds: the hypnogram's), "-" without a mean."""
    if mean is None or not np.isfinite(mean):
        return "-"
    if sd is None or not np.isfinite(sd):
        return f"{mean:.3f}"
    return f"{mean:.3f} +- {sd:.3f}"


def spread(values: np.ndarray, ddof: int) -> float:
    """The SD over folds (ddof 0: population, 1: sample), rounded as results.tsv keeps it; 0.0
    over fewer than two folds."""
    return round(float(values.std(ddof=ddof)), 4) if len(values) > 1 else 0.0


def headline_columns(task, row: dict) -> dict:
    """`chance` and `normalised` of the pair's headline (NaN where there is none)."""
    chance = headline_chance(task, row) if row["folds"].split("/")[0] != "0" else None
    normalised = headline_normalised(task, row[f"{task.metrics[0]}_mean"])
    return {"chance": np.nan if chance is None else chance,
            "normalised": np.nan if normalised is None else normalised}


def _selected_folds(ok: list[dict], selected: list[int], expected: int) -> dict:
    """status, reason and fix of a pair when the run selected some folds: `partial` when every
    selected fold finished, else failed with the selected folds that did not."""
    done = {f["fold"] for f in ok}
    left = [k for k in selected if k not in done]
    if left:
        return {"status": "failed", "reason": f"{len(left)} of the {len(selected)} selected "
                                              f"folds did not finish (fold "
                                              f"{', '.join(map(str, left))})"}
    names = ", ".join(map(str, sorted(done)))
    return {"status": "partial",
            "reason": f"folds {names} of {expected} only: the run selected them (config "
                      f"folds); the other {expected - len(done)} were not run",
            "fix": "run again without `folds` to fit the other folds (the finished ones are "
                   "kept)"}


def format_table(table: pd.DataFrame, task, benchmark: str) -> str:
    headline = task.metrics[0]
    chance = task.draws_chance  # a column where it differs by dataset (1/C)
    lines = [f"{benchmark}: {headline} mean +- SD over folds",
             f"{'dataset':<22} {'model':<18} {headline:>16} {'folds':>6}  "
             + ("chance  " if chance else "") + f"chosen {task.chosen_name}"]
    for row in table.itertuples():
        score = score_text(getattr(row, headline + "_mean"), getattr(row, headline + "_sd"))
        if pair_status(row) not in ("ok", "partial"):  # a partial pair's folds have scores
            score = pair_status(row)
        level = ""
        if chance:
            level = f"{row.chance:>6.3f}  " if np.isfinite(row.chance) else f"{'-':>6}  "
        lines.append(f"{row.dataset:<22} {row.model:<18} {score:>16} {row.folds:>6}  "
                     f"{level}{row.chosen if isinstance(row.chosen, str) else ''}")
        if pair_status(row) != "ok":
            lines.append(f"  {pair_status(row)}: {row.reason}")
    return "\n".join(lines)


def pair_status(row) -> str:
    """ok, partial (the selected folds only), skipped or failed (a table written before the
    status column: ok)."""
    status = getattr(row, "status", "ok")
    return status if isinstance(status, str) and status else "ok"


def read_results(path: str | Path) -> pd.DataFrame:
    """A results.tsv as write_results wrote it (model names and `folds` stay text)."""
    return pd.read_csv(path, sep="\t", dtype={"model": str, "folds": str})


def write_results(table: pd.DataFrame, out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(out, sep="\t", index=False)
