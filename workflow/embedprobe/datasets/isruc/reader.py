"""ISRUC-Sleep (University of Coimbra, sleeptight.isr.uc.pt; Khalighi et al. 2016, Comput.
Methods Programs Biomed. 124:180-192): recordings, stage files, subject tables.

Layout, as the site's archives unpack (subgroupI/<n>.rar holds the folder <n>/):

  subgroupI/<n>/<n>.rec           100 subjects with sleep disorders, one night each
  subgroupI/<n>/<n>_1.txt, _2.txt the two scorers' stages
  subgroupII/<n>/<s>/<s>.rec      8 subjects with sleep disorders, sessions s = 1 and 2
  subgroupII/<n>/<s>/<s>_1.txt, <s>_2.txt
  subgroupIII/<n>/<n>.rec (+ _1.txt, _2.txt)   10 healthy subjects, one night each
  Details_subgroup_I_Submission.xlsx (II, III)  one row per subject (subgroup II: per
                                  recording, "<n>_Rec.<s>"), here in the root or in its
                                  subgroup's folder

A `.rec` file is EDF (MNE reads it; its reader refuses the extension, so it is opened through a
link named .edf in a temporary folder: the user's files keep their names). The EEG is recorded
at 200 Hz against the contralateral mastoid, spelled two ways: "F3-A2", "C3-A2", "O1-A2",
"F4-A1", "C4-A1", "O2-A1" (EOG "LOC-A2", "ROC-A1") or "F3-M2", ..., "O2-M1" ("E1-M2",
"E2-M1"), the latter in most files (a public preprocessing script's census of the 126 files:
96 M, 28 A); one file (subgroup I, 40) holds the electrodes and both mastoids unreferenced
("F3", "A2", ...), one (subgroup I, 8) has no F3/F4. The reader gives
every file the M spelling: an A label is renamed, an unreferenced pair is derived (F3-M2 =
F3 - A2, as the electrodes share the recorder's reference). An EEG channel of the six that a
file lacks is read as zeros, as the reference's reader fills it (dataio/isruc.py
`resolve_and_read_channels`, so subject I-8 is staged on four channels and two rows of zeros);
the index names what was filled in a `note:` (zero_filled). `zero_fill_missing: false` on the
dataset's entry makes such a recording incomplete instead (`problem`: allow_partial=true leaves
it out). A file with none of the six is incomplete either way.

A stage file holds one code per line per 30 s epoch from the start of the recording: 0 W,
1 N1, 2 N2, 3 N3, 5 REM (AASM: no stage 4); any other code is refused. The label is the two
scorers' consensus, as the reference suite takes it (kkontras/NeuroAtlas,
extensions/datasets/dataio/isruc.py `_consensus_stages`): an epoch both scored the same keeps
that stage, an epoch they disagree on is dropped (counted as unscored, "scorers disagree").
A stage file shorter than the recording's whole epochs is refused; lines past the end are
cut, with a `warning:` naming the recording's file (base.count_cut).

The recording-level label (`CLASSES`, `recording_label`) is the reference's `diagnosis` label
mode (adapters/isruc.py, DIAGNOSIS_TO_LABEL): the details table's diagnosis text grouped into
ten pathologies (SAOS -> osa, RONCOPATIA -> snoring, D. Afectiva -> affective_disorder,
PRIVACAO DE SONO -> sleep_deprivation, REM Sleep Behaviour Disorder -> rbd, PLMS -> plms,
EPILEPSIA -> epilepsy, S. PERNAS INQUIETAS -> rls, Parasomnia -> parasomnia, SRVAS -> uars; a
text equal to a class name is that class), subgroup III "healthy" where its cell is empty. A
subgroup II recording whose row leaves the diagnosis empty takes its subject's other row's.
The tables are laid out as the reference reads them: the first sheet, two title rows, then a
header row "Subject", "Age", "Sex", "Diagnosis", ... (the reference takes the columns by
position after two rows; this reader finds the header row by its "Subject" cell and the
columns by their names).

Ids: subject "<subgroup>-<n>" ("I-1", "II-3", "III-7"), session the night (1, or 1-2 in
subgroup II), recording "I-1", "III-7", "II-3-2".
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import tempfile
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from embedprobe.core.errors import DataError
from embedprobe.datasets.base import Event, RecordingHeader, Signals, count_cut
from embedprobe.datasets.edf import (
    ANNOTATIONS,
    EdfHeader,
    read_edf_header,
    read_edf_signals,
    require_channels,
)
from embedprobe.datasets.sleep_edf.reader import trim_wake
from embedprobe.datasets.stage_files import read_stage_codes
from embedprobe.datasets.walk import find_paths, require_folder

FORMAT = "isruc"
STAGES = ("W", "N1", "N2", "N3", "REM")  # label index = position
STAGE_OF_CODE = {0: 0, 1: 1, 2: 2, 3: 3, 5: 4}  # the stage files' codes
EPOCH_SECONDS = 30
SUBGROUPS = ("I", "II", "III")
EEG_CHANNELS = ("F3-M2", "C3-M2", "O1-M2", "F4-M1", "C4-M1", "O2-M1")
EOG_CHANNELS = ("E1-M2", "E2-M1")
CLASSES = ("healthy", "osa", "snoring", "affective_disorder", "sleep_deprivation", "rbd",
           "plms", "epilepsy", "rls", "parasomnia", "uars")
# The tables' diagnosis texts (the reference's DIAGNOSIS_NORMALIZATION), matched ignoring case
# and surrounding spaces.
DIAGNOSES = {"SAOS": "osa", "RONCOPATIA": "snoring", "D. Afectiva": "affective_disorder",
             "PRIVAÇÃO DE SONO": "sleep_deprivation", "REM Sleep Behaviour Disorder": "rbd",
             "PLMS": "plms", "EPILEPSIA": "epilepsy", "S. PERNAS INQUIETAS": "rls",
             "Parasomnia": "parasomnia", "SRVAS": "uars"}
UNSCORED, DISAGREE = "unscored", "scorers disagree"
READER_SETTINGS = ("zero_fill_missing",)  # dataset entry keys passed to find_recordings
HEALTHY_SUBGROUP = "III"

_CLASS_OF_TEXT = {**{c.casefold(): c for c in CLASSES},
                  **{text.casefold(): c for text, c in DIAGNOSES.items()}}
# Electrode and mastoid spellings: A1/A2 are M1/M2, LOC/ROC are E1/E2.
_ACTIVE = {"LOC": "E1", "ROC": "E2"}
_MASTOID = {"A1": "M1", "A2": "M2", "M1": "M1", "M2": "M2"}
_KNOWN = EEG_CHANNELS + EOG_CHANNELS
_SUBGROUP_DIR = re.compile(r"^subgroup(I{1,3})$")
_TABLE_SUBJECT_II = re.compile(r"^(\d+)\s*_\s*rec\.?\s*(\d+)$", re.IGNORECASE)
_FIX_LAYOUT = ("keep the ISRUC-Sleep layout: subgroupI/<n>/<n>.rec, "
               "subgroupII/<n>/<s>/<s>.rec, subgroupIII/<n>/<n>.rec, each with its "
               "_1.txt and _2.txt stage files")


def table_name(subgroup: str) -> str:
    return f"Details_subgroup_{subgroup}_Submission.xlsx"


@dataclass(frozen=True)
class Recording:
    recording: str  # "I-1", "II-3-2", "III-7"
    subgroup: str  # "I", "II", "III"
    number: int  # the subject's number within its subgroup
    night: int  # session: 1, or 1-2 in subgroup II
    rec: Path  # the EDF signal file <stem>.rec
    stage_files: tuple[Path, Path]  # scorer 1's and scorer 2's (either may be missing)
    details: Path  # the subgroup's details table (may be missing)
    problem: str = ""  # why the recording is incomplete; "" when complete
    absent: tuple[str, ...] = ()  # EEG channels the file lacks, read as zeros

    @property
    def subject(self) -> str:
        return f"{self.subgroup}-{self.number}"

    @property
    def session(self) -> str:
        return str(self.night)

    @property
    def signal_path(self) -> Path:
        return self.rec

    @property
    def files(self) -> tuple[Path, ...]:
        """The signal file and those of its companions that are there."""
        return (self.rec, *(p for p in (*self.stage_files, self.details) if p.is_file()))


# --- finding recordings ----------------------------------------------------------------------


def _layout_of(root: Path, path: Path) -> tuple[str, int, int]:
    """(subgroup, subject number, night) of a .rec file in the documented layout."""
    parts = path.relative_to(root).parts
    group = _SUBGROUP_DIR.match(parts[0]) if parts else None
    subgroup = group[1] if group else ""
    folders = parts[1:-1]
    depth = 2 if subgroup == "II" else 1
    if (not group or len(folders) != depth or not all(f.isdigit() for f in folders)
            or path.name != f"{folders[-1]}.rec"):
        raise DataError(f"{path}: not where ISRUC-Sleep puts a recording", fix=_FIX_LAYOUT)
    return subgroup, int(folders[0]), int(folders[-1]) if subgroup == "II" else 1


def _details_path(root: Path, subgroup: str) -> Path:
    """The subgroup's table in the root or its subgroup folder; the root's path if neither."""
    candidates = (root / table_name(subgroup), root / f"subgroup{subgroup}" / table_name(subgroup))
    return next((p for p in candidates if p.is_file()), candidates[0])


def _absent(rec_path: Path) -> tuple[str, ...]:
    """The six EEG channels the file neither records nor derives."""
    try:
        sources = _sources(read_edf_header(rec_path))
    except DataError:
        return ()  # an unreadable file is refused, naming it, when it is read
    return tuple(c for c in EEG_CHANNELS if c not in sources)


def _problem(rec_path: Path, stage_files: tuple[Path, Path], absent: tuple[str, ...],
             zero_fill_missing: bool) -> str:
    missing = [p.name for p in stage_files if not p.is_file()]
    if missing:
        return f"{rec_path.name} has no {' or '.join(missing)} beside it (the scorers' stages)"
    if absent and (not zero_fill_missing or len(absent) == len(EEG_CHANNELS)):
        return f"{rec_path.name} has no EEG channel {', '.join(absent)}"
    return ""


def find_recordings(root: Path, zero_fill_missing: bool = True) -> list[Recording]:
    """Every .rec under root in the documented layout, sorted by recording id; a recording
    without both stage files, or without any of the six EEG channels, is marked `problem`; one
    without some of them reads those as zeros (the reference's), or with `zero_fill_missing`
    false is marked `problem` too."""
    root = require_folder(root, "ISRUC-Sleep",
                          fix="unpack the subgroupI/II/III archives of ISRUC-Sleep there, with "
                              "the Details_subgroup_*_Submission.xlsx tables")
    recordings: dict[str, Recording] = {}
    for path in find_paths(root, "*.rec"):
        subgroup, number, night = _layout_of(root, path)
        stem = path.stem
        stage_files = (path.with_name(f"{stem}_1.txt"), path.with_name(f"{stem}_2.txt"))
        rid = f"{subgroup}-{number}" + (f"-{night}" if subgroup == "II" else "")
        absent = _absent(path)
        problem = _problem(path, stage_files, absent, zero_fill_missing)
        recordings[rid] = Recording(rid, subgroup, number, night, path, stage_files,
                                    _details_path(root, subgroup), problem,
                                    () if problem else absent)
    return [recordings[k] for k in sorted(recordings)]


# --- channels ----------------------------------------------------------------------------------


def channel_name(label: str) -> str:
    """A recorded label in the reader's spelling ("F3-A2" -> "F3-M2", "LOC-A2" -> "E1-M2");
    other labels as recorded."""
    active, dash, reference = label.strip().upper().partition("-")
    if dash:
        name = f"{_ACTIVE.get(active, active)}-{_MASTOID.get(reference, reference)}"
        if name in _KNOWN:
            return name
    return label


def _sources(header: EdfHeader) -> dict[str, tuple[str, str | None]]:
    """Each channel the reader reports -> (recorded label, recorded label subtracted or None):
    every recorded signal under its name, then the EEG/EOG derivations a file records as
    unreferenced electrodes (F3-M2 from "F3" and "A2")."""
    labels = [label for label in header.labels if label != ANNOTATIONS]
    sources: dict[str, tuple[str, str | None]] = {}
    for label in labels:
        name = channel_name(label)
        sources[name if name not in sources else label] = (label, None)
    bare = {label.strip().upper(): label for label in labels}
    for name in _KNOWN:
        active, reference = name.split("-")
        plus = next((bare[a] for a in (active, *[k for k, v in _ACTIVE.items() if v == active])
                     if a in bare), None)
        minus = next((bare[m] for m, v in _MASTOID.items() if v == reference and m in bare),
                     None)
        if name not in sources and plus and minus:
            sources[name] = (plus, minus)
    return sources


def _recorded(rec: Recording, header: EdfHeader, channels: Sequence[str]):
    """The sources of the wanted channels (None for one read as zeros) and the recorded
    labels they read, refusing a channel the file neither records, derives nor fills."""
    sources = _sources(header)
    missing = [c for c in channels if c not in sources and c not in rec.absent]
    if missing:
        raise DataError(f"{rec.rec}: no channel {', '.join(missing)}; it has "
                        f"{', '.join(sources)}",
                        fix="choose channels this recording has (the reader names the EEG "
                            f"{', '.join(EEG_CHANNELS)}), or leave it out (allow_partial=true)")
    wanted = [sources.get(c) for c in channels]
    labels = list(dict.fromkeys(lab for pair in wanted if pair for lab in pair
                                if lab is not None))
    return wanted, labels


def _edf_view(path: Path) -> Path:
    """A link named <stem>.edf to the .rec file in a temporary folder (MNE refuses any other
    extension; the user's files keep their names), one per file, replaced atomically."""
    target = path.resolve()
    key = hashlib.sha1(str(target).encode()).hexdigest()[:16]
    folder = Path(tempfile.gettempdir()) / f"embedprobe-isruc-{os.getuid()}" / key
    link = folder / f"{path.stem}.edf"
    if link.is_symlink() and Path(os.readlink(link)) == target:
        return link
    folder.mkdir(parents=True, exist_ok=True)
    partial = folder / f".{os.getpid()}.{threading.get_ident()}.{path.stem}.edf"
    partial.unlink(missing_ok=True)
    partial.symlink_to(target)
    partial.replace(link)
    return link


def _read(rec: Recording, header: EdfHeader, labels: list[str], span) -> Signals:
    """The recorded labels through MNE, a DataError naming the .rec file (not the link)."""
    link = _edf_view(rec.rec)
    try:
        return read_edf_signals(link, labels, header, span)
    except DataError as exc:
        raise DataError(exc.message.replace(str(link), str(rec.rec)), fix=exc.fix) from exc


# --- the reader interface (datasets/base.py) ------------------------------------------------


def read_header(rec: Recording) -> RecordingHeader:
    """Every channel the reader reports (the EEG and EOG in the M spelling, derivations of
    unreferenced electrodes after the recorded signals); rate and length of the EEG."""
    header = read_edf_header(rec.rec)
    sources = _sources(header)
    eeg = next((sources[c][0] for c in EEG_CHANNELS if c in sources), None)
    if eeg is None:
        raise DataError(f"{rec.rec}: no EEG channel {', '.join(EEG_CHANNELS)} (it has "
                        f"{', '.join(sources)})", fix="use the .rec file as ISRUC-Sleep ships it")
    return RecordingHeader(tuple(sources), header.sfreq(eeg), header.n_samples(eeg))


def zero_filled(rec: Recording, channels: Sequence[str]) -> tuple[str, ...]:
    """Those of `channels` that read_signals gives as zeros in this file (see the module)."""
    return tuple(c for c in channels if c in rec.absent)


def read_signals(rec: Recording, channels: Sequence[str], span=None) -> Signals:
    """The named channels in volts (float32); a derived one is the difference of its two
    recorded electrodes; an EEG channel the file lacks (zero_filled) is a row of zeros."""
    header = read_edf_header(rec.rec)
    wanted, labels = _recorded(rec, header, channels)
    if not labels:  # every wanted channel is filled: the file's EEG gives rate and length
        sources = _sources(header)
        labels = [next(sources[c][0] for c in EEG_CHANNELS if c in sources)]
    recorded = _read(rec, header, labels, span)
    row = {label: i for i, label in enumerate(labels)}
    data = np.zeros((len(wanted), recorded.data.shape[1]), np.float32)
    for i, pair in enumerate(wanted):
        if pair is None:
            continue
        plus, minus = pair
        data[i] = recorded.data[row[plus]]
        if minus is not None:
            data[i] -= recorded.data[row[minus]]
    return Signals(recorded.sfreq, list(channels), data)


def read_stage_file(path: Path, n_epochs: int, rec: Recording) -> np.ndarray:
    """The codes of a stage file, one per line (stage_files.read_stage_codes)."""
    return read_stage_codes(path, n_epochs, rec.rec.name, STAGE_OF_CODE,
                            "0 W, 1 N1, 2 N2, 3 N3, 5 REM", "ISRUC-Sleep")


def _refuse_incomplete(rec: Recording) -> None:
    if not rec.problem:
        return
    if all(p.is_file() for p in rec.stage_files):  # a channel is missing
        fix = ("leave this recording out (allow_partial=true), read its missing EEG as zeros "
               "as the reference does (zero_fill_missing: true), or choose channels every "
               "recording has")
    else:
        fix = (f"put {rec.stage_files[0].name} and {rec.stage_files[1].name} from the "
               f"ISRUC-Sleep archive next to {rec.rec.name} (or allow_partial=true to leave "
               "this recording out)")
    raise DataError(f"{rec.rec}: {rec.problem}", fix=fix)


def read_labels(
    rec: Recording,
    trim_wake_minutes: float | None = None,
    channels: Sequence[str] = EEG_CHANNELS,
    counts: Counter | None = None,
) -> tuple[np.ndarray, np.ndarray, float]:
    """(starts: int64 sample of each kept 30 s epoch from the signal's start, labels: int64
    index into STAGES, sfreq) of the epochs both scorers gave one stage; `counts` gathers the
    epochs left out (("unscored", "scorers disagree"), and the lines past the signal's end:
    base.count_cut)."""
    _refuse_incomplete(rec)
    counts = Counter() if counts is None else counts
    header = read_edf_header(rec.rec)
    _, labels = _recorded(rec, header, channels)
    sfreq = require_channels(header, labels)
    epoch = round(EPOCH_SECONDS * sfreq)
    n_epochs = header.n_samples(labels[0]) // epoch
    first, second = (read_stage_file(p, n_epochs, rec) for p in rec.stage_files)
    longer, codes = max(zip(rec.stage_files, (first, second), strict=True),
                        key=lambda pair: len(pair[1]))
    count_cut(counts, rec.rec, longer, len(codes) - n_epochs,
              header.n_samples(labels[0]) / sfreq, len(codes) * EPOCH_SECONDS, EPOCH_SECONDS)
    first, second = first[:n_epochs], second[:n_epochs]
    agree = first == second
    if not agree.all():
        counts[(UNSCORED, DISAGREE)] += int((~agree).sum())
    starts = np.flatnonzero(agree).astype(np.int64) * epoch
    stages = np.array([STAGE_OF_CODE[c] for c in first[agree]], np.int64)
    starts, stages = trim_wake(starts, stages, sfreq, trim_wake_minutes)
    return starts, stages, sfreq


def read_events(rec: Recording) -> list[Event]:
    """The consensus stages as runs ("N2" for 90 s ...), in seconds from the signal's start;
    epochs the scorers disagree on are in no run."""
    starts, stages, sfreq = read_labels(rec)
    events: list[Event] = []
    for start, stage in zip(starts / sfreq, stages, strict=True):
        last = events[-1] if events else None
        if last and last.description == STAGES[stage] and abs(last.end - start) < 1e-6:
            events[-1] = Event(last.onset, last.duration + EPOCH_SECONDS, last.description)
        else:
            events.append(Event(float(start), float(EPOCH_SECONDS), STAGES[stage]))
    return events


# --- the subject tables ------------------------------------------------------------------------


@dataclass(frozen=True)
class SubjectRow:
    age: float | None
    sex: str
    diagnosis: str  # the table's text, "" where the cell is empty


def _cell_text(value) -> str:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return ""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value).strip()


def _age(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None  # "?" in the tables


def _table_key(text: str, subgroup: str) -> tuple[int, int] | None:
    """(subject number, night) of a row's subject cell; None for a row that is no subject."""
    if subgroup == "II":
        match = _TABLE_SUBJECT_II.match(text)
        return (int(match[1]), int(match[2])) if match else None
    return (int(text), 1) if text.isdigit() else None


def _header_columns(path: Path, rows: list[list[str]]) -> tuple[int, dict[str, int]]:
    """The header row (its first cell "Subject") and the columns of age, sex, diagnosis."""
    fix = ("use the details table from the ISRUC-Sleep site: two title rows, then a header "
           "row Subject, Age, Sex, Diagnosis, ... and one row per subject")
    first = next((i for i, row in enumerate(rows) if row and row[0].casefold() == "subject"),
                 None)
    if first is None:
        raise DataError(f"{path}: no header row starting with 'Subject'", fix=fix)
    columns = {}
    for name in ("age", "sex", "diagnosis"):
        found = [j for j, cell in enumerate(rows[first]) if cell.casefold().startswith(name)]
        if not found:
            raise DataError(f"{path}: no '{name.title()}' column in the header row "
                            f"{rows[first]}", fix=fix)
        columns[name] = found[0]
    return first, columns


@functools.lru_cache(maxsize=8)
def _table(path: Path, subgroup: str, _stamp: tuple[int, int]) -> dict[tuple[int, int], SubjectRow]:
    try:
        import pandas as pd

        frame = pd.read_excel(path, header=None, dtype=object, engine="openpyxl")
    except ImportError as exc:
        raise DataError(f"{path}: reading .xlsx needs openpyxl",
                        fix="pip install openpyxl==3.1.5") from exc
    except Exception as exc:  # openpyxl and zipfile raise many types for a damaged file
        raise DataError(f"{path}: cannot read the details table ({type(exc).__name__}: {exc})",
                        fix=f"download {path.name} from the ISRUC-Sleep site again") from exc
    rows = [[_cell_text(v) for v in row] for row in frame.itertuples(index=False)]
    first, columns = _header_columns(path, rows)
    table: dict[tuple[int, int], SubjectRow] = {}
    for row in rows[first + 1:]:
        key = _table_key(row[0], subgroup) if row else None
        if key is not None:
            table[key] = SubjectRow(_age(row[columns["age"]]), row[columns["sex"]],
                                    row[columns["diagnosis"]])
    return table


def details_table(path: Path, subgroup: str) -> dict[tuple[int, int], SubjectRow]:
    """(subject number, night) -> its row of a subgroup's details table (night 1 outside
    subgroup II); refuses a missing or unreadable table."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"no {path.name} at {path} (the diagnosis, age and sex of subgroup "
                        f"{subgroup}'s subjects)",
                        fix=f"put {path.name} from the ISRUC-Sleep site in {path.parent}")
    stat = path.stat()
    return _table(path, subgroup, (stat.st_mtime_ns, stat.st_size))


def _subject_row(rec: Recording) -> SubjectRow:
    """The recording's row (subgroup II: its subject's other row where it has none); an
    empty diagnosis in subgroup II is taken from the subject's other row."""
    table = details_table(rec.details, rec.subgroup)
    rows = [r for (n, _), r in sorted(table.items()) if n == rec.number]
    if not rows:
        which = f"{rec.number}_Rec.{rec.night}" if rec.subgroup == "II" else str(rec.number)
        raise DataError(f"{rec.details}: no row for subject {which} (recording {rec.rec})",
                        fix=f"use the {rec.details.name} that ships with ISRUC-Sleep (a row per "
                            f"{'recording' if rec.subgroup == 'II' else 'subject'} of subgroup "
                            f"{rec.subgroup})")
    row = table.get((rec.number, rec.night), rows[0])
    if not row.diagnosis:
        given = [r.diagnosis for r in rows if r.diagnosis]
        row = SubjectRow(row.age, row.sex, given[0]) if given else row
    return row


def recording_label(rec: Recording) -> str:
    """The recording's class (one of CLASSES) from its subject's diagnosis in the table."""
    row = _subject_row(rec)
    if not row.diagnosis and rec.subgroup == HEALTHY_SUBGROUP:
        return CLASSES[0]
    label = _CLASS_OF_TEXT.get(row.diagnosis.casefold())
    if label is None:
        what = f"diagnosis {row.diagnosis!r}" if row.diagnosis else "no diagnosis"
        raise DataError(f"{rec.details}: subject {rec.number} has {what}",
                        fix="ISRUC-Sleep's diagnoses are " + ", ".join(DIAGNOSES)
                            + f" (or a class name: {', '.join(CLASSES)}); correct its row")
    return label


def subjects_table(root: Path) -> dict[str, float]:
    """Subject id ("I-1") -> age in years, from the tables of the subgroups under root (a
    subgroup II subject's first row that gives one; "?" ages are left out)."""
    root = Path(root)
    ages: dict[str, float] = {}
    subgroups = sorted({r.subgroup for r in find_recordings(root)})
    for subgroup in subgroups:
        table = details_table(_details_path(root, subgroup), subgroup)
        for (number, _), row in sorted(table.items()):
            if row.age is not None:
                ages.setdefault(f"{subgroup}-{number}", row.age)
    return ages
