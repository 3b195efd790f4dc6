"""Sleep-EDF expanded (PhysioNet): find recordings, read hypnogram epochs and EEG through MNE.

Files: cassette `SC4ssNE0-PSG.edf` with `SC4ssN??-Hypnogram.edf`, telemetry `ST7ssNJ0-PSG.edf`
with `ST7ssN??-Hypnogram.edf` (ss = subject, N = night). A hypnogram belongs to the PSG whose
name shares its first 6 characters (the scorer letters after them differ). Subject ids are
`SC00`, `ST01`, ...; a recording id is the PSG's 8-character stem (`SC4001E0`).

Labels follow the usual convention of the Sleep-EDF literature (Supratak et al. 2017,
braindecode's SleepPhysionet): R&K stages 3 and 4 merge into N3; "Sleep stage ?" and
"Movement time" are dropped; each hypnogram run is cut into 30 s epochs, and epochs that run
past the end of the signal are dropped. The cassette files hold up to 20 h of wake around the
night, so by default only the epochs from 30 min before the first sleep epoch to 30 min after
the last one are kept (`trim_wake_minutes`; None keeps every scored epoch).

Epoch starts are sample indices from the start of the PSG file at the EEG sampling rate.
MNE reads a truncated EDF without complaint (fewer records), so every file's size is checked
against its header first.
"""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import DataError

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
_READ_CHUNK_SECONDS = 3600  # MNE reads float64: read an hour at a time into the float32 array


@dataclass(frozen=True)
class Recording:
    recording: str  # PSG stem, e.g. "SC4001E0"
    psg: Path
    hypnogram: Path | None
    subject: str  # e.g. "SC00"
    night: int
    cohort: str  # "SC" (cassette) or "ST" (telemetry)


@dataclass
class Night:
    recording: Recording
    sfreq: float
    ch_names: list[str]
    signals: np.ndarray  # (n_channels, n_samples) float32, volts
    starts: np.ndarray  # int64 sample index of each kept 30 s epoch
    labels: np.ndarray  # int8 index into STAGES per kept epoch


@dataclass(frozen=True)
class SignalHeader:
    """One signal's part of an EDF header: its unit and scaling, and where its samples sit."""

    label: str
    unit: str
    physical_min: float
    physical_max: float
    digital_min: int
    digital_max: int
    samples_per_record: int
    offset: int  # of this signal's samples within a data record, in samples


@dataclass(frozen=True)
class EdfHeader:
    """An EDF header: enough to check size, rates, start time and each signal's scaling."""

    path: Path
    start: dt.datetime
    header_bytes: int
    n_records: int
    record_seconds: float
    signals: tuple[SignalHeader, ...]

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(sig.label for sig in self.signals)

    @property
    def samples_per_record(self) -> tuple[int, ...]:
        return tuple(sig.samples_per_record for sig in self.signals)

    def sfreq(self, label: str) -> float:
        return self.samples_per_record[self.labels.index(label)] / self.record_seconds

    def n_samples(self, label: str) -> int:
        return self.n_records * self.samples_per_record[self.labels.index(label)]


def find_recordings(root: Path) -> list[Recording]:
    """Every `*-PSG.edf` under root with its hypnogram (None when absent), sorted by id."""
    root = Path(root)
    if not root.is_dir():
        raise DataError(
            f"Sleep-EDF folder {root} does not exist",
            fix="download Sleep-EDF expanded there, or write a demo: "
            "python scripts/make_demo_data.py " + str(root),
        )
    hypnograms: dict[str, Path] = {}
    for path in sorted(root.rglob("*-Hypnogram.edf")):
        key = path.name[:6]
        if key in hypnograms:
            raise DataError(
                f"two hypnograms for recording {key}*: {hypnograms[key]} and {path}",
                fix="keep one hypnogram per PSG file",
            )
        hypnograms[key] = path
    recordings: dict[str, Recording] = {}
    for psg in root.rglob("*-PSG.edf"):
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


def _number(text: bytes) -> float:
    """A header number; NaN where the field holds none (the quality scan reports it)."""
    try:
        return float(text.decode("latin-1").strip())
    except ValueError:
        return float("nan")


def _signal_headers(part: bytes, n: int) -> tuple[SignalHeader, ...]:
    """The per-signal fields, stored field by field for all n signals in turn."""

    def field(start: int, width: int, i: int) -> bytes:
        return part[start * n + width * i : start * n + width * (i + 1)]

    def whole(value: float) -> int:
        return int(value) if np.isfinite(value) else 0

    signals, offset = [], 0
    for i in range(n):
        spr = int(field(216, 8, i))
        signals.append(SignalHeader(
            field(0, 16, i).decode("latin-1").strip(), field(96, 8, i).decode("latin-1").strip(),
            _number(field(104, 8, i)), _number(field(112, 8, i)),
            whole(_number(field(120, 8, i))), whole(_number(field(128, 8, i))), spr, offset))
        offset += spr
    return tuple(signals)


def read_edf_header(path: Path) -> EdfHeader:
    """Parse an EDF header and refuse a file shorter than the header says (a truncated copy)."""
    path = Path(path)
    try:
        with open(path, "rb") as f:
            fixed = f.read(256)
            n_signals = int(fixed[252:256])
            signal_part = f.read(256 * n_signals)
        if len(signal_part) < 256 * n_signals:
            raise ValueError("header shorter than its signal count")
        day, month, year = (int(x) for x in fixed[168:176].decode("ascii").split("."))
        hour, minute, second = (int(x) for x in fixed[176:184].decode("ascii").split("."))
        # EDF's two-digit years: 85-99 are 1985-1999, 00-84 are 2000-2084
        start = dt.datetime(
            1900 + year if year >= 85 else 2000 + year, month, day, hour, minute, second
        )
        header_bytes = int(fixed[184:192])
        n_records = int(fixed[236:244])
        record_seconds = float(fixed[244:252])
        signals = _signal_headers(signal_part, n_signals)
        samples = [sig.samples_per_record for sig in signals]
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise DataError(
            f"{path}: not a readable EDF file ({exc})",
            fix="download the file again; it may be damaged or not EDF",
        ) from exc
    size = path.stat().st_size
    record_bytes = sum(samples) * 2  # 16-bit samples
    if n_records < 0:  # -1: the recorder did not know the count when it wrote the header
        n_records = (size - header_bytes) // max(record_bytes, 1)
    header = EdfHeader(path, start, header_bytes, n_records, record_seconds, signals)
    expected = header_bytes + n_records * record_bytes
    if size < expected:
        raise DataError(
            f"{path}: truncated: the header promises {n_records} records ({expected} bytes) "
            f"but the file has {size} bytes",
            fix="download the file again (the copy stopped early)",
        )
    return header


def _require_channels(header: EdfHeader, channels: Sequence[str]) -> float:
    """The shared sampling rate of the wanted channels; refuse missing or mixed-rate ones."""
    missing = [c for c in channels if c not in header.labels]
    if missing:
        has = [label for label in header.labels if label != "EDF Annotations"]
        raise DataError(
            f"{header.path}: no channel {', '.join(missing)}; it has {', '.join(has)}",
            fix="choose channels this file has (the dataset's channel list in config)",
        )
    rates = {header.sfreq(c) for c in channels}
    if len(rates) > 1:
        raise DataError(
            f"{header.path}: channels {', '.join(channels)} have different rates {sorted(rates)}",
            fix="choose channels recorded at one sampling rate",
        )
    return rates.pop()


def _read_annotations(rec: Recording):
    import mne

    if rec.hypnogram is None:
        raise DataError(
            f"{rec.psg}: no hypnogram {rec.recording[:6]}??-Hypnogram.edf beside it",
            fix="put the matching hypnogram from Sleep-EDF expanded next to the PSG file",
        )
    header = read_edf_header(rec.hypnogram)
    try:
        annotations = mne.read_annotations(rec.hypnogram)
    except Exception as exc:  # MNE raises many types for a damaged file
        raise DataError(
            f"{rec.hypnogram}: cannot read the annotations ({type(exc).__name__}: {exc})",
            fix="download the hypnogram again",
        ) from exc
    return header, annotations


def epochs_from_annotations(
    onsets: Sequence[float],
    durations: Sequence[float],
    descriptions: Sequence[str],
    source: Path,
    sfreq: float,
    n_samples: int,
    counts: Counter | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Cut stage runs (onset s from PSG start, duration s) into 30 s epochs: (starts, labels).

    `counts`, when given, gathers what was left out: ("ignored", text) and ("unscored", text)
    annotations, and ("past the end", "") epochs beyond the signal."""
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
    inside = (starts_all >= 0) & (starts_all + epoch <= n_samples)
    if not inside.all():
        counts[("outside the recording", "")] += int((~inside).sum())
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
    sfreq = _require_channels(header, channels)
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
    import mne

    channels = list(channels)
    header, sfreq, starts, labels = _labels(rec, trim_wake_minutes, channels)
    try:
        raw = mne.io.read_raw_edf(rec.psg, include=channels, preload=False, verbose="error")
    except Exception as exc:  # MNE raises many types for a damaged file
        raise DataError(
            f"{rec.psg}: MNE cannot read it ({type(exc).__name__}: {exc})",
            fix="download the file again",
        ) from exc
    n_samples = header.n_samples(channels[0])
    if raw.info["sfreq"] != sfreq or raw.n_times != n_samples:
        raise DataError(
            f"{rec.psg}: MNE reads {raw.n_times} samples at {raw.info['sfreq']} Hz, "
            f"the header says {n_samples} at {sfreq} Hz",
            fix="download the file again",
        )
    signals = np.empty((len(channels), n_samples), np.float32)
    chunk = round(_READ_CHUNK_SECONDS * sfreq)
    for first in range(0, n_samples, chunk):
        last = min(n_samples, first + chunk)
        signals[:, first:last] = raw.get_data(picks=channels, start=first, stop=last)
    return Night(rec, sfreq, channels, signals, starts, labels)


def subjects_table(root: Path) -> dict[str, float]:
    """Subject id ("SC00") -> age in years, from SC-subjects.xls as PhysioNet ships it."""
    root = Path(root)
    found = sorted(root.rglob(SUBJECTS_TABLE)) if root.is_dir() else []
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
