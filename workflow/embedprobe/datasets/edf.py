"""EDF files: the header (size, rates, start, each signal's scaling) and signals through MNE.

Shared by every EDF reader. MNE reads a truncated EDF without complaint (fewer records), so
each file's size is checked against its header before its samples are trusted. Channels go by
the names MNE gives them: a label that occurs twice (CHB-MIT's T8-P8, its dummy "-") gets MNE's
running number ("T8-P8-0", "T8-P8-1", "--0", ...), so every channel has one name everywhere.
"""

from __future__ import annotations

import datetime as dt
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from embedprobe.core.errors import DataError
from embedprobe.datasets.base import Event, RecordingHeader, Signals, span_within

READ_CHUNK_SECONDS = 3600  # MNE reads float64: read an hour at a time into the float32 array


@dataclass(frozen=True)
class SignalHeader:
    """One signal's part of an EDF header: its unit and scaling, and where its samples sit."""

    label: str  # as MNE names it (duplicates numbered: mne_channel_names)
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

    @property
    def seconds(self) -> float:
        """The recording's length: its data records' span."""
        return self.n_records * self.record_seconds


class SignalsInEdf:
    """A recording whose signals are its `edf` file (TUSZ, Helsinki, SzCORE BIDS; with
    OneEdfFile, TUAB and NMT)."""

    edf: Path

    @property
    def signal_path(self) -> Path:
        return self.edf


class OneEdfFile(SignalsInEdf):
    """A recording that is one EDF file and needs no other (TUAB, NMT)."""

    @property
    def files(self) -> tuple[Path, ...]:
        return (self.edf,)


def _number(text: bytes) -> float:
    """A header number; NaN where the field holds none (the quality scan reports it)."""
    try:
        return float(text.decode("latin-1").strip())
    except ValueError:
        return float("nan")


ANNOTATIONS = "EDF Annotations"


def mne_channel_names(labels) -> list[str]:
    """The names mne.io.read_raw_edf gives these labels: each label that occurs more than once
    gets a running number ("T8-P8" twice -> "T8-P8-0", "T8-P8-1"), or the first letter that
    makes it unique when that name is taken (MNE's _unique_channel_names, mirrored here so that
    a header read needs no MNE). Annotation signals are not channels and keep their label."""
    names = list(labels)
    channels = [n for n in names if n != ANNOTATIONS]
    for stem in sorted({n for n in channels if channels.count(n) > 1}):
        overlaps = [i for i, n in enumerate(channels) if n == stem]
        for number, index in enumerate(overlaps):
            for suffix in (number, *"abcdefghijklmnopqrstuvwxyz"):
                name = f"{stem}-{suffix}"
                if name not in channels:
                    break
            channels[index] = name
    renamed = iter(channels)
    return [n if n == ANNOTATIONS else next(renamed) for n in names]


FIX_DAMAGED = "download the file again (the copy is damaged or cut short, or it is not EDF)"


class _Damaged(ValueError):
    """A header field that cannot be read, said in words (read_edf_header names the file)."""


def _whole_number(text: bytes, what: str) -> int:
    value = text.decode("latin-1").strip()
    try:
        return int(value)
    except ValueError:
        raise _Damaged(f"its header is damaged: the {what} field holds {value!r}, not a whole "
                       "number") from None


def _signal_headers(part: bytes, n: int) -> tuple[SignalHeader, ...]:
    """The per-signal fields, stored field by field for all n signals in turn."""

    def field(start: int, width: int, i: int) -> bytes:
        return part[start * n + width * i : start * n + width * (i + 1)]

    def whole(value: float) -> int:
        return int(value) if np.isfinite(value) else 0

    signals, offset = [], 0
    names = mne_channel_names(field(0, 16, i).decode("latin-1").strip() for i in range(n))
    for i in range(n):
        spr = _whole_number(field(216, 8, i), f"samples-per-record (signal {names[i]!r})")
        signals.append(SignalHeader(
            names[i], field(96, 8, i).decode("latin-1").strip(),
            _number(field(104, 8, i)), _number(field(112, 8, i)),
            whole(_number(field(120, 8, i))), whole(_number(field(128, 8, i))), spr, offset))
        offset += spr
    return tuple(signals)


def _start(fixed: bytes) -> dt.datetime:
    """The recording's start from the header's dd.mm.yy and hh.mm.ss fields."""
    text = fixed[168:184].decode("latin-1")
    try:
        day, month, year = (int(x) for x in text[:8].split("."))
        hour, minute, second = (int(x) for x in text[8:].split("."))
        # EDF's two-digit years: 85-99 are 1985-1999, 00-84 are 2000-2084
        return dt.datetime(1900 + year if year >= 85 else 2000 + year, month, day, hour, minute,
                           second)
    except ValueError:
        raise _Damaged(f"its header is damaged: the start date and time read {text!r}, "
                       "not dd.mm.yyhh.mm.ss") from None


# path -> ((size, mtime_ns), its header): each file's header is parsed once per process, and
# again only when the file changed; header_cache.py keeps these between jobs. A refused header
# is never kept (its DataError is raised again at every read).
_HEADERS: dict[str, tuple[tuple[int, int], EdfHeader]] = {}


def file_key(path: Path) -> tuple[int, int] | None:
    """(size, mtime_ns): what a kept header is checked against; None where the file cannot be
    stat'ed (read_edf_header then says why)."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_size, stat.st_mtime_ns


def known_headers() -> dict[str, tuple[tuple[int, int], EdfHeader]]:
    """The headers read or loaded in this process, by path (header_cache.py saves them)."""
    return _HEADERS


def read_edf_header(path: Path) -> EdfHeader:
    """Parse an EDF header and refuse a file shorter than the header says (a truncated copy).
    A header that cannot be read is a DataError saying in words what is wrong with it (cut
    short, a field that is not a number), never the parser's own text. Kept by (size,
    mtime): the index, the quality scan and the readers ask for one file's header in turn."""
    path = Path(path)
    key = file_key(path)
    kept = _HEADERS.get(str(path))
    if key is not None and kept is not None and kept[0] == key:
        return kept[1]
    header = _parse_edf_header(path)
    if key is not None:
        _HEADERS[str(path)] = (key, header)
    return header


def _parse_edf_header(path: Path) -> EdfHeader:
    try:
        with open(path, "rb") as f:
            fixed = f.read(256)
            if len(fixed) < 256:
                raise _Damaged(f"it is cut short: {len(fixed)} bytes, less than the 256 of "
                               "an EDF header")
            n_signals = _whole_number(fixed[252:256], "number-of-signals")
            if n_signals < 1:
                raise _Damaged(f"its header is damaged: it counts {n_signals} signals")
            signal_part = f.read(256 * n_signals)
        if len(signal_part) < 256 * n_signals:
            raise _Damaged(f"its header is cut short: {n_signals} signals need "
                           f"{256 * (n_signals + 1)} header bytes, the file has "
                           f"{256 + len(signal_part)}")
        start = _start(fixed)
        header_bytes = _whole_number(fixed[184:192], "header-size")
        n_records = _whole_number(fixed[236:244], "number-of-records")
        record_seconds = _number(fixed[244:252])
        if not record_seconds >= 0:  # 0 is EDF+'s annotations-only file (a hypnogram)
            raise _Damaged(f"its header is damaged: the record-duration field holds "
                           f"{fixed[244:252].decode('latin-1').strip()!r}, not seconds")
        signals = _signal_headers(signal_part, n_signals)
        samples = [sig.samples_per_record for sig in signals]
    except _Damaged as exc:
        raise DataError(f"{path}: not a readable EDF file: {exc}", fix=FIX_DAMAGED) from None
    except OSError as exc:
        raise DataError(f"{path}: cannot be read: {exc.strerror or exc}",
                        fix="check that the file is there and readable") from exc
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


def require_channels(header: EdfHeader, channels: Sequence[str]) -> float:
    """The shared sampling rate of the wanted channels; refuse missing or mixed-rate ones."""
    missing = [c for c in channels if c not in header.labels]
    if missing:
        has = [label for label in header.labels if label != ANNOTATIONS]
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


def montage_header(path: Path, montage: Sequence[str], what: str, fix: str) -> RecordingHeader:
    """A recording of one EDF file whose `montage` channels must all be there at one rate:
    every channel as recorded, their rate and length. A missing one is a DataError naming it
    and the file, then `what` (why the montage needs it) and `fix`."""
    header = read_edf_header(path)
    missing = [c for c in montage if c not in header.labels]
    if missing:
        raise DataError(f"{path}: no {', '.join(missing)}: {what}", fix=fix)
    sfreq = require_channels(header, montage)
    channels = tuple(label for label in header.labels if label != ANNOTATIONS)
    return RecordingHeader(channels, sfreq, header.n_samples(montage[0]))


_LAST_OPENED = threading.local()  # per reader thread: its last file's key and _OpenEdf


@dataclass(frozen=True)
class _OpenEdf:
    """A file checked and opened for reading the named channels: its header, their rate, MNE's
    Raw of them (not preloaded)."""

    header: EdfHeader
    sfreq: float
    raw: object


def _opened(path: Path, channels: list[str], header: EdfHeader | None) -> _OpenEdf:
    """The file checked (size against its header, the channels there at one rate, MNE and
    the header agreeing) and opened. MNE's open parses the header and the annotations (2.2 ms
    timed on a 9.6-h demo night, 7.8 ms under cProfile): a thread reading the parts of one
    recording checks and opens it once, and again only if the file changed in between."""
    import mne

    stat = path.stat()
    key = (str(path), tuple(channels), stat.st_mtime_ns, stat.st_size)
    last = getattr(_LAST_OPENED, "file", None)
    if last is not None and last[0] == key:
        return last[1]
    header = header or read_edf_header(path)
    sfreq = require_channels(header, channels)
    try:
        # names made unique before `include` is matched, as the header's labels are
        raw = mne.io.read_raw_edf(path, include=channels, exclude_after_unique=True,
                                  preload=False, verbose="error")
    except Exception as exc:  # MNE raises many types for a damaged file
        raise DataError(
            f"{path}: MNE cannot read it ({type(exc).__name__}: {exc})",
            fix="download the file again",
        ) from exc
    n_samples = header.n_samples(channels[0])
    if raw.info["sfreq"] != sfreq or raw.n_times != n_samples:
        raise DataError(
            f"{path}: MNE reads {raw.n_times} samples at {raw.info['sfreq']} Hz, "
            f"the header says {n_samples} at {sfreq} Hz",
            fix="download the file again",
        )
    _LAST_OPENED.file = (key, _OpenEdf(header, sfreq, raw))
    return _LAST_OPENED.file[1]


def read_edf_signals(path: Path, channels: Sequence[str], header: EdfHeader | None = None,
                     span: tuple[int, int] | None = None) -> Signals:
    """The named channels of an EDF file as float32 volts, read an hour at a time; with
    `span` (first, stop) only samples first..stop of them, as far as the file goes."""
    channels = list(channels)
    edf = _opened(Path(path), channels, header)
    begin, end = span_within(span, edf.header.n_samples(channels[0]))
    data = np.empty((len(channels), end - begin), np.float32)
    chunk = round(READ_CHUNK_SECONDS * edf.sfreq)
    for first in range(begin, end, chunk):
        last = min(end, first + chunk)
        data[:, first - begin:last - begin] = edf.raw.get_data(picks=channels, start=first,
                                                               stop=last)
    return Signals(edf.sfreq, channels, data)



def read_edf_annotations(path: Path, fix: str):
    """An EDF+ file's header and its annotations through MNE; a missing, truncated or damaged
    file refused by name (the header first, as every reader refuses one)."""
    import mne

    header = read_edf_header(path)
    try:
        annotations = mne.read_annotations(path)
    except Exception as exc:  # MNE raises many types for a damaged file
        raise DataError(f"{path}: cannot read the annotations ({type(exc).__name__}: {exc})",
                        fix=fix) from exc
    return header, annotations


def annotation_events(annotations) -> list[Event]:
    """MNE annotations as the reader interface's events, as they are written."""
    return [Event(float(o), float(d), str(t)) for o, d, t in
            zip(annotations.onset, annotations.duration, annotations.description, strict=True)]


def recording_header(path: Path, fix: str) -> RecordingHeader:
    """Every signal of the EDF file but its annotations, as MNE names them; the rate and
    length of the first. A file without one is refused (`fix`)."""
    header = read_edf_header(path)
    channels = tuple(label for label in header.labels if label != ANNOTATIONS)
    if not channels:
        raise DataError(f"{path}: no signal", fix=fix)
    return RecordingHeader(channels, header.sfreq(channels[0]), header.n_samples(channels[0]))
