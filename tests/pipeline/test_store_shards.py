"""A store embedded in shards: the cut into recording ranges, the join (an HDF5 virtual dataset)
read as the unsharded store, and a missing or damaged shard named with its fix."""

from __future__ import annotations

import os
from pathlib import Path

import h5py
import numpy as np
import pandas as pd
import pytest

from embedprobe.core.errors import CacheError, UsageError
from embedprobe.pipeline.store import open_embeddings
from embedprobe.pipeline.store_shards import join_shards, shard_attrs, shard_rows
from embedprobe.pipeline.store_writer import EmbeddingWriter

from helpers.cache_writer import embeddings_for, identity_for, window_table

N, DIM, SHARDS = 600, 16, 3  # window_table: a recording every 100 rows, six of them


def write(path: Path, table: pd.DataFrame, lo: int, hi: int, extra: dict | None = None) -> None:
    part = table.iloc[lo:hi].reset_index(drop=True)
    with EmbeddingWriter(path, identity_for(part), hi - lo, DIM, part, chunk_rows=64,
                         extra_attrs=extra) as writer:
        for start in range(lo, hi, 32):
            writer.append(embeddings_for(start, min(hi, start + 32), DIM))
        writer.finish()


def test_shards_are_whole_recordings_cut_at_equal_window_counts():
    recordings = ["a"] * 3 + ["b"] * 5 + ["c"] * 2 + ["d"] * 4 + ["e"] * 1
    bounds = [shard_rows(recordings, 3, k) for k in range(3)]
    assert bounds == [(0, 3), (3, 10), (10, 15)]  # cuts at the run ends nearest 5 and 10
    assert [shard_rows(recordings, 5, k) for k in range(5)] == [
        (0, 3), (3, 8), (8, 10), (10, 14), (14, 15)]  # as many shards as recordings
    assert shard_rows(recordings, 1, 0) == (0, 15)
    with pytest.raises(UsageError) as refused:
        shard_rows(recordings, 6, 0)
    assert "at most 5" in refused.value.fix


@pytest.fixture
def sharded(tmp_path):
    """The unsharded store and its three shards joined, of the same rows."""
    table = window_table(N)
    write(tmp_path / "whole" / "toy.h5", table, 0, N)
    joined = tmp_path / "toy.h5"
    shards = []
    for k in range(SHARDS):
        lo, hi = shard_rows(table["recording"], SHARDS, k)
        shards.append(tmp_path / "toy.shards" / f"{k}-of-{SHARDS}.h5")
        write(shards[-1], table, lo, hi, shard_attrs(k, SHARDS, table))
    join_shards(shards, joined)
    return tmp_path / "whole" / "toy.h5", joined, shards, table


def test_the_joined_store_reads_as_the_unsharded_one(sharded, monkeypatch, tmp_path):
    whole, joined, shards, table = sharded
    assert [shard_rows(table["recording"], SHARDS, k) for k in range(SHARDS)] == [
        (0, 200), (200, 400), (400, 600)]
    monkeypatch.chdir(shards[0].parent)  # HDF5 finds the shards beside the joined file
    with open_embeddings(whole) as a, open_embeddings(joined, identity_for(table)) as b:
        assert b.embeddings.is_virtual and a.identity == b.identity
        rows_a, rows_b = a.load(), b.load()
        assert np.array_equal(rows_a.view(np.uint32), rows_b.view(np.uint32))
        pd.testing.assert_frame_equal(a.windows, b.windows)
        keys_a, means_a = a.mean_by("subject")
        keys_b, means_b = b.mean_by("subject")
        assert list(keys_a) == list(keys_b) and np.array_equal(means_a, means_b)
    # the join copies no row: the file holds the window table and the mapping
    assert whole.stat().st_size - joined.stat().st_size > N * DIM * 4


def test_a_missing_or_damaged_shard_is_named_with_its_fix(sharded):
    _whole, joined, shards, _table = sharded
    with h5py.File(shards[1], "r+") as f:  # a changed row, its CRC32 left as it was
        f["embeddings"][5] = f["embeddings"][5] + 1
    with pytest.raises(CacheError) as damaged:
        open_embeddings(joined)
    assert "row 205 " in damaged.value.message and str(shards[1]) in damaged.value.message
    # Snakemake remakes a shard only for a missing store: the fix removes both
    assert damaged.value.fix.startswith(f"rm -f {shards[1]} {joined}, then rerun")
    os.remove(shards[2])
    with pytest.raises(CacheError) as missing:
        open_embeddings(joined)
    assert f"{shards[2]}, which is missing" in missing.value.message
    assert missing.value.fix.startswith(f"rm -f {joined}, then rerun")


def test_shards_of_another_split_are_not_joined(sharded, tmp_path):
    _whole, _joined, shards, _table = sharded
    with pytest.raises(CacheError) as refused:
        join_shards([shards[0], shards[2]], tmp_path / "other.h5")
    assert "0-of-3.h5 is shard 0/3, expected 0/2" in refused.value.message
    assert not (tmp_path / "other.h5").exists()


def test_a_token_store_joins_with_its_tokens(tmp_path):
    tokens, width = 4, 8
    table = window_table(300)

    def write_tokens(path, lo, hi, extra=None):
        part = table.iloc[lo:hi].reset_index(drop=True)
        with EmbeddingWriter(path, identity_for(part), hi - lo, (tokens, width), part,
                             extra_attrs=extra) as writer:
            writer.append(embeddings_for(lo, hi, tokens * width).reshape(-1, tokens, width))
            writer.finish()

    shards = [tmp_path / "t.shards" / f"{k}-of-2.h5" for k in range(2)]
    for k, path in enumerate(shards):
        write_tokens(path, *shard_rows(table["recording"], 2, k), shard_attrs(k, 2, table))
    with open_embeddings(join_shards(shards, tmp_path / "t.h5")) as store:
        assert store.embeddings.shape == (300, tokens, width) and store.width == 32
        assert np.array_equal(store.load(), embeddings_for(0, 300, tokens * width))
