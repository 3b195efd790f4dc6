"""The Dreem Open Datasets (Guillot et al., IEEE TNSRE 2020): DOD-H, 25 healthy sleepers, and
DOD-O, 56 patients with obstructive sleep apnea, one lab polysomnography night each.

As distributed (Zenodo record 15900394: dodh.zip and dodo.zip; earlier the S3 buckets that
Dreem-Organization/dreem-learning-open's download_data.py fetches), one HDF5 file per night,
named by a UUID, in a folder per cohort (the zips unpack to dodh/ and dodo/, beside a __MACOSX/
folder of macOS metadata, which is skipped):

  <root>/dodh/<uuid>.h5     DOD-H: healthy        <root>/dodo/<uuid>.h5     DOD-O: OSA

Inside each file (dreem-learning-open's README "Each h5 is in the following format", its
test/utils.py generate_fake_record, Dreem's support page "How to read: H5 file", and the
reference suite's reader, kkontras/NeuroAtlas extensions/datasets/dataio/dod.py):

  hypnogram                 the consensus of the 5 scorers, one integer per 30 s epoch from the
                            first sample: -1 NOT SCORED, 0 WAKE, 1 N1, 2 N2, 3 N3, 4 REM
                            (also dreem-learning-evaluation's README)
  signals/eeg/<derivation>  one 1-D dataset per channel, e.g. C3_M2, F3_F4, FP1_O1
  signals/eog/EOG1, EOG2    signals/emg/EMG, ECG
  signals/<group>.attrs     fs (Hz: 250) and unit, for the group's channels
  attrs                     description (JSON: per signal its path, fs, unit, name, domain),
                            start_time (UTC seconds), duration, events_description; events/

DOD-H records 12 EEG derivations (C3_M2, F3_F4, F3_M2, F3_O1, F4_M1, F4_O2, FP1_F3, FP1_M2,
FP1_O1, FP2_F4, FP2_M1, FP2_O2), DOD-O 8 (C3_M2, C4_M1, F3_F4, F3_M2, F3_O1, F4_O2, O1_M2,
O2_M1); 5 are common to both. Channels are named as their datasets are ("C3_M2").
Zero-filling, an explicit step of this reader alone: the reference (dataio/dod.py
DEFAULT_CHANNELS, read_dod_channels) hands every model the union of both cohorts, 15 EEG
derivations in its order (EEG_CHANNELS: C3_M2, C4_M1, F3_F4, F3_M2, F3_O1, F4_M1, F4_O2, FP1_F3,
FP1_M2, FP1_O1, FP2_F4, FP2_M1, FP2_O2, O1_M2, O2_M1), and fills those a file lacks with zeros;
read_signals does the same for those 15 names only (any other missing channel is refused),
read_header still reports what the file records, and zero_filled names what is filled (the
index prints it as a `note:`; config/channel_maps/dod.yaml says which family reads what).
The sampling rate is the dataset's `fs` attribute,
else its group's, else the `description` entry of its path (dreem-learning-open reads it
there); the unit likewise. The signals are in microvolts: an absent or empty unit is read as
uV (the reference reports "uV"; dreem-learning-open's EDF converter writes uV), uV/mV/V are
scaled to volts, anything else is refused.

The hypnograms are trimmed to lights-off .. lights-on and the signals to the hypnogram (the
reference reads len(hypnogram) x 30 s from the first sample; dreem-learning-open's memmaps
assert a whole number of 30 s epochs of signal when a hypnogram is there): a signal that ends
before the hypnogram's last epoch, or that runs a whole epoch or more past it, leaves the
alignment in doubt and is refused; a partial epoch at the end is dropped. -1 epochs are left
out (counted as ("unscored", "-1")).

A recording is one file: id its UUID, subject "<cohort>__<uuid>" (the reference's subject id:
it carries the cohort, so `fold_strata: '^(dodh|dodo)'` cuts DOD-H and DOD-O into folds apart,
as the reference's _patient_splits does), session "1". Its recording-level class is its
cohort's: "healthy" (dodh/) or "osa" (dodo/). The upstream README names one DOD-O record
without consensus scoring (5d8e93a5-d26a-436d-bc2c-e9527dc92cbf, the paper's cohort is 55):
a file without a hypnogram (or one with no scored epoch) is marked incomplete (`problem`) and
refused when read.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from embedprobe.core.errors import DataError
from embedprobe.datasets.base import Event, RecordingHeader, Signals, span_within
from embedprobe.datasets.sleep_edf.reader import trim_wake
from embedprobe.datasets.walk import find_paths, require_folder

FORMAT = "dod"
CLASSES = ("healthy", "osa")
COHORTS = {"dodh": "healthy", "dodo": "osa"}  # folder -> class
STAGES = ("W", "N1", "N2", "N3", "REM")  # label index = hypnogram code
UNSCORED_CODE = -1
EPOCH_SECONDS = 30
SESSION = "1"
HYPNOGRAM = "hypnogram"
SIGNALS = "signals"
# imported by read_signals on first use: a reader thread finds it imported (window_source)
SIGNAL_IMPORTS = ("h5py",)
SIGNAL_GROUPS = ("eeg", "eog", "emg")  # the file's groups, EEG first
DODH_EEG = ("C3_M2", "F3_F4", "F3_M2", "F3_O1", "F4_M1", "F4_O2", "FP1_F3", "FP1_M2", "FP1_O1",
            "FP2_F4", "FP2_M1", "FP2_O2")
DODO_EEG = ("C3_M2", "C4_M1", "F3_F4", "F3_M2", "F3_O1", "F4_O2", "O1_M2", "O2_M1")
# 15: what either cohort records, in the reference's DEFAULT_CHANNELS order (its display names
# C3, C4, F3-F4, F3, ... sort as these do); a file's missing ones are read as zeros
EEG_CHANNELS = tuple(sorted(set(DODH_EEG) | set(DODO_EEG)))
COMMON_EEG = tuple(c for c in DODH_EEG if c in DODO_EEG)  # 5: what every file records
MACOS_METADATA = "__MACOSX"
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.I)
_VOLTS_PER_UNIT = {"": 1e-6, "uv": 1e-6, "µv": 1e-6, "μv": 1e-6, "microvolt": 1e-6,
                   "microvolts": 1e-6, "mv": 1e-3, "v": 1.0}
_FIX_DOWNLOAD = ("download the file again from Zenodo record 15900394 (dodh.zip / dodo.zip) "
                 "and unzip it in place")


@dataclass(frozen=True)
class Recording:
    recording: str  # the file's UUID
    path: Path
    cohort: str  # "dodh" or "dodo"
    missing: str = ""  # why the file cannot be labelled ("" when it can)

    # The reader interface's names (datasets/base.py)
    @property
    def subject(self) -> str:
        return f"{self.cohort}__{self.recording}"

    @property
    def session(self) -> str:
        return SESSION

    @property
    def signal_path(self) -> Path:
        return self.path

    @property
    def files(self) -> tuple[Path, ...]:
        return (self.path,)

    @property
    def problem(self) -> str:
        return self.missing


# --- finding the files -----------------------------------------------------------------------


def _is_macos_metadata(path: Path, root: Path) -> bool:
    """__MACOSX/ entries and AppleDouble '._name' files: zip metadata, not recordings."""
    return MACOS_METADATA in path.relative_to(root).parts or path.name.startswith("._")


def find_recordings(root: Path) -> list[Recording]:
    """Every <uuid>.h5 in dodh/ and dodo/ under root, sorted by UUID; any other .h5 (one in no
    cohort folder, or not named by a UUID) is refused: its class would be unknown."""
    root = require_folder(root, "DOD",
                          fix="unzip dodh.zip and dodo.zip (Zenodo record 15900394) there, or "
                              "write a look-alike: python scripts/make_demo_data.py ")
    found: dict[str, Recording] = {}
    for path in find_paths(root, "*.h5"):
        if _is_macos_metadata(path, root):
            continue
        rec = _recording(path)
        if rec.recording in found:
            raise DataError(f"recording {rec.recording} is there twice: "
                            f"{found[rec.recording].path} and {path}",
                            fix="keep one copy, in dodh/ or dodo/ as distributed")
        found[rec.recording] = rec
    return [found[k] for k in sorted(found)]


def _recording(path: Path) -> Recording:
    cohort = path.parent.name
    if cohort not in COHORTS:
        raise DataError(
            f"{path}: an .h5 file in neither dodh/ nor dodo/, so whether it is a healthy "
            "(DOD-H) or an OSA (DOD-O) night is unknown",
            fix="move it into dodh/ (DOD-H) or dodo/ (DOD-O), as the Zenodo zips unpack, or "
                "remove it from the data folder")
    if not _UUID.match(path.stem):
        raise DataError(f"{path}: not a DOD file name (<uuid>.h5)",
                        fix="keep the distributed names, e.g. "
                            "0d79f4b1-e74f-5e87-8e42-f9dd7112ada5.h5")
    with _open(path) as h5:
        missing = _hypnogram_problem(h5, path)
    return Recording(path.stem.lower(), path, cohort, missing)


@contextmanager
def _open(path: Path):
    import h5py

    try:
        h5 = h5py.File(path, "r")
    except OSError as exc:
        raise DataError(f"{path}: not a readable HDF5 file ({exc})", fix=_FIX_DOWNLOAD) from exc
    with h5:
        yield h5


# --- the hypnogram ---------------------------------------------------------------------------


def _hypnogram_problem(h5, path: Path) -> str:
    """Why the file has no usable consensus hypnogram; "" when it has one."""
    if HYPNOGRAM not in h5:
        return f"{path.name} has no consensus hypnogram (no '{HYPNOGRAM}' dataset)"
    codes = h5[HYPNOGRAM][()]
    if np.ndim(codes) != 1 or len(codes) == 0:
        return f"{path.name} has an empty consensus hypnogram"
    if np.all(np.asarray(codes) == UNSCORED_CODE):
        return f"{path.name} has no consensus scoring (every epoch of its hypnogram is -1)"
    return ""


def _refuse_incomplete(rec: Recording) -> None:
    if rec.missing:
        raise DataError(
            f"{rec.path}: {rec.missing}",
            fix=f"remove {rec.path.name} from {rec.path.parent} (the upstream README names "
                "5d8e93a5-d26a-436d-bc2c-e9527dc92cbf, a DOD-O night without consensus "
                f"scoring), or {_FIX_DOWNLOAD}; allow_partial=true runs without it")


def read_hypnogram(rec: Recording) -> np.ndarray:
    """The consensus hypnogram's codes (int64, -1..4), one per 30 s epoch."""
    _refuse_incomplete(rec)
    with _open(rec.path) as h5:
        return _codes(h5, rec.path)


def _codes(h5, path: Path) -> np.ndarray:
    raw = np.asarray(h5[HYPNOGRAM][()])
    if raw.ndim != 1 or raw.dtype.kind not in "iuf":
        raise DataError(f"{path}: the hypnogram is not a list of numbers ({raw.dtype}, "
                        f"shape {raw.shape})", fix=_FIX_DOWNLOAD)
    finite = np.isfinite(raw)
    codes = np.rint(np.where(finite, raw, 0)).astype(np.int64)
    bad = ~finite | (codes != raw) | (codes < UNSCORED_CODE) | (codes >= len(STAGES))
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        raise DataError(f"{path}: hypnogram epoch {first} holds {raw[first].item()!r}, not a "
                        "DOD stage code (-1 not scored, 0 W, 1 N1, 2 N2, 3 N3, 4 REM)",
                        fix=_FIX_DOWNLOAD)
    return codes


# --- signals ---------------------------------------------------------------------------------


def _signals(h5, path: Path) -> dict[str, object]:
    """Channel name -> its dataset, EEG first, then the file's other signal groups."""
    if SIGNALS not in h5:
        raise DataError(f"{path}: no '{SIGNALS}' group (the signals of a DOD file)",
                        fix=_FIX_DOWNLOAD)
    group = h5[SIGNALS]
    order = [g for g in SIGNAL_GROUPS if g in group] + \
        sorted(g for g in group if g not in SIGNAL_GROUPS)
    channels: dict[str, object] = {}
    for name in order:
        if not hasattr(group[name], "keys"):
            continue
        for channel, dataset in group[name].items():
            if channel in channels:
                raise DataError(f"{path}: channel {channel} is in two signal groups",
                                fix=_FIX_DOWNLOAD)
            channels[channel] = dataset
    return channels


def _eeg(h5, path: Path) -> dict[str, object]:
    group = h5.get(f"{SIGNALS}/eeg")
    if group is None or not len(group):
        raise DataError(f"{path}: no EEG channels (group signals/eeg)", fix=_FIX_DOWNLOAD)
    return dict(group.items())


def _description(h5) -> dict[str, dict]:
    """The root `description` attribute's entries by signal path ({} when absent or unreadable:
    it is only a fallback for the groups' own attributes)."""
    raw = h5.attrs.get("description")
    if raw is None:
        return {}
    try:
        text = raw.decode() if isinstance(raw, bytes) else str(raw)
        entries = json.loads(text.rstrip("\x00"))
        return {str(e["path"]).strip("/"): e for e in entries if isinstance(e, dict)}
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        return {}


def _attribute(h5, dataset, key: str):
    """A signal's attribute: its dataset's, else its group's, else its `description` entry's."""
    for attrs in (dataset.attrs, dataset.parent.attrs):
        if key in attrs:
            return attrs[key]
    return _description(h5).get(dataset.name.strip("/"), {}).get(key)


def _sfreq(h5, dataset, path: Path) -> float:
    value = _attribute(h5, dataset, "fs")
    try:
        sfreq = float(np.asarray(value).reshape(-1)[0]) if value is not None else None
    except (TypeError, ValueError, IndexError):
        sfreq = None
    if sfreq is None or not np.isfinite(sfreq) or sfreq <= 0:
        raise DataError(
            f"{path}: signal {dataset.name} has no sampling rate (no valid 'fs' attribute on "
            f"it or on {dataset.parent.name}, nor in the file's 'description')",
            fix=f"{_FIX_DOWNLOAD}: every DOD signal group carries fs (250 Hz)")
    return sfreq


def _volts_per_unit(h5, dataset, path: Path) -> float:
    value = _attribute(h5, dataset, "unit")
    text = value.decode() if isinstance(value, bytes) else "" if value is None else str(value)
    scale = _VOLTS_PER_UNIT.get(text.strip().lower())
    if scale is None:
        raise DataError(f"{path}: signal {dataset.name} has unit {text!r}, not uV, mV or V",
                        fix=f"{_FIX_DOWNLOAD} (DOD signals are in microvolts)")
    return scale


def _rate_and_length(h5, path: Path, datasets: dict) -> tuple[float, int]:
    """The common rate of the datasets and their common length (the shortest)."""
    rates = {name: _sfreq(h5, d, path) for name, d in datasets.items()}
    if len(set(rates.values())) > 1:
        raise DataError(f"{path}: channels at different rates ({rates})",
                        fix="read channels of one rate together")
    return next(iter(rates.values())), min(int(d.shape[0]) for d in datasets.values())


def read_header(rec: Recording) -> RecordingHeader:
    """Every signal channel (EEG, then EOG and EMG); rate and length of the EEG."""
    with _open(rec.path) as h5:
        channels = tuple(_signals(h5, rec.path))
        sfreq, n_samples = _rate_and_length(h5, rec.path, _eeg(h5, rec.path))
    return RecordingHeader(channels, sfreq, n_samples)


def zero_filled(rec: Recording, channels: Sequence[str]) -> tuple[str, ...]:
    """Those of `channels` that read_signals fills with zeros in this file: the EEG derivations
    of the union (EEG_CHANNELS) that this file does not record."""
    own = set(read_header(rec).channels)
    return tuple(c for c in channels if c in EEG_CHANNELS and c not in own)


def read_signals(rec: Recording, channels: Sequence[str], span=None) -> Signals:
    """The named channels as float32 volts; with a span only those samples. An EEG derivation
    of the 15 (EEG_CHANNELS) that the file lacks is a row of zeros, as the reference's
    read_dod_channels fills it (see zero_filled)."""
    with _open(rec.path) as h5:
        available = _signals(h5, rec.path)
        missing = [c for c in channels if c not in available and c not in EEG_CHANNELS]
        if missing:
            raise DataError(
                f"{rec.path}: no channel {', '.join(missing)} (it has {', '.join(available)})",
                fix="choose channels every recording has, or EEG derivations of either cohort "
                    f"(zero-filled where absent: {', '.join(EEG_CHANNELS)}; "
                    "config/channel_maps/dod.yaml)")
        recorded = {c: available[c] for c in channels if c in available}
        # rate and length from the recorded ones (the file's EEG when every one is filled)
        sfreq, n_samples = _rate_and_length(h5, rec.path, recorded or _eeg(h5, rec.path))
        first, stop = span_within(span, n_samples)
        data = np.zeros((len(channels), stop - first), np.float32)
        for row, name in enumerate(channels):
            if name in recorded:
                scale = _volts_per_unit(h5, recorded[name], rec.path)
                data[row] = np.asarray(recorded[name][first:stop], np.float64) * scale
    return Signals(sfreq, list(channels), data)


# --- labels ----------------------------------------------------------------------------------


def _check_alignment(path: Path, n_epochs: int, n_samples: int, sfreq: float) -> int:
    """The epoch length in samples, once the hypnogram is known to cover the signal."""
    epoch = round(EPOCH_SECONDS * sfreq)
    seconds = n_samples / sfreq
    if n_epochs * epoch > n_samples:
        raise DataError(
            f"{path}: the hypnogram has {n_epochs} epochs ({n_epochs * EPOCH_SECONDS} s) but "
            f"the signal lasts {seconds:g} s",
            fix=f"{_FIX_DOWNLOAD}: a truncated signal cannot be scored to the end")
    if n_samples - n_epochs * epoch >= epoch:
        raise DataError(
            f"{path}: the signal lasts {seconds:g} s, {(n_samples - n_epochs * epoch) / sfreq:g}"
            f" s past the hypnogram's {n_epochs} epochs: where the hypnogram starts is unknown",
            fix=f"{_FIX_DOWNLOAD}: DOD signals end with the last scored 30 s epoch")
    return epoch


def read_labels(
    rec: Recording,
    trim_wake_minutes: float | None = None,
    channels: Sequence[str] = EEG_CHANNELS,
    counts: Counter | None = None,
) -> tuple[np.ndarray, np.ndarray, float]:
    """(starts: int64 sample of each scored 30 s epoch from the first sample, labels: int64
    0..4 = W, N1, N2, N3, REM, sfreq of the EEG). -1 epochs are dropped and counted in
    counts[("unscored", "-1")]; `trim_wake_minutes` keeps only that much wake around sleep
    (None: every scored epoch, as the reference does; the files start at lights-off).
    `channels`: those the rate and length are taken from (the ones the file has)."""
    _refuse_incomplete(rec)
    with _open(rec.path) as h5:
        codes = _codes(h5, rec.path)
        eeg = _signals(h5, rec.path)
        present = {c: eeg[c] for c in channels if c in eeg}
        if not present:
            raise DataError(f"{rec.path}: none of the channels {', '.join(channels)}",
                            fix=f"ask for channels it has ({', '.join(eeg)})")
        sfreq, n_samples = _rate_and_length(h5, rec.path, present)
    epoch = _check_alignment(rec.path, len(codes), n_samples, sfreq)
    starts = np.arange(len(codes), dtype=np.int64) * epoch
    scored = codes != UNSCORED_CODE
    if counts is not None and (~scored).any():
        counts[("unscored", str(UNSCORED_CODE))] += int((~scored).sum())
    starts, labels = trim_wake(starts[scored], codes[scored], sfreq, trim_wake_minutes)
    return starts.astype(np.int64), labels.astype(np.int64), sfreq


def read_events(rec: Recording) -> list[Event]:
    """The consensus hypnogram as runs of equal codes ("W" ... "REM", "not scored")."""
    codes = read_hypnogram(rec)
    change = np.flatnonzero(np.diff(codes)) + 1
    bounds = zip(np.r_[0, change], np.r_[change, len(codes)], strict=True)
    return [Event(float(a * EPOCH_SECONDS), float((b - a) * EPOCH_SECONDS),
                  STAGES[codes[a]] if codes[a] != UNSCORED_CODE else "not scored")
            for a, b in bounds]


def recording_label(rec: Recording) -> str:
    """healthy for a DOD-H night (dodh/), osa for a DOD-O night (dodo/)."""
    return COHORTS[rec.cohort]
