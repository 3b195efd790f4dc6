"""An embedding store file as its writer and its readers both see it.

A store is one HDF5 file per (dataset, model): attributes (the cache identity, `n_windows`,
`dim`, `tokens` for a token store, `format_version`, `complete`), the window table (group
`windows`, pipeline/window_table.py), `embeddings` (one row a window), `row_crc32` (each row's
CRC32) and `state` (the durable rows, and the batch size that worked). Rows are trusted only
where they read back, match their CRC32 and are finite, checked in blocks (verified_blocks).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from pathlib import Path

import h5py
import numpy as np

FORMAT_VERSION = 1
READ_BLOCK_BYTES = 64 << 20  # rows are verified and averaged in blocks of about this size
# What h5py raises for a damaged file: OSError mostly, RuntimeError for some broken superblocks.
UNREADABLE = (OSError, RuntimeError)
# ... and what a file with a foreign or partly missing layout gives on top.
NOT_OUR_LAYOUT = (*UNREADABLE, KeyError, ValueError, TypeError)


def partial_path(final_path: str | Path) -> Path:
    """Where rows accumulate; not ending in .h5, so no rule pattern or *.h5 glob takes it."""
    final = Path(final_path)
    return final.with_name(final.name + ".partial")


def row_shape(attrs) -> tuple[int, ...]:
    """A store's row: (dim,), or (tokens, dim) for a token store."""
    tokens = int(attrs.get("tokens", 0))
    return (tokens, int(attrs["dim"])) if tokens else (int(attrs["dim"]),)


def format_problem(attrs) -> str | None:
    found = attrs.get("format_version")
    if found == FORMAT_VERSION:
        return None
    return f"it has store format {found}, this embedprobe writes format {FORMAT_VERSION}"


def _hint(value) -> int | None:
    return int(value) if value is not None and int(value) > 0 else None


def stored_hint(f: h5py.File) -> int | None:
    """The batch size a previous run remembered, even in a file that is otherwise not reused
    (it depends on the model and the machine, not on the weights or the windows)."""
    try:
        return _hint(f.attrs.get("batch_size_hint", f["state"][1]))
    except NOT_OUR_LAYOUT:
        return None


def row_crc32(rows: np.ndarray) -> np.ndarray:
    rows = np.ascontiguousarray(rows)  # each row then is a buffer zlib reads without a copy
    return np.fromiter(map(zlib.crc32, rows), dtype="u4", count=len(rows))


def block_rows(row_values: int, block_bytes: int | None = None) -> int:
    return max(1, (block_bytes or READ_BLOCK_BYTES) // (4 * row_values))


def verified_blocks(f: h5py.File, rows: int, block_bytes: int | None = None
                    ) -> Iterator[tuple[int, np.ndarray, int]]:
    """(start, block, good) over rows [0, rows): `good` rows of the block read back, pass their
    CRC32 and are finite; iteration stops after the first block with a bad row. One block is
    alive at a time when the caller drops its reference before asking for the next."""
    embeddings, crcs = f["embeddings"], f["row_crc32"]
    step = block_rows(int(np.prod(embeddings.shape[1:])), block_bytes)
    for start in range(0, rows, step):
        try:
            block = embeddings[start:min(rows, start + step)]
            stored = crcs[start:start + len(block)]
        except UNREADABLE:
            yield start, embeddings[start:start], 0
            return
        ok = (row_crc32(block) == stored) & np.isfinite(block).reshape(len(block), -1).all(1)
        good = len(block) if ok.all() else int(np.argmin(ok))
        yield start, block, good
        if good < len(block):
            return
        del block, ok  # before the next block is read, not after


def verified_prefix(f: h5py.File, rows: int) -> int:
    """How many leading rows of [0, rows) read back intact."""
    good_rows = 0
    for start, _block, good in verified_blocks(f, rows):
        good_rows = start + good
    return good_rows


def open_any(path: Path) -> tuple[h5py.File, bool]:
    """Open read-only; (file, closed_cleanly). A killed SWMR writer's file opens only in
    SWMR-read mode, so that mode failing too means the file is damaged (raises UNREADABLE)."""
    try:
        return h5py.File(path, "r"), True
    except UNREADABLE:
        return h5py.File(path, "r", swmr=True), False
