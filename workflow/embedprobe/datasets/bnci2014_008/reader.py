"""BNCI 2014-008 (P300 speller, 8 people with ALS; Riccio et al. 2013) as the BNCI Horizon site
distributes it for MOABB.

Files: `A01.mat` ... `A08.mat`, one per subject (one session, one continuous run). Each holds
one variable `data`, a 1 x 1 struct with fields (in this order) channels (1 x 8 cell: Fz, Cz,
Pz, Oz, P3, P4, PO7, PO8), X (samples x 8 double, microvolts), y (samples x 1: 0 no flash,
1 flash of a non-target row/column, 2 flash of the target's row or column), y_stim (samples
x 1: 0, or the flashed row 1-6 / column 7-12), trial (1 x 35: the 1-based sample of each
character's first flash), classes ({'NonTarget', 'Target'}), classes_stim ({'Row1' ...
'Col6'}), gender, age, ALSfrs, onsetALS (texts). The file holds no rate: it is 256 Hz
(MOABB writes it in). Each of the 35 characters (7 words of 5) is 10 repetitions of the 12
row/column flashes in random order, each flash 125 ms on (32 samples of y / y_stim) and 125 ms
off: 4200 flashes, 700 Target and 3500 NonTarget (1:5).

Events: one per flash, where y steps up (MOABB's _convert_run_p300_sl puts y in a stim channel
and finds its events with mne.find_events, consecutive="increasing", keeping codes 1 and 2):
onset = that 0-based sample / 256 s, description "Target" (y = 2) or "NonTarget" (y = 1)
(MOABB's names, its event_id {"Target": 2, "NonTarget": 1}), duration 1.0 s (MOABB's
interval [0, 1.0] after the flash onset). The 1 s epochs of consecutive flashes overlap.

A recording is one file: id "A01", subject "A01", session "0".

MOABB's BNCI2014_008 takes no folder argument: its loader (_load_data_008_2014) looks for the
file only where its downloader caches the URL https://lampx.tugraz.at/~bci/database/008-2014/
A0s.mat, <MNE_DATASETS_BNCI_PATH or MNE_DATA>/MNE-bnci-data/~bci/database/008-2014/A0s.mat,
downloads a missing file instead of naming it, and loads it with scipy.io.loadmat
(struct_as_record=False, squeeze_me=True): the same fields read here. A file already in that
cache is read offline (pooch only hashes it). Cross-checked offline with moabb 1.7.2
(tests/datasets/test_bnci2014_008.py, EMBEDPROBE_TRY_MOABB=1; MOABB_DOWNLOAD_PROVIDER=upstream,
sockets refused): on the look-alike's A01.mat, get_data's stim-channel events (RawToEvents)
and annotations are the same 120 flashes (20 Target) as this reader's, same onsets and classes.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from embedprobe.core.errors import DataError
from embedprobe.datasets.base import Event, RecordingHeader, Signals, one_each, span_within
from embedprobe.datasets.mat import SubjectMat, channel_columns, file_key, loadmat
from embedprobe.datasets.walk import find_paths, require_folder

FORMAT = "bnci2014_008"
CHANNELS = ("Fz", "Cz", "Pz", "Oz", "P3", "P4", "PO7", "PO8")
SFREQ = 256.0  # not in the files: MOABB's _convert_run_p300_sl sets it
FIELDS = ("channels", "X", "y", "y_stim", "trial", "classes", "classes_stim", "gender", "age",
          "ALSfrs", "onsetALS")
CODES = {1: "NonTarget", 2: "Target"}  # y; MOABB's event_id {"Target": 2, "NonTarget": 1}
EPOCH_SECONDS = 1.0  # MOABB's interval [0, 1.0] after each flash onset
_NAME = re.compile(r"^A0[1-8]\.mat$")
_FIX_DOWNLOAD = ("download the file again (BNCI Horizon 2020, data set 008-2014: "
                 "http://bnci-horizon-2020.eu/database/data-sets/008-2014/)")


Recording = SubjectMat  # "A01": A01.mat


@dataclass(frozen=True)
class Run:
    """The parsed `data` struct."""

    channels: tuple[str, ...]
    X: np.ndarray  # (samples, 8) microvolts
    y: np.ndarray  # (samples,) int64: 0, 1 NonTarget, 2 Target


def _texts(value) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    return tuple(str(v).strip() for v in np.atleast_1d(np.asarray(value, dtype=object)).ravel())


def _parse(content: dict, path: Path) -> Run:
    if "data" not in content:
        held = ", ".join(sorted(k for k in content if not k.startswith("__"))) or "no variable"
        raise DataError(f"{path}: no variable `data` (the struct of a BNCI 2014-008 subject "
                        f"file); it holds {held}", fix=_FIX_DOWNLOAD)
    data = content["data"]
    if not isinstance(data, dict):
        raise DataError(f"{path}: `data` is not a struct ({type(data).__name__})",
                        fix=_FIX_DOWNLOAD)
    if "X" not in data:
        raise DataError(f"{path}: `data` has no field X (the EEG, samples x 8; a BNCI 2014-008 "
                        f"file holds {', '.join(FIELDS)})", fix=_FIX_DOWNLOAD)
    if "y" not in data:
        raise DataError(
            f"{path}: `data` has no field y, the trial markers (per sample: 0 no flash, "
            "1 NonTarget, 2 Target); without them no flash can be labelled",
            fix=f"{_FIX_DOWNLOAD}; a copy converted or trimmed elsewhere may have dropped y")
    X = np.asarray(data["X"])
    if X.ndim != 2 or X.shape[1] != len(CHANNELS) or not np.issubdtype(X.dtype, np.number):
        raise DataError(f"{path}: X has shape {X.shape} ({X.dtype}), expected samples x "
                        f"{len(CHANNELS)} numbers ({', '.join(CHANNELS)})",
                        fix=f"{_FIX_DOWNLOAD}; X is samples x channels, not transposed")
    y = np.asarray(data["y"])
    if y.size != X.shape[0] or not np.issubdtype(y.dtype, np.number):
        raise DataError(f"{path}: y has {y.size} values ({y.dtype}) for {X.shape[0]} samples "
                        "of X (one trial marker per sample)", fix=_FIX_DOWNLOAD)
    y = y.reshape(-1).astype(np.int64)
    unknown = sorted(set(np.unique(y).tolist()) - {0, *CODES})
    if unknown:
        raise DataError(f"{path}: y holds code {unknown[0]}; its codes are 0 (no flash), "
                        "1 NonTarget, 2 Target", fix=_FIX_DOWNLOAD)
    if not y.any():
        raise DataError(f"{path}: y marks no flash (all {len(y)} samples are 0)",
                        fix=_FIX_DOWNLOAD)
    channels = _texts(data["channels"]) if "channels" in data else CHANNELS
    if len(channels) != len(CHANNELS):
        raise DataError(f"{path}: channels names {len(channels)} channels ({', '.join(channels)})"
                        f" for the {len(CHANNELS)} columns of X", fix=_FIX_DOWNLOAD)
    return Run(channels, X, y)


@functools.lru_cache(maxsize=2)
def _load(path: str, size: int, mtime_ns: int) -> Run:
    return _parse(loadmat(path, _FIX_DOWNLOAD, simplify_cells=True), Path(path))


def read_run(path: Path) -> Run:
    return _load(*file_key(path, _FIX_DOWNLOAD))


def find_recordings(root: Path) -> list[Recording]:
    """One recording per `A0s.mat` under root, sorted by id."""
    root = require_folder(root, "BNCI 2014-008",
                          fix="put A01.mat ... A08.mat there (BNCI Horizon 2020, data set "
                              "008-2014), or let the demo_data rule write a look-alike")
    found = one_each(find_paths(root, "A0*.mat"),
                     lambda p: p.stem if _NAME.match(p.name) else None)
    return [Recording(name, found[name]) for name in sorted(found)]


# The reader interface (datasets/base.py) --------------------------------------------------


def read_header(rec: Recording) -> RecordingHeader:
    run = read_run(rec.mat)
    return RecordingHeader(run.channels, SFREQ, run.X.shape[0])


def read_signals(rec: Recording, channels: Sequence[str], span=None) -> Signals:
    """The named channels as float32 volts (X is in microvolts)."""
    run = read_run(rec.mat)
    columns = channel_columns(rec.mat, run.channels, channels)
    first, stop = span_within(span, len(run.X))
    data = (run.X[first:stop, columns].T * 1e-6).astype(np.float32)
    return Signals(SFREQ, list(channels), data)


def flash_onsets(y: np.ndarray) -> np.ndarray:
    """0-based samples where y steps up (mne.find_events' consecutive="increasing")."""
    previous = np.concatenate([[0], y[:-1]])
    return np.flatnonzero(y > previous)


def read_events(rec: Recording) -> list[Event]:
    """One event per flash: "Target" or "NonTarget" at its onset, lasting 1.0 s."""
    y = read_run(rec.mat).y
    return [Event(float(k / SFREQ), EPOCH_SECONDS, CODES[int(y[k])]) for k in flash_onsets(y)]
