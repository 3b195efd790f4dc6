"""Sleep staging: 30 s epochs scored W, N1, N2, N3, REM; a logistic probe, C on validation kappa.

Units come from the reader's hypnogram epochs (read_labels: stages, trimmed wake); folds are
subject-level (test group k, validation group k+1); the headline is Cohen's kappa.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from embedprobe.tasks.base import Units
from embedprobe.tasks.classification import LogisticClassification

STAGE_NAMES = ("W", "N1", "N2", "N3", "REM")


class SleepStaging(LogisticClassification):
    name = "sleep_staging"
    metrics = ("kappa", "balanced_accuracy", "macro_f1")
    headline_label = "kappa"
    chosen_name = "C"
    pair_figures = ("confusion",)
    classes = STAGE_NAMES
    sd_ddof = 0  # population SD over folds, as the reference's sleep_stage

    def units(self, reader, rec, entry: dict, counts: Counter) -> Units:
        starts, labels, sfreq = reader.read_labels(rec, entry.get("trim_wake_minutes", 30),
                                                   counts=counts)
        return Units(np.asarray(starts, np.int64), np.asarray(labels, np.int64), sfreq)


TASK = SleepStaging()
