"""Nakanishi 2015 12-class SSVEP (mnakanishi/12JFPM_SSVEP), as MOABB's Nakanishi2015 loads it.

Files: `s1.mat` ... `s10.mat`, one per subject (MATLAB 5 files, read with scipy.io.loadmat),
each holding one variable `eeg`, a double array [targets, channels, samples, blocks] =
[12, 8, 1114, 15] in microvolts: 8 occipital channels PO7, PO3, POz, PO4, PO8, O1, Oz, O2 (the
files name none: the order is the README's and MOABB's), 256 Hz, 15 blocks of one trial per
target. The data were band-pass filtered (6-80 Hz, zero phase) and downsampled by the authors.
The target axis is in the README's order of stimulus frequencies, not ascending:

    9.25, 11.25, 13.25, 9.75, 11.75, 13.75, 10.25, 12.25, 14.25, 10.75, 12.75, 14.75 Hz

with the joint frequency-phase code's phases 0, 0, 0, 0.5, 0.5, 0.5, 1, 1, 1, 1.5, 1.5, 1.5 pi
(ascending frequency: phase 0.5 pi per 0.5 Hz step, modulo 2 pi). Each 1114-sample epoch
(4.35 s) starts 38 samples (0.148 s) before the stimulus onset ("the onset of visual
stimulation is at the 39th sample point", README); the flicker then lasts 4 s (a 1 s gaze cue
comes before it and is not in the epoch).

A recording is one subject's file, laid out as MOABB's _get_single_subject_data makes its one
continuous raw (session "0", run "0"): the epochs in target-major order (trial k = target *
blocks + block: all blocks of 9.25 Hz, then all of 11.25 Hz, ...), each de-meaned per channel
over its 1114 samples and put between 50 samples of zeros, so trial k occupies samples
[k * 1214, (k + 1) * 1214) and its epoch starts at k * 1214 + 50. Id and subject "s01" ...
"s10" (zero-padded, so that ids sort as the subjects do), session "0".

Events: one per trial, named as MOABB names its events (the frequency as text: "9.25", ...,
"14.75"), onset = the stimulus onset (k * 1214 + 50 + 38 samples), duration 4 s. MOABB puts
its stim-channel event at the epoch start, 38 samples (0.148 s) earlier, and cuts its SSVEP
interval [0.15, 4.3] s from there: ~[0.0016, 4.15] s after the onset used here.

Blocks: the real files hold 15; a file with fewer (the demo look-alike) is read the same way
(MOABB's loader itself hard-codes 15). Any other shape is refused with a DataError naming the
file.

MOABB itself (moabb/datasets/ssvep_nakanishi.py) takes no folder argument: data_path() goes
through its download module, which looks only in its download cache (the URL without its host:
<MNE_DATASETS_NAKANISHI_PATH or MNE_DATA>/MNE-nakanishi-data/mnakanishi/12JFPM_SSVEP/raw/master/
data/sN.mat), downloads a file missing there instead of naming it, and (with its NEMAR mirror,
nm000118) may try NEMAR first unless MOABB_DOWNLOAD_PROVIDER=upstream; its subject list is
range(1, 10), so s10.mat, which the repository has, is never loaded by MOABB, and it needs all
15 blocks. Cross-checked offline with moabb 1.7.2 (tests/datasets/test_nakanishi2015.py,
EMBEDPROBE_TRY_MOABB=1; MOABB_DOWNLOAD_PROVIDER=upstream, sockets refused): on a 15-block
look-alike s1.mat, get_data finds the same 180 trials (15 per frequency) with the same
frequency names; its stim-channel events (RawToEvents) are at the epoch starts, 38 samples
before the onsets here, and its annotations (shifted by int(0.15 * 256) = 38 samples) are at
exactly these onsets, lasting 4.15 s.
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
from embedprobe.datasets.mat import SubjectMat, channel_columns, file_key, loadmat, whosmat
from embedprobe.datasets.walk import find_paths, require_folder

FORMAT = "nakanishi2015"
READER_SETTINGS = ()
CHANNELS = ("PO7", "PO3", "POz", "PO4", "PO8", "O1", "Oz", "O2")
SFREQ = 256.0
# Stimulus frequency (Hz) and phase (in pi) of each index of the target axis, README's order.
FREQUENCIES = (9.25, 11.25, 13.25, 9.75, 11.75, 13.75, 10.25, 12.25, 14.25, 10.75, 12.75, 14.75)
PHASES_PI = (0.0, 0.0, 0.0, 0.5, 0.5, 0.5, 1.0, 1.0, 1.0, 1.5, 1.5, 1.5)
# MOABB's event names (its event_id keys): the frequency as text, in the same order.
EVENT_NAMES = ("9.25", "11.25", "13.25", "9.75", "11.75", "13.75", "10.25", "12.25", "14.25",
               "10.75", "12.75", "14.75")
N_TARGETS = 12
N_SAMPLES = 1114  # per epoch
N_BLOCKS = 15  # in the real files
ONSET_SAMPLE = 38  # stimulus onset within the epoch (the README's 39th sample point, 1-based)
STIMULUS_SECONDS = 4.0
BUFFER = 50  # MOABB's zeros before and after each epoch in its continuous raw
TRIAL_SAMPLES = BUFFER + N_SAMPLES + BUFFER
VARIABLE = "eeg"
_NAME = re.compile(r"^s(?P<subject>\d+)\.mat$")
_FIX_DOWNLOAD = ("download the file again (github.com/mnakanishi/12JFPM_SSVEP, data/sN.mat: "
                 "eeg is [12 targets, 8 channels, 1114 samples, 15 blocks])")


@dataclass(frozen=True)
class Recording(SubjectMat):  # "s01": s1.mat
    number: int  # the file's subject number (s1.mat -> 1)


def check_shape(shape: Sequence[int], path: Path) -> int:
    """The number of blocks of an `eeg` array of this shape; any other layout is a DataError."""
    shape = tuple(int(n) for n in shape)
    if len(shape) != 4 or shape[:3] != (N_TARGETS, len(CHANNELS), N_SAMPLES) or shape[3] < 1:
        hint = ""
        if len(shape) == 4 and shape[3] == N_TARGETS and shape[0] != N_TARGETS:
            hint = " (the axes look reversed: saved with another axis order?)"
        raise DataError(
            f"{path}: `{VARIABLE}` has shape {list(shape)}, expected [12 targets, 8 channels, "
            f"1114 samples, blocks] ([12, 8, 1114, 15] in the real files){hint}",
            fix=f"{_FIX_DOWNLOAD}; keep the array as MATLAB saved it")
    return shape[3]


def _shape_in_file(path: Path) -> tuple[int, ...]:
    """The `eeg` array's shape from the file's variable headers (scipy.io.whosmat)."""
    shapes = {name: shape for name, shape, _kind in whosmat(path, _FIX_DOWNLOAD)}
    if VARIABLE not in shapes:
        raise DataError(f"{path}: no variable `{VARIABLE}` (it holds "
                        f"{', '.join(shapes) or 'no variable'}; a Nakanishi 2015 subject file "
                        "holds the array `eeg`)", fix=_FIX_DOWNLOAD)
    return tuple(shapes[VARIABLE])


@functools.lru_cache(maxsize=64)
def _blocks(path: str, size: int, mtime_ns: int) -> int:
    return check_shape(_shape_in_file(Path(path)), Path(path))


def blocks_of(path: Path) -> int:
    return _blocks(*file_key(path, _FIX_DOWNLOAD))


def continuous(eeg: np.ndarray) -> np.ndarray:
    """MOABB's continuous layout of an `eeg` array (microvolts in, microvolts out, float64):
    (8, trials * 1214), trials in target-major order, each de-meaned and between zeros."""
    blocks = eeg.shape[3]
    epochs = np.transpose(eeg, (0, 3, 1, 2)).reshape(N_TARGETS * blocks, len(CHANNELS),
                                                     N_SAMPLES).astype(np.float64)
    epochs = epochs - epochs.mean(axis=2, keepdims=True)
    padded = np.zeros((len(epochs), len(CHANNELS), TRIAL_SAMPLES))
    padded[:, :, BUFFER:BUFFER + N_SAMPLES] = epochs
    return np.concatenate(list(padded), axis=1)


@functools.lru_cache(maxsize=2)
def _load(path: str, size: int, mtime_ns: int) -> np.ndarray:
    """One subject's continuous signals in volts, float32 (kept for the next call: a
    recording's header, events and signals are read one after another)."""
    content = loadmat(path, _FIX_DOWNLOAD, squeeze_me=False)
    if VARIABLE not in content:
        names = [k for k in content if not k.startswith("__")]
        raise DataError(f"{path}: no variable `{VARIABLE}` (it holds "
                        f"{', '.join(names) or 'no variable'}; a Nakanishi 2015 subject file "
                        "holds the array `eeg`)", fix=_FIX_DOWNLOAD)
    eeg = np.asarray(content[VARIABLE])
    check_shape(eeg.shape, Path(path))
    if not np.issubdtype(eeg.dtype, np.number):
        raise DataError(f"{path}: `{VARIABLE}` is not numeric ({eeg.dtype})", fix=_FIX_DOWNLOAD)
    return (continuous(eeg) * 1e-6).astype(np.float32)


def _signals(rec: Recording) -> np.ndarray:
    return _load(*file_key(rec.mat, _FIX_DOWNLOAD))


def _number(path: Path) -> int | None:
    match = _NAME.match(path.name)
    return int(match["subject"]) if match else None


def find_recordings(root: Path) -> list[Recording]:
    """One recording per `sN.mat` under root, sorted by subject; each file's `eeg` shape is
    checked from its variable headers."""
    root = require_folder(root, "Nakanishi 2015",
                          fix="put s1.mat ... s10.mat there (github.com/mnakanishi/12JFPM_SSVEP, "
                              "folder data/), or let the demo_data rule write a look-alike")
    files = one_each(find_paths(root, "s*.mat"), _number)  # s1.mat and s01.mat: twice
    recordings = []
    for number in sorted(files):
        blocks_of(files[number])
        recordings.append(Recording(f"s{number:02d}", files[number], number))
    return recordings


# The reader interface (datasets/base.py) --------------------------------------------------


def read_header(rec: Recording) -> RecordingHeader:
    """From the file's variable headers: no samples read."""
    return RecordingHeader(CHANNELS, SFREQ, N_TARGETS * blocks_of(rec.mat) * TRIAL_SAMPLES)


def read_signals(rec: Recording, channels: Sequence[str], span=None) -> Signals:
    """The named channels (of CHANNELS) as float32 volts, MOABB's continuous layout."""
    rows = channel_columns(rec.mat, CHANNELS, channels)
    data = _signals(rec)
    first, stop = span_within(span, data.shape[1])
    return Signals(SFREQ, list(channels), np.ascontiguousarray(data[rows, first:stop]))


def trial_onset_sample(trial: int) -> int:
    """Stimulus onset of trial k (target-major) in the continuous signal, in samples."""
    return trial * TRIAL_SAMPLES + BUFFER + ONSET_SAMPLE


def read_events(rec: Recording) -> list[Event]:
    """One event per trial: the stimulus onset, named by its frequency as MOABB names it,
    lasting the 4 s of flicker."""
    blocks = blocks_of(rec.mat)
    return [Event(trial_onset_sample(target * blocks + block) / SFREQ, STIMULUS_SECONDS,
                  EVENT_NAMES[target])
            for target in range(N_TARGETS) for block in range(blocks)]
