"""A store embedded in shards: each shard a contiguous range of the index's recordings, written
by its own embed job (pipeline/store_writer.py: its own crash-safe resume), and the store the
probes read made of them as an HDF5 virtual dataset (docs/output.md, "Sharded stores").

Why a virtual dataset and not an index over the shard files: the joined file is an ordinary
store at the ordinary path (attributes, window table, `embeddings`, `row_crc32`), so every
reader (pipeline/store.py, the probes, `mean_by`'s block reads) reads it as it reads an
unsharded store, with the same row order and bytes and the same identity; it holds no copy of
a row (joining 8 million rows writes the window table and a mapping, not 8 GB), and a shard
embedded again is read through the same mapping. HDF5 reads a missing source as its fill value,
so the reader checks every shard file before it trusts the mapping (store.check_shards).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import h5py
import numpy as np
import pandas as pd

from embedprobe.core.errors import CacheError, UsageError
from embedprobe.pipeline.store import open_embeddings
from embedprobe.pipeline.store_format import FORMAT_VERSION, row_shape
from embedprobe.pipeline.window_table import (
    normalize_window_table,
    window_table_sha256,
    write_window_table,
)

# A shard's attributes beside its own identity: which shard of how many, and the checksum of
# the whole store's window table (the join checks that the shards are one split of one table).
SHARD_ATTR, STORE_WINDOWS_ATTR = "shard", "store_windows_sha256"


def shard_rows(recordings, shards: int, shard: int) -> tuple[int, int]:
    """Rows [lo, hi) of shard `shard` (0-based) of `shards`: contiguous runs of a recording's
    windows, never one run split, the cuts at the run ends nearest to equal window counts."""
    values = np.asarray(recordings)
    n = len(values)
    # a run's end: the row where the recording changes, and the table's end
    ends = np.r_[np.flatnonzero(values[1:] != values[:-1]) + 1, n]
    if not 0 <= shard < shards:
        raise ValueError(f"shard {shard} is not one of 0..{shards - 1}")
    if len(ends) < shards:
        raise UsageError(f"embed.shards asks for {shards} shards of {len(ends)} recordings",
                         fix=f"set embed.shards to at most {len(ends)} for this dataset "
                             "(a shard is a range of whole recordings)")
    cuts = [0]
    for k in range(1, shards):
        # nearest run end to k/shards of the windows, leaving each later shard a run
        at = int(np.argmin(np.abs(ends - k * n / shards)))
        at = min(max(at, np.searchsorted(ends, cuts[-1], side="right")), len(ends) - shards + k - 1)
        cuts.append(int(ends[at]))
    cuts.append(n)
    return cuts[shard], cuts[shard + 1]


def shard_attrs(shard: int, shards: int, store_windows) -> dict:
    """What a shard's file records of its place in the store."""
    return {SHARD_ATTR: f"{shard}/{shards}", STORE_WINDOWS_ATTR: window_table_sha256(store_windows)}


def join_shards(shard_paths: list[Path], output: Path) -> Path:
    """The store at `output`: the shards' rows, in order, as virtual datasets over their files;
    its identity the unsharded store's (the whole window table's checksum)."""
    output = Path(output)
    tables, firsts, rows, sources = [], None, [], []
    for k, path in enumerate(shard_paths):
        with open_embeddings(path) as store:
            attrs = store.attrs
            expected = f"{k}/{len(shard_paths)}"
            if str(attrs.get(SHARD_ATTR)) != expected:
                raise CacheError(f"{path} is shard {attrs.get(SHARD_ATTR)}, expected {expected}",
                                 fix=f"delete {path} and rerun: that shard is embedded again")
            if firsts is None:
                firsts = attrs
            mismatch = [key for key in ("dataset", "model", "preprocessing", "weights_sha256",
                                        "code_version", STORE_WINDOWS_ATTR, "dim", "tokens")
                        if str(attrs.get(key)) != str(firsts.get(key))]
            if mismatch:
                raise CacheError(f"{path} differs from {shard_paths[0]} in {', '.join(mismatch)}",
                                 fix=f"delete {path} and rerun: that shard is embedded again")
            tables.append(store.windows)
            rows.append(len(store.windows))
            sources.append((path, attrs["windows_sha256"], tuple(store.embeddings.shape[1:])))
    windows = normalize_window_table(pd.concat(tables, ignore_index=True))
    whole = window_table_sha256(windows)
    if whole != firsts[STORE_WINDOWS_ATTR]:
        raise CacheError(f"the shards of {output} do not make up the window table they were cut "
                         "from", fix=f"delete {output.parent / (output.name + '.shards')} and "
                                     "rerun the embed step")
    row = row_shape(firsts)
    n = int(sum(rows))
    embeddings = h5py.VirtualLayout(shape=(n, *row), dtype="f4")
    crcs = h5py.VirtualLayout(shape=(n,), dtype="u4")
    names, start = [], 0
    for (path, _sha, shape), count in zip(sources, rows, strict=True):
        # relative to the joined file: HDF5 looks there first, so the cache folder may move
        name = os.path.relpath(path, output.parent)
        embeddings[start:start + count] = h5py.VirtualSource(name, "embeddings", (count, *shape))
        crcs[start:start + count] = h5py.VirtualSource(name, "row_crc32", (count,))
        names.append(name)
        start += count
    attrs = {key: firsts[key] for key in ("dataset", "model", "preprocessing", "weights_sha256",
                                          "code_version", "dim")}
    if len(row) == 2:
        attrs["tokens"] = row[0]
    # no batch size hint: each shard's embed job keeps its own in its file
    attrs.update(windows_sha256=whole, n_windows=n, format_version=FORMAT_VERSION, complete=True,
                 durable_rows=n, batch_size_hint=-1, shards=json.dumps(names),
                 shard_rows=json.dumps([int(r) for r in rows]),
                 shard_windows_sha256=json.dumps([sha for _p, sha, _s in sources]),
                 finished=time.strftime("%Y-%m-%dT%H:%M:%S"))
    joining = output.with_name(output.name + ".joining")
    with h5py.File(joining, "w", libver="latest") as f:
        f.attrs.update(attrs)
        write_window_table(f.create_group("windows"), windows)
        f.create_virtual_dataset("embeddings", embeddings, fillvalue=np.float32("nan"))
        f.create_virtual_dataset("row_crc32", crcs, fillvalue=0)
        f.create_dataset("state", data=np.array([n, attrs["batch_size_hint"]], dtype="i8"))
    with open_embeddings(joining):
        pass  # the shards through the mapping: every row's CRC32, as a probe will read them
    os.replace(joining, output)
    print(f"note: {output}: {n:,} windows in {len(names)} shards", file=sys.stderr)
    return output
