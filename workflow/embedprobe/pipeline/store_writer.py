"""The HDF5 embedding store's writer: one file per (dataset, model), appended one batch at a
time (pipeline/store.py reads it, pipeline/store_format.py is the file both sides see).

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

A row is one window, a vector or a token store's tokens (pipeline/store.py); the guarantees
are the same, each row checksummed whole.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import h5py
import numpy as np
import pandas as pd

from embedprobe.core.errors import CacheError
from embedprobe.core.locks import CannotLock, hold_lock, release_lock
from embedprobe.core.units import MIB
from embedprobe.pipeline.store import inspect, open_embeddings
from embedprobe.pipeline.store_format import (
    FORMAT_VERSION,
    NOT_OUR_LAYOUT,
    UNREADABLE,
    format_problem,
    open_any,
    partial_path,
    row_crc32,
    row_shape,
    stored_hint,
    verified_blocks,
    verified_prefix,
)
from embedprobe.pipeline.store_identity import CacheIdentity
from embedprobe.pipeline.window_table import (
    normalize_window_table,
    window_table_sha256,
    write_window_table,
)

# finish() copies rows in smaller blocks: the embed job still holds its model then, and a
# token store's rows are ~0.5 MB each (memory.formulas counts one block and its check)
FINISH_BLOCK_BYTES = 16 << 20
CHUNK_BYTES = MIB  # an HDF5 chunk stays within the default 1 MiB chunk cache


def _crash_point(name: str) -> None:
    """Test seam: tests/helpers/cache_writer.py replaces this to SIGKILL itself at `name`."""


def _note(message: str) -> None:
    print(f"note: {message}", file=sys.stderr)


def _sibling(final: Path, suffix: str) -> Path:
    return final.with_name(final.name + suffix)


def _chunk_rows(requested: int, n_windows: int, row_values: int) -> int:
    return max(1, min(requested, n_windows, CHUNK_BYTES // (4 * row_values)))


def _create_layout(f: h5py.File, attrs: dict, windows: pd.DataFrame | h5py.Group,
                   n_windows: int, row: tuple[int, ...], chunk_rows: int,
                   hint: int | None) -> None:
    """Attributes, window table and empty row datasets of a partial or final file."""
    f.attrs.update(attrs)
    if isinstance(windows, h5py.Group):
        windows.file.copy(windows, f, "windows")
    else:
        write_window_table(f.create_group("windows"), windows)
    rows = _chunk_rows(chunk_rows, n_windows, int(np.prod(row)))
    # NaN fill: a row whose chunk never reached the disk reads as NaN and fails verification.
    f.create_dataset("embeddings", shape=(0, *row), maxshape=(n_windows, *row), dtype="f4",
                     chunks=(rows, *row), fillvalue=np.float32("nan"))
    f.create_dataset("row_crc32", shape=(0,), maxshape=(n_windows,), dtype="u4",
                     chunks=(max(rows, 1024) if n_windows >= 1024 else n_windows,))
    # [durable rows, batch size that worked or -1]: raw data, so SWMR writes it in place.
    f.create_dataset("state", data=np.array([0, hint or -1], dtype="i8"))


def _copy_verified_rows(src: h5py.File, dst: h5py.File, rows: int) -> int:
    """Copy the intact leading rows of [0, rows) from src to dst; returns how many."""
    copied = 0
    for start, block, good in verified_blocks(src, rows, FINISH_BLOCK_BYTES):
        end = start + good
        dst["embeddings"].resize(end, axis=0)
        dst["embeddings"][start:end] = block[:good]
        dst["row_crc32"].resize(end, axis=0)
        dst["row_crc32"][start:end] = src["row_crc32"][start:end]
        copied = end
        del block  # so the generator reads the next block with this one freed
    dst["state"][0] = copied
    return copied


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


class EmbeddingWriter:
    """Appends embeddings batch by batch to a crash-safe partial file; `finish()` publishes it.

    After construction `durable_rows` is where to continue (0 for a fresh start, n_windows when
    the final file already exists and matches) and `batch_size_hint` the batch size that worked
    last time (or None).
    """

    def __init__(self, final_path: str | Path, identity: CacheIdentity, n_windows: int,
                 dim: int | tuple[int, int], window_table, chunk_rows: int = 256,
                 extra_attrs: dict | None = None):
        """`dim`: a row's width, or (tokens, width) for a token store; `extra_attrs`: more
        attributes the finished file must carry (a shard's place: pipeline/store_shards.py)."""
        self.extra_attrs = dict(extra_attrs or {})
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
                self.batch_size_hint = stored_hint(store._file)
        except CacheError as error:
            self.batch_size_hint = inspect(self.final_path).get("batch_size_hint")
            _note(f"{self.final_path} is not reused ({error.message}); it is rebuilt")
            return False
        with h5py.File(self.final_path, "r") as f:
            stale = [k for k, v in self.extra_attrs.items() if str(f.attrs.get(k)) != str(v)]
        if stale:
            _note(f"{self.final_path} is not reused (its {', '.join(stale)} changed); it is "
                  "rebuilt")
            return False
        self.already_complete = True
        self.durable_rows = self.n_windows
        _remove(self.partial_path, f"removing {self.partial_path}: {self.final_path} is complete")
        return True

    def _resume_partial(self) -> bool:
        """Continue from the partial file's trusted rows; False if it cannot be used."""
        partial = self.partial_path
        try:
            src, clean = open_any(partial)
        except UNREADABLE as error:
            _remove(partial, f"{partial} cannot be opened ({error}); starting it over")
            return False
        with src:
            self.batch_size_hint = stored_hint(src) or self.batch_size_hint
            reason, durable = self._unusable_reason(src)
            if reason is None:
                if clean:
                    good = verified_prefix(src, durable)
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
            version = format_problem(src.attrs)
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
                 "format_version": FORMAT_VERSION, "complete": False, **self.extra_attrs}
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
        crcs[start:end] = row_crc32(batch)
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
            attrs = {**dict(src.attrs), **self.extra_attrs, "complete": True,
                     "durable_rows": self.n_windows,
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


