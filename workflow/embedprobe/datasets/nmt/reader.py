"""The NMT Scalp EEG Dataset (NUST-SEECS, Pakistan): recordings, their class and official split.

Layout (the published archive, nmt_scalp_eeg_dataset/, as the reference's
`dataio/nmt.discover_nmt_recordings` walks it):

    {normal,abnormal}/{train,eval}/<NNNNNNN>.edf
    Labels.csv      recordname,label,age,gender,loc  (one row per file: "0000001.edf",
                    "normal" or "abnormal", the age, the gender, "train" or "eval")

2,417 recordings, each of a different participant (Khan et al., Front. Neurosci. 2022), so
subject = recording = the file stem. The folders give each recording's class and the dataset's
own train/eval split (session "train/<stem>", read by the official split, probing/folds.py).
Where a Labels.csv row says otherwise, the dataset entry's `class_from` decides (CLASS_FROM):
`folder`, the reference's (`dataio/nmt.discover_nmt_recordings` logs the disagreement and
trusts the layout), takes the folders' class and split and names each such file in one
`warning:`; `table` takes the row's label and loc; `agree` refuses the file (a file in the
wrong folder would be probed under the wrong class). A file the table does not list is refused.

Signals: 19 electrodes of the 10-20 system and the ears, labelled by their 10-20 names ("FP1",
..., the old temporal names T3-T6, "A1", "A2"), at 200 Hz. The files' physical range is about
100 times too small for microvolts (the reference's `dataio/nmt.py`, `_NMT_AMPLITUDE_RESCALE`:
standard deviation 0.3 uV against Siena's 37): the reader multiplies by AMPLITUDE_SCALE as the
reference does, so every model sees scalp-EEG amplitudes. A recording without one of the 19
scalp electrodes is refused.
"""

from __future__ import annotations

import csv
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from embedprobe.core.errors import DataError, UsageError
from embedprobe.datasets.base import Event, RecordingHeader, Signals
from embedprobe.datasets.edf import OneEdfFile, montage_header, read_edf_signals
from embedprobe.datasets.tuh import SCALP
from embedprobe.datasets.walk import find_paths

FORMAT = "nmt"
CLASSES = ("normal", "abnormal")  # label index = position
SPLITS = ("train", "eval")
LABELS_FILE = "Labels.csv"
COLUMNS = ("recordname", "label", "age", "gender", "loc")
AMPLITUDE_SCALE = 100.0  # the files' units are ~100x too small (the module's docstring)
_NAME = re.compile(r"^\d{7}\.edf$")
_LAYOUT = "{normal,abnormal}/{train,eval}/NNNNNNN.edf with Labels.csv beside the class folders"
_FIX_LAYOUT = f"keep the NMT archive's layout: {_LAYOUT}"
# where a recording's class and split come from when Labels.csv and the folders disagree:
# the folders (the reference's, the default), the table, or neither (refused)
CLASS_FROM = ("folder", "table", "agree")
READER_SETTINGS = ("class_from",)  # dataset entry keys passed to find_recordings


@dataclass(frozen=True)
class Recording(OneEdfFile):
    recording: str  # file stem, e.g. "0000001"
    edf: Path
    subject: str  # the file stem: one recording per participant
    session: str  # "train/0000001": the split, then the stem
    split: str  # "train" or "eval"
    label: str  # "normal" or "abnormal"
    problem: str = ""  # a recording is one file: never incomplete


def read_labels(path: Path) -> dict[str, tuple[str, str, int]]:
    """Labels.csv: file name -> (class, split, line), each row checked."""
    with path.open(newline="", encoding="utf-8-sig") as handle:
        rows = list(csv.reader(handle))
    if not rows or tuple(c.strip().lower() for c in rows[0][:len(COLUMNS)]) != COLUMNS:
        raise DataError(f"{path}, line 1: expected the columns {','.join(COLUMNS)}",
                        fix=f"use the NMT archive's {LABELS_FILE}")
    out: dict[str, tuple[str, str, int]] = {}
    for line, row in enumerate(rows[1:], start=2):
        if not any(c.strip() for c in row):
            continue
        name, label, loc = row[0].strip(), row[1].strip().lower(), row[4].strip().lower()
        name = name if name.lower().endswith(".edf") else f"{name}.edf"
        if label not in CLASSES or loc not in SPLITS:
            raise DataError(f"{path}, line {line}: {name} has label {label!r} and loc {loc!r}; "
                            f"NMT's are {' or '.join(CLASSES)} and {' or '.join(SPLITS)}",
                            fix=f"correct the row, or use the NMT archive's {LABELS_FILE}")
        if name in out:
            raise DataError(f"{path}, line {line}: {name} is listed twice (line {out[name][2]})",
                            fix="keep one row per recording")
        out[name] = (label, loc, line)
    return out


def find_recordings(root: Path, class_from: str = CLASS_FROM[0]) -> list[Recording]:
    """Every recording under root's class folders, sorted by id, each checked against
    Labels.csv; a disagreement settled by `class_from` (the module's docstring)."""
    if class_from not in CLASS_FROM:
        raise UsageError(f"class_from: {class_from} is not one of {', '.join(CLASS_FROM)}",
                         fix="write class_from: folder (the reference's), table or agree in the "
                             "NMT entry of config/datasets.yaml")
    root = Path(root)
    table = root / LABELS_FILE
    if not table.is_file():
        raise DataError(f"NMT folder {root} has no {LABELS_FILE}",
                        fix="point the dataset's path at the NMT archive's folder (the one "
                            f"holding {LABELS_FILE}, normal/ and abnormal/), or write the "
                            "look-alike (the demo_data rule)")
    labels = read_labels(table)
    recordings: dict[str, Recording] = {}
    disagree: list[str] = []
    for path in find_paths(root, "*.edf"):
        if path.name.startswith("._"):  # macOS metadata stubs some copies carry
            continue
        parts = path.relative_to(root).parts
        if len(parts) != 3 or parts[0] not in CLASSES or parts[1] not in SPLITS:
            raise DataError(f"{path}: not in a class and split folder", fix=_FIX_LAYOUT)
        if not _NAME.match(parts[2]):
            raise DataError(f"{path}: not an NMT file name (7 digits, e.g. 0000001.edf)",
                            fix=_FIX_LAYOUT)
        if parts[2] not in labels:
            raise DataError(f"{path}: not listed in {table}",
                            fix=f"use the NMT archive's {LABELS_FILE}, or remove the file")
        label, loc, line = labels[parts[2]]
        if (label, loc) != (parts[0], parts[1]):
            said = f"{table}, line {line} says {label}/{loc}, the folders say {parts[0]}/{parts[1]}"
            if class_from == "agree":
                raise DataError(f"{path}: {said}",
                                fix="move the file to the folder its row names, or correct the "
                                    "row; or set class_from: folder (the reference's) or "
                                    "table on the dataset's entry")
            disagree.append(f"{path.relative_to(root)} ({label}/{loc} in the table)")
        if path.stem in recordings:
            raise DataError(f"recording {path.stem} is there twice: "
                            f"{recordings[path.stem].edf} and {path}",
                            fix="keep the one copy NMT has")
        klass, split = (label, loc) if class_from == "table" else (parts[0], parts[1])
        recordings[path.stem] = Recording(path.stem, path, path.stem, f"{split}/{path.stem}",
                                          split, klass)
    if disagree:
        taken = "its row's" if class_from == "table" else "its folder's"
        print(f"warning: {table}: {len(disagree)} recording(s) whose row and folder disagree "
              f"read with {taken} class and split (class_from: {class_from}): "
              + ", ".join(disagree), file=sys.stderr)
    return [recordings[k] for k in sorted(recordings)]


def split_of(rec: Recording) -> str:
    return rec.split


def recording_label(rec: Recording) -> str:
    """The recording's class, "normal" or "abnormal": its folder's, or its Labels.csv row's
    under class_from: table."""
    return rec.label


def read_header(rec: Recording) -> RecordingHeader:
    """Every channel as recorded; rate and length of the 19 scalp electrodes."""
    return montage_header(rec.edf, SCALP, f"NMT's files hold all {len(SCALP)} 10-20 electrodes",
                          "replace the file with the NMT archive's copy, or remove it")


def read_signals(rec: Recording, channels: Sequence[str], span=None) -> Signals:
    signals = read_edf_signals(rec.edf, channels, span=span)
    signals.data *= AMPLITUDE_SCALE
    return signals


def read_events(rec: Recording) -> list[Event]:
    """NMT has no events: a recording's class is its folder's or its row's (recording_label)."""
    return []
