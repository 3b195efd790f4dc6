"""What a task family owns, as one small interface (one module per family implements it).

The workflow, preflight, aggregate and report ask the task; none of them names one. A task
decides how a recording becomes labelled units (windows, trials), how one fold is fitted and
scored, which preflight job type sizes its probe, which metrics it reports (the first is the
headline), and which figures each pair gets.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from embedprobe.probing.split import Split


@dataclass
class Units:
    """A recording's labelled units: start sample (at `sfreq`, from the signal file's start) and
    an integer label each; every unit is the dataset's `epoch_seconds` long."""

    starts: np.ndarray  # int64
    labels: np.ndarray  # int64
    sfreq: float


@dataclass
class FoldJob:
    """Everything a task needs to fit one fold."""

    config: dict
    roots: dict
    benchmark: str
    bench: dict
    dataset: str
    store: object  # cache.EmbeddingStore, open
    # what pipeline/fold_job planned (Task.fold_groups); the fit cuts job_folds(task, job)
    groups: object
    fold: int
    progress: Callable[[int, int, str], None] | None = None  # probing.logistic.Progress
    model: str = ""  # whose embeddings (a task reading another benchmark's folds needs it)
    # grid values fitted at once: the preflight's knob; None: the config's probe.n_jobs
    n_jobs: int | None = None
    # the preflight's knob for a fold too large to hold: its rows stay in the store and the
    # probe reads them a block at a time (window_split; probing/logistic's streamed fit)
    streamed: bool = False

    def __post_init__(self):
        if self.n_jobs is None:  # the schema fills probe.n_jobs in a loaded config
            self.n_jobs = self.config.get("probe", {}).get("n_jobs")


def job_folds(task: Task, job: FoldJob):
    """The folds (probing.folds.FoldPlan) a probe job cuts: planned over its whole window table
    with its dataset's settings (fold_manifest, fold_strata, fold_draw, split), whatever
    `job.groups` was planned over. A dataset the config does not list has no settings: the
    task's rule."""
    return task.fold_groups(job.store.windows, job.bench,
                            fold_entry(job.config, job.roots, job.dataset))


def window_split(task: Task, job: FoldJob) -> Split:
    """The fold's windows of the job's store (float32) with their labels, cut by the task's
    folds; the split keeps the window table (its rows) and the fold rule. Each part is read
    from the store in blocks straight into its own array: one copy of the fold's rows, never
    the whole store's X beside its parts; with `job.streamed`, the parts' rows stay in the
    store (pipeline/store.StoreRows), read a block at a time by the probe."""
    from embedprobe.probing.folds import fold_split

    windows = job.store.windows
    plan = job_folds(task, job)
    masks = fold_split(plan, windows, job.fold)
    y = windows["label"].to_numpy().astype(np.int64)
    parts = ({name: job.store.rows(mask) for name, mask in masks.items()} if job.streamed
             else job.store.read_parts(masks))
    return Split.read(parts, y, masks, windows, plan.rule)


def fold_entry(config: dict, roots: dict, dataset: str) -> dict:
    """The dataset's config entry as the fold rules read it: with `fold_draw: per_stratum`,
    plus `subject_classes`, each subject's class by the reader (its first recording's; a
    recording the reader cannot class counts as "unknown", as the reference's does)."""
    entry = dict(config.get("datasets", {}).get(dataset, {}))
    if entry.get("fold_draw") != "per_stratum":
        return entry
    from embedprobe.core.errors import DataError
    from embedprobe.datasets.registry import find_dataset_recordings, reader_for

    reader = reader_for(config, dataset)
    classes: dict[str, str] = {}
    for rec in find_dataset_recordings(config, roots, dataset):
        if str(rec.subject) in classes:
            continue
        try:
            classes[str(rec.subject)] = reader.recording_label(rec)
        except DataError:  # no table row or no diagnosis: the reference's "unknown"
            classes[str(rec.subject)] = "unknown"
    return entry | {"subject_classes": classes}


class Task:
    name: str = ""
    metrics: tuple[str, ...] = ()  # mean +- SD over folds; the first is the headline
    headline_label: str = ""  # as the probe's progress line names the headline
    pooled: tuple[str, ...] = ()  # computed once over every fold's test units
    chosen_name: str = "C"  # the hyper-parameter the probe selects
    lower_is_better: bool = False
    pair_figures: tuple[str, ...] = ()  # figure names drawn per (dataset, model)
    defines_units: bool = True  # False: uses the units of the dataset's own labelling task
    classes: tuple[str, ...] = ()
    # how the summary's headline line says the headline is taken over folds
    headline_over_folds: str = "mean +- SD over folds"
    # the SD over folds: sample SD (1; the reference's epilepsy only) or population SD (0; its
    # every other benchmark: sleep staging, brain age, BCI)
    sd_ddof: int = 1
    # the headline's chance differs by dataset (1 / classes present): a `chance` column in the
    # results and the leaderboard, and a mark on the scores figure
    draws_chance: bool = False
    # a fixed score of a trivial predictor on the headline (the reference's `metrics.dummy`):
    # gives the normalised score (mean - dummy) / (1 - dummy); None: no normalised score
    dummy: float | None = None
    # index columns the store keeps beside recording, subject, start and label, for the task
    # whose units the index holds (abnormal EEG's session: TUAB's official split); none for
    # the others, so their caches' window tables (and keys) stay as they were
    stored_columns: tuple[str, ...] = ()

    def stored_columns_for(self, entry: dict) -> tuple[str, ...]:
        """The stored columns for one dataset's entry (seizure detection keeps the session
        only where `split: official` reads the corpus's split from it)."""
        return self.stored_columns

    # --- the window index ---------------------------------------------------------------
    def units(self, reader, rec, entry: dict, counts: Counter) -> Units:
        raise NotImplementedError

    def check_benchmark(self, config: dict, benchmark: str, bench: dict) -> None:
        """Refuse, when the config is read, settings of a benchmark this task cannot run."""

    def check_recordings(self, reader, recordings: list) -> None:
        """Refuse, while the index is built, what this task would only meet in its probe job
        (a recording-level task: each recording's class), so nothing is embedded for it."""

    # --- folds ------------------------------------------------------------------------------
    def fold_groups(self, units, bench: dict, entry: dict | None = None):
        """The folds (probing.folds.FoldPlan) over the units' subjects: the plan the dataset's
        entry names with `fold_manifest` when it does, else the task's rule. `units`: the
        window table (subject, recording, label), or subject ids alone."""
        from embedprobe.probing.folds import manifest_plan, unit_table

        table, entry = unit_table(units), entry or {}
        if entry.get("fold_manifest"):
            return manifest_plan(entry["fold_manifest"], table, bench["folds"],
                                 entry.get("fold_manifest_unit"))
        return self.fold_rule(table, bench, entry)

    def fold_rule(self, table: pd.DataFrame, bench: dict, entry: dict):
        """The reference's generic folds: subjects in ascending order (`fold_order: text`: as
        text), shuffled by
        RandomState(fold_seed) within each stratum of the dataset's `fold_strata`, cut into
        `folds` chunks; fold k tests chunk k, validates on chunk k+1. `fold_draw: per_stratum`
        (ISRUC's adapter): each stratum drawn on its own (probing/folds.per_stratum_plan);
        `fold_draw: balanced` (WSC's adapter): chunks balanced by recordings (balanced_plan)."""
        from embedprobe.probing.folds import (
            balanced_plan,
            chunk_plan,
            per_stratum_plan,
            refuse_split,
        )

        refuse_split(entry, self.name)
        if entry.get("fold_draw") == "balanced":
            return balanced_plan(table, bench["folds"], bench["fold_seed"])
        if entry.get("fold_draw") == "per_stratum":
            return per_stratum_plan(table["subject"], bench["folds"], bench["fold_seed"],
                                    entry.get("fold_strata") or "^",
                                    entry.get("subject_classes"))
        return chunk_plan(table["subject"], bench["folds"], bench["fold_seed"],
                          entry.get("fold_strata"), entry.get("fold_order") == "text")

    # --- probe ------------------------------------------------------------------------------
    def split(self, job: FoldJob) -> Split | None:
        """The fold's parts (probing/split.py), cut once by the fold job for `fit_fold`: by
        default every window of the store (float32) with its label, cut by the task's folds
        (job_folds), the window table kept; None for a task that fits no probe."""
        return window_split(self, job)

    def fit_fold(self, job: FoldJob, split: Split | None) -> tuple[dict, dict]:
        """(the fold's JSON record, arrays saved in its .npz) of the probe fitted on `split`."""
        raise NotImplementedError

    def pooled_scores(self, folds: list[dict]) -> dict[str, float]:
        return {}

    # why this task's saved predictions cannot be rescored ("" where they can: `rescore`)
    rescore_needs = "this task does not rescore saved predictions"

    def rescore(self, record: dict, saved) -> dict[str, float] | None:
        """The fold's test metrics recomputed from its saved arrays (`saved`: its .npz),
        nothing fitted; None where the arrays do not suffice (`rescore_needs` says why)."""
        return None

    # --- preflight -------------------------------------------------------------------------
    def probe_memory(self, config: dict, bench: dict, table: pd.DataFrame, fold: int,
                     dim: int, entry: dict | None = None) -> tuple[str, dict, int]:
        """(the preflight job type, its inputs, runtime minutes) of one fold's probe job;
        `entry`: the dataset's, whose fold settings (fold_groups) size the fold's parts."""
        raise NotImplementedError

    # --- report ----------------------------------------------------------------------------
    def summary_notes(self, tables: dict[str, pd.DataFrame]) -> list[str]:
        return []

    def plot_pair(self, figure: str, prediction_files: list[Path], title: str,
                  out: Path) -> None:
        raise NotImplementedError(figure)
