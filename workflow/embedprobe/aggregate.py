"""Fold results -> one row per (dataset, model): mean +- SD over folds, folds done/expected."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

from .metrics import regression_scores

# Mean +- SD over folds; the first metric of each task is its headline.
METRICS = {
    "sleep_staging": ["kappa", "balanced_accuracy", "macro_f1"],
    "brain_age": ["mae"],
}
# Computed once over every fold's test subjects: a fold holds too few subjects for r or R2.
POOLED = {"sleep_staging": [], "brain_age": ["pearson_r", "r2"]}
CHOSEN = {"sleep_staging": "C", "brain_age": "alpha"}


def aggregate_folds(fold_paths: list[Path], task: str, expected: int,
                    not_run: dict | None = None) -> pd.DataFrame:
    """One row per pair. `not_run` maps (dataset, model) to {status, reason, fix} for pairs
    that did not finish (skipped before running, or failed): they get a row too, with their
    status and reason and the folds that did finish."""
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
        if status != "ok" and not row["reason"]:
            row["reason"] = f"{expected - len(ok)} of {expected} folds did not finish"
        for metric in METRICS[task]:
            values = np.array([f["metrics"][metric] for f in ok], dtype=float)
            row[f"{metric}_mean"] = round(float(values.mean()), 4) if len(values) else np.nan
            row[f"{metric}_sd"] = round(float(values.std(ddof=1)), 4) if len(values) > 1 else 0.0
        if POOLED[task] and ok:
            pairs = [(p["age"], p["predicted"]) for f in ok for p in f["predictions"]]
            truth, predicted = np.array(pairs).T
            pooled = regression_scores(truth, predicted)
            for metric in POOLED[task]:
                row[f"{metric}_pooled"] = round(float(pooled[metric]), 4)
            row["baseline_mae_mean"] = round(float(np.mean([f["baseline_mae"] for f in ok])), 4)
        chosen = [f["chosen"] for f in ok]
        row["chosen"] = ",".join(f"{c:g}" for c in chosen)
        row["chosen_mode"] = Counter(chosen).most_common(1)[0][0] if chosen else np.nan
        row["chosen_name"] = CHOSEN[task]
        rows.append(row)
    return pd.DataFrame(rows)


def format_table(table: pd.DataFrame, task: str, benchmark: str) -> str:
    headline = METRICS[task][0]
    lines = [f"{benchmark}: {headline} mean +- SD over folds",
             f"{'dataset':<22} {'model':<18} {headline:>16} {'folds':>6}  chosen {CHOSEN[task]}"]
    for row in table.itertuples():
        score = f"{getattr(row, headline + '_mean'):.3f} +- {getattr(row, headline + '_sd'):.3f}"
        if pair_status(row) != "ok":
            score = pair_status(row)
        lines.append(f"{row.dataset:<22} {row.model:<18} {score:>16} {row.folds:>6}  "
                     f"{row.chosen if isinstance(row.chosen, str) else ''}")
        if pair_status(row) != "ok":
            lines.append(f"  {pair_status(row)}: {row.reason}")
    return "\n".join(lines)


def pair_status(row) -> str:
    """ok, skipped or failed (a table written before the status column: ok)."""
    status = getattr(row, "status", "ok")
    return status if isinstance(status, str) and status else "ok"


def write_results(table: pd.DataFrame, out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(out, sep="\t", index=False)
