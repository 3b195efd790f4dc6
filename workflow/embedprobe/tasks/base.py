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
    groups: dict[str, int]  # subject -> fold group
    fold: int
    progress: Callable[[int, int, str], None] | None = None  # probing.logistic.Progress


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
    sd_ddof: int = 1  # the SD over folds: sample SD (1) or population SD (0)
    draws_chance: bool = False  # the scores figure marks 1 / number of classes
    # what the probe job imports (baselines.STEP_IMPORTS), measured by preflight as its baseline
    probe_step: str = "probe"

    # --- the window index ---------------------------------------------------------------
    def units(self, reader, rec, entry: dict, counts: Counter) -> Units:
        raise NotImplementedError

    # --- folds ------------------------------------------------------------------------------
    def fold_groups(self, subjects, bench: dict) -> dict[str, int]:
        """Subject -> fold group: fold k tests group k and validates on group k+1."""
        from embedprobe.probing.folds import subject_groups

        return subject_groups(subjects, bench["folds"], bench["fold_seed"])

    # --- probe ------------------------------------------------------------------------------
    def fit_fold(self, job: FoldJob) -> tuple[dict, dict]:
        """(the fold's JSON record, arrays saved in its .npz)."""
        raise NotImplementedError

    def pooled_scores(self, folds: list[dict]) -> dict[str, float]:
        return {}

    # --- preflight -------------------------------------------------------------------------
    def probe_memory(self, config: dict, bench: dict, table: pd.DataFrame, fold: int,
                     dim: int) -> tuple[str, dict, int]:
        """(the preflight job type, its inputs, runtime minutes) of one fold's probe job."""
        raise NotImplementedError

    # --- report ----------------------------------------------------------------------------
    def summary_notes(self, tables: dict[str, pd.DataFrame]) -> list[str]:
        return []

    def plot_pair(self, figure: str, prediction_files: list[Path], title: str,
                  out: Path) -> None:
        raise NotImplementedError(figure)
