"""Seizure detection: 10 s windows, positive when they overlap a seizure; 5 patient-level folds.

The probe is a class-balanced logistic regression, C chosen on validation AUPRC, then the
decision threshold tuned on validation F1 (tasks/seizure/probe.py). Window metrics (AUROC, AUPRC,
balanced accuracy, MCC, sensitivity at a fixed false-positive rate) and event metrics (the
reference's any-overlap sensitivity vs FA/h curve and its area, the headline; ovlp_f1; SzCORE
event sensitivity and false alarms per 24 h) are in tasks/seizure/scoring.py.

The headline over folds is the reference's (kkontras/NeuroAtlas, src/neuroatlas/results.py,
_event_sens_fa): the area of the point-wise NaN-median of the fold curves, +- the sample SD of
the per-fold areas. Each fold record carries its curve (`event_curve`, NaN as null);
`pooled_scores` combines them into the results row's event_auc_mean / event_auc_sd (so
event_auc_mean is that area, not a mean) and adds event_auc_fold_mean, the mean of the per-fold
areas.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

from embedprobe.datasets.registry import entry_unit_seconds, unit_seconds
from embedprobe.probing.logistic import C_GRID
from embedprobe.probing.split import Split
from embedprobe.tasks.base import FoldJob, Task, Units
from embedprobe.tasks.classification import fold_part_sizes, probe_runtime_minutes
from embedprobe.tasks.seizure.scoring import (
    METRICS,
    curve_from_json,
    curve_to_json,
    event_auc_over_folds,
    window_labels,
)

SEIZURE = "seizure"


def seizure_intervals(reader, rec) -> list[tuple[float, float]]:
    return [(e.onset, e.end) for e in reader.read_events(rec) if e.description == SEIZURE]


class SeizureDetection(Task):
    name = "seizure_detection"
    metrics = METRICS
    headline_label = "event sens/FA AUC"
    # the reference's: the area of the NaN-median of the fold curves, +- the sample SD of the
    # per-fold areas
    headline_over_folds = ("area of the median fold curve +- sample SD of the per-fold "
                           "areas")
    chosen_name = "C"
    pair_figures = ("roc_pr", "event_curve")
    classes = ("background", SEIZURE)

    def units(self, reader, rec, entry: dict, counts: Counter) -> Units:
        """Every whole non-overlapping window of the recording, from its first sample."""
        header = reader.read_header(rec)
        length_s = entry_unit_seconds(entry, self.name)
        n = int(header.n_samples // round(length_s * header.sfreq))
        starts_s = np.arange(n) * length_s
        labels = window_labels(starts_s, length_s, seizure_intervals(reader, rec))
        labels = labels.astype(np.int64)
        counts[("seizure windows", "")] += int(labels.sum())
        return Units(np.round(starts_s * header.sfreq).astype(np.int64), labels, header.sfreq)

    def stored_columns_for(self, entry: dict) -> tuple[str, ...]:
        """The session where `split: official` reads the corpus's split from it (TUSZ); none
        elsewhere, so the other datasets' caches (and keys) stay as they were."""
        return ("session",) if entry.get("split") == "official" else ()

    def fold_rule(self, table: pd.DataFrame, bench: dict, entry: dict):
        """The reference's seizure folds (probing/folds.seizure_plan): StratifiedKFold over the
        sorted patients, stratified on having a seizure; validation the inner split's fold k+1.
        `split: paper_recordings` on the dataset: the paper's recording-level Siena folds;
        `split: official`: TUSZ's train/dev/eval.
        None for subject ids alone (no labels to stratify on): fit_fold plans from its window
        table (base.job_folds)."""
        from embedprobe.probing.folds import seizure_plan

        if "label" not in table.columns:
            return None
        return seizure_plan(table, bench, entry)

    def fit_fold(self, job: FoldJob, split: Split) -> tuple[dict, dict]:
        from embedprobe.datasets.registry import find_dataset_recordings, reader_for
        from embedprobe.tasks.seizure.scoring import RecordingTruth, WindowTimeline

        test = split.test_table()
        # The test recordings' lengths and seizures, for event scoring, from the reader.
        reader = reader_for(job.config, job.dataset)
        found = {r.recording: r for r in
                 find_dataset_recordings(job.config, job.roots, job.dataset)}
        truth, sfreq = {}, {}
        for name in test["recording"].unique():
            rec = found[name]
            header = reader.read_header(rec)
            sfreq[name] = header.sfreq
            truth[name] = RecordingTruth(header.n_samples / header.sfreq,
                                         tuple(seizure_intervals(reader, rec)))
        window_s = unit_seconds(job.config, job.dataset)
        timeline = WindowTimeline(test["recording"].to_numpy(),
                                  test["start"].to_numpy() / test["recording"].map(sfreq)
                                  .to_numpy(), window_s, truth)
        result = fit_window_probe(job, split, timeline)
        record = {
            "n_train": len(split.train), "n_val": len(split.val), "n_test": len(split.test),
            "n_test_seizure_windows": int(split.test.y.sum()),
            "test_subjects": sorted(test["subject"].unique().tolist()),
            "method": "StandardScaler + LogisticRegression(lbfgs, class_weight=balanced), C on "
                      "validation AUPRC, threshold on validation F1",
            **{k: v for k, v in result.summary().items() if k != "test_metrics"},
            "metrics": {k: float(v) for k, v in result.test_metrics.items()},
            "event_curve": curve_to_json(result.curves["event_curve"]),
        }
        saved = {"index": split.test.rows, "y_true": split.test.y,
                 "y_pred": result.test_pred, "proba": result.test_proba,
                 **{f"curve_{k}": v for k, v in result.curves.items()}}
        return record, saved

    rescore_needs = ("the event scores need the test recordings' seizures and lengths, which "
                     "the saved predictions do not hold")

    def pooled_scores(self, folds: list[dict]) -> dict[str, float]:
        """The headline over folds as the reference computes it (module docstring), from the
        folds that recorded a curve; none did (records from before): the plain mean stays."""
        curves = [curve_from_json(f["event_curve"]) for f in folds if "event_curve" in f]
        if not curves:
            return {}
        over = event_auc_over_folds(curves)
        return {"event_auc_mean": round(over.headline, 4), "event_auc_sd": round(over.sd, 4),
                "event_auc_fold_mean": round(over.fold_mean, 4)}

    def probe_memory(self, config: dict, bench: dict, table: pd.DataFrame, fold: int,
                     dim: int, entry: dict | None = None) -> tuple[str, dict, int]:
        return window_probe_memory(self, config, bench, table, fold, dim, entry)

    def plot_pair(self, figure: str, prediction_files: list[Path], title: str,
                  out: Path) -> None:
        from embedprobe.tasks.seizure.figures import plot_roc_pr, plot_sensitivity_vs_fa

        folds = {}
        for path in prediction_files:
            with np.load(path) as saved:
                fold = int(Path(path).stem.removeprefix("fold"))
                folds[fold] = {k.removeprefix("curve_"): saved[k] for k in saved.files
                               if k.startswith("curve_")}
        plot = {"roc_pr": plot_roc_pr, "event_curve": plot_sensitivity_vs_fa}[figure]
        plot(folds, title, out)

    def summary_notes(self, tables: dict[str, pd.DataFrame]) -> list[str]:
        notes = ["", "event_auc: the reference's headline, the area under event sensitivity "
                 "against false alarms per hour (any-overlap events, 200 thresholds, log10 "
                 "FA/h over 0.1-100, divided by the part of that range the curve reaches) of "
                 "the NaN-median of the fold curves; +- is the sample SD of the per-fold "
                 "areas. ovlp_f1: any-overlap event F1 at the tuned threshold. "
                 "event_sensitivity, fa_per_24h: SzCORE event rules (timescoring) at the tuned "
                 "threshold."]
        means = [f"{dataset}/{row.model} {row.event_auc_fold_mean:.3f}"
                 for dataset, table in tables.items() for row in table.itertuples()
                 if np.isfinite(getattr(row, "event_auc_fold_mean", np.nan))]
        if means:
            notes.append("Mean of the per-fold event_auc (not the headline): "
                         + ", ".join(means) + ".")
        return notes


def fit_window_probe(job: FoldJob, split: Split, timeline):
    """The seizure probe (probe.fit_seizure_probe) on one fold's windows, with the benchmark's
    probe settings: the one place a benchmark's `probe:` reaches it (seizure detection and
    abnormal EEG's window-level default both fit through here)."""
    from embedprobe.tasks.seizure.probe import fit_seizure_probe

    probe = job.bench.get("probe", {})
    return fit_seizure_probe(
        split, timeline,
        C_grid=tuple(probe.get("C_grid", C_GRID)),
        max_fp_per_hour=float(probe.get("fixed_fp_per_hour", 1.0)),
        n_jobs=job.n_jobs, progress=job.progress)


def window_probe_memory(task: Task, config: dict, bench: dict, table: pd.DataFrame, fold: int,
                        dim: int, entry: dict | None = None) -> tuple[str, dict, int]:
    """The job type probe_seizure and its inputs for a job that loads every window of the
    store and fits fit_window_probe on the fold's parts (the task's folds size them)."""
    inputs = fold_part_sizes(task, bench, table, fold, entry) | {
        "dim": dim,
        "n_jobs": config["probe"]["n_jobs"],
        "n_fits": len(bench.get("probe", {}).get("C_grid", C_GRID)),
    }
    return "probe_seizure", inputs, probe_runtime_minutes(inputs)


TASK = SeizureDetection()
