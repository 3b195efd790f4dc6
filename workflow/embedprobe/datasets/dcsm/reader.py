"""The Danish Center for Sleep Medicine set (DCSM) as its publisher serves it (the U-Sleep
authors' release, Perslev et al. 2021, on ERDA: erda.ku.dk): 255 clinical nights of the
Rigshospitalet sleep clinic (Glostrup), one subject each.

Layout (the reference's loader, kkontras/NeuroAtlas dataio/dcsm.py scan_dcsm_subjects, reads
it as is):

  <root>/tp<uuid>/psg.h5          signals: one HDF5 dataset per channel under /channels/
                                  (C3-M2, C4-M1, F3-M2, F4-M1, O1-M2, O2-M1, E1-M2, E2-M2,
                                  CHIN, ECG-II, ...), the rate in the file's `sample_rate`
                                  attribute (256 Hz), in microvolts
  <root>/tp<uuid>/hypnogram.ids   one `init,duration,stage` line per scored run (seconds;
                                  W, N1, N2, N3, REM; UNKNOWN unscored)

A folder is a recording and its subject (the folder's name); one without both files is
incomplete. Windows: 30 s from the first run's init wherever one stage covers the whole window
(stage_runs.windows_from_runs, the reference's per-second rule); a run of another stage text is
refused. Folds: the reference's DCSM rule (adapters/dcsm.py _patient_splits): the folder names
sorted as text (`fold_order: text`), RandomState(42) shuffle, 5 chunks, test k, validation
k+1. Powerline: Denmark, 50 Hz. No ages are published: no brain age.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from embedprobe.core.errors import DataError
from embedprobe.datasets.base import (
    Event,
    OneNightPerSubject,
    RecordingHeader,
    Signals,
    present,
    span_within,
)
from embedprobe.datasets.stage_runs import UNSCORED, cut_to_signal, windows_from_runs
from embedprobe.datasets.walk import find_paths, require_folder

FORMAT = "dcsm"
STAGES = ("W", "N1", "N2", "N3", "REM")
EPOCH_SECONDS = 30
EEG_CHANNELS = ("C3-M2", "C4-M1", "F3-M2", "F4-M1", "O1-M2", "O2-M1")
PSG, HYPNOGRAM = "psg.h5", "hypnogram.ids"
STAGE_OF_TEXT = {"W": 0, "Wake": 0, "N1": 1, "N2": 2, "N3": 3, "REM": 4, "UNKNOWN": UNSCORED}
MICROVOLTS = 1e-6
_FIX_FILES = "download the subject's folder again from the DCSM release (psg.h5, hypnogram.ids)"


@dataclass(frozen=True)
class Recording(OneNightPerSubject):
    recording: str  # the folder, "tp005f7e68_a084_46bb_9f0a_b6a084155a1c"
    signal_path: Path
    hypnogram: Path

    @property
    def files(self) -> tuple[Path, ...]:
        return present(self.signal_path, self.hypnogram)

    @property
    def problem(self) -> str:
        missing = [p.name for p in (self.signal_path, self.hypnogram) if not p.is_file()]
        return f"{self.recording}/ has no {' or '.join(missing)}" if missing else ""


def find_recordings(root: Path) -> list[Recording]:
    """Every folder under root holding a psg.h5 or a hypnogram.ids, sorted by name."""
    root = require_folder(root, "DCSM",
                          fix="download the DCSM release there (one tp<uuid>/ folder a subject)")
    folders = {p.parent for name in (PSG, HYPNOGRAM) for p in find_paths(root, name)}
    seen: dict[str, Path] = {}
    for folder in sorted(folders):
        if folder.name in seen:
            raise DataError(f"subject {folder.name} is there twice: {seen[folder.name]} and "
                            f"{folder}", fix="keep one copy under the data root")
        seen[folder.name] = folder
    return [Recording(name, f / PSG, f / HYPNOGRAM) for name, f in sorted(seen.items())]


def _refuse_incomplete(rec: Recording) -> None:
    if rec.problem:
        raise DataError(f"{rec.signal_path.parent}: {rec.problem}",
                        fix=f"{_FIX_FILES}; allow_partial=true runs without it")


@contextmanager
def _open(rec: Recording):
    import h5py

    _refuse_incomplete(rec)
    try:
        h5 = h5py.File(rec.signal_path, "r")
    except OSError as exc:
        raise DataError(f"{rec.signal_path}: not a readable HDF5 file ({exc})",
                        fix=_FIX_FILES) from exc
    with h5:
        if "channels" not in h5 or "sample_rate" not in h5.attrs:
            raise DataError(f"{rec.signal_path}: no /channels group or no sample_rate "
                            "attribute", fix=_FIX_FILES)
        yield h5


def read_header(rec: Recording) -> RecordingHeader:
    with _open(rec) as h5:
        channels = tuple(h5["channels"])
        eeg = next((c for c in EEG_CHANNELS if c in channels), None)
        if eeg is None:
            raise DataError(f"{rec.signal_path}: none of the EEG channels "
                            f"{', '.join(EEG_CHANNELS)} (it has {', '.join(channels)})",
                            fix=_FIX_FILES)
        return RecordingHeader(channels, float(h5.attrs["sample_rate"]),
                               int(h5["channels"][eeg].shape[0]))


def read_signals(rec: Recording, channels: Sequence[str], span=None) -> Signals:
    """The named channels as float32 volts (the file holds microvolts)."""
    with _open(rec) as h5:
        group = h5["channels"]
        missing = [c for c in channels if c not in group]
        if missing:
            raise DataError(f"{rec.signal_path}: no channel {', '.join(missing)} (it has "
                            f"{', '.join(group)})",
                            fix="choose channels every recording has (config/channel_maps)")
        n = min(int(group[c].shape[0]) for c in channels)
        first, stop = span_within(span, n)
        data = np.empty((len(channels), stop - first), np.float32)
        for row, name in enumerate(channels):
            data[row] = np.asarray(group[name][first:stop], np.float64) * MICROVOLTS
        return Signals(float(h5.attrs["sample_rate"]), list(channels), data)


def read_runs(rec: Recording) -> list[tuple[float, float, int]]:
    """The hypnogram's (init s, duration s, stage or UNSCORED) runs; a line that is not three
    fields of numbers and a known stage is refused by number."""
    _refuse_incomplete(rec)
    runs = []
    for k, line in enumerate(rec.hypnogram.read_text().splitlines(), 1):
        if not line.strip():
            continue
        fields = [f.strip() for f in line.split(",")]
        try:
            init, duration = float(fields[0]), float(fields[1])
            stage = STAGE_OF_TEXT[fields[2]]
        except (IndexError, ValueError, KeyError):
            raise DataError(f"{rec.hypnogram}: line {k} reads {line.strip()!r}, not "
                            "init,duration,stage with a stage of "
                            f"{', '.join(STAGE_OF_TEXT)}", fix=_FIX_FILES) from None
        runs.append((init, duration, stage))
    return runs


def read_labels(rec: Recording, trim_wake_minutes: float | None = None,
                channels: Sequence[str] | None = None,
                counts: Counter | None = None) -> tuple[np.ndarray, np.ndarray, float]:
    """(starts: sample of each labelled 30 s window, labels: index into STAGES, sfreq)."""
    from embedprobe.datasets.sleep_edf.reader import trim_wake

    counts = Counter() if counts is None else counts
    header = read_header(rec)
    seconds, labels = windows_from_runs(read_runs(rec), EPOCH_SECONDS, counts)
    starts, labels = cut_to_signal(seconds, labels, header.sfreq, header.n_samples,
                                   EPOCH_SECONDS, counts, rec.signal_path, rec.hypnogram)
    starts, labels = trim_wake(starts, labels, header.sfreq, trim_wake_minutes)
    return starts, labels, header.sfreq


def read_events(rec: Recording) -> list[Event]:
    """The hypnogram's runs as events named by their stage text (DCSM scores no events)."""
    names = {v: k for k, v in reversed(STAGE_OF_TEXT.items())}
    return [Event(i, d, names[s]) for i, d, s in read_runs(rec)]
