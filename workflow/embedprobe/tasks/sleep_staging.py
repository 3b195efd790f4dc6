"""Sleep staging: 30 s epochs scored W, N1, N2, N3, REM; a logistic probe, C on validation kappa.

Units come from the reader's hypnogram epochs (read_labels: stages, trimmed wake); folds are
subject-level (test group k, validation group k+1); the headline is Cohen's kappa.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

from embedprobe.probing.folds import fold_split
from embedprobe.probing.probe import C_GRID, fit_logistic_probe
from embedprobe.tasks.base import FoldJob, Task, Units
from embedprobe.tasks.folds_inputs import fold_part_sizes, probe_runtime_minutes

STAGE_NAMES = ("W", "N1", "N2", "N3", "REM")


class SleepStaging(Task):
    name = "sleep_staging"
    metrics = ("kappa", "balanced_accuracy", "macro_f1")
    headline_label = "kappa"
    chosen_name = "C"
    pair_figures = ("confusion",)
    classes = STAGE_NAMES

    def units(self, reader, rec, entry: dict, counts: Counter) -> Units:
        starts, labels, sfreq = reader.read_labels(rec, entry.get("trim_wake_minutes", 30),
                                                   counts=counts)
        return Units(np.asarray(starts, np.int64), np.asarray(labels, np.int64), sfreq)

    def fit_fold(self, job: FoldJob) -> tuple[dict, dict]:
        windows = job.store.windows
        X = np.asarray(job.store.embeddings[:], dtype=np.float32)
        masks = fold_split(windows["subject"].map(job.groups).to_numpy(), job.fold,
                           job.bench["folds"])
        y = windows["label"].to_numpy().astype(np.int64)
        result = fit_logistic_probe(
            X[masks["train"]], y[masks["train"]], X[masks["val"]], y[masks["val"]],
            X[masks["test"]], y[masks["test"]],
            C_grid=tuple(job.bench.get("probe", {}).get("C_grid", C_GRID)),
            n_jobs=job.config["probe"]["n_jobs"],
        )
        record = {
            "n_train": int(masks["train"].sum()), "n_val": int(masks["val"].sum()),
            "n_test": int(masks["test"].sum()),
            "test_subjects": sorted(windows["subject"][masks["test"]].unique().tolist()),
            "chosen": result.chosen_C, "chosen_C": result.chosen_C,
            "val_kappa": result.val_kappa,
            "val_kappa_by_C": {str(c): k for c, k in result.val_kappa_by_C.items()},
            "method": result.method,
            "n_classes": int(len(np.unique(y))),
            "metrics": {k: float(v) for k, v in result.test_metrics.items()},
        }
        saved = {"index": np.flatnonzero(masks["test"]), "y_true": y[masks["test"]],
                 "y_pred": result.test_pred, "proba": result.test_proba}
        return record, saved

    def probe_memory(self, config: dict, bench: dict, table: pd.DataFrame, fold: int,
                     dim: int) -> tuple[str, dict, int]:
        inputs = fold_part_sizes(self, bench, table, fold) | {
            "dim": dim,
            "n_classes": len(self.classes),
            "n_jobs": config["probe"]["n_jobs"],
            "n_fits": len(bench.get("probe", {}).get("C_grid", C_GRID)),
            "on_cluster": bool(config.get("memory_on_cluster")),
        }
        return "probe_logistic", inputs, probe_runtime_minutes(inputs)

    def plot_pair(self, figure: str, prediction_files: list[Path], title: str,
                  out: Path) -> None:
        from embedprobe.reporting.summary import plot_confusion

        plot_confusion(prediction_files, self.classes, title, out)


TASK = SleepStaging()
