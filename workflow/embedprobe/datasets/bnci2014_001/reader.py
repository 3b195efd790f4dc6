"""BNCI 2014-001 (BCI Competition IV 2a) as the BNCI Horizon site distributes it for MOABB.

Files: `A01T.mat`, `A01E.mat` ... `A09E.mat` (subject, session T = training, E = evaluation;
both carry labels in this distribution). Each holds a variable `data`: a 1 x N cell of run
structs with fields X (samples x 25, microvolts: 22 EEG + 3 EOG), trial (trial starts,
1-based samples), y (class codes 1-4), fs (250), classes ({'left hand', 'right hand',
'feet', 'tongue'}), artifacts (1 = trial marked by the experts), gender, age. The first runs
of a session are the EOG calibration block (eyes open, closed, movements) and hold no trials
(A04T has only one); every run after them holds 48 trials. The files name no channels: the
order is MOABB's (EEG_CHANNELS, then EOG1-3).

`trial` marks the trial start (fixation cross and beep, t = 0); the cue appears at t = 2 s
and the imagery lasts until t = 6 s (MOABB cuts [2, 6] s after it). Events here are the cues:
onset (trial - 1) / fs + 2 s, duration 4 s, so "0.5-4.5 s after the cue" means the same in
both motor-imagery datasets. Class names follow MOABB ('left hand' -> left_hand, ...). Trials
marked in `artifacts` are kept (MOABB's default, artifact_handling="ignore").

A recording is one run with trials: id "A01T_run4" (the run's position in the `data` cell,
1-based as MATLAB counts), subject "A01", session "T_run4". A subject with some of the
configured sessions but not all gets a placeholder recording whose `problem` names the missing
file. Listing runs reads each file once per process (scipy.io.loadmat, ~0.7 s for a real
file); the parsed file is kept for the next call on it.

This is what MOABB's BNCI2014_001 does (_convert_mi / _convert_run: scipy.io.loadmat, events
at trial - 1, class names from `classes`), without MOABB itself: it reads these files offline
(tests/datasets/test_bnci2014_001.py cross-checks it, opt-in) but only from MNE's download cache
layout
(MNE-bnci-data/~bci/database/001-2014/) under a process-wide MNE_DATA path, after ~40 s of
NEMAR retries per call unless MOABB_DOWNLOAD_PROVIDER=upstream, loading both sessions of a
subject at once, and it downloads a missing session file instead of naming it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from embedprobe.core.errors import DataError, UsageError
from embedprobe.datasets.base import Event, RecordingHeader, Signals, span_within
from embedprobe.datasets.mat import channel_columns, file_key, loadmat
from embedprobe.datasets.walk import find_paths, require_folder

FORMAT = "bnci2014_001"
READER_SETTINGS = ("sessions",)  # dataset entry keys passed to find_recordings
EEG_CHANNELS = (
    "Fz", "FC3", "FC1", "FCz", "FC2", "FC4", "C5", "C3", "C1", "Cz", "C2", "C4", "C6",
    "CP3", "CP1", "CPz", "CP2", "CP4", "P1", "Pz", "P2", "POz",
)  # fmt: skip
EOG_CHANNELS = ("EOG1", "EOG2", "EOG3")
CHANNELS = EEG_CHANNELS + EOG_CHANNELS
SFREQ = 250.0
SESSIONS = ("T", "E")
FIELDS = ("X", "trial", "y", "fs", "classes", "artifacts", "gender", "age")
CUE_SECONDS = 2.0  # from the trial start (`trial`) to the cue
IMAGERY_SECONDS = 4.0  # from the cue to the end of the trial (fixation cross off at t = 6 s)
# The `classes` texts of the files -> MOABB's names (its standardize_keys).
CLASS_NAMES = {"left hand": "left_hand", "right hand": "right_hand", "feet": "feet",
               "both feet": "feet", "tongue": "tongue"}
_NAME = re.compile(r"^A(?P<subject>\d{2})(?P<session>[TE])\.mat$")
_FIX_DOWNLOAD = "download the file again (BNCI Horizon 2020, data set 001-2014)"


@dataclass(frozen=True)
class Recording:
    recording: str  # "A01T_run4"
    mat: Path
    subject: str  # "A01"
    session_name: str  # "T" or "E"
    run: int  # position in the `data` cell, 1-based; 0 for a missing file's placeholder

    # The reader interface's names (datasets/base.py)
    @property
    def session(self) -> str:
        return f"{self.session_name}_run{self.run}"

    @property
    def signal_path(self) -> Path:
        return self.mat

    @property
    def files(self) -> tuple[Path, ...]:
        return () if self.run == 0 else (self.mat,)

    @property
    def problem(self) -> str:
        return f"{self.mat.name} (session {self.session_name} of {self.subject}) is missing" \
            if self.run == 0 else ""


@dataclass(frozen=True)
class Run:
    """One parsed run struct."""

    X: np.ndarray  # (samples, 25) microvolts
    trial: np.ndarray  # int64, 1-based trial starts
    y: np.ndarray  # int64 class codes
    fs: float
    classes: tuple[str, ...]
    artifacts: np.ndarray


def check_sessions(sessions: Sequence[str]) -> tuple[str, ...]:
    chosen = tuple(s for s in SESSIONS if s in set(sessions))
    if not chosen or set(sessions) - set(SESSIONS):
        raise UsageError(f"sessions {list(sessions)}: BNCI 2014-001 has sessions T and E",
                         fix="use sessions: [T, E] (or one of them)")
    return chosen


def _vector(value, path: Path, run: int, name: str) -> np.ndarray:
    array = np.atleast_1d(np.asarray(value))
    if array.size and not np.issubdtype(array.dtype, np.number):
        raise DataError(f"{path}: run {run} field {name} is not numeric ({array.dtype})",
                        fix=_FIX_DOWNLOAD)
    return array.reshape(-1)


def _parse_run(struct, path: Path, run: int) -> Run:
    if not isinstance(struct, dict):
        raise DataError(f"{path}: data{{{run}}} is not a run struct ({type(struct).__name__})",
                        fix=_FIX_DOWNLOAD)
    missing = [f for f in ("X", "trial", "y", "fs", "classes") if f not in struct]
    if missing:
        raise DataError(f"{path}: run {run} has no field {', '.join(missing)} (a BNCI "
                        f"2014-001 run holds {', '.join(FIELDS)})", fix=_FIX_DOWNLOAD)
    X = np.asarray(struct["X"])
    if X.ndim != 2 or X.shape[1] != len(CHANNELS) or not np.issubdtype(X.dtype, np.number):
        raise DataError(f"{path}: run {run} X has shape {X.shape}, expected samples x "
                        f"{len(CHANNELS)} (22 EEG + 3 EOG)", fix=_FIX_DOWNLOAD)
    trial = _vector(struct["trial"], path, run, "trial").astype(np.int64)
    y = _vector(struct["y"], path, run, "y").astype(np.int64)
    artifacts = _vector(struct.get("artifacts", []), path, run, "artifacts")
    if len(y) != len(trial):
        raise DataError(f"{path}: run {run} has {len(trial)} trial starts but {len(y)} "
                        "labels y", fix=_FIX_DOWNLOAD)
    if len(trial) and (trial.min() < 1 or trial.max() > X.shape[0]):
        raise DataError(f"{path}: run {run} has trial starts outside its {X.shape[0]} "
                        "samples", fix=_FIX_DOWNLOAD)
    classes = struct["classes"]
    classes = (classes,) if isinstance(classes, str) else tuple(
        str(c) for c in np.atleast_1d(np.asarray(classes, dtype=object)).reshape(-1))
    return Run(X, trial, y, float(np.asarray(struct["fs"]).reshape(-1)[0]), classes, artifacts)


@functools.lru_cache(maxsize=1)
def _load(path: str, size: int, mtime_ns: int) -> tuple[Run, ...]:
    """Every run of one file (kept for the next call: a run's header, events and signals are
    read one after another)."""
    content = loadmat(path, _FIX_DOWNLOAD, simplify_cells=True)
    if "data" not in content:
        raise DataError(f"{path}: no variable `data` (the cell of runs of a BNCI 2014-001 "
                        "session file)", fix=_FIX_DOWNLOAD)
    runs = content["data"]
    runs = [runs] if isinstance(runs, dict) else list(np.atleast_1d(np.asarray(runs,
                                                                              dtype=object)))
    parsed = tuple(_parse_run(struct, Path(path), k + 1) for k, struct in enumerate(runs))
    _check_session(parsed, Path(path))
    return parsed


def _check_session(runs: Sequence[Run], path: Path) -> None:
    """Calibration runs (no trials) come first; every run after them holds trials."""
    with_trials = [k for k, r in enumerate(runs) if len(r.trial)]
    if not with_trials:
        raise DataError(f"{path}: none of its {len(runs)} runs holds trials (a session has "
                        "6 runs of 48 after the EOG calibration)", fix=_FIX_DOWNLOAD)
    empty = [k + 1 for k in range(with_trials[0], len(runs)) if not len(runs[k].trial)]
    if empty:
        raise DataError(f"{path}: run {empty[0]} holds no trials, but it comes after the EOG "
                        f"calibration runs (1-{with_trials[0]}), where every run has trials",
                        fix=f"{_FIX_DOWNLOAD}; the copy may be cut")


def read_runs(path: Path) -> tuple[Run, ...]:
    return _load(*file_key(path, _FIX_DOWNLOAD))


@functools.lru_cache(maxsize=64)
def _runs_with_trials(path: str, size: int, mtime_ns: int) -> tuple[int, ...]:
    return tuple(k + 1 for k, r in enumerate(_load(path, size, mtime_ns)) if len(r.trial))


def find_recordings(root: Path, sessions: Sequence[str] = SESSIONS) -> list[Recording]:
    """One recording per run with trials of every `A0sS.mat` under root (S in `sessions`),
    sorted by id; a subject missing one of the sessions gets a placeholder naming the file."""
    root = Path(root)
    wanted = check_sessions(sessions)
    require_folder(root, "BNCI 2014-001",
                   fix="put A01T.mat ... A09E.mat there (BNCI Horizon 2020, data set "
                       "001-2014), or let the demo_data rule write a look-alike")
    files: dict[tuple[str, str], Path] = {}
    for path in find_paths(root, "A*.mat"):
        match = _NAME.match(path.name)
        if not match or match["session"] not in wanted:
            continue
        key = (f"A{match['subject']}", match["session"])
        if key in files:
            raise DataError(f"{path.name} is there twice: {files[key]} and {path}",
                            fix="keep one copy under the data root")
        files[key] = path
    recordings = []
    for subject in sorted({s for s, _ in files}):
        for session in wanted:
            path = files.get((subject, session))
            if path is None:
                folder = next(p.parent for (s, _), p in files.items() if s == subject)
                recordings.append(Recording(f"{subject}{session}", folder /
                                            f"{subject}{session}.mat", subject, session, 0))
                continue
            stat = path.stat()
            for run in _runs_with_trials(str(path), stat.st_size, stat.st_mtime_ns):
                recordings.append(Recording(f"{subject}{session}_run{run}", path, subject,
                                            session, run))
    return sorted(recordings, key=lambda r: (r.subject, r.session_name == "E", r.run))


def _run(rec: Recording) -> Run:
    runs = read_runs(rec.mat)
    if not 1 <= rec.run <= len(runs):
        raise DataError(f"{rec.mat}: has {len(runs)} runs, no run {rec.run}",
                        fix="the file changed since it was listed; run again")
    return runs[rec.run - 1]


# The reader interface (datasets/base.py) --------------------------------------------------


def read_header(rec: Recording) -> RecordingHeader:
    run = _run(rec)
    return RecordingHeader(CHANNELS, run.fs, run.X.shape[0])


def read_signals(rec: Recording, channels: Sequence[str], span=None) -> Signals:
    """The named channels (of CHANNELS) as float32 volts (a span cut from the run: a
    run is a few minutes)."""
    columns = channel_columns(rec.mat, CHANNELS, channels)
    run = _run(rec)
    first, stop = span_within(span, len(run.X))
    data = (run.X[first:stop, columns].T * 1e-6).astype(np.float32)
    return Signals(run.fs, list(channels), data)


def read_events(rec: Recording) -> list[Event]:
    """One event per trial: the cue (trial start + 2 s) with its class, lasting 4 s."""
    run = _run(rec)
    events = []
    for start, code in zip(run.trial, run.y, strict=True):
        if not 1 <= code <= len(run.classes):
            raise DataError(
                f"{rec.mat}: run {rec.run} has unknown event code y={code} at sample {start} "
                f"(its classes: {', '.join(f'{k + 1} {c}' for k, c in enumerate(run.classes))})",
                fix=_FIX_DOWNLOAD)
        text = run.classes[code - 1]
        name = CLASS_NAMES.get(text.strip().lower())
        if name is None:
            raise DataError(f"{rec.mat}: run {rec.run} names class {code} {text!r}, not one of "
                            f"{', '.join(repr(k) for k in CLASS_NAMES)}", fix=_FIX_DOWNLOAD)
        events.append(Event(float((start - 1) / run.fs + CUE_SECONDS), IMAGERY_SECONDS, name))
    return events
