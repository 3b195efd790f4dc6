"""Sleep staging: 30 s epochs scored W, N1, N2, N3, REM; a logistic probe, C on validation kappa.

Units come from the reader's hypnogram epochs (read_labels: stages, trimmed wake); folds are
subject-level (test group k, validation group k+1); the headline is Cohen's kappa.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

from embedprobe.tasks.base import FoldJob, Task, Units
from embedprobe.tasks.classification import (
    fit_logistic_fold,
    logistic_probe_memory,
    plot_confusion_pair,
)

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
        return fit_logistic_fold(job)

    def probe_memory(self, config: dict, bench: dict, table: pd.DataFrame, fold: int,
                     dim: int) -> tuple[str, dict, int]:
        return logistic_probe_memory(self, config, bench, table, fold, dim)

    def plot_pair(self, figure: str, prediction_files: list[Path], title: str,
                  out: Path) -> None:
        plot_confusion_pair(self.classes, prediction_files, title, out)


TASK = SleepStaging()
