"""Reading the HDF5 embedding store: a finished cache opened after its checks
(open_embeddings), its rows loaded or averaged per key in blocks, and the state of any cache
for messages (inspect). pipeline/store_writer.py writes it (and says why it is crash safe);
pipeline/store_format.py is what both sides read of a file.

A row is one window: its vector (`dim` values), or with `pooling: tokens` its time tokens
(`tokens` x `dim`, attribute `tokens`); the guarantees are the same, each row checksummed whole.
Readers that fit a probe take `read_parts()` (a fold's parts read in blocks straight into one
float32 array each: the only copy of their rows) or `load()` (every row); a token row is
flattened in order, the reference's token flattening.
"""

from __future__ import annotations

import json
from pathlib import Path

import h5py
import numpy as np
import pandas as pd

from embedprobe.core.errors import CacheError
from embedprobe.pipeline.store_format import (
    NOT_OUR_LAYOUT,
    UNREADABLE,
    block_rows,
    format_problem,
    open_any,
    partial_path,
    stored_hint,
    verified_prefix,
)
from embedprobe.pipeline.store_identity import CacheIdentity
from embedprobe.pipeline.window_table import read_window_table, window_table_sha256


class EmbeddingStore:
    """A verified, complete cache: `embeddings` (h5py dataset, rows = windows), `windows`."""

    def __init__(self, path: Path, handle: h5py.File):
        self.path = path
        self._file = handle
        self.embeddings: h5py.Dataset = handle["embeddings"]
        self.windows = read_window_table(handle["windows"])
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

    def read_parts(self, parts: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Each part's rows (a boolean mask over the store's rows) as one float32 (rows, width)
        array, read a block (READ_BLOCK_BYTES) of the store at a time straight into it:
        beside the parts only one block is held, so a fold costs one copy of its rows, not
        the whole store loaded and then cut (docs/measurements/2026-12-07-probe-scale.md)."""
        return {name: self.rows(mask)[:] for name, mask in parts.items()}

    def rows(self, mask: np.ndarray) -> StoreRows:
        """The rows a boolean mask selects, left in the file: read a slice at a time
        (probing/logistic's streamed fit, where a fold's rows do not fit in memory)."""
        return StoreRows(self.embeddings, np.flatnonzero(mask), self.width)

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
        step = block_rows(width)
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


class StoreRows:
    """Some rows of a store as a read-only 2-D float32 array that stays in the file: `shape`,
    `len`, and `[a:b]` or `[sorted positions]` (a float32 array of those rows, read as the
    span of the store they cover). Rows were checked finite when the store was opened."""

    dtype = np.dtype(np.float32)

    def __init__(self, embeddings: h5py.Dataset, positions: np.ndarray, width: int):
        self._embeddings, self._positions, self._width = embeddings, positions, width
        self.shape = (len(positions), width)
        self.ndim = 2

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, index) -> np.ndarray:
        wanted = self._positions[index]
        out = np.empty((len(wanted), self._width), dtype=np.float32)
        step = block_rows(self._width)
        at = 0
        while at < len(wanted):  # one block of the store at a time: the rows it holds
            first = int(wanted[at])
            stop = int(np.searchsorted(wanted, first + step))
            block = self._embeddings[first:int(wanted[stop - 1]) + 1].reshape(-1, self._width)
            np.take(block.astype(np.float32, copy=False), wanted[at:stop] - first, axis=0,
                    out=out[at:stop])
            at = stop
        return out


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
    if format_problem(attrs):
        raise CacheError(f"{path}: {format_problem(attrs)}", fix=rebuild)
    if "shards" in attrs:
        check_shards(path, attrs)
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
        good = verified_prefix(handle, rows)
        if good < rows:
            shard = shard_of_row(path, attrs, good)
            raise CacheError(f"{path}: row {good} is unreadable, not finite or fails its CRC32 "
                             "check" + (f" (it is in {shard})" if shard else ""),
                             fix=shard_fix(path, shard) if shard else rebuild)
    return store


def shard_fix(path: Path, shard: Path) -> str:
    """Snakemake remakes a missing shard only for a missing store: both go."""
    gone = f"rm -f {shard} {path}" if shard.exists() else f"rm -f {path}"
    return (f"{gone}, then rerun the same snakemake command: only that shard is embedded "
            "again, then joined")


def check_shards(path: Path, attrs) -> None:
    """A joined store (pipeline/store_shards.py) reads its rows from its shard files: each must
    be there, complete and the one it was joined from (HDF5 would read a missing one as NaN)."""
    for name, sha in zip(json.loads(attrs["shards"]), json.loads(attrs["shard_windows_sha256"]),
                         strict=True):
        shard = path.parent / name
        if not shard.exists():
            raise CacheError(f"{path} reads its rows from {shard}, which is missing",
                             fix=shard_fix(path, shard))
        try:
            with h5py.File(shard, "r") as f:
                usable = bool(f.attrs.get("complete", False)) and \
                    str(f.attrs["windows_sha256"]) == sha
        except NOT_OUR_LAYOUT:
            usable = False
        if not usable:
            raise CacheError(f"{path} reads its rows from {shard}, which is damaged, incomplete "
                             "or not the shard it was joined from",
                             fix=shard_fix(path, shard))


def shard_of_row(path: Path, attrs, row: int) -> Path | None:
    """The shard file that holds `row` of a joined store; None for an unsharded store."""
    if "shards" not in attrs:
        return None
    ends = np.cumsum(json.loads(attrs["shard_rows"]))
    names = json.loads(attrs["shards"])
    return path.parent / names[min(int(np.searchsorted(ends, row, side="right")), len(names) - 1)]


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
        handle, _clean = open_any(path)
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
                batch_size_hint=stored_hint(handle),
            )
        except NOT_OUR_LAYOUT as error:
            info.update(state="damaged", error=f"{type(error).__name__}: {error}")
    return info
