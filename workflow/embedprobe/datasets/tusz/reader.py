"""TUH EEG Seizure Corpus (TUSZ) v2.0.x: recordings, their official split, signals, seizures.

Layout (the corpus's AAREADME.txt, v2.0.3; the split is the corpus's own):

    edf/{train,dev,eval}/<subject>/<session>/<configuration>/<subject>_sNNN_tNNN.edf
                                                            <subject>_sNNN_tNNN.csv_bi
                                                            <subject>_sNNN_tNNN.csv

e.g. edf/eval/aaaaaqvx/s003_2015_08_24/03_tcp_ar_a/aaaaaqvx_s003_t000.edf: the split, the
8-letter subject, the session folder (its number and archive date, "s001_2003" in v2.0.0,
"s003_2015_08_24" later), the channel configuration (datasets/tuh.py: 01_tcp_ar, 02_tcp_le,
03_tcp_ar_a, 04_tcp_le_a), then one file per token of the session, each with two annotation
files in NEDC's csv_v1.0.0 format:

    # version = csv_v1.0.0
    # bname = aaaaaaac_s001_t000
    # duration = 301.00 secs
    # montage_file = $NEDC_NFC/lib/nedc_eas_default_montage.txt
    #
    channel,start_time,stop_time,label,confidence
    TERM,0.0000,36.8868,bckg,1.0000
    TERM,36.8868,183.3055,seiz,1.0000

`.csv_bi` is term-based (channel TERM, labels bckg and seiz over the whole file); `.csv` is
per channel of the TCP montage ("FP1-F7", ..., labels bckg or the seizure's type: fnsz, gnsz,
cpsz, ...). A recording's seizures are the seiz rows of its `.csv_bi`, as the reference reads
them (`epilepsy/tusz/annotations.parse_csv_bi`, `build_samplewise_labels`); both files are
checked: the header's bname and duration against the EDF, every row inside the recording, every
label one TUSZ uses. A recording without either file is incomplete (its `problem`).

Channels: the montage's electrodes are read under their 10-20 names ("FP1", ..., "T3"-"T6",
"A1", "A2" where recorded), whatever reference their labels carry ("EEG FP1-REF" or "EEG
FP1-LE"), as the reference's `normalize_channel_name` does, so one channel map fits every
configuration; other channels keep their labels. The 19 scalp electrodes must be there.

Recording id = file stem; subject = the subject folder (the reference's `subject_id`); session
= the split, then the file's session and token ("dev/s001_t000"): the split is read from it
(split_of, probing/folds.seizure_plan's `split: official`). A session outside the three split
folders is refused, and so is a subject in two splits (the corpus keeps them apart).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from embedprobe.core.errors import DataError
from embedprobe.datasets import tuh
from embedprobe.datasets.base import Event, RecordingHeader, Signals, refuse_incomplete
from embedprobe.datasets.edf import (
    ANNOTATIONS,
    SignalsInEdf,
    read_edf_header,
    read_edf_signals,
    require_channels,
)
from embedprobe.datasets.tuh import CONFIGURATIONS, ELECTRODES, SCALP, electrode_of
from embedprobe.datasets.walk import find_paths

FORMAT = "tusz"
RATES_VARY = True  # TUSZ's files come at 250, 256, 400, 512 Hz: each is read at its own
SPLITS = ("train", "dev", "eval")
EDF_FOLDER = tuh.EDF_FOLDER
SEIZURE = "seizure"
CSV_VERSION = "csv_v1.0.0"
COLUMNS = "channel,start_time,stop_time,label,confidence"
TERM = "TERM"
BACKGROUND = "bckg"
TERM_LABELS = (BACKGROUND, "seiz")
# The seizure types of the per-channel `.csv` (the reference's SEIZURE_TYPE_CODES)
SEIZURE_TYPES = ("seiz", "fnsz", "gnsz", "spsz", "cpsz", "absz", "tnsz", "cnsz", "tcsz", "atsz",
                 "mysz", "nesz")
# An annotation may end this far past the EDF's last sample (the files' times have 4 decimals)
END_SLACK_S = 1e-3

_NAME = re.compile(r"^(?P<subject>[a-z]{8})_(?P<session>s\d{3})_(?P<token>t\d{3})\.edf$")
_SESSION = re.compile(r"^(?P<session>s\d{3})_\d{4}(_\d{2}_\d{2})?$")
_HEADER = re.compile(r"^#\s*(?P<key>\w+)\s*=\s*(?P<value>.*?)\s*$")
_LAYOUT = (f"{EDF_FOLDER}/{{train,dev,eval}}/<subject>/<sNNN_YYYY>/<configuration>/"
           "<subject>_sNNN_tNNN.edf (+ .csv_bi, .csv)")
_FIX_LAYOUT = f"keep TUSZ v2.0.x's layout: {_LAYOUT}"


@dataclass(frozen=True)
class Recording(SignalsInEdf):
    recording: str  # file stem, e.g. "aaaaaaac_s001_t000"
    edf: Path
    subject: str  # the subject folder, "aaaaaaac"
    session: str  # "train/s001_t000": the split, then the file's session and token
    split: str  # "train", "dev" or "eval"
    configuration: str  # "01_tcp_ar", ...
    problem: str = ""

    @property
    def csv_bi(self) -> Path:
        return self.edf.with_suffix(".csv_bi")

    @property
    def csv(self) -> Path:
        return self.edf.with_suffix(".csv")

    @property
    def files(self) -> tuple[Path, ...]:
        return tuple(p for p in (self.edf, self.csv_bi, self.csv) if p.is_file())


@dataclass(frozen=True)
class Row:
    """One annotation row: where it is (its file's line) and what it says."""

    channel: str
    start: float
    stop: float
    label: str
    line: int


def edf_folder(root: Path) -> Path:
    """The corpus's edf/ folder under root, or root itself (tuh.edf_folder)."""
    return tuh.edf_folder(root, "TUSZ v2.0.3")


def _recording(path: Path, folder: Path) -> Recording:
    """One file's recording, its place in the layout checked (a DataError names the file)."""
    parts = path.relative_to(folder).parts
    if parts[0] not in SPLITS:
        raise DataError(f"{path}: its session is in no TUSZ split (the folder under "
                        f"{EDF_FOLDER}/ is {parts[0]!r}, not {', '.join(SPLITS)}): the official "
                        "split cannot place it",
                        fix=f"put the session under {EDF_FOLDER}/train, dev or eval as TUSZ has "
                            "it, or remove it")
    if len(parts) != 5:
        raise DataError(f"{path}: not at {EDF_FOLDER}/{parts[0]}/<subject>/<session>/"
                        "<configuration>/", fix=_FIX_LAYOUT)
    split, subject, session, configuration, name = parts
    match, folder_session = _NAME.match(name), _SESSION.match(session)
    if not match:
        raise DataError(f"{path}: not a TUSZ file name (<subject>_sNNN_tNNN.edf, an 8-letter "
                        "subject id)", fix=_FIX_LAYOUT)
    if configuration not in CONFIGURATIONS:
        raise DataError(f"{path}: {configuration!r} is not a TUSZ channel configuration "
                        f"({', '.join(CONFIGURATIONS)})", fix=_FIX_LAYOUT)
    if (match["subject"] != subject or not folder_session
            or folder_session["session"] != match["session"]):
        raise DataError(f"{path}: the file's subject and session ({match['subject']}, "
                        f"{match['session']}) are not its folders' ({subject}/{session})",
                        fix=_FIX_LAYOUT)
    rec = Recording(path.stem, path, subject, f"{split}/{match['session']}_{match['token']}",
                    split, configuration)
    missing = [p.name for p in (rec.csv_bi, rec.csv) if not p.is_file()]
    if missing:
        return Recording(rec.recording, path, subject, rec.session, split, configuration,
                         f"no {' or '.join(missing)} beside {path.name} (its seizures)")
    return rec


def find_recordings(root: Path) -> list[Recording]:
    """Every recording under root's edf/ folder, sorted by id. A file outside the layout, a
    session in no split folder, a recording there twice or a subject in two splits is
    refused."""
    folder = edf_folder(root)
    recordings: dict[str, Recording] = {}
    for path in find_paths(folder, "*.edf"):
        rec = _recording(path, folder)
        if rec.recording in recordings:
            raise DataError(f"recording {rec.recording} is there twice: "
                            f"{recordings[rec.recording].edf} and {path}",
                            fix="keep the one copy TUSZ has (v2.0.2 removed the duplicate "
                                "montages of two eval sessions)")
        recordings[rec.recording] = rec
    if not recordings:
        raise DataError(f"no TUSZ recording under {folder}", fix=_FIX_LAYOUT)
    first: dict[str, Recording] = {}
    for rec in recordings.values():
        seen = first.setdefault(rec.subject, rec)
        if seen.split != rec.split:
            raise DataError(f"subject {rec.subject} is in two TUSZ splits: {seen.edf} and "
                            f"{rec.edf}", fix="TUSZ keeps each subject in one split: remove "
                            "the file that is not TUSZ's, or download TUSZ v2.0.3 again")
    return [recordings[k] for k in sorted(recordings)]


def split_of(rec: Recording) -> str:
    """The corpus's official split of the recording: "train", "dev" or "eval"."""
    return rec.split


def _electrode_labels(rec: Recording) -> dict[str, str]:
    """10-20 name -> the file's label, for the montage electrodes the file holds."""
    header = read_edf_header(rec.edf)
    found = {}
    for recorded in header.labels:
        named = electrode_of(recorded)
        if named and named[0] in ELECTRODES and CONFIGURATIONS[rec.configuration] == named[1]:
            found.setdefault(named[0], recorded)
    return found


def read_header(rec: Recording) -> RecordingHeader:
    """Every channel, the montage's electrodes under their 10-20 names (the module's
    docstring); rate and length of the scalp electrodes, which must all be there."""
    header = read_edf_header(rec.edf)
    names = _electrode_labels(rec)
    missing = [e for e in SCALP if e not in names]
    if missing:
        suffix = CONFIGURATIONS[rec.configuration]
        raise DataError(f"{rec.edf}: no {', '.join(f'EEG {e}-{suffix}' for e in missing)}: "
                        f"TUSZ's {rec.configuration} files hold all {len(SCALP)} 10-20 "
                        "electrodes", fix="replace the file with TUSZ v2.0.3's copy, or "
                                          "remove the recording")
    sfreq = require_channels(header, [names[e] for e in SCALP])
    renamed = {label: name for name, label in names.items()}
    channels = tuple(renamed.get(label, label) for label in header.labels
                     if label != ANNOTATIONS)
    return RecordingHeader(channels, sfreq, header.n_samples(names[SCALP[0]]))


def read_signals(rec: Recording, channels: Sequence[str], span=None) -> Signals:
    names = _electrode_labels(rec)
    signals = read_edf_signals(rec.edf, [names.get(c, c) for c in channels], span=span)
    return Signals(signals.sfreq, list(channels), signals.data)


def _refuse(path: Path, line: int, what: str, fix: str) -> DataError:
    return DataError(f"{path}, line {line}: {what}", fix=fix)


def read_annotation_file(path: Path, recording: str, seconds: float, labels: Sequence[str]
                         ) -> list[Row]:
    """The rows of one csv_v1.0.0 file of `recording` (an EDF of `seconds`): its header's
    version, bname and duration checked, every row's times inside the recording and its label
    among `labels`; a DataError names the file and line."""
    header: dict[str, str] = {}
    rows: list[Row] = []
    columns_seen = False
    fix = (f"correct {path.name} (TUSZ's csv_v1.0.0: a '# key = value' header, then "
           f"'{COLUMNS}', then one row per segment), or download it again")
    for number, raw in enumerate(path.read_text(encoding="latin-1").splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("#"):
            if match := _HEADER.match(line):
                header[match["key"]] = match["value"]
            continue
        if not columns_seen:
            if line.replace(" ", "") != COLUMNS:
                raise _refuse(path, number, f"expected the column line '{COLUMNS}', found "
                              f"{line!r}", fix)
            columns_seen = True
            continue
        fields = [f.strip() for f in line.split(",")]
        try:
            start, stop = float(fields[1]), float(fields[2])
        except (IndexError, ValueError):
            raise _refuse(path, number, f"not a row of {COLUMNS}: {line!r}", fix) from None
        if len(fields) != 5:
            raise _refuse(path, number, f"{len(fields)} fields, not 5 ({COLUMNS})", fix)
        label = fields[3].lower()
        if label not in labels:
            raise _refuse(path, number, f"unknown event label {fields[3]!r}: TUSZ's "
                          f"{path.suffix} files use {', '.join(labels)}",
                          f"correct the label in {path.name} to one of {', '.join(labels)}")
        if not 0 <= start < stop:
            raise _refuse(path, number, f"a segment from {start:g} s to {stop:g} s",
                          f"give the row a start before its stop, both from the start of "
                          f"{recording}.edf")
        if stop > seconds + END_SLACK_S:
            raise _refuse(path, number, f"an annotation from {start:g} s to {stop:g} s ends "
                          f"after its recording ({recording}.edf is {seconds:g} s long)",
                          f"correct its times in {path.name} (seconds from the start of "
                          f"{recording}.edf), or replace a truncated {recording}.edf")
        rows.append(Row(fields[0], start, stop, label, number))
    if header.get("version") != CSV_VERSION:
        raise DataError(f"{path}: not a {CSV_VERSION} file (its header says version = "
                        f"{header.get('version')!r})", fix=fix)
    if header.get("bname") != recording:
        raise DataError(f"{path}: its header's bname is {header.get('bname')!r}, not "
                        f"{recording}: the annotations of another recording",
                        fix=f"put {recording}'s own annotation files beside {recording}.edf")
    duration = re.match(r"^([0-9.]+)\s*secs?$", header.get("duration", ""))
    if not duration or abs(float(duration[1]) - seconds) > 1.0:
        raise DataError(f"{path}: its header's duration ({header.get('duration')!r}) is not "
                        f"its recording's ({seconds:g} s)",
                        fix=f"replace {path.name} and {recording}.edf with TUSZ's copies")
    return rows


def _seconds(rec: Recording) -> float:
    return read_edf_header(rec.edf).seconds


def _refuse_incomplete(rec: Recording) -> None:
    refuse_incomplete(rec, f"put {rec.csv_bi.name} and {rec.csv.name} from TUSZ beside {rec.edf}")


def channel_events(rec: Recording) -> list[Row]:
    """The per-channel seizure rows of the recording's `.csv` (background rows left out)."""
    _refuse_incomplete(rec)
    rows = read_annotation_file(rec.csv, rec.recording, _seconds(rec),
                                (BACKGROUND, *SEIZURE_TYPES))
    return [r for r in rows if r.label != BACKGROUND]


def read_events(rec: Recording) -> list[Event]:
    """The recording's seizures: the seiz rows of its `.csv_bi`, in seconds from the start of
    its EDF (the `.csv` checked too)."""
    _refuse_incomplete(rec)
    seconds = _seconds(rec)
    rows = read_annotation_file(rec.csv_bi, rec.recording, seconds, TERM_LABELS)
    for row in rows:
        if row.channel != TERM:
            raise _refuse(rec.csv_bi, row.line, f"channel {row.channel!r}: a .csv_bi file is "
                          f"term-based (channel {TERM})", f"replace {rec.csv_bi.name} with "
                          "TUSZ's copy (the per-channel rows are the .csv file's)")
    read_annotation_file(rec.csv, rec.recording, seconds, (BACKGROUND, *SEIZURE_TYPES))
    return [Event(r.start, r.stop - r.start, SEIZURE)
            for r in sorted(rows, key=lambda r: r.start) if r.label != BACKGROUND]
