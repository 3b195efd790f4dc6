"""Window and trial classification: what sleep staging and motor imagery share.

One fold's fit (probing/logistic.py: standardise, multinomial logistic, C on validation kappa)
over the units of the dataset's index, its preflight inputs, and the confusion-matrix figure.
The row counts of a fold's parts and the runtime rule serve every window-level probe (seizure
detection's too).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from embedprobe.probing.folds import fold_split
from embedprobe.probing.logistic import C_GRID, MAX_ITER, fit_logistic_probe
from embedprobe.probing.metrics import classification_scores
from embedprobe.probing.selection import by_value_json
from embedprobe.probing.split import Split
from embedprobe.tasks.base import FoldJob, Task


def fit_logistic_fold(job: FoldJob, task: Task, split: Split) -> tuple[dict, dict]:
    """(the fold's JSON record, arrays saved in its .npz) of a logistic probe over the units."""
    max_iter = int(job.bench.get("probe", {}).get("max_iter", task.max_iter))
    result = fit_logistic_probe(
        split, C_grid=tuple(job.bench.get("probe", {}).get("C_grid", C_GRID)),
        n_jobs=job.n_jobs, progress=job.progress, max_iter=max_iter,
        # the split's training rows are this job's own (store.read_parts): standardised in
        # place, no second copy (memory/formulas._FOLD_ROWS)
        overwrite=True,
    )
    record = {
        "n_train": len(split.train), "n_val": len(split.val), "n_test": len(split.test),
        "test_subjects": sorted(split.test_table()["subject"].unique().tolist()),
        "chosen": result.chosen, "selection": result.selection.record(),
        "val_kappa": result.val_kappa,
        "method": result.method,
        # whether a cap below the reference's (10,000) would have stopped a fit (methods.md)
        "max_iter": max_iter,
        "iterations_by_C": by_value_json(result.iterations_by_C),
        "converged_by_C": by_value_json(result.converged_by_C),
        "n_classes": int(len(np.unique(split.table["label"].to_numpy()))),
        "metrics": {k: float(v) for k, v in result.test_metrics.items()},
    }
    saved = {"index": split.test.rows, "y_true": split.test.y,
             "y_pred": result.test_pred, "proba": result.test_proba}
    return record, saved


def logistic_probe_memory(task: Task, config: dict, bench: dict, table: pd.DataFrame, fold: int,
                          dim: int, entry: dict | None = None) -> tuple[str, dict, int]:
    """(the preflight job type, its inputs, runtime minutes) of `fit_logistic_fold`."""
    inputs = fold_part_sizes(task, bench, table, fold, entry) | {
        "dim": dim,
        "n_classes": len(task.classes),
        "n_jobs": config["probe"]["n_jobs"],
        "n_fits": len(bench.get("probe", {}).get("C_grid", C_GRID)),
    }
    return "probe_logistic", inputs, probe_runtime_minutes(inputs)


def plot_confusion_pair(classes, prediction_files: list[Path], title: str, out: Path) -> None:
    """The pair's confusion matrix over every test fold."""
    from embedprobe.reporting.figures import plot_confusion

    plot_confusion(prediction_files, classes, title, out)


def fold_part_sizes(task: Task, bench: dict, table: pd.DataFrame, fold: int,
                    entry: dict | None = None) -> dict[str, int]:
    """Row counts of one fold's parts, as the preflight formulas of window-level probes take
    them; `entry`: the dataset's (its fold_manifest, fold_strata or split)."""
    masks = fold_split(task.fold_groups(table, bench, entry), table, fold)
    return {f"n_{part}": int(mask.sum()) for part, mask in masks.items()}


def probe_runtime_minutes(inputs: dict) -> int:
    """Generous: fits scale with rows x features x grid values (measured ~2 min per 1e9)."""
    work = inputs["n_train"] * inputs["dim"] * inputs["n_fits"]
    return int(np.ceil(work / 1e9 * 2 * 3)) + 10


class LogisticClassification(Task):
    """A task whose units each carry a class: one logistic probe per fold, sized as such,
    drawn as a confusion matrix. Sleep staging and motor imagery are such tasks; neither
    derives from the other."""

    max_iter = MAX_ITER  # lbfgs's cap unless the benchmark's probe.max_iter sets one

    def fit_fold(self, job: FoldJob, split: Split) -> tuple[dict, dict]:
        return fit_logistic_fold(job, self, split)

    rescore_needs = ""

    def rescore(self, record: dict, saved) -> dict[str, float]:
        return {k: float(v) for k, v in
                classification_scores(saved["y_true"], saved["y_pred"]).items()}

    def probe_memory(self, config: dict, bench: dict, table: pd.DataFrame, fold: int,
                     dim: int, entry: dict | None = None) -> tuple[str, dict, int]:
        return logistic_probe_memory(self, config, bench, table, fold, dim, entry)

    def plot_pair(self, figure: str, prediction_files: list[Path], title: str,
                  out: Path) -> None:
        plot_confusion_pair(self.classes, prediction_files, title, out)
