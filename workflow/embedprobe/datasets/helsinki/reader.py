"""The Helsinki neonatal EEG seizure dataset (Stevenson et al., Scientific Data 6, 190039, 2019;
Zenodo record 2547147, re-released as 4940267).

79 neonates in the NICU of Helsinki University Hospital, one multi-channel EEG each (median
74 min), 19 electrodes of the 10-20 system referenced to a common electrode at 256 Hz. The
record's files sit in one folder:

    eeg1.edf ... eeg79.edf            one recording per neonate, named by its number
    annotations_2017_A.csv, _B.csv, _C.csv
                                      each expert's per-second seizure annotation: column k is
                                      neonate k (header 1 ... 79), row r second r of its
                                      recording (1 seizure, 0 none), blank past a recording's
                                      end (4940267 names the first annotations_2017_A_fixed.csv)
    clinical_information.csv          one row per neonate (ID, Gender, BW (g), GA (weeks), ...)

The record also has the annotations as .mat files; the CSV files are read here, as the
reference suite (kkontras/NeuroAtlas, epilepsy/helsinki_neonatal_preprocessor.py) reads the
CSV files where they are present.

A recording's seizures are the reference's majority consensus: over the seconds all three
experts annotated (the shortest of their three columns), a second is ictal when at least two of
the three marked it; each run of ictal seconds is one seizure event. The channel labels are
"EEG Fp1-Ref", ..., with the old temporal names T3, T4, T5, T6 (the spelling the reference's
channel aliases are written for).

A recording is "eeg01" ... "eeg79" (two digits, so that ids sort by number), its own subject
(one recording per neonate): folds go over neonates. Refused, naming the file (DataError):
annotation files whose column counts differ, a recording without a column (more recordings
than columns), a cell other than 0, 1 or blank, a recording shorter than its annotation.
Incomplete (`problem`): a column whose EDF is missing, every recording when an annotation file
is missing.
"""

from __future__ import annotations

import csv
import functools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from embedprobe.core.errors import DataError
from embedprobe.datasets.base import Event, RecordingHeader, Signals, present, refuse_incomplete
from embedprobe.datasets.edf import (
    SignalsInEdf,
    read_edf_header,
    read_edf_signals,
    recording_header,
)
from embedprobe.datasets.walk import require_folder

FORMAT = "helsinki"
SEIZURE = "seizure"
EXPERTS = ("A", "B", "C")
MAJORITY = 2  # experts of three who must mark a second for the consensus to call it ictal
ELECTRODES = ("Fp1", "Fp2", "F3", "F4", "F7", "F8", "Fz", "C3", "C4", "Cz", "T3", "T4", "T5",
              "T6", "P3", "P4", "Pz", "O1", "O2")
EEG_CHANNELS = tuple(f"EEG {e}-Ref" for e in ELECTRODES)
CLINICAL = "clinical_information.csv"
_EDF = re.compile(r"^eeg(\d+)\.edf$", re.IGNORECASE)
_FIX_RECORD = "download it again from Zenodo record 2547147 (or 4940267)"


def annotation_names(expert: str) -> tuple[str, ...]:
    """The file names an expert's annotation has had, the newer release's first."""
    return (f"annotations_2017_{expert}_fixed.csv", f"annotations_2017_{expert}.csv")


@dataclass(frozen=True)
class Recording(SignalsInEdf):
    recording: str  # "eeg01"
    edf: Path
    annotations: tuple[Path, ...]  # the three experts' files, A, B, C
    column: int  # 0-based: neonate column + 1 is its EDF's number
    subject: str  # = recording: one recording per neonate
    session: str = "1"
    problem: str = ""

    @property
    def files(self) -> tuple[Path, ...]:
        return present(self.edf, *self.annotations)


def _annotation_file(root: Path, expert: str) -> Path:
    names = annotation_names(expert)
    return next((root / n for n in names if (root / n).is_file()), root / names[-1])


def find_recordings(root: Path) -> list[Recording]:
    """One recording per annotation column (or per EDF where an annotation file is missing),
    sorted by id."""
    root = require_folder(root, "Helsinki neonatal",
                          fix="unpack Zenodo record 2547147 there (eeg1.edf ..., "
                              "annotations_2017_A.csv ...), or write the look-alike (the "
                              "demo_data rule)")
    edfs = {int(m.group(1)): p for p in root.iterdir() if (m := _EDF.match(p.name))}
    files = tuple(_annotation_file(root, e) for e in EXPERTS)
    missing = [f.name for f in files if not f.is_file()]
    if missing:
        problem = f"{', '.join(missing)} missing (the experts' seizure annotations)"
        numbers = sorted(edfs)
    else:
        columns = _columns(files)
        beyond = sorted(n for n in edfs if n > columns)
        if beyond:
            raise DataError(
                f"{files[0]}: {columns} columns (neonates), but {root} holds "
                f"{edfs[beyond[0]].name}: the annotation files and the recordings disagree",
                fix="keep the annotation files of the release the recordings came from (one "
                    "column per eegN.edf), or remove recordings that are not the dataset's")
        problem, numbers = "", list(range(1, columns + 1))
    out = []
    for n in numbers:
        edf = edfs.get(n, root / f"eeg{n}.edf")
        lacks = problem or ("" if edf.is_file() else f"{edf.name} is missing")
        out.append(Recording(f"eeg{n:02d}", edf, files, n - 1, f"eeg{n:02d}", problem=lacks))
    return sorted(out, key=lambda r: r.recording)


def _columns(files: Sequence[Path]) -> int:
    """The number of neonates the three annotation files hold, which must agree."""
    counts = [len(_table(f, f.stat().st_mtime_ns)[0]) for f in files]
    for f, count in zip(files[1:], counts[1:], strict=True):
        if count != counts[0]:
            raise DataError(f"{f}: {count} columns (neonates), but {files[0].name} has "
                            f"{counts[0]}: the experts' annotations disagree on the recordings",
                            fix=f"{_FIX_RECORD}: every annotation file has one column per "
                                "recording")
    return counts[0]


@functools.cache  # one parse per file version (mtime): every recording reads the same files
def _table(path: Path, _mtime_ns: int) -> tuple[tuple[str, ...], tuple[np.ndarray, ...]]:
    """(header, per column its per-second labels up to its last filled row)."""
    with path.open(newline="", encoding="utf-8-sig") as f:
        rows = list(csv.reader(f))
    if not rows:
        raise DataError(f"{path}: empty", fix=_FIX_RECORD)
    header = tuple(c.strip() for c in rows[0])
    columns = []
    for k in range(len(header)):
        cells = [row[k].strip() if k < len(row) else "" for row in rows[1:]]
        length = max((i + 1 for i, c in enumerate(cells) if c), default=0)
        bad = next((i for i, c in enumerate(cells[:length]) if c not in ("0", "1")), None)
        if bad is not None:
            raise DataError(f"{path}: row {bad + 2}, column {header[k]!r} reads "
                            f"{cells[bad]!r}, not 0 or 1", fix=_FIX_RECORD)
        columns.append(np.array([c == "1" for c in cells[:length]], bool))
    return header, tuple(columns)


def expert_seconds(rec: Recording) -> list[np.ndarray]:
    """Each expert's per-second labels of the recording (True: seizure)."""
    return [_table(f, f.stat().st_mtime_ns)[1][rec.column] for f in rec.annotations]


def consensus(labels: Sequence[np.ndarray]) -> np.ndarray:
    """The reference's majority rule: over the seconds every expert annotated, those at least
    MAJORITY of them marked."""
    common = min(len(v) for v in labels)
    votes = np.sum([np.asarray(v[:common], np.int64) for v in labels], axis=0)
    return np.asarray(votes >= MAJORITY, bool).reshape(common)


def seconds_to_events(ictal: np.ndarray) -> list[tuple[int, int]]:
    """(onset, duration) in whole seconds of each run of ictal seconds."""
    edges = np.diff(np.concatenate([[0], ictal.astype(np.int8), [0]]))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    return [(int(s), int(e - s)) for s, e in zip(starts, ends, strict=True)]


def read_header(rec: Recording) -> RecordingHeader:
    return recording_header(rec.edf, _FIX_RECORD)


def read_signals(rec: Recording, channels: Sequence[str], span=None) -> Signals:
    return read_edf_signals(rec.edf, channels, span=span)


def read_events(rec: Recording) -> list[Event]:
    """The consensus seizures, in seconds from the start of the EDF file. A recording shorter
    than an expert's annotation of it is refused, naming both files."""
    refuse_incomplete(rec, _FIX_RECORD)
    seconds = read_edf_header(rec.edf).seconds
    labels = expert_seconds(rec)
    for path, expert in zip(rec.annotations, labels, strict=True):
        if len(expert) > math.ceil(seconds):
            raise DataError(f"{rec.edf}: {seconds:g} s long, but {path.name} annotates "
                            f"{len(expert)} s of it (column {rec.column + 1})",
                            fix=f"download {rec.edf.name} again from Zenodo record 2547147 "
                                "(it may be truncated), or use the annotation files of the "
                                "release it came from")
    return [Event(float(onset), float(min(duration, seconds - onset)), SEIZURE)
            for onset, duration in seconds_to_events(consensus(labels))]
