"""EPILEPSIAE (the reference's epilepsiae): the European epilepsy database's surface EEG.

Publisher: the EPILEPSIAE consortium (Freiburg, Coimbra, Paris), licensed by the database's
owners (epilepsy-database.eu); described in Ihle et al., "EPILEPSIAE - A European epilepsy
database", Computer Methods and Programs in Biomedicine 106(3):127-138, 2012, and Klatt et al.,
"The EPILEPSIAE database: an extensive electroencephalography database of epilepsy patients",
Epilepsia 53(9):1669-1676, 2012. The data are credentialed: nothing here was read from a
publisher's page of the binary format; the layout below is the one the reference suite reads
(kkontras/NeuroAtlas, src/extensions/datasets/epilepsy/epilepsiae/: README.md, annotations.py,
preprocessor.py), and where it is silent, the database's documented export conventions as this
docstring states them. Check them against a real file before trusting a number.

    <root>/Annotation/Seizure_annotations.csv       one row per seizure (below)
    <root>/<variant>/pat_<id>/.../<rec>_<block>.head  a block's header (text, key=value lines)
    <root>/<variant>/pat_<id>/.../<rec>_<block>.data  its samples
                                                      (variants: surf30, surfPA, surfCO)

A `.head` holds `start_ts` (the block's first sample, "YYYY-MM-DD hh:mm:ss.fff"),
`num_samples` (per channel), `sample_freq` (Hz), `conversion_factor` (microvolts per stored
unit), `num_channels`, `elec_names` ("[FP1,FP2,...]", one per channel, in stored order),
`pat_id`, `adm_id`, `rec_id` (the recording the block belongs to), `duration_in_sec` and
`sample_bytes`. The `.data` file is `num_samples` x `num_channels` signed little-endian
integers of `sample_bytes` bytes (2: int16), channels interleaved (one sample of every channel,
then the next): it is read as a numpy memmap, scaled by `conversion_factor` and from microvolts
to volts. A recording is a run of blocks with gaps between them; here each block is its own
recording (its id the file's stem, "100100102_0000"), so no gap is filled with made-up samples
(the reference concatenates the blocks and zero-fills gaps of 2 s or more, marking them).

Seizure_annotations.csv has the columns id, recording, block, eeg_onset, clin_onset,
first_eeg_change, first_clin_sign, eeg_offset, clin_offset, pattern, classification, vigilance,
focus, commentary (NULL where unknown). As the reference (annotations.py
seizures_for_recording): onset is `eeg_onset`, else `clin_onset`; offset is `eeg_offset`, else
`clin_offset`, else onset + 60 s; a seizure belongs to the blocks of its `recording` it overlaps,
cut at each block's edges. `classification` is CP, SP, SG or UC (NULL: UC), the reference's
four seizure types.

The subject is the patient folder (`pat_<id>`): folds go over patients, the reference's
StratifiedKFold over sorted patient ids. Incomplete (`problem`): a block without its `.data`
or without its `.head`, every block when Seizure_annotations.csv is missing. Refused, naming
the file (DataError): a header without one of its fields or whose channel count disagrees with
its names, a `.data` of the wrong size, a seizure of an unknown classification, a seizure that
lies in none of its recording's blocks or ends before it starts, a timestamp that is not one.
"""

from __future__ import annotations

import csv
import datetime as dt
import functools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from embedprobe.core.errors import DataError
from embedprobe.datasets.base import (
    Event,
    RecordingHeader,
    Signals,
    present,
    refuse_incomplete,
    span_within,
)
from embedprobe.datasets.walk import find_paths, require_folder

FORMAT = "epilepsiae"
SEIZURE = "seizure"
VARIANTS = ("surf30", "surfPA", "surfCO")
ANNOTATIONS = Path("Annotation", "Seizure_annotations.csv")
CLASSIFICATIONS = ("CP", "SP", "SG", "UC")  # the reference's SEIZURE_TYPE_CODES
UNCLASSIFIED = "UC"
NO_OFFSET_S = 60.0  # a seizure without any offset lasts this long (the reference's rule)
HEAD_FIELDS = ("start_ts", "num_samples", "sample_freq", "conversion_factor", "num_channels",
               "elec_names", "rec_id", "sample_bytes")
SAMPLE_TYPES = {2: "<i2", 4: "<i4"}  # sample_bytes -> numpy dtype (little-endian integers)
UV = 1e-6
_FIX_RECORD = ("copy the block's .head and .data from the EPILEPSIAE database export again "
               "(epilepsy-database.eu)")


@dataclass(frozen=True)
class Head:
    start: dt.datetime
    n_samples: int
    sfreq: float
    factor: float  # microvolts per stored unit
    channels: tuple[str, ...]
    rec_id: str
    dtype: str

    @property
    def seconds(self) -> float:
        return self.n_samples / self.sfreq

    @property
    def end(self) -> dt.datetime:
        return self.start + dt.timedelta(seconds=self.seconds)


@dataclass(frozen=True)
class Recording:
    recording: str  # the block's file stem: "100100102_0000"
    head: Path
    data: Path
    annotations: Path  # <root>/Annotation/Seizure_annotations.csv (may not exist)
    subject: str  # "pat_1001"
    session: str  # the stem too: blocks of one patient are its sessions
    problem: str = ""

    @property
    def signal_path(self) -> Path:
        return self.data

    @property
    def files(self) -> tuple[Path, ...]:
        return present(self.head, self.data, self.annotations)


def _patient(path: Path, root: Path) -> str | None:
    return next((part for part in path.relative_to(root).parts[:-1]
                 if part.startswith("pat_")), None)


def find_recordings(root: Path) -> list[Recording]:
    """Every block (<stem>.head / <stem>.data) under a pat_* folder of root, sorted by id."""
    root = require_folder(root, "EPILEPSIAE",
                          fix="put the database export there (the folder that holds "
                              "Annotation/ and surf30/, surfPA/, surfCO/), or write the "
                              "look-alike (the demo_data rule)")
    annotations = root / ANNOTATIONS
    lacks = "" if annotations.is_file() else (
        f"{ANNOTATIONS.as_posix()} missing (the seizure annotations of every block)")
    blocks: dict[str, dict[str, Path]] = {}
    for suffix in (".head", ".data"):
        for path in find_paths(root, f"*{suffix}"):
            if _patient(path, root) is None:
                continue
            mine = blocks.setdefault(path.stem, {})
            if suffix in mine:
                raise DataError(f"block {path.stem} is there twice: {mine[suffix]} and {path}",
                                fix="keep one copy under the data root")
            mine[suffix] = path
    out = []
    for stem, paths in sorted(blocks.items()):
        head = paths.get(".head", next(iter(paths.values())).with_suffix(".head"))
        data = paths.get(".data", head.with_suffix(".data"))
        missing = [p.name for p in (head, data) if not p.is_file()]
        problem = f"{missing[0]} is missing (a block needs its .head and .data)" if missing \
            else lacks
        out.append(Recording(stem, head, data, annotations, _patient(head, root), stem,
                             problem))
    return out


def _timestamp(text: str, where: str) -> dt.datetime:
    try:
        return dt.datetime.fromisoformat(text.strip().replace("/", "-"))
    except ValueError:
        raise DataError(f"{where}: {text!r} is not a timestamp (YYYY-MM-DD hh:mm:ss.fff)",
                        fix=_FIX_RECORD) from None


@functools.cache  # one parse per file version: a header is read for its events and signals
def _head(path: Path, _mtime_ns: int) -> Head:
    fields = {}
    for line in path.read_text(encoding="latin-1").splitlines():
        key, sep, value = line.partition("=")
        if sep:
            fields[key.strip()] = value.strip()
    missing = [k for k in HEAD_FIELDS if k not in fields]
    if missing:
        raise DataError(f"{path}: no {', '.join(missing)} (an EPILEPSIAE .head names "
                        f"{', '.join(HEAD_FIELDS)})", fix=_FIX_RECORD)
    names = tuple(n.strip() for n in fields["elec_names"].strip("[]").split(",") if n.strip())
    try:
        count, n_samples = int(fields["num_channels"]), int(fields["num_samples"])
        sfreq, factor = float(fields["sample_freq"]), float(fields["conversion_factor"])
        width = int(fields["sample_bytes"])
    except ValueError as error:
        raise DataError(f"{path}: a field is not a number ({error})", fix=_FIX_RECORD) from None
    if count != len(names) or len(set(names)) != len(names):
        raise DataError(f"{path}: num_channels={count} but elec_names lists {len(names)} "
                        f"({len(set(names))} distinct)", fix=_FIX_RECORD)
    if width not in SAMPLE_TYPES or not (sfreq > 0 and n_samples > 0 and factor > 0):
        raise DataError(f"{path}: sample_bytes={width}, sample_freq={sfreq:g}, num_samples="
                        f"{n_samples}, conversion_factor={factor:g}: not a readable block "
                        f"(sample_bytes {' or '.join(map(str, SAMPLE_TYPES))}, the others "
                        "positive)", fix=_FIX_RECORD)
    return Head(_timestamp(fields["start_ts"], f"{path}: start_ts"), n_samples, sfreq, factor,
                names, fields["rec_id"], SAMPLE_TYPES[width])


def read_head(rec: Recording) -> Head:
    refuse_incomplete(rec, _FIX_RECORD)
    return _head(rec.head, rec.head.stat().st_mtime_ns)


def read_header(rec: Recording) -> RecordingHeader:
    head = read_head(rec)
    return RecordingHeader(head.channels, head.sfreq, head.n_samples)


def _samples(rec: Recording, head: Head) -> np.memmap:
    expected = head.n_samples * len(head.channels) * np.dtype(head.dtype).itemsize
    size = rec.data.stat().st_size
    if size != expected:
        raise DataError(f"{rec.data}: {size:,} bytes, but {rec.head.name} promises "
                        f"{head.n_samples:,} samples x {len(head.channels)} channels x "
                        f"{np.dtype(head.dtype).itemsize} bytes = {expected:,}",
                        fix=_FIX_RECORD)
    return np.memmap(rec.data, dtype=head.dtype, mode="r",
                     shape=(head.n_samples, len(head.channels)))


def read_signals(rec: Recording, channels: Sequence[str], span=None) -> Signals:
    head = read_head(rec)
    missing = [c for c in channels if c not in head.channels]
    if missing:
        raise DataError(f"{rec.head}: no channel {', '.join(missing)}; it has "
                        f"{', '.join(head.channels)}",
                        fix="choose channels this block has (the dataset's channel map)")
    first, stop = span_within(span, head.n_samples)
    columns = [head.channels.index(c) for c in channels]
    stored = _samples(rec, head)[first:stop, columns]
    data = (stored.T.astype(np.float64) * (head.factor * UV)).astype(np.float32)
    return Signals(head.sfreq, list(channels), np.ascontiguousarray(data))


@functools.cache  # one parse per file version: every block reads the same table
def seizure_table(path: Path, _mtime_ns: int) -> tuple[tuple[int, str, dict], ...]:
    """(line number, recording, row) of every row of Seizure_annotations.csv."""
    with path.open(newline="", encoding="utf-8-sig") as f:
        rows = list(csv.DictReader(f, quotechar='"'))
    needed = ("recording", "eeg_onset", "clin_onset", "eeg_offset", "clin_offset",
              "classification")
    columns = set(rows[0]) if rows else set()
    if rows and not set(needed) <= columns:
        raise DataError(f"{path}: no {', '.join(sorted(set(needed) - columns))} column",
                        fix="use the database export's Seizure_annotations.csv")
    clean = [{k: (v or "").strip().strip('"') for k, v in row.items() if k} for row in rows]
    return tuple((i + 2, row["recording"], {k: None if v in ("", "NULL") else v
                                            for k, v in row.items()})
                 for i, row in enumerate(clean))


def seizure_times(path: Path, line: int, row: dict) -> tuple[dt.datetime, dt.datetime, str]:
    """(onset, offset, classification) of a row, by the reference's fallbacks."""
    where = f"{path}: line {line}"
    kind = row.get("classification") or UNCLASSIFIED
    if kind not in CLASSIFICATIONS:
        raise DataError(f"{where}: unknown seizure classification {kind!r}",
                        fix=f"classify each seizure {', '.join(CLASSIFICATIONS)} (or NULL, "
                            "unclassified), as the database export does")
    onset_text = row.get("eeg_onset") or row.get("clin_onset")
    if onset_text is None:
        raise DataError(f"{where}: neither eeg_onset nor clin_onset", fix=_FIX_RECORD)
    onset = _timestamp(onset_text, where)
    offset_text = row.get("eeg_offset") or row.get("clin_offset")
    offset = onset + dt.timedelta(seconds=NO_OFFSET_S) if offset_text is None \
        else _timestamp(offset_text, where)
    if offset <= onset:
        raise DataError(f"{where}: the seizure ends ({offset}) before it starts ({onset})",
                        fix=_FIX_RECORD)
    return onset, offset, kind


@functools.cache
def _heads_of(folder: Path, _mtime_ns: int) -> tuple[Path, ...]:
    """Every .head under a patient folder (a recording's blocks sit there)."""
    return tuple(find_paths(folder, "*.head"))


def _patient_folder(rec: Recording) -> Path:
    folder = rec.head.parent
    while not folder.name.startswith("pat_"):
        folder = folder.parent
    return folder


def read_events(rec: Recording) -> list[Event]:
    """The seizures of the block's recording that overlap the block, cut at its edges, in
    seconds from its first sample. A seizure of the recording that overlaps none of its blocks
    is refused, naming the annotation file."""
    head = read_head(rec)
    table = seizure_table(rec.annotations, rec.annotations.stat().st_mtime_ns)
    mine = [(line, row) for line, recording, row in table if recording == head.rec_id]
    if not mine:
        return []
    folder = _patient_folder(rec)
    siblings = [h for p in _heads_of(folder, folder.stat().st_mtime_ns) if p.with_suffix(
        ".data").is_file() for h in [_head(p, p.stat().st_mtime_ns)] if h.rec_id == head.rec_id]
    events = []
    for line, row in mine:
        onset, offset, _ = seizure_times(rec.annotations, line, row)
        if not any(b.start < offset and onset < b.end for b in siblings):
            raise DataError(f"{rec.annotations}: line {line}: the seizure of recording "
                            f"{head.rec_id} from {onset} to {offset} lies in none of its "
                            f"blocks ({', '.join(f'{b.start} to {b.end}' for b in siblings)})",
                            fix="correct its onset and offset (the blocks' clock time), or "
                                "put the recording's missing blocks under the data root")
        first, last = max(onset, head.start), min(offset, head.end)
        if first < last:
            start = (first - head.start).total_seconds()
            events.append(Event(start, min((last - first).total_seconds(),
                                           head.seconds - start), SEIZURE))
    return sorted(events, key=lambda e: e.onset)

