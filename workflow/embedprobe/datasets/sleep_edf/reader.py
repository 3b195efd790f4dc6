"""Sleep-EDF expanded (PhysioNet): find recordings, read hypnogram epochs and EEG through MNE.

Files: cassette `SC4ssNE0-PSG.edf` with `SC4ssN??-Hypnogram.edf`, telemetry `ST7ssNJ0-PSG.edf`
with `ST7ssN??-Hypnogram.edf` (ss = subject, N = night). A hypnogram belongs to the PSG whose
name shares its first 6 characters (the scorer letters after them differ). Subject ids are
`SC00`, `ST01`, ...; a recording id is the PSG's 8-character stem (`SC4001E0`).

Labels follow the usual convention of the Sleep-EDF literature (Supratak et al. 2017,
braindecode's SleepPhysionet): R&K stages 3 and 4 merge into N3; "Sleep stage ?" and
"Movement time" are dropped; each hypnogram run is cut into 30 s epochs, and epochs that run
past the end of the signal are cut, each PSG so cut named in a `warning:` (a PSG shorter than
its hypnogram: SC4001E0 cut to its first 300 s keeps 10 epochs, its 24 h hypnogram's other
2,640 scored epochs are cut; the index warns too of a night whose hypnogram holds no scored
stage, which it leaves out). The cassette files hold up to 20 h of wake around the
night, so by default only the epochs from 30 min before the first sleep epoch to 30 min after
the last one are kept (`trim_wake_minutes`; None keeps every scored epoch).

Epoch starts are sample indices from the start of the PSG file at the EEG sampling rate.
MNE reads a truncated EDF without complaint (fewer records), so every file's size is checked
against its header first.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from embedprobe.core.errors import DataError
from embedprobe.datasets.base import Event, RecordingHeader, Signals, count_cut
from embedprobe.datasets.edf import (
    annotation_events,
    read_edf_annotations,
    read_edf_header,
    read_edf_signals,
    require_channels,
)
from embedprobe.datasets.walk import find_paths, require_folder

FORMAT = "sleep_edf"
STAGES = ("W", "N1", "N2", "N3", "REM")  # label index = position
EPOCH_SECONDS = 30
EEG_CHANNELS = ("EEG Fpz-Cz", "EEG Pz-Oz")
SUBJECTS_TABLE = "SC-subjects.xls"

_STAGE_OF_ANNOTATION = {
    "Sleep stage W": 0,
    "Sleep stage 1": 1,
    "Sleep stage 2": 2,
    "Sleep stage 3": 3,
    "Sleep stage 4": 3,  # R&K stage 4 is AASM N3
    "Sleep stage R": 4,
    "Sleep stage ?": None,  # unscored
    "Movement time": None,
}
# Not stages: ignored (and counted in the index log). Anything else that is not stage-like
# (a scorer's free-text comment) is ignored and counted too; only an unknown *stage-like* label
# ("Sleep stage X", "Stage X") is an error, since its epochs would be silently lost.
_NON_STAGE = re.compile(
    r"^(lights?[ _-]?(off|on)|arousal.*|.*\barousal|comment.*|apn[o]?ea.*|hypopnea.*|"
    r"desaturation.*|limb movement.*|plm.*|snore.*|artifact.*|start.*|end.*|recording.*)$",
    re.IGNORECASE,
)
_STAGE_LIKE = re.compile(r"^(sleep[ _-]?)?stage\b", re.IGNORECASE)
UNSCORED, IGNORED = "unscored", "ignored"
_NAME = re.compile(r"^(?P<cohort>SC|ST)(?P<site>\d)(?P<subject>\d{2})(?P<night>[12])[A-Z0-9]{2}$")
_FIX_PSG_NAME = (
    "keep the PhysioNet names: SC4ssNE0-PSG.edf (cassette) or ST7ssNJ0-PSG.edf (telemetry), "
    "ss = subject, N = night 1 or 2"
)


@dataclass(frozen=True)
class Recording:
    recording: str  # PSG stem, e.g. "SC4001E0"
    psg: Path
    hypnogram: Path | None
    subject: str  # e.g. "SC00"
    night: int
    cohort: str  # "SC" (cassette) or "ST" (telemetry)

    # The reader interface's names (datasets/base.py)
    @property
    def session(self) -> str:
        return str(self.night)

    @property
    def signal_path(self) -> Path:
        return self.psg

    @property
    def files(self) -> tuple[Path, ...]:
        return (self.psg,) if self.hypnogram is None else (self.psg, self.hypnogram)

    @property
    def problem(self) -> str:
        return "" if self.hypnogram is not None else f"{self.psg.name} has no hypnogram"


@dataclass
class Night:
    recording: Recording
    sfreq: float
    ch_names: list[str]
    signals: np.ndarray  # (n_channels, n_samples) float32, volts
    starts: np.ndarray  # int64 sample index of each kept 30 s epoch
    labels: np.ndarray  # int8 index into STAGES per kept epoch


def find_recordings(root: Path) -> list[Recording]:
    """Every `*-PSG.edf` under root with its hypnogram (None when absent), sorted by id."""
    root = require_folder(root, "Sleep-EDF",
                          fix="download Sleep-EDF expanded there, or write a demo: "
                              "python scripts/make_demo_data.py ")
    hypnograms: dict[str, Path] = {}
    for path in find_paths(root, "*-Hypnogram.edf"):
        key = path.name[:6]
        if key in hypnograms:
            raise DataError(
                f"two hypnograms for recording {key}*: {hypnograms[key]} and {path}",
                fix="keep one hypnogram per PSG file",
            )
        hypnograms[key] = path
    recordings: dict[str, Recording] = {}
    for psg in find_paths(root, "*-PSG.edf"):
        stem = psg.name.removesuffix("-PSG.edf")
        match = _NAME.match(stem)
        if not match:
            raise DataError(f"{psg}: not a Sleep-EDF expanded file name", fix=_FIX_PSG_NAME)
        if stem in recordings:
            raise DataError(
                f"recording {stem} is there twice: {recordings[stem].psg} and {psg}",
                fix="keep one copy under the data root",
            )
        cohort = match["cohort"]
        recordings[stem] = Recording(
            recording=stem,
            psg=psg,
            hypnogram=hypnograms.get(stem[:6]),
            subject=f"{cohort}{match['subject']}",
            night=int(match["night"]),
            cohort=cohort,
        )
    return [recordings[k] for k in sorted(recordings)]


def annotation_kind(annotation: str) -> str:
    """'stage' (a stage label), UNSCORED ('Sleep stage ?', 'Movement time'), IGNORED (lights
    off/on, arousals, comments, any other text that is not stage-like) or 'unknown stage'."""
    text = annotation.strip()
    if text in _STAGE_OF_ANNOTATION:
        return "stage" if _STAGE_OF_ANNOTATION[text] is not None else UNSCORED
    if _NON_STAGE.match(text) or not _STAGE_LIKE.match(text):
        return IGNORED
    return "unknown stage"


def stage_of(annotation: str, source: Path) -> int | None:
    """Index into STAGES of a hypnogram annotation; None for unscored and movement epochs and
    for annotations that are not stages (lights off/on, arousals, comments). An unknown
    stage-like label ("Sleep stage 5") is refused: its epochs would silently vanish."""
    kind = annotation_kind(annotation)
    if kind == "unknown stage":
        raise DataError(
            f"{source}: unknown sleep stage label {annotation!r}",
            fix="Sleep-EDF hypnograms use "
            + ", ".join(repr(k) for k in _STAGE_OF_ANNOTATION)
            + f"; correct or remove this annotation in {source}",
        )
    return _STAGE_OF_ANNOTATION.get(annotation.strip())


def _read_annotations(rec: Recording):
    if rec.hypnogram is None:
        raise DataError(
            f"{rec.psg}: no hypnogram {rec.recording[:6]}??-Hypnogram.edf beside it",
            fix="put the matching hypnogram from Sleep-EDF expanded next to the PSG file",
        )
    return read_edf_annotations(rec.hypnogram, fix="download the hypnogram again")


def epochs_from_annotations(
    onsets: Sequence[float],
    durations: Sequence[float],
    descriptions: Sequence[str],
    source: Path,
    sfreq: float,
    n_samples: int,
    counts: Counter | None = None,
    signal: Path | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Cut stage runs (onset s from PSG start, duration s) into 30 s epochs: (starts, labels).

    `counts`, when given, gathers what was left out: ("ignored", text) and ("unscored", text)
    annotations, ("outside the recording", "") epochs before the signal's start, and the
    epochs past its end (a PSG cut short), which name `signal` (base.count_cut)."""
    epoch = round(EPOCH_SECONDS * sfreq)
    starts, labels = [], []
    counts = Counter() if counts is None else counts
    for onset, duration, text in zip(onsets, durations, descriptions, strict=True):
        stage = stage_of(text, source)
        n_epochs = int(duration / EPOCH_SECONDS + 1e-6)  # a partial epoch at the end is unscored
        if stage is None:
            counts[(annotation_kind(text), text.strip()[:40])] += 1
            continue
        if n_epochs == 0:
            continue
        first = round(onset * sfreq)
        starts.append(first + epoch * np.arange(n_epochs, dtype=np.int64))
        labels.append(np.full(n_epochs, stage, np.int8))
    if not starts:
        return np.zeros(0, np.int64), np.zeros(0, np.int8)
    starts_all, labels_all = np.concatenate(starts), np.concatenate(labels)
    order = np.argsort(starts_all, kind="stable")
    starts_all, labels_all = starts_all[order], labels_all[order]
    if np.any(np.diff(starts_all) < epoch):
        raise DataError(
            f"{source}: stage annotations overlap",
            fix="each 30 s epoch must have one stage; correct the hypnogram",
        )
    before, past = starts_all < 0, starts_all + epoch > n_samples
    if before.any():
        counts[("outside the recording", "")] += int(before.sum())
    if past.any():
        count_cut(counts, signal or source, source, int(past.sum()), n_samples / sfreq,
                  (starts_all[past][-1] + epoch) / sfreq, EPOCH_SECONDS)
    inside = ~before & ~past
    return starts_all[inside], labels_all[inside]


def trim_wake(
    starts: np.ndarray, labels: np.ndarray, sfreq: float, minutes: float | None
) -> tuple[np.ndarray, np.ndarray]:
    """Keep epochs from `minutes` before the first sleep epoch to `minutes` after the last."""
    sleep = np.flatnonzero(labels != 0)
    if minutes is None or len(sleep) == 0:  # a night without sleep has nothing to trim around
        return starts, labels
    margin = minutes * 60 * sfreq
    keep = (starts >= starts[sleep[0]] - margin) & (starts <= starts[sleep[-1]] + margin)
    return starts[keep], labels[keep]


def _labels(rec: Recording, trim_wake_minutes: float | None, channels: Sequence[str],
            counts: Counter | None = None):
    header = read_edf_header(rec.psg)
    sfreq = require_channels(header, channels)
    hyp_header, annotations = _read_annotations(rec)
    # Annotation onsets count from the hypnogram's own start; real files start with the PSG.
    shift = (hyp_header.start - header.start).total_seconds()
    starts, labels = epochs_from_annotations(
        annotations.onset + shift,
        annotations.duration,
        annotations.description,
        rec.hypnogram,
        sfreq,
        header.n_samples(channels[0]),
        counts,
        rec.psg,
    )
    starts, labels = trim_wake(starts, labels, sfreq, trim_wake_minutes)
    return header, sfreq, starts, labels


def read_labels(
    rec: Recording,
    trim_wake_minutes: float | None = 30.0,
    channels: Sequence[str] = EEG_CHANNELS,
    counts: Counter | None = None,
) -> tuple[np.ndarray, np.ndarray, float]:
    """(starts, labels, sfreq) of the kept epochs from headers and annotations only (fast);
    `counts` gathers the annotations left out (see epochs_from_annotations)."""
    _, sfreq, starts, labels = _labels(rec, trim_wake_minutes, channels, counts)
    return starts, labels, sfreq


def read_night(
    rec: Recording,
    channels: Sequence[str] = EEG_CHANNELS,
    trim_wake_minutes: float | None = 30.0,
) -> Night:
    """The requested channels of a night (float32 volts) with its kept epochs."""
    header, _, starts, labels = _labels(rec, trim_wake_minutes, channels)
    signals = read_edf_signals(rec.psg, channels, header)
    return Night(rec, signals.sfreq, signals.ch_names, signals.data, starts, labels)


# The reader interface (datasets/base.py) --------------------------------------------------


def read_header(rec: Recording) -> RecordingHeader:
    header = read_edf_header(rec.psg)
    sfreq = require_channels(header, EEG_CHANNELS)
    return RecordingHeader(header.labels, sfreq, header.n_samples(EEG_CHANNELS[0]))


def read_signals(rec: Recording, channels: Sequence[str], span=None) -> Signals:
    return read_edf_signals(rec.psg, channels, span=span)


def read_events(rec: Recording) -> list[Event]:
    """The hypnogram's annotations as they are written (stages are read by read_labels)."""
    _, annotations = _read_annotations(rec)
    return annotation_events(annotations)


def subjects_table(root: Path) -> dict[str, float]:
    """Subject id ("SC00") -> age in years, from SC-subjects.xls as PhysioNet ships it."""
    root = Path(root)
    found = find_paths(root, SUBJECTS_TABLE) if root.is_dir() else []
    if not found:
        raise DataError(
            f"no {SUBJECTS_TABLE} under {root} (ages of the cassette subjects)",
            fix=f"put {SUBJECTS_TABLE} from Sleep-EDF expanded in {root}",
        )
    path = found[0]
    try:
        import xlrd

        sheet = xlrd.open_workbook(str(path)).sheet_by_index(0)
        header = [str(v).strip().lower() for v in sheet.row_values(0)]
        subject_col, age_col = header.index("subject"), header.index("age")
        rows = [sheet.row_values(r) for r in range(1, sheet.nrows)]
        pairs = [
            (int(row[subject_col]), float(row[age_col])) for row in rows if row[subject_col] != ""
        ]
    except ImportError as exc:
        raise DataError(f"{path}: reading .xls needs xlrd", fix="pip install xlrd==2.0.2") from exc
    except Exception as exc:  # xlrd raises its own errors, ValueError for bad cells or header
        raise DataError(
            f"{path}: cannot read subject ages ({type(exc).__name__}: {exc})",
            fix="use the SC-subjects.xls from Sleep-EDF expanded (columns subject, night, age)",
        ) from exc
    ages: dict[str, float] = {}
    for subject, age in pairs:
        key = f"SC{subject:02d}"
        if ages.setdefault(key, age) != age:
            raise DataError(
                f"{path}: subject {subject} has ages {ages[key]} and {age}",
                fix="give each subject one age",
            )
    return ages
