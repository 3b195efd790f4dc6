"""A fold's rows as the probe job reads them: its parts read from the store in blocks
(EmbeddingStore.read_parts: the same rows, bit for bit, as the whole store loaded and cut, and
the same fit), or left in the store (StoreRows: the streamed fit, the same answer to rounding);
and the preflight's knob that picks the streamed fit for a fold too large to hold."""

from __future__ import annotations

import numpy as np
import pytest

from embedprobe.memory import formulas
from embedprobe.memory.calibration import load_calibration
from embedprobe.memory.estimate import estimate, fit_knobs
from embedprobe.pipeline import store_format
from embedprobe.pipeline.store import open_embeddings
from embedprobe.pipeline.store_writer import EmbeddingWriter
from embedprobe.probing import logistic, probe_forms
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


def _fit_store(path, n: int, dim: int, seed: int):
    rng = np.random.default_rng(seed)
    labels = rng.choice(4, n, p=[0.5, 0.2, 0.2, 0.1])
    X = (rng.normal(size=(n, dim)) + labels[:, None] * rng.normal(size=dim) * 0.5
         ).astype(np.float32)
    table = window_table(n).assign(label=labels)
    with EmbeddingWriter(path, identity_for(table), n, dim, table, chunk_rows=256) as writer:
        writer.append(X)
        writer.finish()
    return labels


def test_the_streamed_fit_gives_the_in_memory_answer(tmp_path, monkeypatch):
    """Rows left in the store, read and standardised a block at a time per evaluation (blocks
    of 4,096 rows here, so the sums run over several), against the same fold held in memory:
    the scaler and the preconditioner equal bit for bit, the fits to rounding: the same C,
    validation kappas within 1e-3, test predictions on >= 99.5% of the rows."""
    n, dim = 30_000, 12
    labels = _fit_store(tmp_path / "s.h5", n, dim, seed=5)
    monkeypatch.setattr(store_format, "READ_BLOCK_BYTES", dim * 4 * 1000)
    monkeypatch.setattr(probe_forms, "STREAM_BLOCK_BYTES", dim * 4 * 4096)
    masks = _masks(n, seed=11)
    seen = {}
    real_eigen = logistic.covariance_eigen

    def recorded(*args):
        seen.setdefault("eigen", []).append(real_eigen(*args))
        return seen["eigen"][-1]

    monkeypatch.setattr(logistic, "covariance_eigen", recorded)
    with open_embeddings(tmp_path / "s.h5") as store:
        rows = Split.read({p: store.rows(m) for p, m in masks.items()}, labels, masks)
        assert not isinstance(rows.train.X, np.ndarray)
        streamed = fit_logistic_probe(rows, C_grid=(0.01, 1.0))
    held = fit_logistic_probe(Split.read(store_parts(tmp_path / "s.h5", masks), labels, masks),
                              C_grid=(0.01, 1.0))
    (streamed_values, streamed_vectors), (held_values, held_vectors) = seen["eigen"]
    assert np.array_equal(streamed_values, held_values)
    assert np.array_equal(streamed_vectors, held_vectors)
    assert streamed.chosen == held.chosen
    for C, kappa in held.val_kappa_by_C.items():
        assert abs(streamed.val_kappa_by_C[C] - kappa) <= 1e-3
    assert np.mean(streamed.test_pred == held.test_pred) >= 0.995
    assert abs(streamed.test_metrics["kappa"] - held.test_metrics["kappa"]) <= 0.005


def store_parts(path, masks):
    with open_embeddings(path) as store:
        return store.read_parts(masks)


def test_the_reference_method_refuses_streamed_rows(tmp_path):
    labels = _fit_store(tmp_path / "r.h5", 300, 4, seed=1)
    masks = _masks(300, seed=2)
    with open_embeddings(tmp_path / "r.h5") as store:
        split = Split.read({p: store.rows(m) for p, m in masks.items()}, labels, masks)
        with pytest.raises(Exception, match="streamed"):
            fit_logistic_probe(split, method="reference")


def test_preflight_streams_a_fold_too_large_to_hold():
    """8 million rows x 256 (SHHS's 30 s epochs, a BIOT width) in a 3:1:1 fold: held, the
    fold's rows alone are 8.2 GB; a 6 GB limit takes the streamed knob, whose estimate has no
    term that grows with the rows' values (the window table still grows with the rows)."""
    fold = {"n_train": 4_800_000, "n_val": 1_600_000, "n_test": 1_600_000, "dim": 256,
            "n_classes": 5, "n_jobs": 2}
    table = load_calibration()
    held = estimate("probe_logistic", fold | {"n_jobs": 1}, table, None)
    rows_mb = 8_000_000 * 256 * 4 / 2**20
    assert held.total / 2**20 > rows_mb
    chosen = fit_knobs("probe_logistic", fold, table, 6 << 30)
    assert chosen.verdict == "ok" and chosen.knobs == {"n_jobs": 1, "streamed": 1}
    assert chosen.total < held.total - 0.95 * rows_mb * 2**20
    # fits held where the rows fit: no streaming without need
    assert fit_knobs("probe_logistic", fold, table, 64 << 30).knobs == {"n_jobs": 2,
                                                                       "streamed": 0}


def test_the_formulas_copies_of_the_probes_constants_agree():
    assert formulas.STORE_READ_BLOCK_BYTES == store_format.READ_BLOCK_BYTES
    assert formulas.PRECONDITIONER_ROWS == logistic.PRECONDITIONER_ROWS
