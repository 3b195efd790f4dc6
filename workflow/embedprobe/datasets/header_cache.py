"""EDF headers kept between jobs: one JSON file per dataset (core/paths `edf_headers`).

The index reads every recording's header; check, preflight and embed, and the next index,
ask for the same headers again (preflight for every recording). The index saves the headers it
read; the later jobs load them into edf.py's per-process table, where each is used only while
its file's size and modification time are those it was read at: a file replaced since is read
again. The file is a cache: written whole under another name and renamed into place, and one
that cannot be read (damaged, another version) is ignored, never trusted in part.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Iterable
from pathlib import Path

from embedprobe.datasets.edf import EdfHeader, SignalHeader, known_headers

VERSION = 1


def _entry(key: tuple[int, int], header: EdfHeader) -> dict:
    return {"size": key[0], "mtime_ns": key[1], "start": header.start.isoformat(),
            "header_bytes": header.header_bytes, "n_records": header.n_records,
            "record_seconds": header.record_seconds,
            "signals": [[s.label, s.unit, s.physical_min, s.physical_max, s.digital_min,
                         s.digital_max, s.samples_per_record, s.offset]
                        for s in header.signals]}


def _header(path: str, entry: dict) -> tuple[tuple[int, int], EdfHeader]:
    signals = tuple(SignalHeader(str(label), str(unit), float(pmin), float(pmax), int(dmin),
                                 int(dmax), int(spr), int(offset))
                    for label, unit, pmin, pmax, dmin, dmax, spr, offset in entry["signals"])
    header = EdfHeader(Path(path), dt.datetime.fromisoformat(entry["start"]),
                       int(entry["header_bytes"]), int(entry["n_records"]),
                       float(entry["record_seconds"]), signals)
    return (int(entry["size"]), int(entry["mtime_ns"])), header


def load(cache: Path) -> int:
    """Seed this process's headers from `cache` (absent, damaged or of another version:
    nothing); how many entries it held. A header already read here is kept."""
    try:
        payload = json.loads(Path(cache).read_text())
        if payload.get("version") != VERSION:
            return 0
        entries = {path: _header(path, entry) for path, entry in payload["headers"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return 0
    known = known_headers()
    for path, kept in entries.items():
        known.setdefault(path, kept)
    return len(entries)


def save(cache: Path, paths: Iterable[Path]) -> int:
    """Write the headers this process holds of `paths` (those that are EDF and were read) to
    `cache`, replacing it whole; how many."""
    known = known_headers()
    entries = {str(p): _entry(*known[str(p)]) for p in paths if str(p) in known}
    cache = Path(cache)
    if not entries and not cache.exists():  # a format that is not EDF: no file
        return 0
    cache.parent.mkdir(parents=True, exist_ok=True)
    tmp = cache.with_name(f".{cache.name}.{os.getpid()}")
    tmp.write_text(json.dumps({"version": VERSION, "headers": entries}))
    tmp.replace(cache)
    return len(entries)
