"""The interface every dataset reader implements, and the values it hands out.

A reader is a module (sleep_edf.py, chbmit.py, ...) registered by its format name in
datasets/registry.py. It knows one dataset layout: where the recordings are, how to read their
signals in volts, and what their annotations mean. It knows nothing about windows, folds or
probes: a task (embedprobe/tasks/) turns a recording's events into labelled units.

Every reader module provides:

    FORMAT: str                                   the format name used in config/datasets.yaml
    find_recordings(root) -> list[RecordingLike]  sorted by recording id; a layout error is a
                                                  DataError naming the file, with a fix
    read_header(rec) -> RecordingHeader             channels, rate, length; headers only (fast)
    read_signals(rec, channels, span=None) -> Signals
                                                  the named channels, float32 volts; with a
                                                  span (first, stop) only those samples, as
                                                  far as the recording goes (span_within)
    read_events(rec) -> list[Event]               the recording's annotations, in seconds from
                                                  the start of its signal file

and optionally `subjects_table(root) -> dict[str, float]` (subject -> age) for brain age, and
`recording_ages(root) -> dict[str, float]` (recording -> that night's age) for a brain age per
recording (`brain_age_unit: recording`; without it each recording takes its subject's age).
A look-alike generator for tests and demos (registry.FORMATS) exposes
`write_lookalike(root, settings: dict) -> list[Path]`, settings being the dataset's
`generator:` entry in config/datasets.yaml; MANIFEST.tsv is written last
(datasets/synth/files.write_manifest): its presence marks a complete dataset.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar

import numpy as np

from embedprobe.core.errors import DataError

K = TypeVar("K", bound=Hashable)


class RecordingLike(Protocol):
    """What the workflow reads from a reader's recording object (readers add their own)."""

    @property
    def recording(self) -> str: ...  # unique id within the dataset ("chb01_03", "SC4001E0")

    @property
    def subject(self) -> str: ...  # the unit folds are made of ("chb01", "SC00")

    @property
    def session(self) -> str: ...  # night, run or file number, as text

    @property
    def signal_path(self) -> Path: ...  # the file the signals are read from

    @property
    def files(self) -> tuple[Path, ...]: ...  # every file the recording needs (workflow inputs)

    @property
    def problem(self) -> str: ...  # why the recording is incomplete; "" when complete


class OneNightPerSubject:
    """A recording that is its subject's only session (HMC, DCSM, UCDDB: one night a person)."""

    recording: str

    @property
    def subject(self) -> str:
        return self.recording

    @property
    def session(self) -> str:
        return "1"


def refuse_incomplete(rec: RecordingLike, fix: str) -> None:
    """A DataError naming an incomplete recording and why; `fix` says how to complete it (the
    allow_partial way out is added)."""
    if rec.problem:
        raise DataError(f"{rec.recording}: {rec.problem}",
                        fix=f"{fix} (or allow_partial=true to leave this recording out)")


def present(*paths: Path) -> tuple[Path, ...]:
    """The paths that are files: a recording's inputs, its missing ones left out."""
    return tuple(p for p in paths if p.is_file())


@dataclass(frozen=True)
class RecordingHeader:
    """A recording's signals as its header describes them (no samples read)."""

    channels: tuple[str, ...]  # as recorded (duplicates made unique the way MNE does)
    sfreq: float  # Hz, of the EEG channels
    n_samples: int  # per EEG channel


@dataclass
class Signals:
    sfreq: float
    ch_names: list[str]
    data: np.ndarray  # (len(ch_names), n_samples) float32, volts

    @property
    def seconds(self) -> float:
        return self.data.shape[1] / self.sfreq


@dataclass(frozen=True)
class Event:
    """One annotation: a seizure, a cue, a scored sleep stage, in seconds from the file's start."""

    onset: float
    duration: float
    description: str  # the reader's normalised name ("seizure", "left_hand", "Sleep stage 2")

    @property
    def end(self) -> float:
        return self.onset + self.duration


class DatasetReader(Protocol):
    FORMAT: str

    def find_recordings(self, root: Path) -> list[RecordingLike]: ...

    def read_header(self, rec: RecordingLike) -> RecordingHeader: ...

    def read_signals(self, rec: RecordingLike, channels: Sequence[str],
                     span: tuple[int, int] | None = None) -> Signals: ...

    def read_events(self, rec: RecordingLike) -> list[Event]: ...


# A `counts` kind (a reader's read_labels): scored epochs past the end of the signal, which a
# PSG cut short (or a hypnogram longer than its night) leaves. Its text is the whole warning,
# naming the file; the index prints it as a `warning:`, not in the notes of counted annotations.
CUT = "cut at the signal's end"


def count_cut(counts: Counter, signal: Path, source: Path, n_epochs: int,
              signal_seconds: float, scored_seconds: float, epoch_seconds: float = 30) -> None:
    """Count `n_epochs` scored epochs of `source` (a hypnogram, a stage file) past the end of
    `signal` (the recording's signal file), which ends at `signal_seconds` while `source`
    scores up to `scored_seconds`."""
    if n_epochs <= 0:
        return

    def seconds(value: float) -> str:
        return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.2f}"

    counts[(CUT, f"{signal}: the signal ends at {seconds(signal_seconds)} s but {source.name} "
                 f"scores up to {seconds(scored_seconds)} s: {n_epochs:,} scored epoch"
                 f"{'s' if n_epochs > 1 else ''} of {epoch_seconds:g} s past its end cut; the "
                 f"recording is indexed up to its end")] += n_epochs


def one_each(paths: Iterable[Path], key: Callable[[Path], K | None]) -> dict[K, Path]:
    """find_recordings' files (or folders) by key(path), skipping those whose key is None (not
    the dataset's); two with one key (a copy in another folder) are a DataError naming both."""
    found: dict[K, Path] = {}
    for path in paths:
        k = key(path)
        if k is None:
            continue
        if k in found:
            raise DataError(f"{path.name} is there twice: {found[k]} and {path}",
                            fix="keep one copy under the data root")
        found[k] = path
    return found


def span_within(span: tuple[int, int] | None, n_samples: int) -> tuple[int, int]:
    """A reader's `span` argument as (first, stop) samples of a recording of `n_samples`: the
    whole recording without one; a stop past the end is the end (the data then starts at
    `first` and is shorter than asked)."""
    if span is None:
        return 0, n_samples
    first, stop = (int(v) for v in span)
    if first < 0 or stop < first:
        raise ValueError(f"span {span}: expected 0 <= first <= stop")
    return min(first, n_samples), max(min(first, n_samples), min(stop, n_samples))
