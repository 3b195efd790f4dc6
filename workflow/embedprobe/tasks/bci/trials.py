"""What the four BCI tasks share: labelled units from a recording's events, leave-one-subject-
out folds, and the staging probe (tasks/classification.py) sized under its own job type.

A paradigm is data, not a subclass: each task module makes one `TrialTask` with its name,
classes and how its events become units:

- `cut="trial"` (motor imagery, ERP, SSVEP): one unit per event of a known class, starting
  `trial_offset_seconds` (the dataset entry's, else the paradigm's) after the event's onset and
  lasting the dataset's `epoch_seconds` (else the task's unit length, core/units.py);
- `cut="tiles"` (cognitive state): each event of a known class, a stretch of one condition
  (EEGMAT: a whole file at rest or counting), tiled into consecutive units from its onset.

Folds leave one subject out (the reference's LOSO): fold k tests the k-th subject in ascending
order and validates C on a subject drawn with seed `fold_seed` (42) among the others
(probing/folds.loso_plan). An unweighted logistic probe picks C on validation kappa; the
headline is balanced accuracy, its SD the population SD over held-out subjects, and chance is
1 / the classes present.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd

from embedprobe.core.errors import DataError, UsageError
from embedprobe.datasets.registry import entry_unit_seconds
from embedprobe.probing.logistic import BCI_MAX_ITER
from embedprobe.tasks.base import Units
from embedprobe.tasks.classification import LogisticClassification

CUTS = ("trial", "tiles")


class TrialTask(LogisticClassification):
    """One BCI paradigm (see the module's docstring)."""

    metrics = ("balanced_accuracy", "kappa", "macro_f1")
    headline_label = "balanced accuracy"
    pair_figures = ("confusion",)
    sd_ddof = 0  # population SD over held-out subjects (every subject is tested once)
    draws_chance = True
    max_iter = BCI_MAX_ITER  # the reference's BCI run lines: --max-iter 1000

    def __init__(self, name: str, classes: tuple[str, ...], cut: str, offset_seconds: float,
                 what: str):
        if cut not in CUTS:
            raise ValueError(f"cut {cut!r}: one of {CUTS}")
        self.name, self.classes, self.cut = name, classes, cut
        self.offset_seconds = offset_seconds
        self.what = what  # the units, as an error names them ("motor-imagery trial")

    def probe_memory(self, config: dict, bench: dict, table, fold: int, dim: int,
                     entry: dict | None = None) -> tuple[str, dict, int]:
        """The staging probe's sizing under the job type whose baseline imports its folds'
        scikit-learn (estimate.JOB_TYPES probe_bci)."""
        _job_type, inputs, runtime = super().probe_memory(config, bench, table, fold, dim, entry)
        return "probe_bci", inputs, runtime

    def units(self, reader, rec, entry: dict, counts: Counter) -> Units:
        header = reader.read_header(rec)
        offset = float(entry.get("trial_offset_seconds", self.offset_seconds))
        length = round(entry_unit_seconds(entry, self.name) * header.sfreq)
        starts, labels = [], []
        for event in reader.read_events(rec):
            if event.description not in self.classes:
                counts[("ignored", event.description)] += 1
                continue
            first = int(round((event.onset + offset) * header.sfreq))
            if self.cut == "trial":
                cut = [first]
            else:  # consecutive units within the event, from its onset
                stop = min(int(round(event.end * header.sfreq)), header.n_samples)
                cut = list(range(first, stop - length + 1, length))
            for start in cut:
                if start < 0 or start + length > header.n_samples:
                    counts[("outside the recording", "")] += 1
                    continue
                starts.append(start)
                labels.append(self.classes.index(event.description))
        if not starts:
            raise DataError(f"{rec.signal_path}: no {self.what} (events named "
                            f"{', '.join(self.classes)}) fits in the recording",
                            fix="check the file's annotations, or leave the recording out")
        return Units(np.array(starts, np.int64), np.array(labels, np.int64), header.sfreq)

    def fold_rule(self, table: pd.DataFrame, bench: dict, entry: dict):
        """Leave one subject out (the reference's LOSO): fold k tests the k-th subject in
        ascending order, the validation subject is drawn with seed `fold_seed` (42) among the
        others; `folds` must equal the number of subjects (`folds: loso` sets it per
        dataset)."""
        from embedprobe.probing.folds import distinct, loso_plan, refuse_split

        refuse_split(entry, self.name)
        unique = distinct(table["subject"])
        if bench["folds"] != len(unique):
            raise UsageError(
                f"leave-one-subject-out over {len(unique)} subjects needs folds: "
                f"{len(unique)}, the benchmark has folds: {bench['folds']}",
                fix=f"set `folds: loso` (or `folds: {len(unique)}`) on the benchmark in "
                    "config/benchmarks.yaml; with loso, `subjects:` on the dataset's entry "
                    "(config/datasets.yaml) must count its subjects")
        return loso_plan(unique, bench["fold_seed"])

    def summary_notes(self, tables: dict[str, pd.DataFrame]) -> list[str]:
        return ["", "Chance level (balanced accuracy): 1 / number of classes in the dataset; "
                "SD is the population SD over held-out subjects."]
