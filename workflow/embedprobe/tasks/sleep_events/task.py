"""Sleep events: does a 30 s epoch hold an arousal, a respiratory event, a limb movement?

The reference's three event benchmarks (NeuroAtlas sleep_arousal, sleep_respiratory,
sleep_limb; its guide's "Sleep" page and task presets configs/tasks/{arousal,respiratory,
limb}.json). They have no units of their own: the sleep-staging windows and embeddings of the
dataset are reused (one embedding serves staging and every event benchmark). Each window's
label is the seconds of each event field it overlaps (overlap.py), read at probe time from the
reader's `read_events` (events named by the kinds of datasets/base.py's EVENT_KINDS); one
binary probe per field and threshold (probe.py), positive where the overlap strictly exceeds
the threshold. The headline is AUPRC at the benchmark's headline field and threshold (the
guide's; its benchmark YAMLs name macro F1, and the guide wins where they disagree), then
macro F1, balanced accuracy and AUROC; chance is the share of positive test windows (what a
guess scores on AUPRC). 5 subject-level folds (the generic ones), population SD.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

from embedprobe.core.errors import DataError, UsageError
from embedprobe.probing.split import Split
from embedprobe.tasks.base import FoldJob, Task, Units


class SleepEvents(Task):
    metrics = ("auprc", "macro_f1", "balanced_accuracy", "auroc")
    headline_label = "AUPRC"
    chosen_name = "C"
    pair_figures = ("pr",)
    defines_units = False  # the dataset's sleep-staging windows
    sd_ddof = 0  # population SD, as every sleep benchmark of the reference
    draws_chance = True  # the share of positive test windows differs by dataset

    def __init__(self, name: str, fields: dict[str, tuple[str, ...]],
                 thresholds: tuple[float, ...], headline: tuple[str, float]):
        self.name, self.fields, self.thresholds = name, fields, tuple(thresholds)
        self.headline = headline

    def units(self, reader, rec, entry: dict, counts: Counter) -> Units:
        raise UsageError(f"task '{self.name}' cuts no windows of its own",
                         fix="its datasets keep `labels: sleep_staging` (their format's)")

    def check_recordings(self, reader, recordings: list) -> None:
        """The format annotates the headline's kinds, and every recording's events read
        (an unknown type, an event past the end), before anything is embedded."""
        annotated_kinds(reader, self.fields[self.headline[0]], self.name)
        for rec in recordings:
            reader.read_events(rec)

    # --- probe -----------------------------------------------------------------------------
    def probes(self, bench: dict, reader) -> tuple[list, dict[str, str]]:
        """(the fold's probes, headline first; {field: why it is skipped}): every annotated
        field at every threshold of the benchmark (`probe.thresholds`, else the task's)."""
        from embedprobe.tasks.sleep_events.probe import EventProbe

        thresholds = tuple(bench.get("probe", {}).get("thresholds", self.thresholds))
        kinds = set(getattr(reader, "EVENT_KINDS", ()))
        skipped = {f: f"the {reader.FORMAT} format annotates none of {', '.join(k)}"
                   for f, k in self.fields.items() if not kinds & set(k)}
        probes = [EventProbe(*self.headline)] + [
            EventProbe(field, t) for field in self.fields if field not in skipped
            for t in thresholds if (field, t) != self.headline]
        return probes, skipped

    def fit_fold(self, job: FoldJob, split: Split) -> tuple[dict, dict]:
        from embedprobe.datasets.registry import reader_for
        from embedprobe.tasks.sleep_events.probe import fit_event_probes

        reader = reader_for(job.config, job.dataset)
        annotated_kinds(reader, self.fields[self.headline[0]], self.name)
        windows = split.table
        probes, skipped = self.probes(job.bench, reader)
        overlaps = window_overlaps(job, reader, windows, {p.field for p in probes}, self.fields,
                                   field_overlap(job.bench))
        C_grid = tuple(float(c) for c in job.bench.get("probe", {}).get("C_grid", [1.0]))
        results = fit_event_probes(split, overlaps, probes, C_grid, job.progress)
        head = results[probes[0].key]
        if isinstance(head, str):
            raise DataError(f"{job.dataset} fold {job.fold}: the headline probe "
                            f"({probes[0].key}) cannot be fitted: {head}",
                            fix="use more subjects with scored events, or fewer folds")
        test = split.test.rows
        head_overlap = overlaps[probes[0].field][test]
        record = {
            "n_train": len(split.train), "n_val": len(split.val), "n_test": len(split.test),
            "test_subjects": sorted(split.test_table()["subject"].unique().tolist()),
            "headline_probe": probes[0].key, "chosen": head.chosen,
            "selection": head.selection.record(),
            "positive_share": head.details["positive_share"], "n_classes": 2,
            "method": "StandardScaler + LogisticRegression (lbfgs, balanced)",
            "metrics": {m: head.test_metrics[m] for m in self.metrics},
            "probes": {key: {"skipped": r} if isinstance(r, str) else
                       r.test_metrics | r.details | {"chosen": r.chosen}
                       for key, r in results.items()},
            "skipped_fields": skipped,
        }
        saved = {"index": test,
                 "y_true": (head_overlap > probes[0].threshold).astype(np.int64),
                 "proba": head.test_proba, "overlap_seconds": head_overlap}
        return record, saved

    rescore_needs = ""

    def rescore(self, record: dict, saved) -> dict[str, float]:
        """The headline probe's metrics (the other probes' arrays are not saved: their entries
        under `probes` keep their scores)."""
        from embedprobe.tasks.sleep_events.probe import event_scores

        scores = event_scores(np.asarray(saved["y_true"]), np.asarray(saved["proba"]))
        return {m: scores[m] for m in self.metrics}

    def pooled_scores(self, folds: list[dict]) -> dict[str, float]:
        """The chance level (mean positive share of the folds' test windows) and the headline
        field's AUPRC at each threshold, mean over folds."""
        out = {"positive_share": round(float(np.mean([f["positive_share"] for f in folds])), 4)}
        field = self.headline[0]
        for key in folds[0].get("probes", {}):
            if key.startswith(f"{field}@"):
                values = [f["probes"].get(key, {}).get("auprc", np.nan) for f in folds]
                out[f"auprc_{key.split('@')[1]}"] = round(float(np.nanmean(values)), 4) \
                    if np.isfinite(values).any() else np.nan
        return out

    # --- preflight -----------------------------------------------------------------------------
    def probe_memory(self, config: dict, bench: dict, table: pd.DataFrame, fold: int,
                     dim: int, entry: dict | None = None) -> tuple[str, dict, int]:
        """Job type probe_events: the seizure probe's shape (the store loaded, one
        standardised float32 copy of the training rows, scikit-learn's binary lbfgs), one fit
        at a time."""
        from embedprobe.tasks.classification import fold_part_sizes, probe_runtime_minutes

        n_fits = len(bench.get("probe", {}).get("C_grid", [1.0]))
        inputs = fold_part_sizes(self, bench, table, fold, entry) | {
            "dim": dim, "n_jobs": 1, "n_fits": n_fits}
        n_probes = len(self.fields) * len(bench.get("probe", {}).get("thresholds",
                                                                    self.thresholds))
        return "probe_events", inputs, probe_runtime_minutes(inputs | {
            "n_fits": n_fits * n_probes})

    # --- report ----------------------------------------------------------------------------
    def plot_pair(self, figure: str, prediction_files: list[Path], title: str,
                  out: Path) -> None:
        from embedprobe.tasks.sleep_events.figures import plot_precision_recall

        plot_precision_recall(prediction_files, f"{title}\n{self.headline_text()}", out)

    def headline_text(self) -> str:
        field, threshold = self.headline
        return f"{field} > {threshold:g} s per epoch"

    def summary_notes(self, tables: dict[str, pd.DataFrame]) -> list[str]:
        return ["", f"{self.name}: AUPRC of one probe per epoch, positive when the epoch holds "
                    f"more than the threshold of the field's events (headline: "
                    f"{self.headline_text()}); chance: the share of positive test epochs; "
                    "auprc_<t>s: the headline field at each threshold."]


def annotated_kinds(reader, kinds: tuple[str, ...], task: str) -> None:
    """Refuse a dataset whose format annotates none of the headline's event kinds."""
    if not set(getattr(reader, "EVENT_KINDS", ())) & set(kinds):
        raise UsageError(f"task '{task}' needs {' or '.join(kinds)} events, which the "
                         f"{reader.FORMAT} format does not annotate",
                         fix=f"list datasets whose format scores them in the {task} "
                             "benchmark's datasets (docs/usage.md, the datasets table)")


def field_overlap(bench: dict) -> str:
    """How a field of several kinds counts its seconds (the benchmark's `probe:
    field_overlap`; overlap.py)."""
    from embedprobe.tasks.sleep_events.overlap import FIELD_OVERLAPS

    how = bench.get("probe", {}).get("field_overlap", FIELD_OVERLAPS[0])
    if how not in FIELD_OVERLAPS:
        raise UsageError(f"probe field_overlap: {how} is not one of {', '.join(FIELD_OVERLAPS)}",
                         fix=f"write field_overlap: {FIELD_OVERLAPS[0]} (the reference's) or "
                             "union in the benchmark's probe settings")
    return how


def window_overlaps(job: FoldJob, reader, windows: pd.DataFrame, fields: set[str],
                    kinds_of: dict[str, tuple[str, ...]],
                    how: str) -> dict[str, np.ndarray]:
    """Seconds of each field's events in every window of the store, recording by recording
    (starts are samples at the recording's rate, from its signal file's first sample); a field
    of several kinds counts them as `how` says (overlap.field_overlap_seconds)."""
    from embedprobe.datasets.registry import find_dataset_recordings, unit_seconds
    from embedprobe.tasks.sleep_events.overlap import field_overlap_seconds

    seconds = unit_seconds(job.config, job.dataset)
    out = {f: np.zeros(len(windows)) for f in fields}
    by_id = {r.recording: r for r in find_dataset_recordings(job.config, job.roots, job.dataset)}
    for recording, rows in windows.groupby(windows["recording"].astype(str)).indices.items():
        if recording not in by_id:
            raise DataError(f"{job.dataset}: recording {recording} of the cache is not there",
                            fix="rebuild the index: the dataset's files changed since")
        rec = by_id[recording]
        sfreq = reader.read_header(rec).sfreq
        starts = windows["start"].to_numpy()[rows] / sfreq
        by_kind: dict[str, list[tuple[float, float]]] = {}
        for event in reader.read_events(rec):
            by_kind.setdefault(event.description, []).append((event.onset, event.end))
        for field in fields:
            spans = {kind: by_kind.get(kind, []) for kind in kinds_of[field]}
            out[field][rows] = field_overlap_seconds(starts, seconds, spans, how)
    return out
