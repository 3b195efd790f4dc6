"""EEG During Mental Arithmetic Tasks (PhysioNet eegmat 1.0.0): one recording per EDF file.

Files, all in one folder: `Subject00_1.edf`, `Subject00_2.edf` ... `Subject35_2.edf` (36
subjects), `subject-info.csv`, RECORDS. `_1` is the background EEG before the task (rest, eyes
closed, 182 s: 91000 samples), `_2` the EEG during the mental arithmetic (serial subtraction,
62 s: 31000 samples). EDF at 500 Hz, 21 signals in this order, labels as the headers write
them: "EEG Fp1", "EEG Fp2", "EEG F3", "EEG F4", "EEG F7", "EEG F8", "EEG T3", "EEG T4",
"EEG C3", "EEG C4", "EEG T5", "EEG T6", "EEG P3", "EEG P4", "EEG O1", "EEG O2", "EEG Fz",
"EEG Cz", "EEG Pz" (10-20 electrodes against the linked ears, old temporal names: T3-T6 are
T7, T8, P7, P8), "EEG A2-A1" (the ear-to-ear derivation) and "ECG ECG". Recorded in Kyiv,
Ukraine (Neurocom 23-channel system, 50 Hz notch): powerline 50 Hz. subject-info.csv has the
columns Subject, Age, Gender, Recording year, Number of subtractions, Count quality (1: group
"G", good counters; 0: group "B").

A recording is one file: id "Subject00_1", subject "Subject00", session "1" or "2". Its one
event covers the whole file: onset 0, duration the file's length (samples / rate), described
"rest" (`_1`) or "arithmetic" (`_2`); the labelling task tiles it into windows. A subject with
one of its two files gets a placeholder recording whose `problem` names the missing file, so
a partial download is reported, not silently used. A file without the 19 EEG channels is
refused by name (read_header, read_events). Ages come from subject-info.csv
(subjects_table).

MOABB has no loader for this dataset (its mental-arithmetic set, Shin2017B, is another
recording); braindecode and EEGDash serve a BIDS conversion (NEMAR nm000109), not PhysioNet's
files. The reference suite (kkontras/NeuroAtlas configs/channel_maps/eegmat.yaml) uses the 19
electrodes, T3-T6 renamed T7, T8, P7, P8, without A2-A1 and ECG.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from embedprobe.core.errors import DataError
from embedprobe.datasets.base import Event, RecordingHeader, Signals
from embedprobe.datasets.edf import (
    ANNOTATIONS,
    EdfHeader,
    read_edf_header,
    read_edf_signals,
    require_channels,
)
from embedprobe.datasets.walk import find_paths, require_folder

FORMAT = "eegmat"
SFREQ = 500.0
# The 10-20 electrodes in the files' order (old temporal names, as recorded).
ELECTRODES = ("Fp1", "Fp2", "F3", "F4", "F7", "F8", "T3", "T4", "C3", "C4", "T5", "T6", "P3",
              "P4", "O1", "O2", "Fz", "Cz", "Pz")
EEG_CHANNELS = tuple(f"EEG {e}" for e in ELECTRODES)
EAR_CHANNEL = "EEG A2-A1"
ECG_CHANNEL = "ECG ECG"
CHANNELS = (*EEG_CHANNELS, EAR_CHANNEL, ECG_CHANNEL)
SESSIONS = ("1", "2")
CONDITIONS = {"1": "rest", "2": "arithmetic"}  # file suffix -> event description
REAL_SECONDS = {"1": 182, "2": 62}  # the published files' lengths
SUBJECT_INFO = "subject-info.csv"
SUBJECT_INFO_COLUMNS = ("Subject", "Age", "Gender", "Recording year", "Number of subtractions",
                        "Count quality")
_NAME = re.compile(r"^Subject(?P<number>\d+)_(?P<session>\d+)\.edf$")
_FIX_DOWNLOAD = "download the file again from PhysioNet (eegmat 1.0.0)"


@dataclass(frozen=True)
class Recording:
    recording: str  # "Subject00_1"
    edf: Path
    subject: str  # "Subject00"
    session: str  # "1" (rest) or "2" (arithmetic)
    missing: bool = False  # a placeholder for the subject's other file, not there

    # The reader interface's names (datasets/base.py)
    @property
    def signal_path(self) -> Path:
        return self.edf

    @property
    def files(self) -> tuple[Path, ...]:
        return () if self.missing else (self.edf,)

    @property
    def problem(self) -> str:
        if not self.missing:
            return ""
        return f"{self.edf.name} ({CONDITIONS[self.session]} file of {self.subject}) is missing"

    @property
    def condition(self) -> str:
        return CONDITIONS[self.session]


def find_recordings(root: Path) -> list[Recording]:
    """Every `SubjectNN_S.edf` under root, sorted by id; a subject with one of its two files
    gets a placeholder (with a `problem`) for the other."""
    root = require_folder(root, "EEGMAT",
                          fix="download eegmat 1.0.0 from PhysioNet there (Subject00_1.edf ... "
                              "Subject35_2.edf, subject-info.csv), or let the demo_data rule "
                              "write a look-alike")
    found: dict[str, Recording] = {}
    for path in find_paths(root, "Subject*_*.edf"):
        match = _NAME.match(path.name)
        if not match:
            continue  # not an EEGMAT file name
        if len(match["number"]) != 2 or match["session"] not in SESSIONS:
            raise DataError(f"{path}: EEGMAT files are SubjectNN_1.edf (rest) and "
                            "SubjectNN_2.edf (arithmetic), NN two digits",
                            fix="keep PhysioNet's names")
        stem = path.name.removesuffix(".edf")
        if stem in found:
            raise DataError(f"{path.name} is there twice: {found[stem].edf} and {path}",
                            fix="keep one copy under the data root")
        found[stem] = Recording(stem, path, f"Subject{match['number']}", match["session"])
    for subject in sorted({r.subject for r in found.values()}):
        folder = next(r.edf.parent for r in found.values() if r.subject == subject)
        for session in SESSIONS:
            stem = f"{subject}_{session}"
            if stem not in found:
                found[stem] = Recording(stem, folder / f"{stem}.edf", subject, session,
                                        missing=True)
    return [found[k] for k in sorted(found)]


def _checked_header(rec: Recording) -> tuple[EdfHeader, float]:
    """The file's header and the rate of its EEG channels; a file without the 19 EEG channels
    (another montage, labels renamed by a converter) is refused by name."""
    header = read_edf_header(rec.edf)
    missing = [c for c in EEG_CHANNELS if c not in header.labels]
    if missing:
        has = [label for label in header.labels if label != ANNOTATIONS]
        raise DataError(
            f"{rec.edf}: no channel {', '.join(missing)} (an EEGMAT file has the 19 EEG "
            f"channels {EEG_CHANNELS[0]!r} ... {EEG_CHANNELS[-1]!r}, then {EAR_CHANNEL!r} and "
            f"{ECG_CHANNEL!r}); it has {', '.join(has) or 'none'}",
            fix=f"{_FIX_DOWNLOAD}; a copy exported with other channel labels is not read")
    return header, require_channels(header, EEG_CHANNELS)


# The reader interface (datasets/base.py) --------------------------------------------------


def read_header(rec: Recording) -> RecordingHeader:
    header, sfreq = _checked_header(rec)
    labels = tuple(label for label in header.labels if label != ANNOTATIONS)
    return RecordingHeader(labels, sfreq, header.n_samples(EEG_CHANNELS[0]))


def read_signals(rec: Recording, channels: Sequence[str], span=None) -> Signals:
    return read_edf_signals(rec.edf, channels, span=span)


def read_events(rec: Recording) -> list[Event]:
    """One event over the whole file: "rest" (_1) or "arithmetic" (_2)."""
    header, sfreq = _checked_header(rec)
    seconds = header.n_samples(EEG_CHANNELS[0]) / sfreq
    if seconds <= 0:
        raise DataError(f"{rec.edf}: holds no samples", fix=_FIX_DOWNLOAD)
    return [Event(0.0, float(seconds), rec.condition)]


def subjects_table(root: Path) -> dict[str, float]:
    """Subject ("Subject00") -> age in years, from subject-info.csv."""
    root = Path(root)
    found = find_paths(root, SUBJECT_INFO) if root.is_dir() else []
    if not found:
        raise DataError(f"no {SUBJECT_INFO} under {root} (the subjects' ages)",
                        fix=f"put {SUBJECT_INFO} from PhysioNet's eegmat 1.0.0 in {root}")
    path = found[0]
    fix = f"use the {SUBJECT_INFO} of eegmat 1.0.0 (columns {', '.join(SUBJECT_INFO_COLUMNS)})"
    with open(path, newline="", encoding="utf-8-sig") as f:
        rows = list(csv.DictReader(f))
    columns = {str(c).strip() for c in (rows[0] if rows else {})}
    if not {"Subject", "Age"} <= columns:
        raise DataError(f"{path}: no Subject and Age columns ({', '.join(sorted(columns))})",
                        fix=fix)
    ages = {}
    for line, row in enumerate(rows, start=2):
        row = {str(k).strip(): (v or "").strip() for k, v in row.items()}
        try:
            ages[row["Subject"]] = float(row["Age"])
        except ValueError as exc:
            raise DataError(f"{path}: line {line} ({row['Subject']}) has age {row['Age']!r}",
                            fix=fix) from exc
    return ages
