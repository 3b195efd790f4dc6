"""STAGES (the Stanford Technology Analytics and Genomics in Sleep study) as NSRR serves it
(sleepdata.org/datasets/stages): clinical PSGs of 13 sites, each EDF with a CSV of its scored
events beside it, in the site's folder.

Layout (the reference suite's STAGES loader, kkontras/NeuroAtlas extensions/datasets/physioex/
datasets/stages.py, which reads the real release):

  <root>/original/STAGES PSGs/<SITE>/<SITE><5 digits>.edf     (GSBB00003.edf)
  <root>/original/STAGES PSGs/<SITE>/<SITE><5 digits>.csv
  <root>/datasets/stages-harmonized-dataset-<version>.csv      (0.3.0: the ages)

with SITE one of SITES. A `<id>_1` pair is the participant's repeat night: the reference reads
the first nights alone (its default `recording="first"`) and so does this reader. An EDF without
its CSV is incomplete.

The CSV (columns `Start Time` HH:MM:SS, `Duration (seconds)`, `Event`): the stage rows (STAGE_
NAMES: Wake, Stage1, Stage2, Stage3, REM; UnknownStage, No Stage, MT unscored) laid one after
another from the EDF's first sample, each covering int(duration / 30) epochs (at least one:
the sites that write duration 0 write a row per epoch), as the reference lays them; a duration
over 12 h (three STNF files hold 2,592,000 s) counts as one epoch, as the reference clamps it.
Every other row (technician notes, "Awake" marks of a few seconds, respiratory and limb events)
is not a stage. A CSV without those three columns is refused by name.

Channels: the sites name the same central, frontal and occipital derivations four ways
(EEG_C3-A2 at the Grael sites, C3-M2 at STLK, C3M2 at BOGN, bare C3 and M2 at MSNF, MSQW, MSTH,
MSTR, STNF: the reference's channel preferences); this reader offers each as one name, EEG
(C3-M2, C4-M1, F3-M2, F4-M1, O1-M2, O2-M1), made from the bare electrodes where a site records
them referentially, so one channel map serves every site. Ids: the recording and the subject are
the EDF's stem (BOGN00001: site-prefixed, so sites cannot collide), the session the site. No
event kinds are read. Powerline: American sites, 60 Hz.

Ages and sex: NSRR's harmonized dataset CSV of STAGES (its data dictionary, nsrr/stages-data-
dictionary: `subject_code`, the STAGES subject identifier, which is the EDF's stem; `visitcode`,
1 for every row; `nsrr_age` in years; `nsrr_sex`), the file the reference's loader opens
(`stages-harmonized-dataset-0.3.0.csv`, matched here without its version) and keys by
subject_code, read with the NSRR studies' table reader. A first night whose participant has
no row is incomplete (its `problem` names the CSV); without the CSV the nights read (staging
needs no ages) and subjects_table refuses. The reference's brain age does not run on STAGES
(its brain_age benchmark lists it as planned: its loader publishes no age label); ours does.
"""

from __future__ import annotations

import csv
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from embedprobe.core.errors import DataError
from embedprobe.datasets.base import Event, RecordingHeader, Signals, one_each
from embedprobe.datasets.edf import ANNOTATIONS, read_edf_header, read_edf_signals
from embedprobe.datasets.nsrr.reader import (
    EPOCH_SECONDS,
    STAGES,
    Columns,
    find_table,
    row_for,
    stage_labels,
)
from embedprobe.datasets.walk import find_paths, require_folder

FORMAT = "stages"
EVENT_KINDS: tuple[str, ...] = ()
SITES = ("BOGN", "GSBB", "GSDV", "GSLH", "GSSA", "GSSW", "MSMI", "MSNF", "MSQW", "MSTH",
         "MSTR", "STLK", "STNF")
PSGS = Path("original", "STAGES PSGs")
STEM = re.compile(r"^(?P<site>[A-Z]{4})\d+(?P<repeat>_1)?$")
COLUMNS = ("Start Time", "Duration (seconds)", "Event")
TABLE = "stages-harmonized-dataset-*.csv"
TABLE_COLUMNS = Columns(id="subject_code", age="nsrr_age", sex="nsrr_sex", visit="visitcode")
VISIT = 1  # the harmonized CSV's visitcode of every row (its one visit, the questionnaire's)
STAGE_NAMES = {"Wake": 0, "Stage1": 1, "Stage2": 2, "Stage3": 3, "REM": 4,
               "UnknownStage": None, "No Stage": None, "MT": None, "mt": None}
LONGEST = 12 * 3600.0  # a stage row longer than this counts as one epoch (the reference's)
# one name per derivation -> how each site records it: a label, or (electrode, reference)
EEG = {
    "C3-M2": ("EEG_C3-A2", "C3-M2", "C3M2", ("C3", "M2")),
    "C4-M1": ("EEG_C4-A1", "C4-M1", "C4M1", ("C4", "M1")),
    "F3-M2": ("EEG_F3-A2", "F3-M2", "F3M2", ("F3", "M2")),
    "F4-M1": ("EEG_F4-A1", "F4-M1", "F4M1", ("F4", "M1")),
    "O1-M2": ("EEG_O1-A2", "O1-M2", "O1M2", ("O1", "M2")),
    "O2-M1": ("EEG_O2-A1", "O2-M1", "O2M1", ("O2", "M1")),
}


@dataclass(frozen=True)
class Recording:
    recording: str  # the EDF's stem, "GSBB00003"
    subject: str  # the same: one first night per participant
    session: str  # the site
    signal_path: Path
    annotation_path: Path
    problem: str = ""

    @property
    def files(self) -> tuple[Path, ...]:
        return (self.signal_path, *((self.annotation_path,)
                                    if self.annotation_path.is_file() else ()))


def find_recordings(root: Path) -> list[Recording]:
    """Every first-night EDF of every site folder under root/original/STAGES PSGs, sorted by
    stem, with its CSV; a folder that is not a STAGES site, or an EDF not named <SITE><digits>
    in its site's folder, is refused."""
    folder = Path(root) / PSGS
    require_folder(folder, "STAGES",
                   fix="download stages/original with NSRR's `nsrr` gem into the dataset's "
                       "folder, or write a look-alike: embedprobe demo-data")
    table = find_table(root, TABLE, TABLE_COLUMNS)
    found = []
    for site_dir in sorted(p for p in folder.iterdir() if p.is_dir()):
        if site_dir.name not in SITES:
            raise DataError(f"{site_dir}: not a STAGES site folder ({', '.join(SITES)})",
                            fix=f"keep NSRR's site folders under {folder}")
        edfs = one_each((p for p in find_paths(site_dir, "*.edf") if p.parent == site_dir),
                        lambda p: p.stem)
        for stem, edf in edfs.items():
            match = STEM.match(stem)
            if not match or match["site"] != site_dir.name:
                raise DataError(f"{edf}: not a {site_dir.name} EDF name ({site_dir.name}"
                                "<digits>.edf)", fix="keep NSRR's names, or move other EDFs "
                                                     "out of the data folder")
            if match["repeat"]:
                continue  # the repeat night: the reference reads first nights
            note = edf.with_suffix(".csv")
            problem = "" if note.is_file() else f"{stem} has no {note.name} in {site_dir}"
            if not problem and table is not None and row_for(table[1], stem, VISIT) is None:
                problem = f"{table[0]}: no row for subject_code {stem}"
            found.append(Recording(stem, stem, site_dir.name, edf, note, problem))
    return sorted(found, key=lambda r: r.recording)


def subjects_table(root: Path) -> dict[str, float]:
    """Participant (the first night's stem) -> nsrr_age from the harmonized CSV: brain age's
    unit, one first night per participant."""
    table = find_table(root, TABLE, TABLE_COLUMNS)
    if table is None:
        raise DataError(f"no {TABLE} under {Path(root) / 'datasets'} (the STAGES ages)",
                        fix="download stages/datasets from NSRR into the dataset's folder")
    ages = {}
    for rec in find_recordings(root):
        if rec.problem:
            continue  # incomplete: the index leaves it out, or refuses it on a strict run
        ages[rec.subject] = row_for(table[1], rec.subject, VISIT).age
    return ages


# --- the annotation CSV ------------------------------------------------------------------------


def read_stages(path: Path) -> tuple[np.ndarray, Counter]:
    """(stage per 30 s epoch from the EDF's start, -1 unscored; the unscored epochs by name)."""
    fix = f"download {path.name} again from NSRR (stages/original)"
    with open(path, newline="", encoding="latin-1") as handle:
        table = csv.DictReader(handle)
        names = [str(n).strip() for n in table.fieldnames or ()]
        missing = [c for c in COLUMNS if c not in names]
        if missing:
            raise DataError(f"{path}: no {', '.join(missing)} column (has {', '.join(names)})",
                            fix=fix)
        stages: list[int] = []
        unscored: Counter = Counter()
        for k, row in enumerate(table):
            row = {str(n).strip(): (v or "").strip() for n, v in row.items()}
            name = row["Event"]
            if name not in STAGE_NAMES or not row["Start Time"]:
                continue
            try:
                seconds = float(row["Duration (seconds)"] or 0)
            except ValueError:
                raise DataError(f"{path}: row {k + 2}: duration {row['Duration (seconds)']!r} "
                                f"of {name}", fix=fix) from None
            n = 1 if seconds > LONGEST else max(int(seconds // EPOCH_SECONDS), 1)
            stage = STAGE_NAMES[name]
            stages += [-1 if stage is None else stage] * n
            if stage is None:
                unscored[name] += n
    return np.array(stages, np.int64), unscored


# --- signals ---------------------------------------------------------------------------------


def _source(name: str, labels) -> str | tuple[str, str] | None:
    """How the EDF records derivation `name`: its label, an (electrode, reference) pair, or
    None; a recorded label that is no derivation's name is itself."""
    if name not in EEG:
        return name if name in labels else None
    return next((s for s in EEG[name] if (s in labels if isinstance(s, str) else
                                          all(e in labels for e in s))), None)


def _parts(source) -> tuple[str, ...]:
    return (source,) if isinstance(source, str) else tuple(source)


def _recorded(labels) -> list[str]:
    """The derivations the EDF holds (EEG order), then its other labels as recorded."""
    names = [n for n in EEG if _source(n, labels) is not None]
    used = {e for n in names for e in _parts(_source(n, labels))}
    return names + [c for c in labels if c not in used and c != ANNOTATIONS]


def _first_source(rec: Recording, labels) -> list[str]:
    for name in EEG:
        source = _source(name, labels)
        if source is not None:
            return list(_parts(source))
    raise DataError(f"{rec.signal_path}: none of the STAGES EEG derivations {', '.join(EEG)} "
                    "in any of the sites' spellings", fix="download the EDF again from NSRR")


def read_header(rec: Recording) -> RecordingHeader:
    header = read_edf_header(rec.signal_path)
    first = _first_source(rec, header.labels)[0]
    return RecordingHeader(tuple(_recorded(header.labels)), header.sfreq(first),
                           header.n_samples(first))


def read_signals(rec: Recording, channels: Sequence[str], span=None) -> Signals:
    """The channels asked for (a derivation of EEG, made from the bare electrodes where the site
    records them so, or a label as recorded), float32 volts."""
    labels = read_edf_header(rec.signal_path).labels
    sources = []
    for name in channels:
        source = _source(name, labels)
        if source is None:
            raise DataError(f"{rec.signal_path}: no channel {name} (holds "
                            f"{', '.join(_recorded(labels))})",
                            fix="name channels the recording holds in the channel map")
        sources.append(_parts(source))
    needed = list(dict.fromkeys(e for s in sources for e in s))
    raw = read_edf_signals(rec.signal_path, needed, span=span)
    row = {label: raw.data[k] for k, label in enumerate(raw.ch_names)}
    data = np.stack([row[s[0]] - row[s[1]] if len(s) == 2 else row[s[0]] for s in sources])
    return Signals(raw.sfreq, list(channels), data.astype(np.float32))


def _refuse_incomplete(rec: Recording) -> None:
    if rec.problem:
        raise DataError(f"{rec.signal_path}: {rec.problem}",
                        fix="download the night's files again from NSRR; allow_partial=true "
                            "runs without it")


def read_labels(rec: Recording, trim_wake_minutes: float | None = None,
                channels: Sequence[str] | None = None,
                counts: Counter | None = None) -> tuple[np.ndarray, np.ndarray, float]:
    """(starts: int64 sample of each scored 30 s epoch, labels: index into STAGES, sfreq)."""
    _refuse_incomplete(rec)
    header = read_edf_header(rec.signal_path)
    if channels:
        used = [_parts(s)[0] for s in (_source(c, header.labels) for c in channels) if s]
    else:
        used = _first_source(rec, header.labels)[:1]
    stages, unscored = read_stages(rec.annotation_path)
    return stage_labels(rec, header, used or list(channels), stages, unscored,
                        trim_wake_minutes, counts)


def read_events(rec: Recording) -> list[Event]:
    """The scored stages as events (onset, 30 s, stage name): no event kinds are read."""
    _refuse_incomplete(rec)
    stages, _ = read_stages(rec.annotation_path)
    return [Event(k * EPOCH_SECONDS, EPOCH_SECONDS, STAGES[s])
            for k, s in enumerate(stages) if s >= 0]
