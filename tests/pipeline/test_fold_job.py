"""A probe fold's progress: on a terminal a live line counting the grid values fitted, rewritten
in place; off a terminal only the fold's result line. Real store, real probe, real config."""

import io
import json
import re

import numpy as np
import pytest

from embedprobe.core.config import load_config, resolve_roots
from embedprobe.pipeline import fold_job
from embedprobe.pipeline.store_writer import EmbeddingWriter

from helpers.cache_writer import identity_for, window_table

N_ROWS, DIM = 1_250, 16  # five subjects of 250 windows (helpers.cache_writer.window_table)


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """Embeddings that carry their label (five classes), so every C fits quickly."""
    table = window_table(N_ROWS)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(N_ROWS, DIM)).astype(np.float32)
    X[np.arange(N_ROWS), table["label"].to_numpy()] += 2.0
    path = tmp_path_factory.mktemp("fold_job") / "toy.h5"
    with EmbeddingWriter(path, identity_for(table), N_ROWS, DIM, table) as writer:
        writer.append(X)
        writer.finish()
    return path


def run_fold(store, tmp_path, monkeypatch, stream, benchmark="demo", fold=1):
    monkeypatch.setattr(fold_job.sys, "stderr", stream)
    config = load_config()
    record = fold_job.run_probe_fold(config, resolve_roots(config), benchmark, "demo", "toy",
                                     store, fold, tmp_path / "fold.json", tmp_path / "fold.npz")
    return record, stream.getvalue()


def test_on_a_terminal_the_line_counts_every_C_of_the_grid(store, tmp_path, monkeypatch):
    record, text = run_fold(store, tmp_path, monkeypatch, Terminal())
    grid = load_config()["benchmarks"]["demo"]["probe"]["C_grid"]
    live, result = text.rsplit("\r\033[K", 1)  # the live line is wiped before the result
    updates = live.split("\r\033[K")[1:]
    counted = [re.match(r"demo toy fold 1: C (\d+)/(\d+) \(([\d.e+-]+)\) val kappa 0\.\d{4} "
                        r"\(\d+ iterations\), \d+m \d\ds", u) for u in updates]
    assert all(counted), updates
    assert [(int(m[1]), int(m[2])) for m in counted] == [(k, len(grid)) for k in range(1, 7)]
    assert sorted(float(m[3]) for m in counted) == sorted(grid)
    assert "left" in updates[0] and "left" not in updates[-1]
    assert "\n" not in live  # one line, rewritten in place
    kappa = f"{record['metrics']['kappa']:.3f}"
    assert re.fullmatch(rf"\[2/5\] demo toy fold 1: ok, kappa {kappa} \(\d+m \d\ds\)\n", result)
    assert json.loads((tmp_path / "fold.json").read_text())["chosen"] in grid


def test_off_a_terminal_only_the_result_line(store, tmp_path, monkeypatch):
    record, text = run_fold(store, tmp_path, monkeypatch, io.StringIO())
    assert text.count("\n") == 1 and "\r" not in text and "\033" not in text
    assert text.startswith("[2/5] demo toy fold 1: ok, kappa ")
    assert record["status"] == "ok"


def test_the_live_line_is_wiped_once():
    stream = Terminal()
    progress = fold_job.FitProgress("ds m fold 0", stream=stream)
    progress(1, 6, "C=0.001: val kappa 0.5000 (3 iterations)")
    progress.clear()
    progress.clear()  # once only
    assert stream.getvalue().endswith("\r\033[K") and stream.getvalue().count("\r\033[K") == 2
    assert stream.getvalue().startswith("\r\033[Kds m fold 0: C 1/6 (0.001) val kappa 0.5000")
