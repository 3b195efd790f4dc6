"""Recording- and subject-level classification: one label per recording or per subject.

Two families of the reference suite label a whole recording or subject, not a window: sleep
diagnosis (a subject's nights: healthy or obstructive sleep apnea on DOD, the pathology group
on ISRUC) and abnormal EEG (a clinical recording normal or abnormal on TUAB, a Bonn clip ictal
or not). Every window is embedded and cached as for the window tasks (sleep diagnosis reuses
the staging embeddings of the same dataset); the probe job aggregates the windows per unit
(probe.unit_features), fits one logistic probe per fold (probe.fit_units) and scores the test
units: AUROC (binary labels; n/a for a multi-class label), balanced accuracy, macro F1.

Abnormal EEG probes windows by default (`probe.units: windows`), as the reference does: its
run lines probe TUAB and Bonn with the seizure-detection evaluator (kkontras/NeuroAtlas,
extensions/tasks/_seizure_evaluation.py full_binary_probe), so each 10 s window, labelled with
its recording's class, is a row of the seizure probe (tasks/seizure/probe.py: balanced class
weights, C on validation AUPRC, max_iter 500, threshold on validation F1) and the headline is
the test windows' AUROC. `probe.units: recordings` scores one mean embedding per recording
instead (the clinical question, one decision per recording; off by default).

The unit's class comes from the dataset's reader: `CLASSES` and `recording_label(rec)`.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

from embedprobe.core.errors import DataError, UsageError
from embedprobe.probing.split import PARTS, Split
from embedprobe.tasks.base import FoldJob, Task, Units, job_folds, window_split


class RecordingLevel(Task):
    metrics = ("auroc", "balanced_accuracy", "macro_f1")
    headline_label = "AUROC"
    pooled = ("auroc",)  # over every fold's test units at once
    chosen_name = "C"
    pair_figures = ("roc",)

    def __init__(self, name: str, level: str, defines_units: bool, sd_ddof: int,
                 probe_defaults: dict, dummy: float | None = None,
                 units_options: tuple[str, ...] = ("recordings",)):
        self.name, self.level, self.defines_units = name, level, defines_units
        self.sd_ddof, self.probe_defaults, self.dummy = sd_ddof, probe_defaults, dummy
        self.units_options = units_options  # what `probe.units` may be; the first: default
        # the fold rule reads the corpus's split from the session (split: official)
        self.stored_columns = ("session",) if defines_units else ()

    # --- the window index (abnormal EEG's own units) ----------------------------------
    def units(self, reader, rec, entry: dict, counts: Counter) -> Units:
        """Every whole non-overlapping window of the recording from its first sample, each
        labelled with the recording's class (its position in the reader's CLASSES)."""
        from embedprobe.datasets.registry import entry_unit_seconds

        header = reader.read_header(rec)
        window = round(entry_unit_seconds(entry, self.name) * header.sfreq)
        n = int(header.n_samples // window)
        label = class_index(reader, rec)
        counts[(f"{reader.CLASSES[label]} recordings", "")] += 1
        return Units(np.arange(n, dtype=np.int64) * window, np.full(n, label, np.int64),
                     header.sfreq)

    def check_recordings(self, reader, recordings: list) -> None:
        """Every recording has a class the reader knows (a subject missing from ISRUC's
        details table, a TUAB file in no class folder), before anything is embedded."""
        for rec in recordings:
            class_index(reader, rec)

    # --- folds -------------------------------------------------------------------------
    def fold_rule(self, table: pd.DataFrame, bench: dict, entry: dict):
        """Sleep diagnosis: the reference's generic subject folds (its dataset's `fold_strata`
        stratifies them: DOD's subject ids carry their group). Abnormal EEG: subject folds
        stratified on the class, or the corpus's official split (probing/folds.
        recording_level_plan). None for subject ids alone: fit_fold plans from its windows."""
        from embedprobe.probing.folds import recording_level_plan

        if not self.defines_units:
            return super().fold_rule(table, bench, entry)
        if "label" not in table.columns:
            return None
        return recording_level_plan(table, bench, entry)

    # --- probe -------------------------------------------------------------------------
    def scored_units(self, bench: dict) -> str:
        """`windows` (the seizure probe on every window) or `recordings` (one row per unit),
        from the benchmark's `probe.units`; refused where the task offers no such probe."""
        probe = bench.get("probe", {})
        units = probe.get("units", self.units_options[0])
        if units not in self.units_options:
            raise UsageError(f"{self.name}: probe.units {units!r} is not one of "
                             f"{', '.join(self.units_options)}",
                             fix=f"set the benchmark's probe.units to {self.units_options[0]} "
                                 "or leave it out")
        mixed = sorted(k for k in ("aggregation", "class_weight", "select_on") if k in probe)
        if units == "windows" and mixed:
            raise UsageError(f"{self.name}: probe.{mixed[0]} sets the recording-level probe, "
                             "but this benchmark probes windows (the seizure probe: balanced "
                             "weights, C on validation AUPRC)",
                             fix=f"set probe.units: recordings, or remove probe.{mixed[0]}")
        return units

    def settings(self, bench: dict, entry: dict | None = None):
        from embedprobe.tasks.recording_level.probe import ProbeSettings

        return ProbeSettings.of(self.probe_defaults, bench, entry)

    def split(self, job: FoldJob) -> Split:
        """The window split where the benchmark probes windows; else one row per unit (its
        windows' mean, or mean and SD: probe.unit_features) with its class, the unit table
        kept and the units' ids."""
        from embedprobe.probing.folds import fold_split
        from embedprobe.tasks.recording_level.probe import unit_features

        if self.scored_units(job.bench) == "windows":
            return window_split(self, job)
        settings = self.settings(job.bench, job.config.get("datasets", {}).get(job.dataset, {}))
        keys, X = unit_features(job.store, self.level, settings.aggregation)
        labels = self.unit_labels(job, keys)
        table = unit_rows(job.store.windows, self.level, keys)
        plan = job_folds(self, job)
        return Split.cut(X, labels, fold_split(plan, table, job.fold), table, plan.rule, keys)

    def fit_fold(self, job: FoldJob, split: Split) -> tuple[dict, dict]:
        from embedprobe.datasets.registry import reader_for
        from embedprobe.tasks.recording_level.probe import fit_units

        if self.scored_units(job.bench) == "windows":
            return self.fit_windows(job, split)
        settings = self.settings(job.bench, job.config.get("datasets", {}).get(job.dataset, {}))
        result = fit_units(split, settings, job.progress)
        classes = reader_for(job.config, job.dataset).CLASSES
        keys, test = split.ids, split.test.rows
        labels = np.concatenate([split.part(p).y for p in PARTS])
        record = {
            "n_test": len(split.test),
            "unit": self.level, "aggregation": settings.aggregation,
            "n_features": split.train.X.shape[1],
            "test_subjects": sorted(split.test_table()["subject"].unique().tolist()),
            "select_on": settings.select_on, "class_weight": settings.class_weight,
            "classes": [classes[int(c)] for c in result.classes],
            "n_classes": int(len(np.unique(labels))),
            "method": "StandardScaler + LogisticRegression (lbfgs)",
            **result.record(),
            # per unit, so that the aggregate pools AUROC over folds
            "predictions": [{"unit": str(k), "label": int(y), "proba": [float(v) for v in p]}
                            for k, y, p in zip(keys[test], split.test.y, result.test_proba,
                                               strict=True)],
        }
        saved = {"units": keys[test].astype(str), "y_true": split.test.y,
                 "y_pred": result.test_pred, "proba": result.test_proba,
                 "labels": result.classes, "class_names": np.array(classes)}
        return record, saved

    rescore_needs = ("a window-level fold's event scores need its test recordings' timeline, "
                     "which the saved predictions do not hold")

    def rescore(self, record: dict, saved) -> dict[str, float] | None:
        """A unit-level fold's scores from its saved probabilities; None for window-level
        folds (`rescore_needs`)."""
        from embedprobe.tasks.recording_level.probe import scores

        if record.get("unit") == "window":
            return None
        return scores(saved["y_true"], saved["proba"], saved["labels"])

    def fit_windows(self, job: FoldJob, split: Split) -> tuple[dict, dict]:
        """The reference's probe of abnormal EEG: every window a row of the seizure probe, its
        label its recording's class (class 1, abnormal or ictal, is the positive one); the test
        windows' AUROC the headline. Event scores: a positive recording is one event from its
        first window to its last, as the reference's runs of positive windows make it."""
        from embedprobe.datasets.registry import reader_for, unit_seconds
        from embedprobe.probing.metrics import balanced_accuracy, macro_f1
        from embedprobe.tasks.seizure.scoring import RecordingTruth, WindowTimeline
        from embedprobe.tasks.seizure.task import fit_window_probe

        test = split.test_table()
        window_s = unit_seconds(job.config, job.dataset)
        # the k-th window of a recording at k window lengths (the reference reads array order)
        place = test.groupby("recording")["start"].rank(method="first").to_numpy() - 1
        truth = {}
        for name, rows in test.groupby("recording"):
            length = len(rows) * window_s
            truth[name] = RecordingTruth(length, ((0.0, length),) if rows["label"].iat[0] else ())
        timeline = WindowTimeline(test["recording"].to_numpy(), place * window_s, window_s, truth)
        result = fit_window_probe(job, split, timeline)
        classes = reader_for(job.config, job.dataset).CLASSES
        y_test = split.test.y
        kept = ("auroc", "auprc", "sensitivity_at_fpr", "mcc", "ovlp_f1")
        metrics = {k: float(result.test_metrics[k]) for k in kept} | {
            "balanced_accuracy": balanced_accuracy(y_test, result.test_pred),
            "macro_f1": macro_f1(y_test, result.test_pred)}
        record = {
            "n_train": len(split.train), "n_val": len(split.val), "n_test": len(split.test),
            "unit": "window", "n_features": split.train.X.shape[1],
            "test_subjects": sorted(test["subject"].unique().tolist()),
            "chosen": result.chosen, "selection": result.selection.record(),
            "threshold": result.threshold,
            "select_on": "auprc", "class_weight": "balanced",
            # non-empty where validation held one class (the smallest C, as the reference)
            "validation_one_class": result.settings["validation_one_class"],
            "converged_by_C": {str(c): v for c, v in result.converged_by_C.items()},
            "classes": list(classes), "n_classes": 2,
            "method": "StandardScaler + LogisticRegression(lbfgs, class_weight=balanced, "
                      "max_iter=500) on windows, C on validation AUPRC, threshold on "
                      "validation F1 (the seizure probe)",
            "metrics": metrics,
        }
        proba = np.column_stack([1.0 - result.test_proba, result.test_proba])
        saved = {"index": split.test.rows, "y_true": y_test,
                 "y_pred": result.test_pred, "proba": proba, "labels": np.array([0, 1]),
                 "class_names": np.array(classes)}
        return record, saved

    def unit_labels(self, job: FoldJob, keys: np.ndarray) -> np.ndarray:
        """Each unit's class index: its windows' label where the task cut them (abnormal EEG),
        else its recordings' class from the reader (one per subject)."""
        windows = job.store.windows
        if self.defines_units:
            first = windows.groupby(windows[self.level].astype(str))["label"].first()
            return first.reindex(keys.astype(str)).to_numpy(np.int64)
        return subject_classes(job, windows, keys)

    def pooled_scores(self, folds: list[dict]) -> dict[str, float]:
        from embedprobe.tasks.recording_level.probe import scores

        # window-level folds keep no per-unit predictions in their records: nothing to pool
        rows = [p for f in folds for p in f.get("predictions", [])]
        widths = {len(p["proba"]) for p in rows}
        if not rows or len(widths) != 1:  # folds trained on different class sets
            return {"auroc_pooled": float("nan")}
        y = np.array([p["label"] for p in rows])
        proba = np.array([p["proba"] for p in rows])
        labels = np.array(sorted({int(c) for c in y}))
        if len(labels) != proba.shape[1]:
            return {"auroc_pooled": float("nan")}
        return {"auroc_pooled": round(scores(y, proba, labels)["auroc"], 4)}

    # --- preflight -----------------------------------------------------------------------
    def probe_memory(self, config: dict, bench: dict, table: pd.DataFrame, fold: int,
                     dim: int, entry: dict | None = None) -> tuple[str, dict, int]:
        """Window-level (abnormal EEG's default): the seizure probe's job on the same store
        and parts, so its calibrated job type probe_seizure. Recording-level: streams the unit
        statistics (the brain-age stream, plus sums of squares for mean_std), then fits the
        fold's units (job type probe_recording)."""
        from embedprobe.probing.folds import fold_split
        from embedprobe.tasks.brain_age import subject_mean_inputs

        if self.scored_units(bench) == "windows":
            from embedprobe.tasks.seizure.task import window_probe_memory

            return window_probe_memory(self, config, bench, table, fold, dim, entry)
        settings = self.settings(bench, entry)
        keys = np.array(sorted(table[self.level].astype(str).unique()))
        units = unit_rows(table, self.level, keys)
        masks = fold_split(self.fold_groups(table, bench, entry), units, fold)
        train = masks["train"] | (masks["val"] if settings.fixed_C else False)
        with_std = settings.aggregation == "mean_std"
        stream = subject_mean_inputs(table[self.level].astype(str).tolist(), dim)
        inputs = stream | {
            "n_units": len(keys), "n": int(train.sum()), "p": dim * (2 if with_std else 1),
            "n_classes": max(2, int(table["label"].nunique()) if self.defines_units else 2),
            "n_fits": len(settings.C_grid) + (0 if settings.fixed_C else 1),
            "with_std": int(with_std),
            "unit_rows": int(table[self.level].astype(str).value_counts().max())}
        return "probe_recording", inputs, 10

    # --- report --------------------------------------------------------------------------
    def plot_pair(self, figure: str, prediction_files: list[Path], title: str,
                  out: Path) -> None:
        from embedprobe.tasks.recording_level.figures import plot_roc

        plot_roc(prediction_files, title, out)


def class_index(reader, rec) -> int:
    """The recording's class as its position in the reader's CLASSES."""
    if not hasattr(reader, "recording_label"):
        raise UsageError(f"the {reader.FORMAT} format gives its recordings no class (a "
                         "recording-level label)",
                         fix="list datasets of a format that does (dod, isruc, tuab, bonn) in "
                             "the benchmark's datasets")
    name = reader.recording_label(rec)
    if name not in reader.CLASSES:
        raise DataError(f"{rec.signal_path}: class {name!r} is not one of "
                        f"{', '.join(reader.CLASSES)}",
                        fix=f"check the {reader.FORMAT} reader's labels for this recording")
    return reader.CLASSES.index(name)


def unit_rows(windows: pd.DataFrame, level: str, keys: np.ndarray) -> pd.DataFrame:
    """One row per unit (sorted as `keys`) with its subject, recording (where the unit is a
    recording) and session: what the fold plan assigns."""
    columns = [c for c in ("subject", "recording", "session", "label") if c in windows.columns]
    first = windows.assign(**{level: windows[level].astype(str)}).groupby(level)[
        [c for c in columns if c != level]].first()
    return first.reindex(pd.Index(keys.astype(str), name=level)).reset_index()


def subject_classes(job: FoldJob, windows: pd.DataFrame, subjects: np.ndarray) -> np.ndarray:
    """Each subject's class from the reader's label of its recordings; a subject whose
    recordings disagree is refused."""
    from embedprobe.datasets.registry import find_dataset_recordings, reader_for

    reader = reader_for(job.config, job.dataset)
    kept = set(windows["recording"].astype(str))
    by_subject: dict[str, set[int]] = {}
    for rec in find_dataset_recordings(job.config, job.roots, job.dataset):
        if rec.recording in kept:
            by_subject.setdefault(str(rec.subject), set()).add(class_index(reader, rec))
    mixed = sorted(s for s, c in by_subject.items() if len(c) > 1)
    if mixed:
        raise DataError(f"{job.dataset}: subject {mixed[0]}'s recordings carry different classes",
                        fix="give each subject one class (a subject-level label)")
    missing = [s for s in subjects if str(s) not in by_subject]
    if missing:
        raise DataError(f"{job.dataset}: no recording of subject {missing[0]} was found",
                        fix="rebuild the index: the dataset's files changed since it was built")
    return np.array([next(iter(by_subject[str(s)])) for s in subjects], dtype=np.int64)
