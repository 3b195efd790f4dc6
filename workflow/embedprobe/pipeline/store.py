"""The HDF5 embedding store: one file per (dataset, model), appended one batch at a time.

Crash safety, and why it is built this way:

- While embedding, rows go to `<final>.partial`, opened in HDF5 SWMR mode (libver "latest").
  SWMR orders its metadata writes so that the file on disk is readable at every moment. Measured
  with 400 SIGKILLs at random moments of a tight append+flush loop: every SWMR file opened and
  held its durable rows bitwise; with the default format 1 of 400 files reported a durable count
  whose rows were wrong. A killed SWMR writer leaves the superblock marked "open for write", so
  recovery reads the file in SWMR-read mode and copies the trusted rows into a fresh partial.
- Each batch: append rows and their CRC32s, flush, then raise the durable-row count (a tiny
  dataset) and flush again. The count on disk therefore never runs ahead of the rows.
- On resume only rows below the durable count whose CRC32 matches and which are finite are
  trusted; everything after the first bad row is recomputed.
- `finish()` copies the verified rows into `<final>.finishing` (marked complete, with the
  window table's checksum), fsyncs it and renames it onto the final path. The final path only
  ever holds a complete, verified file; a kill during finish leaves the partial untouched.
- A lock file beside the output keeps two writers off the same cache.

A row is one window: its vector (`dim` values), or with `pooling: tokens` its time tokens
(`tokens` x `dim`, attribute `tokens`); the guarantees are the same, each row checksummed whole.
Readers that fit a probe take `load()`: a token row flattened in order, the reference's token
flattening.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import sys
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import h5py
import numpy as np
import pandas as pd

from embedprobe.core.errors import CacheError
from embedprobe.core.locks import CannotLock, hold_lock, release_lock
from embedprobe.core.units import MIB

FORMAT_VERSION = 1
REQUIRED_COLUMNS = {"recording": "str", "subject": "str", "start": "int64", "label": "int8"}
READ_BLOCK_BYTES = 64 << 20  # rows are verified and averaged in blocks of about this size
# finish() copies rows in smaller blocks: the embed job still holds its model then, and a
# token store's rows are ~0.5 MB each (memory.formulas counts one block and its check)
FINISH_BLOCK_BYTES = 16 << 20
CHUNK_BYTES = MIB  # an HDF5 chunk stays within the default 1 MiB chunk cache
# What h5py raises for a damaged file: OSError mostly, RuntimeError for some broken superblocks.
UNREADABLE = (OSError, RuntimeError)
# ... and what a file with a foreign or partly missing layout gives on top.
NOT_OUR_LAYOUT = (*UNREADABLE, KeyError, ValueError, TypeError)


def _crash_point(name: str) -> None:
    """Test seam: tests/helpers/cache_writer.py replaces this to SIGKILL itself at `name`."""


def _note(message: str) -> None:
    print(f"note: {message}", file=sys.stderr)


def canonical_json(value) -> str:
    """The one JSON spelling of `value` (sorted keys, no spaces): equal settings, equal key."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True)
class CacheIdentity:
    """What the cached embeddings depend on; any change means the cache must be rebuilt."""

    dataset: str
    model: str
    windows_sha256: str
    preprocessing: str  # canonical JSON
    weights_sha256: str
    code_version: str

    def as_attrs(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_attrs(cls, attrs) -> CacheIdentity:
        return cls(**{f.name: str(attrs[f.name]) for f in dataclasses.fields(cls)})

    def diff(self, other: CacheIdentity) -> list[str]:
        """Names of the parts that differ, in field order."""
        return [f.name for f in dataclasses.fields(self)
                if getattr(self, f.name) != getattr(other, f.name)]

    def describe_diff(self, cached: CacheIdentity) -> str:
        """'weights_sha256 (cached 1a2b3c4d5e6f, now 9f8e7d6c5b4a), ...' for messages."""
        parts = []
        for name in self.diff(cached):
            old, new = _short(getattr(cached, name)), _short(getattr(self, name))
            parts.append(f"{name} (cached {old}, now {new})")
        return ", ".join(parts)


def _short(value: str) -> str:
    return value if len(value) <= 40 else value[:12] + "..."


# -- the window table ------------------------------------------------------------------------

def normalize_window_table(table) -> pd.DataFrame:
    """The table as stored: required columns in their dtypes, extra int/float/bool/str columns."""
    frame = pd.DataFrame(table).reset_index(drop=True)
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"window table lacks columns {missing} (has {list(frame.columns)})")
    out = {}
    for name in frame.columns:
        column = frame[name]
        kind = REQUIRED_COLUMNS.get(name) or _column_kind(name, column)
        if kind == "str":
            out[name] = column.astype(str).to_numpy(dtype=object)
        else:
            values = column.to_numpy()
            if kind in ("int64", "int8") and not np.array_equal(values, values.astype(kind)):
                raise ValueError(f"window table column {name!r} does not fit {kind}")
            out[name] = values.astype(kind)
    return pd.DataFrame(out)


def _column_kind(name: str, column: pd.Series) -> str:
    kind = column.dtype.kind
    if kind in "iu":
        return "int64"
    if kind == "b":
        return "bool"
    if kind == "f":
        return "float64"
    if kind in "OSUT" or isinstance(column.dtype, pd.StringDtype):
        return "str"
    raise ValueError(f"window table column {name!r} has unsupported dtype {column.dtype}")


def window_table_sha256(table) -> str:
    """Checksum of the window table's content: column order and integer widths do not count."""
    frame = normalize_window_table(table)
    digest = hashlib.sha256(f"rows={len(frame)}".encode())
    for name in sorted(frame.columns):
        values = frame[name].to_numpy()
        digest.update(f"\0column={name}\0".encode())
        if values.dtype == object:
            digest.update(_utf8_lengths_and_bytes(values))
        elif values.dtype.kind == "f":
            digest.update(b"f" + values.astype("<f8").tobytes())
        else:
            digest.update(b"i" + values.astype("<i8").tobytes())
    return digest.hexdigest()


def _utf8_lengths_and_bytes(values: np.ndarray) -> bytes:
    """Each string's UTF-8 length (<i8), then all of them in UTF-8, as one bytes object. ASCII
    strings (every index's ids) in one encode: their lengths are their characters' (the
    checksum of 17,135 rows: 10-13 -> 5-6 ms; an embed run takes it three times)."""
    joined = "".join(values)
    data = joined.encode()
    if len(data) == len(joined):
        lengths = np.fromiter(map(len, values), "<i8", len(values))
    else:
        encoded = [v.encode() for v in values]
        lengths, data = np.array([len(e) for e in encoded], "<i8"), b"".join(encoded)
    return lengths.tobytes() + data


def _write_window_table(group: h5py.Group, frame: pd.DataFrame) -> None:
    group.attrs["columns"] = json.dumps(list(frame.columns))
    for name in frame.columns:
        values = frame[name].to_numpy()
        if values.dtype == object:
            group.create_dataset(name, data=values, dtype=h5py.string_dtype("utf-8"))
        else:
            group.create_dataset(name, data=values)


def _read_window_table(group: h5py.Group) -> pd.DataFrame:
    columns = {}
    for name in json.loads(group.attrs["columns"]):
        dataset = group[name]
        is_text = h5py.check_string_dtype(dataset.dtype) is not None
        columns[name] = dataset.asstr()[:].astype(object) if is_text else dataset[:]
    return pd.DataFrame(columns)


# -- file layout -----------------------------------------------------------------------------

def partial_path(final_path: str | Path) -> Path:
    """Where rows accumulate; not ending in .h5, so no rule pattern or *.h5 glob takes it."""
    final = Path(final_path)
    return final.with_name(final.name + ".partial")


def _sibling(final: Path, suffix: str) -> Path:
    return final.with_name(final.name + suffix)


def _chunk_rows(requested: int, n_windows: int, row_values: int) -> int:
    return max(1, min(requested, n_windows, CHUNK_BYTES // (4 * row_values)))


def row_shape(attrs) -> tuple[int, ...]:
    """A store's row: (dim,), or (tokens, dim) for a token store."""
    tokens = int(attrs.get("tokens", 0))
    return (tokens, int(attrs["dim"])) if tokens else (int(attrs["dim"]),)


def _create_layout(f: h5py.File, attrs: dict, windows: pd.DataFrame | h5py.Group,
                   n_windows: int, row: tuple[int, ...], chunk_rows: int,
                   hint: int | None) -> None:
    """Attributes, window table and empty row datasets of a partial or final file."""
    f.attrs.update(attrs)
    if isinstance(windows, h5py.Group):
        windows.file.copy(windows, f, "windows")
    else:
        _write_window_table(f.create_group("windows"), windows)
    rows = _chunk_rows(chunk_rows, n_windows, int(np.prod(row)))
    # NaN fill: a row whose chunk never reached the disk reads as NaN and fails verification.
    f.create_dataset("embeddings", shape=(0, *row), maxshape=(n_windows, *row), dtype="f4",
                     chunks=(rows, *row), fillvalue=np.float32("nan"))
    f.create_dataset("row_crc32", shape=(0,), maxshape=(n_windows,), dtype="u4",
                     chunks=(max(rows, 1024) if n_windows >= 1024 else n_windows,))
    # [durable rows, batch size that worked or -1]: raw data, so SWMR writes it in place.
    f.create_dataset("state", data=np.array([0, hint or -1], dtype="i8"))


def _row_crc32(rows: np.ndarray) -> np.ndarray:
    rows = np.ascontiguousarray(rows)  # each row then is a buffer zlib reads without a copy
    return np.fromiter(map(zlib.crc32, rows), dtype="u4", count=len(rows))


def _block_rows(row_values: int, block_bytes: int | None = None) -> int:
    return max(1, (block_bytes or READ_BLOCK_BYTES) // (4 * row_values))


def _verified_blocks(f: h5py.File, rows: int, block_bytes: int | None = None
                     ) -> Iterator[tuple[int, np.ndarray, int]]:
    """(start, block, good) over rows [0, rows): `good` rows of the block read back, pass their
    CRC32 and are finite; iteration stops after the first block with a bad row. One block is
    alive at a time when the caller drops its reference before asking for the next."""
    embeddings, crcs = f["embeddings"], f["row_crc32"]
    step = _block_rows(int(np.prod(embeddings.shape[1:])), block_bytes)
    for start in range(0, rows, step):
        try:
            block = embeddings[start:min(rows, start + step)]
            stored = crcs[start:start + len(block)]
        except UNREADABLE:
            yield start, embeddings[start:start], 0
            return
        ok = (_row_crc32(block) == stored) & np.isfinite(block).reshape(len(block), -1).all(1)
        good = len(block) if ok.all() else int(np.argmin(ok))
        yield start, block, good
        if good < len(block):
            return
        del block, ok  # before the next block is read, not after


def _verified_prefix(f: h5py.File, rows: int) -> int:
    """How many leading rows of [0, rows) read back intact."""
    good_rows = 0
    for start, _block, good in _verified_blocks(f, rows):
        good_rows = start + good
    return good_rows


def _copy_verified_rows(src: h5py.File, dst: h5py.File, rows: int) -> int:
    """Copy the intact leading rows of [0, rows) from src to dst; returns how many."""
    copied = 0
    for start, block, good in _verified_blocks(src, rows, FINISH_BLOCK_BYTES):
        end = start + good
        dst["embeddings"].resize(end, axis=0)
        dst["embeddings"][start:end] = block[:good]
        dst["row_crc32"].resize(end, axis=0)
        dst["row_crc32"][start:end] = src["row_crc32"][start:end]
        copied = end
        del block  # so the generator reads the next block with this one freed
    dst["state"][0] = copied
    return copied


def _open_any(path: Path) -> tuple[h5py.File, bool]:
    """Open read-only; (file, closed_cleanly). A killed SWMR writer's file opens only in
    SWMR-read mode, so that mode failing too means the file is damaged (raises UNREADABLE)."""
    try:
        return h5py.File(path, "r"), True
    except UNREADABLE:
        return h5py.File(path, "r", swmr=True), False


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _remove(path: Path, why: str | None = None) -> None:
    if path.exists():
        if why:
            _note(why)
        path.unlink()


class _WriterLock:
    """An exclusive flock on `<final>.lock`; the kernel releases it if the process dies."""

    def __init__(self, final: Path):
        self.path = _sibling(final, ".lock")
        self.fd: int | None = None
        held = CacheError(f"{final} is being written by another process (it holds {self.path})",
                          fix="wait for that process to finish or stop it; do not delete the "
                              "lock file while it runs")
        try:
            self.fd = hold_lock(self.path, held)
        except CannotLock as failed:  # a file system without flock (some network mounts)
            _note(f"cannot lock {self.path} ({failed.error}); make sure one process at a time "
                  f"writes {final}")

    def release(self) -> None:
        if self.fd is None:
            return
        release_lock(self.path, self.fd)
        self.fd = None


# -- writing ---------------------------------------------------------------------------------

class EmbeddingWriter:
    """Appends embeddings batch by batch to a crash-safe partial file; `finish()` publishes it.

    After construction `durable_rows` is where to continue (0 for a fresh start, n_windows when
    the final file already exists and matches) and `batch_size_hint` the batch size that worked
    last time (or None).
    """

    def __init__(self, final_path: str | Path, identity: CacheIdentity, n_windows: int,
                 dim: int | tuple[int, int], window_table, chunk_rows: int = 256):
        """`dim`: a row's width, or (tokens, width) for a token store."""
        self.final_path = Path(final_path)
        self.partial_path = partial_path(self.final_path)
        self.identity = identity
        self.row = tuple(int(n) for n in np.atleast_1d(dim))
        self.n_windows, self.dim, self.chunk_rows = int(n_windows), self.row[-1], int(chunk_rows)
        self.windows = normalize_window_table(window_table)
        if self.n_windows < 1 or min(self.row) < 1 or len(self.row) > 2 \
                or len(self.windows) != self.n_windows:
            raise ValueError(f"need n_windows >= 1 rows in the window table and dim >= 1, got "
                             f"n_windows={n_windows}, {len(self.windows)} table rows, dim={dim}")
        if window_table_sha256(self.windows) != identity.windows_sha256:
            raise ValueError("identity.windows_sha256 is not the checksum of window_table")
        self.durable_rows = 0
        self.batch_size_hint: int | None = None
        self.already_complete = False
        self._file: h5py.File | None = None
        self.final_path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = _WriterLock(self.final_path)
        try:
            self._start()
        except BaseException:
            self.close()
            raise

    # opening --

    def _start(self) -> None:
        for leftover in (".partial.new", ".partial.salvage", ".finishing"):
            _remove(_sibling(self.final_path, leftover))  # an interrupted create/copy/finish
        if self.final_path.exists() and self._final_matches():
            return
        if self.partial_path.exists() and self._resume_partial():
            return
        self._create_partial()

    def _final_matches(self) -> bool:
        try:
            with open_embeddings(self.final_path, self.identity) as store:
                self.batch_size_hint = _stored_hint(store._file)
        except CacheError as error:
            self.batch_size_hint = inspect(self.final_path).get("batch_size_hint")
            _note(f"{self.final_path} is not reused ({error.message}); it is rebuilt")
            return False
        self.already_complete = True
        self.durable_rows = self.n_windows
        _remove(self.partial_path, f"removing {self.partial_path}: {self.final_path} is complete")
        return True

    def _resume_partial(self) -> bool:
        """Continue from the partial file's trusted rows; False if it cannot be used."""
        partial = self.partial_path
        try:
            src, clean = _open_any(partial)
        except UNREADABLE as error:
            _remove(partial, f"{partial} cannot be opened ({error}); starting it over")
            return False
        with src:
            self.batch_size_hint = _stored_hint(src) or self.batch_size_hint
            reason, durable = self._unusable_reason(src)
            if reason is None:
                if clean:
                    good = _verified_prefix(src, durable)
                else:  # a killed writer: its file only opens read-only, so copy what is intact
                    _note(f"{partial} was left open by a stopped writer; copying its {durable} "
                          "durable rows into a fresh partial file")
                    good = self._salvage(src, durable)
        if reason is not None:
            _remove(partial, f"{partial} is not resumed: {reason}; starting it over")
            return False
        if good < durable:
            _note(f"{partial}: rows {good}..{durable} failed verification; recomputing them")
        self._open_for_append()
        if self._file["embeddings"].shape[0] != good:
            self._truncate(good)
        self.durable_rows = good
        return True

    def _unusable_reason(self, src: h5py.File) -> tuple[str | None, int]:
        """(why the partial file cannot be resumed or None, its durable rows)."""
        try:
            version = _format_problem(src.attrs)
            cached = CacheIdentity.from_attrs(src.attrs)
            shape = (int(src.attrs["n_windows"]), *row_shape(src.attrs))
            durable = int(src["state"][0])
            src["row_crc32"], src["embeddings"]  # noqa: B018 (do they exist?)
        except NOT_OUR_LAYOUT as error:
            return f"its layout is unreadable or not this store's ({error})", 0
        if version:
            return version, 0
        if self.identity.diff(cached):
            return f"it was made for other inputs: {self.identity.describe_diff(cached)}", 0
        if shape != (self.n_windows, *self.row):
            return (f"it holds {' x '.join(map(str, shape))} rows, expected "
                    f"{' x '.join(map(str, (self.n_windows, *self.row)))}"), 0
        return None, min(durable, self.n_windows)

    def _salvage(self, src: h5py.File, durable: int) -> int:
        salvage = _sibling(self.final_path, ".partial.salvage")
        with h5py.File(salvage, "w", libver="latest") as dst:
            _create_layout(dst, dict(src.attrs), src["windows"], self.n_windows, self.row,
                           self.chunk_rows, self.batch_size_hint)
            good = _copy_verified_rows(src, dst, durable)
        _crash_point("salvage_written")
        os.replace(salvage, self.partial_path)
        return good

    def _create_partial(self) -> None:
        # Built under another name, so a kill before the first flush leaves no partial to doubt.
        new = _sibling(self.final_path, ".partial.new")
        attrs = {**self.identity.as_attrs(), "n_windows": self.n_windows, "dim": self.dim,
                 "format_version": FORMAT_VERSION, "complete": False}
        if len(self.row) == 2:  # a pooled store's attributes stay as they were
            attrs["tokens"] = self.row[0]
        with h5py.File(new, "w", libver="latest") as f:
            _crash_point("partial_created")
            _create_layout(f, attrs, self.windows, self.n_windows, self.row, self.chunk_rows,
                           self.batch_size_hint)
        os.replace(new, self.partial_path)
        self._open_for_append()

    def _open_for_append(self) -> None:
        self._file = h5py.File(self.partial_path, "r+", libver="latest")
        self._file.swmr_mode = True
        # looked up once: a lookup by name on every append was a third of its CPU
        self._rows = (self._file["embeddings"], self._file["row_crc32"], self._file["state"])

    def _truncate(self, rows: int) -> None:
        self._file["embeddings"].resize(rows, axis=0)
        self._file["row_crc32"].resize(rows, axis=0)
        self._file["state"][0] = rows
        self._file.flush()

    # writing --

    def append(self, embeddings: np.ndarray) -> None:
        """Write rows durable_rows..durable_rows+len(embeddings) and make them durable."""
        if self.already_complete or self._file is None:
            raise CacheError(f"{self.final_path}: append() after the store was finished or closed")
        batch = np.asarray(embeddings)
        if batch.shape[1:] != self.row or batch.dtype.kind != "f":
            raise ValueError(f"expected a float array of shape (b, "
                             f"{', '.join(map(str, self.row))}), got {batch.dtype} {batch.shape}")
        start, end = self.durable_rows, self.durable_rows + len(batch)
        if end > self.n_windows:
            raise ValueError(f"rows {start}..{end} exceed the {self.n_windows} windows")
        batch = np.ascontiguousarray(batch, dtype=np.float32)
        finite = np.isfinite(batch).reshape(len(batch), -1).all(1)
        if not finite.all():
            raise CacheError(
                f"the embeddings of windows {start + int(np.argmin(finite))} (and maybe more) "
                f"in {start}..{end} are not finite; nothing was written",
                fix="the model produced NaN or inf: check the input scaling and the weights "
                    "(`embedprobe check` runs one batch and reports the output)",
            )
        f = self._file
        embeddings, crcs, state = self._rows
        embeddings.resize(end, axis=0)
        embeddings[start:end] = batch
        crcs.resize(end, axis=0)
        crcs[start:end] = _row_crc32(batch)
        f.flush()
        _crash_point("rows_flushed")
        # Only now the count: a kill in between costs this batch, never trusts unwritten rows.
        state[0] = end
        f.flush()
        self.durable_rows = end
        _crash_point("durable")

    def remember_batch_size(self, n: int) -> None:
        """Record the batch size that worked; the next run starts there."""
        if int(n) == self.batch_size_hint:
            return  # called after every batch: write only a change
        self.batch_size_hint = int(n)
        if self._file is not None:
            self._file["state"][1] = int(n)
            self._file.flush()

    def finish(self) -> Path:
        """Verify every row, write the complete file and rename it onto the final path."""
        if self.already_complete:
            self.close()
            return self.final_path
        if self.durable_rows != self.n_windows:
            raise CacheError(f"{self.partial_path}: finish() with {self.durable_rows} of "
                             f"{self.n_windows} rows written",
                             fix="append the remaining windows before finish()")
        self._file.close()
        self._file = None
        finishing = _sibling(self.final_path, ".finishing")
        with h5py.File(self.partial_path, "r") as src, h5py.File(finishing, "w") as dst:
            attrs = {**dict(src.attrs), "complete": True, "durable_rows": self.n_windows,
                     "batch_size_hint": self.batch_size_hint or -1,
                     "finished": time.strftime("%Y-%m-%dT%H:%M:%S")}
            _create_layout(dst, attrs, src["windows"], self.n_windows, self.row,
                           self.chunk_rows, self.batch_size_hint)
            copied = _copy_verified_rows(src, dst, self.n_windows)
        if copied != self.n_windows:
            _remove(finishing)
            raise CacheError(
                f"{self.partial_path}: row {copied} changed on disk after it was written",
                fix=f"rerun the embed step: it recomputes from row {copied} (if this repeats, "
                    "check the disk)",
            )
        with open_embeddings(finishing, self.identity, verify_rows=False):
            pass  # table checksum, counts and identity as a reader will see them
        _crash_point("final_written")
        _fsync(finishing)
        os.replace(finishing, self.final_path)
        _fsync(self.final_path.parent)
        _crash_point("renamed")
        self.partial_path.unlink()
        self.already_complete = True
        self._lock.release()
        return self.final_path

    def close(self) -> None:
        """Close without finishing: the partial file stays, and the next writer resumes it."""
        if self._file is not None:
            self._file.close()
            self._file = None
        self._lock.release()

    def __enter__(self) -> EmbeddingWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _format_problem(attrs) -> str | None:
    found = attrs.get("format_version")
    if found == FORMAT_VERSION:
        return None
    return f"it has store format {found}, this embedprobe writes format {FORMAT_VERSION}"


def _hint(value) -> int | None:
    return int(value) if value is not None and int(value) > 0 else None


def _stored_hint(f: h5py.File) -> int | None:
    """The batch size a previous run remembered, even in a file that is otherwise not reused
    (it depends on the model and the machine, not on the weights or the windows)."""
    try:
        return _hint(f.attrs.get("batch_size_hint", f["state"][1]))
    except NOT_OUR_LAYOUT:
        return None


# -- reading ---------------------------------------------------------------------------------

class EmbeddingStore:
    """A verified, complete cache: `embeddings` (h5py dataset, rows = windows), `windows`."""

    def __init__(self, path: Path, handle: h5py.File):
        self.path = path
        self._file = handle
        self.embeddings: h5py.Dataset = handle["embeddings"]
        self.windows = _read_window_table(handle["windows"])
        self.attrs = dict(handle.attrs)
        self.identity = CacheIdentity.from_attrs(self.attrs)

    @property
    def width(self) -> int:
        """The values of one row as the probes see it (a token row flattened)."""
        return int(np.prod(self.embeddings.shape[1:]))

    def load(self) -> np.ndarray:
        """All rows as one float32 (windows, width) array in memory: a token store's rows
        flattened, each window's tokens one after another."""
        return self.embeddings[:].reshape(self.embeddings.shape[0], self.width)

    def mean_by(self, column: str) -> tuple[np.ndarray, np.ndarray]:
        """(sorted keys of `column`, float64 mean embedding per key), read in blocks."""
        keys, means, _ = self.stats_by(column)
        return keys, means

    def stats_by(self, column: str, with_std: bool = False
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """(sorted keys of `column`, float64 mean embedding per key, and with `with_std` the
        population SD per key, else None), read in blocks: one pass over the store."""
        codes, keys = pd.factorize(self.windows[column], sort=True)
        width = self.width
        sums = np.zeros((len(keys), width), dtype=np.float64)
        squares = np.zeros_like(sums) if with_std else None
        step = _block_rows(width)
        for start in range(0, len(codes), step):
            block = self.embeddings[start:start + step].reshape(-1, width)
            block_codes = codes[start:start + len(block)]
            if np.any(block_codes[1:] < block_codes[:-1]):  # windows of a key not adjacent
                order = np.argsort(block_codes, kind="stable")
                block, block_codes = block[order], block_codes[order]
            # One contiguous slice per key: sum() on slices is ~8x faster than add.reduceat.
            bounds = np.r_[0, np.flatnonzero(np.diff(block_codes)) + 1, len(block_codes)]
            for lo, hi in zip(bounds[:-1], bounds[1:], strict=False):
                sums[block_codes[lo]] += block[lo:hi].sum(axis=0, dtype=np.float64)
                if squares is not None:  # a float64 copy of the slice, only for the SD
                    squares[block_codes[lo]] += np.square(block[lo:hi], dtype=np.float64
                                                          ).sum(axis=0)
        counts = np.bincount(codes, minlength=len(keys))[:, None]
        means = sums / counts
        if squares is None:
            return np.asarray(keys), means, None
        return np.asarray(keys), means, np.sqrt(np.maximum(squares / counts - means ** 2, 0.0))

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> EmbeddingStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def open_embeddings(path: str | Path, expected: CacheIdentity | None = None,
                    verify_rows: bool = True) -> EmbeddingStore:
    """Open a finished cache after checking it: complete flag, shapes, window-table checksum,
    identity (when `expected` is given) and, with verify_rows, every row's CRC32 and finiteness.
    Raises CacheError naming what is wrong and the fix."""
    path = Path(path)
    rebuild = f"delete {path} and rerun the embed step for this dataset and model"
    if not path.exists():
        state = inspect(path)
        if state["state"] == "partial":
            raise CacheError(
                f"{path} is incomplete: {state['path']} holds {state['rows']} of "
                f"{state['n_windows']} windows",
                fix=f"rerun the embed step: it resumes at window {state['rows']}",
            )
        if state["state"] == "damaged":
            raise CacheError(f"{path} is incomplete and {state['path']} is damaged "
                             f"({state['error']})",
                             fix="rerun the embed step: it starts the partial file over")
        raise CacheError(f"{path} does not exist",
                         fix="run the embed step for this dataset and model")
    try:
        handle = h5py.File(path, "r")
    except UNREADABLE as error:
        raise CacheError(f"{path} cannot be opened as HDF5 ({error})", fix=rebuild) from None
    try:
        store = _checked_store(path, handle, expected, verify_rows, rebuild)
    except BaseException:
        handle.close()
        raise
    return store


def _checked_store(path: Path, handle: h5py.File, expected: CacheIdentity | None,
                   verify_rows: bool, rebuild: str) -> EmbeddingStore:
    attrs = handle.attrs
    if not attrs.get("complete", False):
        raise CacheError(f"{path} is not marked complete", fix=rebuild)
    if _format_problem(attrs):
        raise CacheError(f"{path}: {_format_problem(attrs)}", fix=rebuild)
    try:
        store = EmbeddingStore(path, handle)
    except NOT_OUR_LAYOUT as error:
        raise CacheError(f"{path} lacks part of the store layout ({error})", fix=rebuild) from None
    n_windows, rows = int(attrs["n_windows"]), store.embeddings.shape[0]
    if not rows == len(store.windows) == n_windows:
        raise CacheError(f"{path} has {rows} embedding rows for {len(store.windows)} windows "
                         f"(expected {n_windows})", fix=rebuild)
    if window_table_sha256(store.windows) != store.identity.windows_sha256:
        raise CacheError(f"{path}: the stored window table does not match its checksum",
                         fix=rebuild)
    if expected is not None and expected.diff(store.identity):
        raise CacheError(
            f"{path} was built for other inputs: {expected.describe_diff(store.identity)}",
            fix=f"{rebuild} (it was made with other {', '.join(expected.diff(store.identity))})",
        )
    if verify_rows:
        good = _verified_prefix(handle, rows)
        if good < rows:
            raise CacheError(f"{path}: row {good} is unreadable, not finite or fails its CRC32 "
                             "check",
                             fix=rebuild)
    return store


def inspect(path: str | Path) -> dict:
    """The state of a cache for messages: complete, partial, damaged or missing; rows durable,
    shape, identity and batch size hint. Looks at `<path>.partial` when `path` is absent."""
    path = Path(path)
    if not path.exists() and partial_path(path).exists():
        path = partial_path(path)
    info = {"path": str(path), "state": "missing", "rows": 0, "n_windows": None, "dim": None,
            "tokens": None, "identity": None, "batch_size_hint": None, "error": None}
    if not path.exists():
        return info
    try:
        handle, _clean = _open_any(path)
    except UNREADABLE as error:
        return {**info, "state": "damaged", "error": str(error)}
    with handle:
        try:
            attrs = handle.attrs
            complete = bool(attrs.get("complete", False))
            info.update(
                state="complete" if complete else "partial",
                rows=int(attrs["durable_rows"] if complete else handle["state"][0]),
                n_windows=int(attrs["n_windows"]), dim=int(attrs["dim"]),
                tokens=int(attrs.get("tokens", 0)),
                identity=CacheIdentity.from_attrs(attrs).as_attrs(),
                batch_size_hint=_stored_hint(handle),
            )
        except NOT_OUR_LAYOUT as error:
            info.update(state="damaged", error=f"{type(error).__name__}: {error}")
    return info
