"""A fold's parts read from the store in blocks (EmbeddingStore.read_parts): the same rows,
bit for bit, as the whole store loaded and cut, and the same probe fit."""

from __future__ import annotations

import numpy as np

from embedprobe.pipeline import store_format
from embedprobe.pipeline.store import open_embeddings
from embedprobe.pipeline.store_writer import EmbeddingWriter
from embedprobe.probing.logistic import fit_logistic_probe
from embedprobe.probing.split import PARTS, Split

from helpers.cache_writer import embeddings_for, identity_for, window_table


def _store(path, n: int, shape) -> np.ndarray:
    table = window_table(n)
    width = int(np.prod(shape))
    rows = embeddings_for(0, n, width).reshape(n, *shape)
    with EmbeddingWriter(path, identity_for(table), n, shape if len(shape) > 1 else width,
                         table, chunk_rows=16) as writer:
        for start in range(0, n, 40):
            writer.append(rows[start:start + 40])
        writer.finish()
    return rows.reshape(n, width)


def _masks(n: int, seed: int) -> dict[str, np.ndarray]:
    """Interleaved parts with a gap (rows in no part), as subject folds over a table cut them."""
    part = np.random.default_rng(seed).integers(0, 4, n)  # 3: in no part
    return {name: part == k for k, name in enumerate(PARTS)}


def test_read_parts_equals_load_then_cut_across_blocks(tmp_path, monkeypatch):
    for shape, name in (((12,), "flat.h5"), ((3, 4), "tokens.h5")):
        rows = _store(tmp_path / name, 333, shape)
        monkeypatch.setattr(store_format, "READ_BLOCK_BYTES", 12 * 4 * 25)  # 25-row blocks
        masks = _masks(333, seed=len(shape))
        with open_embeddings(tmp_path / name) as store:
            parts = store.read_parts(masks)
            loaded = store.load()
        assert np.array_equal(loaded, rows)
        for part in PARTS:
            got, want = parts[part], rows[masks[part]]
            assert got.dtype == np.float32 and got.flags.c_contiguous and got.flags.writeable
            assert got.shape == want.shape and np.array_equal(got.view(np.uint32),
                                                             want.view(np.uint32))
        monkeypatch.undo()


def test_a_part_with_no_rows_reads_empty(tmp_path):
    _store(tmp_path / "s.h5", 50, (6,))
    masks = {"train": np.arange(50) < 30, "val": np.zeros(50, bool), "test": np.arange(50) >= 30}
    with open_embeddings(tmp_path / "s.h5") as store:
        parts = store.read_parts(masks)
    assert [parts[p].shape for p in PARTS] == [(30, 6), (0, 6), (20, 6)]


def test_the_fit_on_parts_read_and_standardised_in_place_is_the_in_memory_fit(tmp_path,
                                                                               monkeypatch):
    """The probe job's path (parts read in blocks, training rows standardised in place) and
    the whole store loaded and cut (a standardised copy) give the same fit, bit for bit."""
    rng = np.random.default_rng(3)
    n, dim = 900, 8
    labels = rng.integers(0, 3, n)
    X = (rng.normal(size=(n, dim)) + labels[:, None] * 0.7).astype(np.float32)
    table = window_table(n).assign(label=labels)
    path = tmp_path / "fit.h5"
    with EmbeddingWriter(path, identity_for(table), n, dim, table, chunk_rows=64) as writer:
        writer.append(X)
        writer.finish()
    monkeypatch.setattr(store_format, "READ_BLOCK_BYTES", dim * 4 * 100)
    masks = _masks(n, seed=7)
    with open_embeddings(path) as store:
        read = Split.read(store.read_parts(masks), labels, masks)
        cut = Split.cut(store.load(), labels, masks)
    streamed = fit_logistic_probe(read, overwrite=True)
    in_memory = fit_logistic_probe(cut)
    assert not np.array_equal(read.train.X, cut.train.X)  # standardised in place
    assert streamed.chosen == in_memory.chosen
    assert streamed.val_kappa_by_C == in_memory.val_kappa_by_C
    assert np.array_equal(streamed.test_proba, in_memory.test_proba)
