"""Motor imagery: one embedding per trial cut after its cue; leave-one-subject-out folds.

A trial starts `trial_offset_seconds` after its cue (default 1 s) and lasts the dataset's
`epoch_seconds` (default 3 s): the 1-4 s window of the reference's default BCI variant (its
confound control: after the visual evoked response to the cue, within the imagery period of
both datasets: PhysioNet MMI cues last ~4.1 s, BNCI 2014-001's imagery 4 s). Fold k tests
subject k (ascending ids) and validates C on a subject drawn with seed 42 among the others
(probing/folds.loso_plan); an unweighted logistic probe picks C on validation kappa; the
headline is balanced accuracy, with its SD over held-out subjects taken as the population SD.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd

from embedprobe.core.errors import DataError, UsageError
from embedprobe.datasets.registry import entry_unit_seconds
from embedprobe.tasks.base import Units
from embedprobe.tasks.classification import LogisticClassification

# Label index = position; the readers name classes as MOABB does.
CLASSES = ("left_hand", "right_hand", "feet", "tongue", "hands")


class MotorImagery(LogisticClassification):
    """Sleep staging's probe (tasks/classification.py: standardise, logistic, C on validation
    kappa) over trials."""

    name = "motor_imagery"
    metrics = ("balanced_accuracy", "kappa", "macro_f1")
    headline_label = "balanced accuracy"
    pair_figures = ("confusion",)
    classes = CLASSES
    sd_ddof = 0  # population SD over held-out subjects (every subject is tested once)
    draws_chance = True
    probe_step = "bci"  # its folds import scikit-learn's train_test_split (memory/baselines.py)

    def probe_memory(self, config: dict, bench: dict, table, fold: int, dim: int,
                     entry: dict | None = None) -> tuple[str, dict, int]:
        """The staging probe's sizing under the job type whose baseline imports its folds'
        scikit-learn (estimate.JOB_TYPES probe_bci)."""
        _job_type, inputs, runtime = super().probe_memory(config, bench, table, fold, dim, entry)
        return "probe_bci", inputs, runtime

    def units(self, reader, rec, entry: dict, counts: Counter) -> Units:
        header = reader.read_header(rec)
        offset = float(entry.get("trial_offset_seconds", 1.0))
        length = entry_unit_seconds(entry, self.name)
        starts, labels = [], []
        for event in reader.read_events(rec):
            if event.description not in CLASSES:
                counts[("ignored", event.description)] += 1
                continue
            start = int(round((event.onset + offset) * header.sfreq))
            if start < 0 or start + round(length * header.sfreq) > header.n_samples:
                counts[("outside the recording", "")] += 1
                continue
            starts.append(start)
            labels.append(CLASSES.index(event.description))
        if not starts:
            raise DataError(f"{rec.signal_path}: no motor-imagery trial (cues named "
                            f"{', '.join(CLASSES)}) fits in the recording",
                            fix="check the file's annotations, or leave the run out")
        return Units(np.array(starts, np.int64), np.array(labels, np.int64), header.sfreq)

    def fold_rule(self, table: pd.DataFrame, bench: dict, entry: dict):
        """Leave one subject out (the reference's LOSO): fold k tests the k-th subject in
        ascending order, the validation subject is drawn with seed `fold_seed` (42) among the
        others; `folds` must equal the number of subjects."""
        from embedprobe.probing.folds import distinct, loso_plan, refuse_split

        refuse_split(entry, self.name)
        unique = distinct(table["subject"])
        if bench["folds"] != len(unique):
            raise UsageError(
                f"leave-one-subject-out over {len(unique)} subjects needs folds: "
                f"{len(unique)}, the benchmark has folds: {bench['folds']}",
                fix=f"set `folds: {len(unique)}` on the benchmark in config/benchmarks.yaml")
        return loso_plan(unique, bench["fold_seed"])

    def summary_notes(self, tables: dict[str, pd.DataFrame]) -> list[str]:
        return ["", "Chance level (balanced accuracy): 1 / number of classes in the dataset; "
                "SD is the population SD over held-out subjects."]


TASK = MotorImagery()
