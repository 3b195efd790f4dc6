"""The Wisconsin Sleep Cohort as NSRR serves it (sleepdata.org/datasets/wsc): one EDF per visit
with its stage file beside it, and the cohort's dataset CSV.

Layout (the reference suite's WSC loader, kkontras/NeuroAtlas extensions/datasets/dataio/
wsc.py, which reads the real folder):

  <root>/polysomnography/wsc-visit<N>-<wsc_id>-nsrr.edf
  <root>/polysomnography/wsc-visit<N>-<wsc_id>-nsrr.allscore.txt   (or .stg.txt)
  <root>/datasets/wsc-dataset-<version>.csv   (wsc_id, wsc_vst, age, sex)

Stage files, read as the reference reads them (it prefers .allscore.txt where a visit has both):
- `.stg.txt`: one line per 30 s epoch from the EDF's start, tab separated, the stage code in
  the second column (an optional first line starting with "Epoch" is the header): 0 wake, 1
  N1, 2 N2, 3 and 4 N3 (4: R&K stage 4), 5 REM, 6 movement and 7 unscored (left out, counted);
- `.allscore.txt` (Latin-1): "HH:MM:SS.fff<TAB>text" lines; "START RECORDING" is the EDF's first
  sample, each "STAGE - <W|N1|N2|N3|R|NO STAGE|MVT>" holds from its time to the next one, the
  last to the file's last timed line; a time before the start is the next day's.
An unknown code or stage name is refused by name, as is a file without START RECORDING.

Ids: the recording is "<wsc_id>_visit<N>" (the reference's), the subject the participant
(wsc_id: a participant's visits stay in one fold), the session "visit<N>". Ages from the CSV
per (wsc_id, wsc_vst); a visit without a row is incomplete. WSC's stage files hold no event
durations the sleep-event tasks could use: no event kinds. Powerline: Wisconsin, 60 Hz.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from embedprobe.core.errors import DataError
from embedprobe.datasets.base import Event, RecordingHeader, Signals, one_each, present
from embedprobe.datasets.edf import ANNOTATIONS, read_edf_header, read_edf_signals
from embedprobe.datasets.nsrr.reader import (
    EPOCH_SECONDS,
    STAGES,
    Columns,
    Demographics,
    find_table,
    row_for,
    stage_labels,
)
from embedprobe.datasets.walk import find_paths, require_folder

FORMAT = "wsc"
EVENT_KINDS: tuple[str, ...] = ()
STEM = re.compile(r"^wsc-visit(?P<visit>\d+)-(?P<id>\d+)-nsrr$")
ANNOTATION_SUFFIXES = (".allscore.txt", ".stg.txt")  # the reference's preference
TABLE = "wsc-dataset-*.csv"
COLUMNS = Columns(id="wsc_id", age="age", sex="sex", visit="wsc_vst")
# .stg.txt codes and .allscore.txt names -> index into STAGES (None: unscored)
STG_CODES = {0: 0, 1: 1, 2: 2, 3: 3, 4: 3, 5: 4, 6: None, 7: None}
ALLSCORE_STAGES = {"W": 0, "N1": 1, "N2": 2, "N3": 3, "R": 4, "NO STAGE": None, "MVT": None}
# EEG labels as WSC's EDFs name them, the first present giving the header's rate
EEG = ("C3_M2", "O1_M2", "C4_M1", "O2_M1", "F3_M2", "F4_M1", "Cz_M2", "Pz_M2")
DAY = 86400.0


@dataclass(frozen=True)
class Recording:
    recording: str  # "10119_visit1"
    subject: str  # the wsc_id
    session: str  # "visit1"
    signal_path: Path
    annotation_path: Path
    visit_number: int
    problem: str = ""

    @property
    def files(self) -> tuple[Path, ...]:
        return (self.signal_path, *present(self.annotation_path))


def find_recordings(root: Path) -> list[Recording]:
    """Every wsc-visit<N>-<id>-nsrr.edf under root/polysomnography, sorted by id, with its stage
    file (.allscore.txt, else .stg.txt); a visit without either, or without a CSV row, is
    incomplete (`problem`)."""
    root = Path(root)
    folder = root / "polysomnography"
    require_folder(folder, "WSC",
                   fix="download wsc/polysomnography and wsc/datasets with NSRR's `nsrr` "
                       "gem into the dataset's folder, or write a look-alike: embedprobe "
                       "demo-data")
    table = find_table(root, TABLE, COLUMNS)
    edfs = one_each((p for p in find_paths(folder, "*.edf") if p.parent == folder),
                    lambda p: p.stem)
    found = []
    for stem, edf in edfs.items():
        match = STEM.match(stem)
        if not match:
            raise DataError(f"{edf}: not a WSC EDF name (wsc-visit<N>-<id>-nsrr.edf)",
                            fix="keep NSRR's names, or move other EDFs out of the data folder")
        subject, visit = match["id"], int(match["visit"])
        notes = [folder / f"{stem}{suffix}" for suffix in ANNOTATION_SUFFIXES]
        note = next((n for n in notes if n.is_file()), notes[0])
        problem = "" if note.is_file() else \
            f"{stem} has neither {notes[0].name} nor {notes[1].name} in {folder}"
        if not problem and table is not None and row_for(table[1], subject, visit) is None:
            problem = f"{table[0]}: no row for wsc_id {subject} (wsc_vst {visit}) of {stem}"
        found.append(Recording(f"{subject}_visit{visit}", subject, f"visit{visit}", edf, note,
                               visit, problem))
    return sorted(found, key=lambda r: r.recording)


def demographics(root: Path, recordings: Sequence[Recording]) -> dict[str, Demographics]:
    """Recording -> the participant's age, sex and visit at that visit (the CSV's row)."""
    table = find_table(root, TABLE, COLUMNS)
    if table is None:
        raise DataError(f"no {TABLE} under {Path(root) / 'datasets'} (the WSC ages)",
                        fix="download wsc/datasets from NSRR into the dataset's folder")
    out = {}
    for rec in recordings:
        row = row_for(table[1], rec.subject, rec.visit_number)
        if row is None:
            raise DataError(f"{table[0]}: no row for wsc_id {rec.subject} (wsc_vst "
                            f"{rec.visit_number}) of {rec.recording}",
                            fix="use NSRR's current WSC dataset CSV, or allow_partial=true")
        out[rec.recording] = Demographics(row.age, row.sex, rec.visit_number)
    return out


def subjects_table(root: Path) -> dict[str, float]:
    """Participant -> age at its first visit read: brain age's unit is the participant, as the
    reference's brain-age task pools a WSC participant's windows by subject_id (its wsc_id),
    labelled by the first row's age (its records are sorted by file name: visit 1 first)."""
    recordings = [r for r in find_recordings(root) if not r.problem]
    ages = demographics(root, recordings)
    out: dict[str, float] = {}
    for rec in sorted(recordings, key=lambda r: (r.visit_number, r.recording)):
        out.setdefault(rec.subject, ages[rec.recording].age)
    return out


# --- stage files -----------------------------------------------------------------------------


def _fix(path: Path) -> str:
    return f"download {path.name} again from NSRR (wsc/polysomnography)"


def read_stg(path: Path) -> tuple[np.ndarray, Counter]:
    """(stage per 30 s epoch, -1 unscored; the unscored epochs by code) of a .stg.txt."""
    stages, unscored = [], Counter()
    lines = path.read_text(encoding="latin-1").splitlines()
    for k, line in enumerate(lines):
        parts = line.split()
        if not parts or (k == 0 and parts[0].lower().startswith("epoch")):
            continue
        try:
            code = int(parts[1])
        except (IndexError, ValueError):
            raise DataError(f"{path}: line {k + 1} {line!r} has no stage code in its second "
                            "column", fix=_fix(path)) from None
        if code not in STG_CODES:
            raise DataError(f"{path}: line {k + 1}: unknown stage code {code} (known: "
                            f"{', '.join(map(str, STG_CODES))})", fix=_fix(path))
        stage = STG_CODES[code]
        if stage is None:
            unscored[f"stg code {code}"] += 1
        stages.append(-1 if stage is None else stage)
    return np.array(stages, np.int64), unscored


def _clock(text: str, path: Path, k: int) -> float:
    match = re.fullmatch(r"(\d{1,2}):(\d{2}):(\d{2}(?:\.\d+)?)", text.strip())
    if not match:
        raise DataError(f"{path}: line {k + 1} starts with {text!r}, not HH:MM:SS.fff",
                        fix=_fix(path))
    return int(match[1]) * 3600 + int(match[2]) * 60 + float(match[3])


def read_allscore(path: Path) -> tuple[np.ndarray, Counter]:
    """(stage per 30 s epoch from START RECORDING, -1 unscored; the unscored epochs by name) of
    an .allscore.txt."""
    rows = []
    for k, line in enumerate(path.read_text(encoding="latin-1").splitlines()):
        if "\t" in line and line.strip():
            clock, text = line.split("\t", 1)
            rows.append((_clock(clock, path, k), text.strip(), k))
    start = next((t for t, text, _ in rows if "START RECORDING" in text), None)
    if start is None:
        raise DataError(f"{path}: no START RECORDING line", fix=_fix(path))
    marks = []
    for t, text, k in rows:
        if text.startswith("STAGE - "):
            name = text[len("STAGE - "):].strip()
            if name not in ALLSCORE_STAGES:
                raise DataError(f"{path}: line {k + 1}: unknown stage {name!r} (known: "
                                f"{', '.join(ALLSCORE_STAGES)})", fix=_fix(path))
            marks.append((_since(t, start), name))
    end = _since(rows[-1][0], start)
    stages, unscored = [], Counter()
    for (at, name), (until, _) in zip(marks, [*marks[1:], (end, "")], strict=True):
        first, last = int(at // EPOCH_SECONDS), int(until // EPOCH_SECONDS)
        stage = ALLSCORE_STAGES[name]
        stages += [-1] * (first - len(stages))  # before the first mark: unscored
        stages += [-1 if stage is None else stage] * max(last - first, 0)
        if stage is None:
            unscored[name] += max(last - first, 0)
    return np.array(stages, np.int64), unscored


def _since(t: float, start: float) -> float:
    """Seconds from the start; a clock time before it is the next day's."""
    return t - start + (DAY if t < start else 0.0)


def read_stages(rec: Recording) -> tuple[np.ndarray, Counter]:
    read = read_allscore if rec.annotation_path.name.endswith(".allscore.txt") else read_stg
    return read(rec.annotation_path)


# --- signals ---------------------------------------------------------------------------------


def _refuse_incomplete(rec: Recording) -> None:
    if rec.problem:
        raise DataError(f"{rec.signal_path}: {rec.problem}",
                        fix="download the visit's files again from NSRR; allow_partial=true "
                            "runs without it")


def _eeg(rec: Recording, labels) -> list[str]:
    eeg = [c for c in EEG if c in labels]
    if not eeg:
        raise DataError(f"{rec.signal_path}: none of the WSC EEG channels {', '.join(EEG)}",
                        fix="download the EDF again from NSRR")
    return eeg[:1]


def read_header(rec: Recording) -> RecordingHeader:
    header = read_edf_header(rec.signal_path)
    channels = tuple(c for c in header.labels if c != ANNOTATIONS)
    eeg = _eeg(rec, channels)[0]
    return RecordingHeader(channels, header.sfreq(eeg), header.n_samples(eeg))


def read_signals(rec: Recording, channels: Sequence[str], span=None) -> Signals:
    return read_edf_signals(rec.signal_path, channels, span=span)


def read_labels(rec: Recording, trim_wake_minutes: float | None = None,
                channels: Sequence[str] | None = None,
                counts: Counter | None = None) -> tuple[np.ndarray, np.ndarray, float]:
    """(starts: int64 sample of each scored 30 s epoch, labels: index into STAGES, sfreq)."""
    _refuse_incomplete(rec)
    header = read_edf_header(rec.signal_path)
    stages, unscored = read_stages(rec)
    return stage_labels(rec, header, list(channels or _eeg(rec, header.labels)), stages,
                        unscored, trim_wake_minutes, counts)


def read_events(rec: Recording) -> list[Event]:
    """The scored stages as events (onset, 30 s, stage name): WSC has no event kinds."""
    _refuse_incomplete(rec)
    stages, _ = read_stages(rec)
    return [Event(k * EPOCH_SECONDS, EPOCH_SECONDS, STAGES[s])
            for k, s in enumerate(stages) if s >= 0]
