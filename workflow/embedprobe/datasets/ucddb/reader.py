"""The St. Vincent's University Hospital / University College Dublin Sleep Apnea Database
(PhysioNet `ucddb` 1.0.0): 25 overnight polysomnograms of adults referred for suspected
sleep-disordered breathing, with their sleep stages and respiratory events.

Layout, flat, as PhysioNet ships it (files/ucddb/1.0.0/; the database page's description, as
a mirror of it reads, and the public readers of the real files cited below):

  ucddbNNN.rec            the polysomnogram, EDF (a .rec name: read through MNE via a link
                          named .edf, datasets/isruc's helper); NNN = 002, 003, 005-015, 017-028
  ucddbNNN_stage.txt      one stage code per line per 30 s epoch from the first sample
  ucddbNNN_respevt.txt    the respiratory event list (below)
  ucddbNNN_lifecard.edf   a simultaneous 3-lead Holter ECG: not read
  SubjectDetails.xls      one row per subject: S/No, Study Number ("UCDDB002"), Height (cm),
                          Weight (kg), Gender, PSG Start Time, PSG AHI, BMI, Age, Epworth
                          Sleepiness Score, Study Duration (hr), Sleep Efficiency (%), No of
                          data blocks in EDF

The PSG (Jaeger-Toennies) records EEG C3-A2 and C4-A1, labelled "C3A2" and "C4A1" in the
EDF (the reference suite's map, kkontras/NeuroAtlas configs/channel_maps/ucddb.yaml, and its
loader extensions/datasets/dataio/ucddb.py), at 128 Hz, beside EOG (Lefteye, RightEye), EMG,
ECG, SpO2, airflow, ribcage, abdomen, their sum, sound and body position. Only the EEG is
read; its channels are EEG_CHANNELS.

Stage codes (the reference's UCDDB_STAGE_MAP and other public readers): 0 Wake, 1 REM, 2 Stage 1,
3 Stage 2, 4 Stage 3, 5 Stage 4, 6 Artifact, 7 Indeterminate. R&K stages 3 and 4 are N3;
artifact and indeterminate epochs are left out (counted as ("unscored", "artifact") and
("unscored", "indeterminate")); any other code is refused. A stage file that covers less of
the recording than its whole 30 s epochs is refused (the scoring would end early, or belong
to another night); lines past the signal's end are cut, with a `warning:` naming the
recording's file (base.count_cut).

The event list (its columns as the reference and other public readers of the real files read
them: three header lines, then one fixed-width row per event):

  00:29:13  HYP-C             16       89.9    4.1     -     -      64.7   -5.7
  Time      Type      PB/CS Duration   Low  %Drop Snore Arousal B/T Rate B/T Change

Time is the clock time of the event's start (hh:mm:ss, to the second), in columns 1-10; Type
is in columns 11-20: APNEA-O, APNEA-C, APNEA-M (obstructive, central, mixed apnea), HYP-O,
HYP-C, HYP-M (hypopnea) and PB (periodic breathing; also read as "PB EVENT", the spelling a
public test of the real files writes, and CS, Cheyne-Stokes, as the reference reads it). After
them: an optional PB/CS flag (the event is part of periodic breathing or Cheyne-Stokes
breathing), the duration in whole seconds, then the desaturation (SpO2 low, % drop), snore
and arousal (+/-) and the bradycardia/tachycardia columns, which are not read. POSSIBLE rows
(events the scorer left unconfirmed; named by a public reader of the real files, not on the
database page) are left out. DOS line ends and a closing end-of-file character (0x1A) are
read as well.

Clock times count from the EDF header's start time (the recorder's clock, which the samples
count from; the reference does the same), wrapping past midnight: an event at 00:05:00 in a
recording that starts at 23:30:00 is at 2100 s. An event that ends past the signal's end, or
that lies outside it (a clock time before the start wraps to the next day), is refused.
Events are named by EVENT_KINDS: an apnea by its type, any hypopnea "hypopnea", periodic
breathing "periodic_breathing"; a flagged row is also a periodic_breathing event over the
same span (the reference counts it under both). UCDDB scores no arousals or limb movements.

Ids: recording and subject "ucddbNNN" (one night per subject), session "1". Ages come from
SubjectDetails.xls (subjects_table).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from embedprobe.core.errors import DataError
from embedprobe.datasets.base import Event, OneNightPerSubject, RecordingHeader, Signals, count_cut
from embedprobe.datasets.edf import ANNOTATIONS, EdfHeader, read_edf_header, require_channels
from embedprobe.datasets.isruc.reader import _read as read_rec_signals
from embedprobe.datasets.sleep_edf.reader import trim_wake
from embedprobe.datasets.stage_files import read_stage_codes
from embedprobe.datasets.walk import find_paths, require_folder

FORMAT = "ucddb"
STAGES = ("W", "N1", "N2", "N3", "REM")  # label index = position
EPOCH_SECONDS = 30
EEG_CHANNELS = ("C3A2", "C4A1")
SUBJECTS_TABLE = "SubjectDetails.xls"
EVENT_KINDS = ("apnea_obstructive", "apnea_central", "apnea_mixed", "hypopnea",
               "periodic_breathing")
# The stage files' codes: an index into STAGES, or the text an unscored epoch is counted as.
STAGE_OF_CODE = {0: 0, 1: 4, 2: 1, 3: 2, 4: 3, 5: 3}
UNSCORED_CODE = {6: "artifact", 7: "indeterminate"}
STAGE_CODES_TEXT = ("0 Wake, 1 REM, 2 Stage 1, 3 Stage 2, 4 Stage 3, 5 Stage 4, 6 Artifact, "
                    "7 Indeterminate")
# Each Type of the event list -> its kind (None: a documented row that is no kind's).
KIND_OF_TYPE = {"APNEA-O": "apnea_obstructive", "APNEA-C": "apnea_central",
                "APNEA-M": "apnea_mixed", "HYP-O": "hypopnea", "HYP-C": "hypopnea",
                "HYP-M": "hypopnea", "PB": "periodic_breathing",
                "PB EVENT": "periodic_breathing", "CS": "periodic_breathing", "POSSIBLE": None}
PERIODIC_FLAGS = ("PB", "CS")
HEADER_LINES = 3
TIME_COLUMNS, TYPE_COLUMNS = slice(0, 10), slice(10, 20)
DAY_SECONDS = 86400
UNSCORED = "unscored"
_NAME = re.compile(r"^ucddb(\d{3})\.rec$")
_CLOCK = re.compile(r"^(\d{1,2}):(\d{2}):(\d{2})$")
_DURATION = re.compile(r"^\d+(\.\d+)?$")
_FIX_EVENTS = ("use the _respevt.txt that came with the recording from PhysioNet (three header "
               "lines, then per event: time hh:mm:ss, type, an optional PB/CS flag, the "
               "duration in seconds, ...)")


@dataclass(frozen=True)
class Recording(OneNightPerSubject):
    recording: str  # "ucddb002"
    rec: Path  # the EDF signal file ucddbNNN.rec
    stage_file: Path  # ucddbNNN_stage.txt (may be missing)
    events_file: Path  # ucddbNNN_respevt.txt (may be missing)
    problem: str = ""  # why the recording is incomplete; "" when complete

    @property
    def signal_path(self) -> Path:
        return self.rec

    @property
    def files(self) -> tuple[Path, ...]:
        """The signal file and those of its annotation files that are there."""
        return (self.rec, *(p for p in (self.stage_file, self.events_file) if p.is_file()))


@dataclass(frozen=True)
class EventRow:
    """One row of an event list, as written."""

    line: int  # 1-based line number in the file
    clock: str  # "hh:mm:ss"
    type: str  # the Type column ("APNEA-O", "PB EVENT", ...)
    flag: str  # the PB/CS column: "PB", "CS" or ""
    duration: float  # seconds

    @property
    def clock_seconds(self) -> int:
        hours, minutes, seconds = (int(v) for v in self.clock.split(":"))
        return hours * 3600 + minutes * 60 + seconds

    @property
    def kinds(self) -> tuple[str, ...]:
        return row_kinds(self.type, self.flag)


def row_kinds(kind_type: str, flag: str) -> tuple[str, ...]:
    """The kinds a row's span is an event of: its type's, and periodic breathing where a PB/CS
    flag marks it (the reference counts a flagged row under both)."""
    kind = KIND_OF_TYPE[kind_type]
    if kind is None:
        return ()
    return (kind, "periodic_breathing") if flag and kind != "periodic_breathing" else (kind,)


# --- finding recordings ----------------------------------------------------------------------


def _problem(rec_path: Path, stage_file: Path, events_file: Path) -> str:
    missing = [p.name for p in (stage_file, events_file) if not p.is_file()]
    if missing:
        return f"{rec_path.name} has no {' or '.join(missing)} beside it"
    try:
        labels = read_edf_header(rec_path).labels
    except DataError:
        return ""  # an unreadable file is refused, naming it, when it is read
    absent = [c for c in EEG_CHANNELS if c not in labels]
    return f"{rec_path.name} has no EEG channel {', '.join(absent)}" if absent else ""


def find_recordings(root: Path) -> list[Recording]:
    """Every ucddbNNN.rec under root with its annotation files, sorted by id; one without
    its stage or event file, or without an EEG channel, is marked `problem`."""
    root = require_folder(root, "UCDDB",
                          fix="download PhysioNet's ucddb 1.0.0 there (ucddbNNN.rec, "
                              "_stage.txt, _respevt.txt, SubjectDetails.xls)")
    recordings: dict[str, Recording] = {}
    for path in find_paths(root, "*.rec"):
        if not _NAME.match(path.name):
            raise DataError(f"{path}: not a UCDDB recording name",
                            fix="keep PhysioNet's names: ucddbNNN.rec (NNN: three digits)")
        rid = path.stem
        if rid in recordings:
            raise DataError(f"recording {rid} is there twice: {recordings[rid].rec} and {path}",
                            fix="keep one copy under the data root")
        stage_file = path.with_name(f"{rid}_stage.txt")
        events_file = path.with_name(f"{rid}_respevt.txt")
        recordings[rid] = Recording(rid, path, stage_file, events_file,
                                    _problem(path, stage_file, events_file))
    return [recordings[k] for k in sorted(recordings)]


def _refuse_incomplete(rec: Recording) -> None:
    if not rec.problem:
        return
    if rec.stage_file.is_file() and rec.events_file.is_file():  # an EEG channel is missing
        fix = "leave this recording out (allow_partial=true)"
    else:
        fix = (f"put {rec.stage_file.name} and {rec.events_file.name} from PhysioNet's ucddb "
               f"next to {rec.rec.name} (or allow_partial=true to leave this recording out)")
    raise DataError(f"{rec.rec}: {rec.problem}", fix=fix)


# --- the reader interface (datasets/base.py) ------------------------------------------------


def _eeg(rec: Recording, header: EdfHeader) -> str:
    """The first EEG channel the file records (its rate and length are the recording's)."""
    eeg = next((c for c in EEG_CHANNELS if c in header.labels), None)
    if eeg is None:
        has = [label for label in header.labels if label != ANNOTATIONS]
        raise DataError(f"{rec.rec}: no EEG channel {', '.join(EEG_CHANNELS)} (it has "
                        f"{', '.join(has)})", fix="use the .rec file as PhysioNet ships it")
    return eeg


def read_header(rec: Recording) -> RecordingHeader:
    header = read_edf_header(rec.rec)
    eeg = _eeg(rec, header)
    labels = tuple(label for label in header.labels if label != ANNOTATIONS)
    return RecordingHeader(labels, header.sfreq(eeg), header.n_samples(eeg))


def read_signals(rec: Recording, channels: Sequence[str], span=None) -> Signals:
    """The named channels in volts (float32), through MNE (a DataError names the .rec)."""
    return read_rec_signals(rec, read_edf_header(rec.rec), list(channels), span)


def read_stage_file(path: Path, n_epochs: int, rec: Recording) -> np.ndarray:
    """The codes of a stage file, one per line (stage_files.read_stage_codes)."""
    return read_stage_codes(path, n_epochs, rec.rec.name, {*STAGE_OF_CODE, *UNSCORED_CODE},
                            STAGE_CODES_TEXT, "UCDDB")


def read_labels(
    rec: Recording,
    trim_wake_minutes: float | None = None,
    channels: Sequence[str] = EEG_CHANNELS,
    counts: Counter | None = None,
) -> tuple[np.ndarray, np.ndarray, float]:
    """(starts: int64 sample of each kept 30 s epoch from the signal's start, labels: int64
    index into STAGES, sfreq); `counts` gathers the epochs left out (("unscored",
    "artifact"), ("unscored", "indeterminate")), and the codes past the signal's end, a
    `warning:` of the index (base.count_cut)."""
    _refuse_incomplete(rec)
    counts = Counter() if counts is None else counts
    header = read_edf_header(rec.rec)
    sfreq = require_channels(header, list(channels))
    epoch = round(EPOCH_SECONDS * sfreq)
    n_epochs = header.n_samples(channels[0]) // epoch
    codes = read_stage_file(rec.stage_file, n_epochs, rec)
    count_cut(counts, rec.rec, rec.stage_file, len(codes) - n_epochs,
              header.n_samples(channels[0]) / sfreq, len(codes) * EPOCH_SECONDS, EPOCH_SECONDS)
    codes = codes[:n_epochs]
    for code, text in UNSCORED_CODE.items():
        if (codes == code).any():
            counts[(UNSCORED, text)] += int((codes == code).sum())
    scored = np.flatnonzero(np.isin(codes, list(STAGE_OF_CODE)))
    starts = scored.astype(np.int64) * epoch
    stages = np.array([STAGE_OF_CODE[int(c)] for c in codes[scored]], np.int64)
    starts, stages = trim_wake(starts, stages, sfreq, trim_wake_minutes)
    return starts, stages, sfreq


def _row(path: Path, number: int, line: str) -> EventRow:
    """One data line of an event list; a malformed line or an unknown type is refused."""
    clock = _CLOCK.match(line[TIME_COLUMNS].strip())
    if not clock or int(clock[1]) > 23 or int(clock[2]) > 59 or int(clock[3]) > 59:
        raise DataError(f"{path}: line {number} does not start with a clock time hh:mm:ss "
                        f"({line.strip()[:40]!r})", fix=_FIX_EVENTS)
    kind = line[TYPE_COLUMNS].strip()
    if kind not in KIND_OF_TYPE:
        raise DataError(f"{path}: line {number}: unknown respiratory event type {kind!r}",
                        fix="UCDDB's event types are " + ", ".join(KIND_OF_TYPE)
                            + f"; correct line {number} of {path.name} or use the file as "
                              "PhysioNet ships it")
    rest = line[TYPE_COLUMNS.stop:].split()
    flag = rest.pop(0) if rest and rest[0] in PERIODIC_FLAGS else ""
    if not rest or not _DURATION.match(rest[0]) or float(rest[0]) <= 0:
        raise DataError(f"{path}: line {number}: {kind} at {clock[0]} has no duration in "
                        "seconds", fix=_FIX_EVENTS)
    return EventRow(number, clock[0], kind, flag, float(rest[0]))


def read_event_rows(path: Path) -> list[EventRow]:
    """The rows of an event list below its three header lines, as written."""
    try:
        lines = path.read_text(encoding="latin-1").rstrip("\x1a \t\r\n").splitlines()
    except OSError as exc:
        raise DataError(f"{path}: cannot read the event list ({exc})",
                        fix="put the _respevt.txt from PhysioNet's ucddb there") from exc
    header = " ".join(lines[:HEADER_LINES]).casefold()
    if len(lines) < HEADER_LINES or not all(w in header for w in ("time", "type", "duration")):
        raise DataError(f"{path}: no header of an event list (Time, Type, ..., Duration) in "
                        f"its first {HEADER_LINES} lines", fix=_FIX_EVENTS)
    return [_row(path, number, line)
            for number, line in enumerate(lines[HEADER_LINES:], HEADER_LINES + 1)
            if line.strip()]


def read_events(rec: Recording) -> list[Event]:
    """Every apnea, hypopnea and periodic-breathing event, in seconds from the signal's first
    sample, in order of onset; refuses one outside the signal."""
    _refuse_incomplete(rec)
    header = read_edf_header(rec.rec)
    eeg = _eeg(rec, header)
    seconds = header.n_samples(eeg) / header.sfreq(eeg)
    start = header.start.hour * 3600 + header.start.minute * 60 + header.start.second
    events = []
    for row in read_event_rows(rec.events_file):
        onset = float((row.clock_seconds - start) % DAY_SECONDS)
        if row.kinds and onset + row.duration > seconds:
            raise DataError(
                f"{rec.events_file}: line {row.line}: {row.type} at {row.clock} for "
                f"{row.duration:g} s is not within {rec.rec.name} (from "
                f"{header.start.time()} for {seconds:g} s; clock times count from its start)",
                fix=f"use the event list that came with {rec.rec.name}; this one is cut or "
                    "from another recording")
        events += [Event(onset, row.duration, kind) for kind in row.kinds]
    return sorted(events, key=lambda e: e.onset)


# --- the subject table ----------------------------------------------------------------------


def _table_path(root: Path) -> Path:
    found = find_paths(root, SUBJECTS_TABLE) if root.is_dir() else []
    if not found:
        raise DataError(f"no {SUBJECTS_TABLE} under {root} (the subjects' ages)",
                        fix=f"put {SUBJECTS_TABLE} from PhysioNet's ucddb in {root}")
    return found[0]


def _cell(value) -> str:
    """A cell as text: a whole number without its ".0"."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value).strip()


def subjects_table(root: Path) -> dict[str, float]:
    """Subject id ("ucddb002") -> age in years, from SubjectDetails.xls (its header row's
    "Study Number" and "Age" columns, found by name; rows of no subject are skipped)."""
    path = _table_path(Path(root))
    fix = (f"use the {SUBJECTS_TABLE} from PhysioNet's ucddb (a header row with Study Number "
           "and Age, one row per subject)")
    try:
        import xlrd

        sheet = xlrd.open_workbook(str(path)).sheet_by_index(0)
        rows = [[_cell(v) for v in sheet.row_values(r)] for r in range(sheet.nrows)]
    except ImportError as exc:
        raise DataError(f"{path}: reading .xls needs xlrd", fix="pip install xlrd==2.0.2") from exc
    except Exception as exc:  # xlrd raises its own errors for a damaged file
        raise DataError(f"{path}: cannot read the subject table ({type(exc).__name__}: {exc})",
                        fix=fix) from exc
    header = [c.casefold() for c in rows[0]] if rows else []
    if "study number" not in header or "age" not in header:
        raise DataError(f"{path}: no 'Study Number' and 'Age' columns in its first row "
                        f"({', '.join(rows[0]) if rows else 'empty'})", fix=fix)
    study, age = header.index("study number"), header.index("age")
    ages: dict[str, float] = {}
    for row in rows[1:]:
        name = row[study].lower()
        if not re.fullmatch(r"ucddb\d{3}", name) or not row[age]:
            continue  # an empty or note row, an age the table leaves empty
        try:
            ages[name] = float(row[age])
        except ValueError as exc:
            raise DataError(f"{path}: subject {name} has age {row[age]!r}", fix=fix) from exc
    return ages
