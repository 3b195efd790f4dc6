"""The National Sleep Research Resource's polysomnography studies (sleepdata.org): one EDF per
night with its NSRR XML annotations, and the study's dataset CSVs. A dataset entry names its
`study` (STUDIES), optionally the `visits` it reads, and which annotation file (`annotations:
nsrr`, the default, or `profusion`).

Layout as NSRR distributes it (the `nsrr` gem's download folders; Luna's NSRR sample lists,
zzz.bwh.harvard.edu/luna/nsrr, which pair them for SHHS as shhs/polysomnography/edfs/shhs1/
shhs1-200001.edf with shhs/polysomnography/annotations-events-nsrr/shhs1/shhs1-200001-nsrr.xml;
the reference suite's NSRR loaders, kkontras/NeuroAtlas extensions/datasets/physioex/datasets/
{shhs,mesa,mros,hpap}.py and adapters/cfs.py, which read the real folders):

  <root>/polysomnography/edfs/<visit folder>/<stem>.edf
  <root>/polysomnography/annotations-events-nsrr/<visit folder>/<stem>-nsrr.xml
  <root>/polysomnography/annotations-events-profusion/<visit folder>/<stem>-profusion.xml
  <root>/datasets/<the study's harmonized dataset CSV>

with, per study (STUDIES): SHHS visits shhs1/ and shhs2/ (shhs1-200001, shhs2-200077), MESA one
flat folder (mesa-sleep-0001), MrOS visit1/ and visit2/ (mros-visit1-aa0001), CFS flat
(cfs-visit5-800002), HomePAP lab/full/ (homepap-lab-full-1600001; its lab/split/ and home/
nights have other montages and are not read). The XML files are read by annotations.py.

Ids: the recording is the EDF's stem; the subject is the study's participant id (`nsrrid`,
SHHS's 200001, MrOS's aa0001): a participant's visits (SHHS's shhs1 and shhs2 nights) are one
subject, so every fold rule keeps them in one fold, as the reference's SHHS split does (it
splits by patient); the session is the visit.

Ages and sex: the study's NSRR harmonized dataset CSV (`nsrrid`, `visitnumber`, `nsrr_age`,
`nsrr_sex`: NSRR's harmonized variables, the same names in every study; the file names are the
ones the reference's loaders open, e.g. shhs-harmonized-dataset-0.21.0.csv, matched here
without their version). A table with several visits is matched on `visitnumber`; a recording
whose participant and visit have no row is incomplete (its `problem` names the CSV), so a strict
run refuses it and any other runs without it. Without the CSV the recordings read (staging
needs no ages); subjects_table and recording_ages (each night's age) refuse.

Stages and events (annotations.py): the stages per 30 s epoch, unscored epochs left out and
counted; the scored epochs past the EDF's end: one (a last partial epoch) is cut with the
index's warning, more mean the XML is another night's and are refused. Events in seconds from
the EDF's first sample by the kinds of annotations.EVENT_KINDS; one that ends past the EDF's
end is cut at the end, one that starts past it is refused. Powerline: every study is American,
60 Hz. WSC and STAGES, which NSRR also serves, annotate in other files (WSC's .allscore.txt and
.stg.txt, STAGES's per-site CSVs) in other folders: datasets/wsc/ and datasets/stages/ read
them with this module's table and label pieces (Columns, read_table, stage_labels).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from embedprobe.core.errors import DataError
from embedprobe.datasets.base import (
    Event,
    RecordingHeader,
    Signals,
    count_cut,
    one_each,
    present,
)
from embedprobe.datasets.edf import (
    ANNOTATIONS,
    read_edf_header,
    read_edf_signals,
    require_channels,
)
from embedprobe.datasets.nsrr import annotations as xml
from embedprobe.datasets.walk import find_paths, require_folder

FORMAT = "nsrr"
READER_SETTINGS = ("study", "visits", "annotations")
STAGES = ("W", "N1", "N2", "N3", "REM")
EPOCH_SECONDS = 30
EVENT_KINDS = xml.EVENT_KINDS
ANNOTATION_FOLDERS = {"nsrr": "annotations-events-nsrr", "profusion":
                      "annotations-events-profusion"}
ID, VISIT, AGE, SEX = "nsrrid", "visitnumber", "nsrr_age", "nsrr_sex"


@dataclass(frozen=True)
class Visit:
    name: str  # the session ("1", "shhs2", "lab-full")
    folder: str  # under edfs/ and annotations-events-*/ ("" flat)
    number: int  # the harmonized CSV's visitnumber


@dataclass(frozen=True)
class Study:
    visits: tuple[Visit, ...]
    stem: str  # the EDF stem's pattern: groups `visit` (where it varies) and `id`
    table: str  # the harmonized CSV's name pattern under datasets/
    eeg: tuple[str, ...]  # the EEG channels as labelled (header sfreq: the first present)


STUDIES = {
    # SHHS: EEG (C4-A1) and EEG(sec) (C3-A2) at 125 Hz (the reference's shhs loader)
    "shhs": Study((Visit("shhs1", "shhs1", 1), Visit("shhs2", "shhs2", 2)),
                  r"shhs(?P<visit>[12])-(?P<id>\d{6})", "shhs-harmonized-dataset-*.csv",
                  ("EEG", "EEG(sec)")),
    # MESA (Exam 5's sleep study): EEG1 Fz-Cz, EEG2 Cz-Oz, EEG3 C4-M1 at 256 Hz
    "mesa": Study((Visit("5", "", 5),), r"mesa-sleep-(?P<id>\d{4})",
                  "mesa-sleep-harmonized-dataset-*.csv", ("EEG1", "EEG2", "EEG3")),
    # MrOS: referential C3, C4 and the mastoids A1, A2
    "mros": Study((Visit("1", "visit1", 1), Visit("2", "visit2", 2)),
                  r"mros-visit(?P<visit>[12])-(?P<id>[a-z]{2}\d{4})",
                  "mros-visit*-harmonized*.csv", ("C3", "C4", "A1", "A2")),
    # CFS (visit 5, its PSG visit): referential C3, C4, M1, M2 at 128 Hz, in mV
    "cfs": Study((Visit("5", "", 5),), r"cfs-visit5-(?P<id>\d{6})",
                 "cfs-visit5-harmonized-dataset-*.csv", ("C3", "C4", "M1", "M2")),
    # HomePAP's full-montage lab nights: referential C3, C4, M1, M2
    "homepap": Study((Visit("lab-full", "lab/full", 1),), r"homepap-lab-full-(?P<id>\d{7})",
                     "homepap-baseline-harmonized-dataset-*.csv", ("C3", "C4", "M1", "M2")),
}


@dataclass(frozen=True)
class Recording:
    recording: str  # the EDF's stem, "shhs1-200001"
    subject: str  # the participant, "200001"
    session: str  # the visit's name
    signal_path: Path
    annotation_path: Path
    study: str
    visit_number: int
    problem: str = ""

    @property
    def files(self) -> tuple[Path, ...]:
        return (self.signal_path, *present(self.annotation_path))


@dataclass(frozen=True)
class Demographics:
    age: float
    sex: str
    visit: int


@dataclass(frozen=True)
class Columns:
    """A participant table's column names: NSRR's harmonized ones by default (WSC's own
    dataset CSV has others)."""
    id: str = ID
    age: str = AGE
    sex: str = SEX
    visit: str = VISIT


HARMONIZED = Columns()


def _study(study: str | None) -> Study:
    if study not in STUDIES:
        raise DataError(f"nsrr dataset: study {study!r} is not one the reader knows",
                        fix=f"set `study:` in the dataset's entry (config/datasets.yaml) to one "
                            f"of {', '.join(STUDIES)}")
    return STUDIES[study]


def _visits(study: str, chosen: Sequence | None) -> tuple[Visit, ...]:
    visits = STUDIES[study].visits
    if chosen is None:
        return visits
    names = [v.name for v in visits]
    unknown = [str(c) for c in chosen if str(c) not in names]
    if unknown:
        raise DataError(f"nsrr dataset ({study}): visits {', '.join(unknown)} are not the "
                        f"study's", fix=f"list visits among {', '.join(names)}")
    return tuple(v for v in visits if v.name in {str(c) for c in chosen})


def annotation_file(root: Path, visit: Visit, stem: str, annotations: str) -> Path:
    folder = Path(root, "polysomnography", ANNOTATION_FOLDERS[annotations], visit.folder)
    return folder / f"{stem}-{annotations}.xml"


def find_recordings(root: Path, study: str | None = None, visits: Sequence | None = None,
                    annotations: str = "nsrr") -> list[Recording]:
    """Every EDF of the study's visits under root, sorted by stem, paired with its XML. A visit
    folder of EDFs whose annotation folder is absent is refused; a night without its XML, or
    whose participant and visit the dataset CSV lacks, is incomplete (`problem`)."""
    spec, root = _study(study), Path(root)
    if annotations not in ANNOTATION_FOLDERS:
        raise DataError(f"nsrr dataset: annotations {annotations!r}",
                        fix=f"use annotations: {' or '.join(ANNOTATION_FOLDERS)}")
    require_folder(root, "NSRR",
                   fix=f"download {study} there with NSRR's `nsrr` gem (polysomnography/, "
                       "datasets/), or write a look-alike: embedprobe demo-data")
    table = _table_rows(root, study)
    pattern = re.compile(f"^{spec.stem}$")
    found = []
    for visit in _visits(study, visits):
        folder = root / "polysomnography" / "edfs" / visit.folder
        if not folder.is_dir():
            continue  # a visit not downloaded: the expected count says so
        edfs = one_each((p for p in find_paths(folder, "*.edf") if p.parent == folder),
                        lambda p: p.stem)
        if not edfs:
            continue
        notes = annotation_file(root, visit, "x", annotations).parent
        if not notes.is_dir():
            raise DataError(f"{folder}: {len(edfs)} EDFs but no annotation folder {notes}",
                            fix=f"download the visit's {ANNOTATION_FOLDERS[annotations]}/ "
                                f"folder from NSRR beside edfs/ (the `nsrr` gem fetches it "
                                f"with the EDFs)")
        for stem, edf in edfs.items():
            match = pattern.match(stem)
            if not match or (match.groupdict().get("visit") and
                             f"{study}{match['visit']}" != visit.name and
                             match["visit"] != visit.name):
                raise DataError(f"{edf}: not a {study} {visit.name} EDF name",
                                fix=f"keep NSRR's names ({spec.stem}.edf in {folder.name}/), or "
                                    "move other EDFs out of the data folder")
            subject = match["id"]
            note = annotation_file(root, visit, stem, annotations)
            problem = "" if note.is_file() else f"{stem} has no {note.name} in {note.parent}"
            if not problem and table is not None and \
                    row_for(table[1], subject, visit.number) is None:
                problem = (f"{table[0]}: no row for {ID} {subject} (visit {visit.number}) "
                           f"of {stem}")
            found.append(Recording(stem, subject, visit.name, edf, note, study, visit.number,
                                   problem))
    return sorted(found, key=lambda r: r.recording)


# --- the dataset CSV -------------------------------------------------------------------------


def _normal(value) -> str:
    """A participant id as the EDF names it: lower case, numbers without leading zeros
    (MESA's CSV holds 1 for mesa-sleep-0001)."""
    text = str(value).strip().lower()
    if text.endswith(".0") and text[:-2].isdigit():
        text = text[:-2]
    return str(int(text)) if text.isdigit() else text


def row_for(rows: dict, subject: str, visit: int):
    """The participant's row of its visit; a table of one visit per participant matches any."""
    by_visit = rows.get(_normal(subject))
    if not by_visit:
        return None
    return by_visit.get(visit, next(iter(by_visit.values())) if None in by_visit else None)


def find_table(root: Path, pattern: str, columns: Columns = HARMONIZED):
    """(the CSVs' names, {participant: {visit or None: Demographics}}) of every file of
    `pattern` under root/datasets, where NSRR puts a study's dataset CSVs (MrOS has one per
    visit), None when there is none. The NSRR studies, WSC and STAGES read theirs here."""
    folder = Path(root) / "datasets"
    paths = sorted(folder.glob(pattern)) if folder.is_dir() else []
    if not paths:
        return None
    return Path(folder, " + ".join(p.name for p in paths)), read_tables(paths, columns)


def _table_rows(root: Path, study: str):
    return find_table(root, STUDIES[study].table)


def read_tables(paths: Sequence[Path], columns: Columns = HARMONIZED) -> dict:
    """{participant: {visit or None: Demographics}} of every table in paths."""
    rows: dict[str, dict] = {}
    for path in paths:
        for subject, visits in read_table(path, path.stat().st_mtime_ns, columns).items():
            rows.setdefault(subject, {}).update(visits)
    return rows


@lru_cache(maxsize=16)
def read_table(path: Path, _mtime: int, columns: Columns = HARMONIZED) -> dict:
    """One CSV's rows; without a visit column, the visit its name says (mros-visit2-...)
    or none (a study of one visit)."""
    import pandas as pd

    c = columns
    fix = (f"use the study's NSRR dataset CSV (columns {c.id}, {c.age}, {c.sex}, and "
           f"{c.visit} where it has several visits)")
    try:
        table = pd.read_csv(path, dtype=str)
    except Exception as exc:  # pandas raises several types for a malformed file
        raise DataError(f"{path}: cannot read the table ({type(exc).__name__}: {exc})",
                        fix=fix) from exc
    table.columns = [str(name).strip().lower() for name in table.columns]
    missing = [name for name in (c.id, c.age) if name not in table.columns]
    if missing:
        raise DataError(f"{path}: no {' or '.join(missing)} column", fix=fix)
    named = re.search(r"visit(\d+)", path.name)
    rows: dict[str, dict] = {}
    # columns, not iterrows: a study's table has thousands of rows and the plan reads it
    ids, ages = table[c.id].tolist(), table[c.age].tolist()
    visits = table[c.visit].tolist() if c.visit in table.columns else [None] * len(ids)
    sexes = table[c.sex].fillna("").tolist() if c.sex in table.columns else [""] * len(ids)
    for k, (subject, age_text, visit_text, sex) in enumerate(zip(ids, ages, visits, sexes,
                                                                  strict=True)):
        try:
            age = float(age_text)
        except (TypeError, ValueError):
            raise DataError(f"{path}: row {k + 2} ({c.id} {subject}) has {c.age} "
                            f"{age_text!r}", fix=fix) from None
        visit = int(float(visit_text)) if visit_text is not None else \
            int(named[1]) if named else None
        rows.setdefault(_normal(subject), {})[visit] = Demographics(age, str(sex), visit or 0)
    return rows


def demographics(root: Path, recordings: Sequence[Recording]) -> dict[str, Demographics]:
    """Recording -> its participant's age, sex and visit from the study's CSV; a recording
    without a row is refused by name."""
    if not recordings:
        return {}
    study = recordings[0].study
    table = _table_rows(Path(root), study)
    if table is None:
        raise DataError(f"no {STUDIES[study].table} under {Path(root) / 'datasets'} (the "
                        f"{study} participants' ages)",
                        fix=f"download the study's datasets/ folder from NSRR into {root}")
    out = {}
    for rec in recordings:
        row = row_for(table[1], rec.subject, rec.visit_number)
        if row is None:
            raise DataError(f"{table[0]}: no row for {ID} {rec.subject} (visit "
                            f"{rec.visit_number}) of {rec.recording}",
                            fix=f"use the study's current {table[0].name} from NSRR, or "
                                "allow_partial=true to run without the recording")
        out[rec.recording] = Demographics(row.age, row.sex, rec.visit_number)
    return out


def subjects_table(root: Path, study: str | None = None) -> dict[str, float]:
    """Participant -> age at its first visit read (brain age's one unit per subject; SHHS's
    second visit is 4-5 years older: demographics() has each night's)."""
    root = Path(root)
    study = study or _study_under(root)
    recordings = [r for r in find_recordings(root, study) if not r.problem]
    ages: dict[str, float] = {}
    by_recording = demographics(root, recordings)
    for rec in sorted(recordings, key=lambda r: (r.visit_number, r.recording)):
        ages.setdefault(rec.subject, by_recording[rec.recording].age)
    return ages


def recording_ages(root: Path, study: str | None = None) -> dict[str, float]:
    """Recording -> the participant's age at that night's visit (brain age's unit where the
    entry says `brain_age_unit: recording`, the reference's for SHHS)."""
    root = Path(root)
    recordings = [r for r in find_recordings(root, study or _study_under(root))
                  if not r.problem]
    return {rec: row.age for rec, row in demographics(root, recordings).items()}


def _study_under(root: Path) -> str:
    """The study whose CSV is under root/datasets (subjects_table is called with the root
    alone)."""
    found = [s for s in STUDIES if _table_rows(root, s) is not None]
    if len(found) != 1:
        raise DataError(f"{root}: cannot tell the NSRR study from its datasets/ folder "
                        f"({', '.join(found) or 'no study CSV'})",
                        fix="keep one study's folder per dataset entry")
    return found[0]


# --- signals ---------------------------------------------------------------------------------


def _refuse_incomplete(rec: Recording) -> None:
    if rec.problem:
        raise DataError(f"{rec.signal_path}: {rec.problem}",
                        fix="download the night's files again from NSRR; allow_partial=true "
                            "runs without it")


def read_header(rec: Recording) -> RecordingHeader:
    header = read_edf_header(rec.signal_path)
    channels = tuple(c for c in header.labels if c != ANNOTATIONS)
    eeg = [c for c in STUDIES[rec.study].eeg if c in channels] or list(channels[:1])
    return RecordingHeader(channels, header.sfreq(eeg[0]), header.n_samples(eeg[0]))


def read_signals(rec: Recording, channels: Sequence[str], span=None) -> Signals:
    return read_edf_signals(rec.signal_path, channels, span=span)


def _eeg(rec: Recording, header) -> list[str]:
    eeg = [c for c in STUDIES[rec.study].eeg if c in header.labels]
    if not eeg:
        raise DataError(f"{rec.signal_path}: none of the {rec.study} EEG channels "
                        f"{', '.join(STUDIES[rec.study].eeg)}",
                        fix="download the EDF again from NSRR")
    return eeg[:1]


def _scoring(rec: Recording) -> xml.Scoring:
    read = xml.read_profusion if rec.annotation_path.name.endswith("-profusion.xml") \
        else xml.read_nsrr
    scoring = read(rec.annotation_path)
    if scoring.epoch_seconds != EPOCH_SECONDS:
        raise DataError(f"{rec.annotation_path}: EpochLength {scoring.epoch_seconds:g}, not "
                        f"{EPOCH_SECONDS}", fix=f"download {rec.annotation_path.name} again")
    return scoring


def _disagrees(rec, what: str, seconds: float) -> DataError:
    kind = "XML" if rec.annotation_path.suffix == ".xml" else "annotation file"
    return DataError(f"{rec.annotation_path}: {what}, but {rec.signal_path.name} lasts "
                     f"{seconds:,.0f} s: the {kind} disagrees with the EDF",
                     fix=f"use the {rec.annotation_path.name} of this EDF (NSRR pairs them by "
                         "name; this one is another night's or the EDF is cut)")


def read_labels(rec: Recording, trim_wake_minutes: float | None = None,
                channels: Sequence[str] | None = None,
                counts: Counter | None = None) -> tuple[np.ndarray, np.ndarray, float]:
    """(starts: int64 sample of each scored 30 s epoch, labels: index into STAGES, sfreq);
    `counts` gathers the unscored epochs and the one cut at the end."""
    _refuse_incomplete(rec)
    header = read_edf_header(rec.signal_path)
    scoring = _scoring(rec)
    return stage_labels(rec, header, list(channels or _eeg(rec, header)), scoring.stages,
                        scoring.unscored, trim_wake_minutes, counts)


def stage_labels(rec, header, channels: list[str], stages: np.ndarray, unscored: Counter,
                 trim_wake_minutes: float | None, counts: Counter | None
                 ) -> tuple[np.ndarray, np.ndarray, float]:
    """read_labels of a recording (signal_path, annotation_path) whose annotation file scored
    `stages` (index into STAGES per 30 s epoch from the EDF's first sample, -1 unscored; the
    unscored epochs counted by concept in `unscored`): one scored epoch past the EDF's end is
    cut and counted, more are refused."""
    from embedprobe.datasets.sleep_edf.reader import trim_wake

    counts = Counter() if counts is None else counts
    sfreq = require_channels(header, channels)
    n_samples = header.n_samples(channels[0])
    epoch = round(EPOCH_SECONDS * sfreq)
    whole = n_samples // epoch
    past = len(stages) - whole
    if past > 1:
        raise _disagrees(rec, f"{len(stages):,} epochs of {EPOCH_SECONDS} s scored",
                         n_samples / sfreq)
    count_cut(counts, rec.signal_path, rec.annotation_path, past, n_samples / sfreq,
              len(stages) * EPOCH_SECONDS, EPOCH_SECONDS)
    stages = stages[:whole]
    for concept, n in unscored.items():
        counts[("unscored", concept)] += n
    scored = np.flatnonzero(stages >= 0)
    starts, labels = trim_wake(scored.astype(np.int64) * epoch, stages[scored], sfreq,
                               trim_wake_minutes)
    return starts.astype(np.int64), labels.astype(np.int64), sfreq


def read_events(rec: Recording) -> list[Event]:
    """The events of EVENT_KINDS (one per kind of each scored event), by onset; an event past
    the EDF's end is cut there, one starting past it refused."""
    _refuse_incomplete(rec)
    header = read_edf_header(rec.signal_path)
    eeg = _eeg(rec, header)[0]
    seconds = header.n_samples(eeg) / header.sfreq(eeg)
    events = []
    for scored in _scoring(rec).events:
        if scored.start >= seconds:
            raise _disagrees(rec, f"{scored.name} starts at {scored.start:,.1f} s", seconds)
        duration = min(scored.duration, seconds - scored.start)
        events += [Event(scored.start, duration, kind) for kind in xml.EVENTS[scored.name].kinds]
    return events
