"""Seizure detection: 10 s windows, positive when they overlap a seizure; 5 patient-level folds.

The probe is a class-balanced logistic regression, C chosen on validation AUPRC, then the
decision threshold tuned on validation F1 (seizure_probe.py). Window metrics (AUROC, AUPRC,
balanced accuracy, MCC, sensitivity at a fixed false-positive rate) and event metrics (SzCORE
event scoring through timescoring: sensitivity, false alarms per 24 h, and the area under the
sensitivity / false-alarm curve, the headline) are in seizure_scoring.py.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import DataError
from .base import FoldJob, Task, Units
from .folds_inputs import fold_part_sizes, probe_runtime_minutes

SEIZURE = "seizure"


def window_labels(starts_s: np.ndarray, length_s: float, seizures) -> np.ndarray:
    """1 where the window [start, start + length) overlaps a seizure [onset, end), else 0."""
    labels = np.zeros(len(starts_s), np.int64)
    for onset, end in seizures:
        labels |= ((starts_s < end) & (starts_s + length_s > onset)).astype(np.int64)
    return labels


def seizure_intervals(reader, rec) -> list[tuple[float, float]]:
    return [(e.onset, e.end) for e in reader.read_events(rec) if e.description == SEIZURE]


class SeizureDetection(Task):
    name = "seizure_detection"
    metrics = ("event_auc", "auroc", "auprc", "balanced_accuracy", "mcc", "sensitivity_at_fpr",
               "event_sensitivity", "fa_per_24h")
    headline_label = "event sens/FA AUC"
    chosen_name = "C"
    pair_figures = ("roc_pr", "event_curve")
    classes = ("background", SEIZURE)

    def units(self, reader, rec, entry: dict, counts: Counter) -> Units:
        """Every whole non-overlapping window of the recording, from its first sample."""
        header = reader.read_header(rec)
        length_s = float(entry.get("epoch_seconds", 10))
        n = int(header.n_samples // round(length_s * header.sfreq))
        starts_s = np.arange(n) * length_s
        labels = window_labels(starts_s, length_s, seizure_intervals(reader, rec))
        counts[("seizure windows", "")] += int(labels.sum())
        return Units(np.round(starts_s * header.sfreq).astype(np.int64), labels, header.sfreq)

    def fit_fold(self, job: FoldJob) -> tuple[dict, dict]:
        raise NotImplementedError

    def probe_memory(self, config: dict, bench: dict, table: pd.DataFrame, fold: int,
                     dim: int) -> tuple[str, dict, int]:
        inputs = fold_part_sizes(self, bench, table, fold) | {
            "dim": dim, "n_classes": 2,
            "n_jobs": config.get("probe", {}).get("n_jobs", 1),
            "n_fits": len(bench.get("probe", {}).get("C_grid", range(6))),
            "on_cluster": bool(config.get("memory_on_cluster")),
        }
        return "probe_logistic", inputs, probe_runtime_minutes(inputs)

    def plot_pair(self, figure: str, prediction_files: list[Path], title: str,
                  out: Path) -> None:
        raise NotImplementedError(figure)


TASK = SeizureDetection()
_ = DataError
