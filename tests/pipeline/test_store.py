"""The HDF5 embedding store: round trip, verification, identity, and real SIGKILLs."""

from __future__ import annotations

import hashlib
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import h5py
import numpy as np
import pandas as pd
import pytest

from embedprobe.core.errors import CacheError
from embedprobe.core.hashing import sha256_file
from embedprobe.pipeline import store_format, store_writer
from embedprobe.pipeline.store import inspect, open_embeddings
from embedprobe.pipeline.store_format import partial_path
from embedprobe.pipeline.store_identity import CacheIdentity
from embedprobe.pipeline.store_writer import EmbeddingWriter
from embedprobe.pipeline.window_table import normalize_window_table, window_table_sha256

from helpers import cache_writer
from helpers.cache_writer import embeddings_for, identity_for, window_table

HELPER = Path(cache_writer.__file__)


def write_store(path: Path, n: int = 300, dim: int = 16, batch: int = 32, identity=None,
                hint: int | None = None) -> tuple[pd.DataFrame, np.ndarray]:
    table = window_table(n)
    rows = embeddings_for(0, n, dim)
    with EmbeddingWriter(path, identity or identity_for(table), n, dim, table,
                         chunk_rows=64) as writer:
        for start in range(0, n, batch):
            writer.append(rows[start:start + batch])
        if hint:
            writer.remember_batch_size(hint)
        writer.finish()
    return table, rows


def assert_bitwise(a: np.ndarray, b: np.ndarray) -> None:
    assert a.dtype == b.dtype == np.float32 and a.shape == b.shape
    assert np.array_equal(a.view(np.uint32), b.view(np.uint32))


def test_roundtrip_is_bitwise_and_mean_by_streams(tmp_path, monkeypatch):
    path = tmp_path / "demo" / "toy.h5"
    table, rows = write_store(path, n=300, dim=16, batch=7)
    assert sorted(p.name for p in path.parent.iterdir()) == ["toy.h5"]  # no partial, no lock
    monkeypatch.setattr(store_format, "READ_BLOCK_BYTES", 16 * 4 * 50)  # 50-row blocks
    with open_embeddings(path, identity_for(table)) as store:
        assert_bitwise(store.load(), rows)
        assert store.embeddings.chunks == (64, 16)
        pd.testing.assert_frame_equal(store.windows, normalize_window_table(table))
        assert store.windows["label"].dtype == np.int8 and store.windows["start"].dtype == np.int64
        assert store.attrs["complete"] and store.attrs["durable_rows"] == 300
        keys, means = store.mean_by("subject")
    expected = pd.DataFrame(rows.astype(np.float64)).groupby(table["subject"].to_numpy()).mean()
    assert list(keys) == ["sub00", "sub01"]
    np.testing.assert_allclose(means, expected.to_numpy(), rtol=1e-12)
    info = inspect(path)
    assert (info["state"], info["rows"], info["n_windows"], info["dim"]) == ("complete", 300,
                                                                             300, 16)
    assert info["identity"]["weights_sha256"] == "w" * 64


def test_window_table_checksum_tracks_content_only():
    table = window_table(50)
    base = window_table_sha256(table)
    assert window_table_sha256(table[table.columns[::-1]]) == base
    assert window_table_sha256(table.astype({"label": np.int64})) == base
    assert window_table_sha256(table.to_records(index=False)) == base
    for column, value in [("label", 4), ("start", 1), ("recording", "rec999"), ("night", 7)]:
        changed = table.copy()
        changed.loc[10, column] = value
        assert window_table_sha256(changed) != base, column
    assert window_table_sha256(table.iloc[:49]) != base


@pytest.mark.parametrize("suffix", ["", "\u00e9"])
def test_window_table_checksum_is_the_documented_bytes(suffix):
    """sha256 of rows=N, then per column by name: its name, and int64 / float64 values or each
    string's UTF-8 length (int64) and the strings in UTF-8: the checksum existing stores hold
    (an ASCII table, and one with a two-byte character, whose lengths are not its length)."""
    table = window_table(30)
    table["recording"] = table["recording"] + suffix
    frame = normalize_window_table(table)
    digest = hashlib.sha256(b"rows=30")
    for name in sorted(frame.columns):
        digest.update(f"\0column={name}\0".encode())
        values = frame[name].to_numpy()
        if values.dtype == object:
            encoded = [str(v).encode("utf-8") for v in values]
            digest.update(np.array([len(e) for e in encoded], "<i8").tobytes())
            digest.update(b"".join(encoded))
        else:
            digest.update((b"f" + values.astype("<f8").tobytes()) if values.dtype.kind == "f"
                          else (b"i" + values.astype("<i8").tobytes()))
    assert window_table_sha256(table) == digest.hexdigest()


def test_sha256_file(tmp_path):
    path = tmp_path / "weights.pt"
    path.write_bytes(bytes(range(256)) * 5000)
    assert sha256_file(path) == hashlib.sha256(path.read_bytes()).hexdigest()


def run_helper(out: Path, log: Path, *args: str, kill_at: str | None = None, timeout=60):
    cmd = [sys.executable, str(HELPER), str(out), str(log), *args]
    if kill_at:
        cmd += ["--kill-at", kill_at]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def read_runs(log: Path) -> list[dict]:
    """Per run: where it opened and the row ranges it computed."""
    runs = []
    for line in log.read_text().splitlines():
        word, *rest = line.split()
        if word == "open":
            runs.append({"open": int(rest[0]), "hint": rest[1], "computed": []})
        elif word == "computed":
            runs[-1]["computed"].append((int(rest[0]), int(rest[1])))
    return runs


def assert_resumed_cleanly(log: Path, n: int, batch: int, kills: int) -> None:
    """Every row computed; each run starts at the previous run's durable rows; a kill costs
    at most one batch of recomputation."""
    runs = read_runs(log)
    assert len(runs) == kills + 1
    covered = np.zeros(n, dtype=int)
    for run in runs:
        expected_start = run["open"]
        for start, end in run["computed"]:
            assert start == expected_start
            covered[start:end] += 1
            expected_start = end
    assert covered.min() == 1
    for before, after in zip(runs, runs[1:], strict=False):
        reached = before["computed"][-1][1] if before["computed"] else before["open"]
        assert 0 <= reached - after["open"] <= batch  # rows lost to this kill
    assert covered.sum() - n <= kills * batch


def assert_same_store(path: Path, reference: Path) -> None:
    with open_embeddings(path) as got, open_embeddings(reference) as want:
        assert_bitwise(got.load(), want.load())
        pd.testing.assert_frame_equal(got.windows, want.windows)
        skip = {"finished"}
        assert {k: v for k, v in got.attrs.items() if k not in skip} == \
               {k: v for k, v in want.attrs.items() if k not in skip}


@pytest.fixture(scope="module")
def reference_store(tmp_path_factory) -> Path:
    """One uninterrupted run of the helper: what every interrupted sequence must reproduce."""
    out = tmp_path_factory.mktemp("reference") / "toy.h5"
    done = run_helper(out, out.with_suffix(".log"), "--n", "600")
    assert done.returncode == 0, done.stderr
    return out


def test_sigkill_at_each_stage_then_resume(tmp_path, reference_store):
    out, log = tmp_path / "toy.h5", tmp_path / "writer.log"
    partial = partial_path(out)
    stages = [
        # point, what is on disk afterwards, rows durable
        ("partial_created:1", "new", 0),  # inside the first file creation, before any flush
        ("durable:1", "partial", 32),  # right after the first batch is durable
        ("rows_flushed:9", "partial", 256),  # mid-file: batch 9's rows flushed, count not yet
        ("salvage_written:1", "partial", 256),  # copying the killed writer's rows to a new file
        ("computed:last", "partial", 576),  # the last batch computed, not yet appended
        ("final_written:1", "finishing", 600),  # complete file written, not yet renamed
        ("renamed:1", "final", 600),  # renamed, partial not yet removed
    ]
    for point, on_disk, durable in stages:
        killed = run_helper(out, log, kill_at=point)
        assert killed.returncode == -signal.SIGKILL, (point, killed.stderr)
        assert out.exists() == (on_disk == "final"), point
        if on_disk == "new":
            assert not partial.exists() and out.with_name("toy.h5.partial.new").exists()
            continue
        if on_disk != "final":
            info = inspect(out)
            assert (info["state"], info["rows"]) == ("partial", durable), point
            with pytest.raises(CacheError) as error:
                open_embeddings(out)
            assert f"holds {durable} of 600 windows" in error.value.message
            assert error.value.fix == f"rerun the embed step: it resumes at window {durable}"
    finished = run_helper(out, log)
    assert finished.returncode == 0, finished.stderr
    assert f"removing {partial}" in finished.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["toy.h5", "writer.log"]
    assert_same_store(out, reference_store)
    # two kills came before the writer was open (creating, salvaging): those runs logged nothing
    assert [r["open"] for r in read_runs(log)] == [0, 32, 256, 576, 600, 600]
    assert_resumed_cleanly(log, 600, 32, kills=len(stages) - 2)


def test_random_sigkills_during_hdf5_writes(tmp_path):
    """The parent kills a tight loop of tiny batches at random moments, so most kills land
    inside h5py calls (resize, write, flush) or in the salvage of the previous kill."""
    # 2000 batches take >= 0.7 s on a fast machine; four kills use at most 4 x 0.12 s of it.
    n, batch, kills = 4000, 2, 4
    args = ("--n", str(n), "--batch", str(batch), "--dim", "8")
    out, log = tmp_path / "toy.h5", tmp_path / "writer.log"
    rng = random.Random(7)
    for _ in range(kills):
        child = subprocess.Popen([sys.executable, str(HELPER), str(out), str(log), *args],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert child.stdout.readline() == "ready\n"  # the writer is open (and has salvaged)
        time.sleep(rng.uniform(0.01, 0.12))
        child.send_signal(signal.SIGKILL)
        _, stderr = child.communicate(timeout=30)
        assert child.returncode == -signal.SIGKILL, stderr
    finished = run_helper(out, log, *args)
    assert finished.returncode == 0, finished.stderr
    # the killed writer's SWMR file opens only read-only: its durable rows were copied over
    assert f"{partial_path(out)} was left open by a stopped writer" in finished.stderr
    with open_embeddings(out, identity_for(window_table(n))) as store:
        assert_bitwise(store.load(), embeddings_for(0, n, 8))
    assert_resumed_cleanly(log, n, batch, kills)


def test_incomplete_store_is_rejected_with_fix(tmp_path):
    out = tmp_path / "toy.h5"
    table = window_table(100)
    with pytest.raises(RuntimeError), EmbeddingWriter(out, identity_for(table), 100, 4,
                                                       table) as writer:
        writer.append(embeddings_for(0, 40, 4))
        raise RuntimeError("out of memory in the middle")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["toy.h5.partial"]
    with pytest.raises(CacheError) as error:
        open_embeddings(out)
    assert error.value.render().splitlines() == [
        f"error: {out} is incomplete: {partial_path(out)} holds 40 of 100 windows",
        "fix: rerun the embed step: it resumes at window 40",
    ]
    with EmbeddingWriter(out, identity_for(table), 100, 4, table) as writer:  # closed cleanly
        assert writer.durable_rows == 40
        writer.append(embeddings_for(40, 100, 4))
        writer.finish()
    with h5py.File(out, "r+") as f:  # a complete-looking file without the flag
        f.attrs["complete"] = False
    with pytest.raises(CacheError, match="is not marked complete") as error:
        open_embeddings(out)
    assert error.value.fix == f"delete {out} and rerun the embed step for this dataset and model"
    with pytest.raises(CacheError, match="does not exist"):
        open_embeddings(tmp_path / "other.h5")


def test_nan_rows_are_refused_on_append_and_on_read(tmp_path):
    out = tmp_path / "toy.h5"
    table = window_table(64)
    rows = embeddings_for(0, 64, 4)
    with EmbeddingWriter(out, identity_for(table), 64, 4, table) as writer:
        writer.append(rows[:32])
        bad = rows[32:].copy()
        bad[5, 2] = np.nan
        with pytest.raises(CacheError, match="windows 37 .* not finite") as error:
            writer.append(bad)
        assert "check the input scaling" in error.value.fix
        assert writer.durable_rows == 32
        writer.append(rows[32:])
        writer.finish()
    with h5py.File(out, "r+") as f:
        f["embeddings"][50, 1] = np.nan
    with pytest.raises(CacheError, match="row 50 is unreadable, not finite or fails") as error:
        open_embeddings(out)
    assert error.value.fix.startswith(f"delete {out} and rerun")
    with h5py.File(out, "r+") as f:  # finite but not what was written
        f["embeddings"][50, 1] = rows[50, 1] + 1
    with pytest.raises(CacheError, match="row 50 "):
        open_embeddings(out)


def test_identity_mismatch_names_the_changed_part(tmp_path, capsys):
    out = tmp_path / "toy.h5"
    table, _ = write_store(out, n=100)
    other_weights = identity_for(table, weights="b" * 64)
    with pytest.raises(CacheError) as error:
        open_embeddings(out, other_weights)
    assert error.value.message == (f"{out} was built for other inputs: weights_sha256 (cached "
                                   f"wwwwwwwwwwww..., now bbbbbbbbbbbb...)")
    assert error.value.fix.endswith("(it was made with other weights_sha256)")
    changed = CacheIdentity(**{**other_weights.as_attrs(), "preprocessing": '{"sfreq":256}'})
    assert changed.diff(identity_for(table)) == ["preprocessing", "weights_sha256"]

    # a partial file made with other weights is discarded, with a note saying why
    out2 = tmp_path / "toy2.h5"
    with EmbeddingWriter(out2, identity_for(table), 100, 16, table) as writer:
        writer.append(embeddings_for(0, 50, 16))
    capsys.readouterr()
    with EmbeddingWriter(out2, other_weights, 100, 16, table) as writer:
        assert writer.durable_rows == 0
    note = capsys.readouterr().err
    assert f"note: {partial_path(out2)} is not resumed: it was made for other inputs: " \
           "weights_sha256" in note
    assert "preprocessing" not in note
    # a stale final file is rebuilt, never reused
    with EmbeddingWriter(out, other_weights, 100, 16, table) as writer:
        assert writer.durable_rows == 0 and not writer.already_complete
    assert f"note: {out} is not reused" in capsys.readouterr().err


def test_damaged_partial_is_started_over_and_damaged_final_refused(tmp_path, capsys):
    out = tmp_path / "toy.h5"
    table = window_table(100)
    partial_path(out).write_bytes(b"\x89HDF\r\n\x1a\n" + bytes(2000))
    assert inspect(out)["state"] == "damaged"
    with pytest.raises(CacheError, match="is incomplete and .* is damaged"):
        open_embeddings(out)
    with EmbeddingWriter(out, identity_for(table), 100, 4, table) as writer:
        assert writer.durable_rows == 0
        writer.append(embeddings_for(0, 100, 4))
        writer.finish()
    assert "cannot be opened" in capsys.readouterr().err
    data = out.read_bytes()
    out.write_bytes(data[: len(data) // 2])
    with pytest.raises(CacheError, match="cannot be opened as HDF5"):
        open_embeddings(out)


def test_batch_size_hint_persists(tmp_path):
    out = tmp_path / "toy.h5"
    table = window_table(100)
    with EmbeddingWriter(out, identity_for(table), 100, 4, table) as writer:
        assert writer.batch_size_hint is None
        writer.append(embeddings_for(0, 16, 4))
        writer.remember_batch_size(16)
    with EmbeddingWriter(out, identity_for(table), 100, 4, table) as writer:
        assert (writer.durable_rows, writer.batch_size_hint) == (16, 16)
        writer.remember_batch_size(8)
        writer.append(embeddings_for(16, 100, 4))
        writer.finish()
    assert inspect(out)["batch_size_hint"] == 8
    # new weights: the cache is rebuilt, but the batch size that fits this machine carries over
    with EmbeddingWriter(out, identity_for(table, weights="c" * 64), 100, 4, table) as writer:
        assert (writer.durable_rows, writer.batch_size_hint) == (0, 8)


def test_second_writer_on_the_same_cache_is_refused(tmp_path):
    out = tmp_path / "toy.h5"
    table = window_table(10)
    with EmbeddingWriter(out, identity_for(table), 10, 4, table):
        with pytest.raises(CacheError, match="being written by another process"):
            EmbeddingWriter(out, identity_for(table), 10, 4, table)


# ------------------------------------------------------------------------- token stores


def test_a_token_store_keeps_its_rows_and_reads_them_flattened(tmp_path):
    table = window_table(120)
    rows = embeddings_for(0, 120, 5 * 8).reshape(120, 5, 8)
    path = tmp_path / "tokens.h5"
    with EmbeddingWriter(path, identity_for(table), 120, (5, 8), table, chunk_rows=16) as w:
        for start in range(0, 120, 32):
            w.append(rows[start:start + 32])
        w.finish()
    with h5py.File(path) as f:
        assert f["embeddings"].shape == (120, 5, 8)
        assert (int(f.attrs["tokens"]), int(f.attrs["dim"])) == (5, 8)
    with open_embeddings(path, identity_for(table)) as store:
        assert store.width == 40
        # each window's tokens one after another: token t of window i at [i, 8t:8t+8]
        assert_bitwise(store.load(), rows.reshape(120, 40))
        keys, means = store.mean_by("subject")
        assert list(keys) == ["sub00"]  # every row of this table
        assert np.allclose(means[0], rows.reshape(120, 40).mean(0, dtype=np.float64))
    assert inspect(path)["tokens"] == 5


def test_a_token_store_refuses_pooled_rows_and_a_partial_of_another_shape(tmp_path, capsys):
    table = window_table(64)
    path = tmp_path / "tokens.h5"
    rows = embeddings_for(0, 64, 24).reshape(64, 3, 8)
    with EmbeddingWriter(path, identity_for(table), 64, (3, 8), table) as w:
        with pytest.raises(ValueError, match=r"shape \(b, 3, 8\)"):
            w.append(rows[:4].reshape(4, 24))
        w.append(rows[:32])  # durable, left as a partial
    with EmbeddingWriter(path, identity_for(table), 64, 24, table) as w:  # pooled: 24 wide
        assert w.durable_rows == 0
    assert "it holds 64 x 3 x 8 rows, expected 64 x 24" in capsys.readouterr().err


def test_a_token_row_with_a_changed_byte_fails_verification(tmp_path):
    table = window_table(64)
    rows = embeddings_for(0, 64, 24).reshape(64, 3, 8)
    path = tmp_path / "tokens.h5"
    with EmbeddingWriter(path, identity_for(table), 64, (3, 8), table) as w:
        w.append(rows)
        w.finish()
    with h5py.File(path, "r+") as f:
        f["embeddings"][40, 2, 7] = 1.0 + float(f["embeddings"][40, 2, 7])
    with pytest.raises(CacheError, match="row 40 is unreadable, not finite or fails"):
        open_embeddings(path)


def test_sigkills_in_a_token_store_resume_to_the_uninterrupted_bytes(tmp_path):
    reference = tmp_path / "ref" / "toy.h5"
    reference.parent.mkdir()
    done = run_helper(reference, reference.with_suffix(".log"), "--n", "300", "--tokens", "6")
    assert done.returncode == 0, done.stderr
    out, log = tmp_path / "toy.h5", tmp_path / "writer.log"
    for point in ("durable:2", "rows_flushed:5", "final_written:1"):
        killed = run_helper(out, log, "--n", "300", "--tokens", "6", kill_at=point)
        assert killed.returncode == -signal.SIGKILL, (point, killed.stderr)
    finished = run_helper(out, log, "--n", "300", "--tokens", "6")
    assert finished.returncode == 0, finished.stderr
    assert_same_store(out, reference)
    with open_embeddings(out) as store:
        assert store.embeddings.shape == (300, 6, 16)
    assert_resumed_cleanly(log, 300, 32, kills=3)


FINISH_PROBE = """
import sys
import numpy as np
from helpers.cache_writer import identity_for, window_table
from embedprobe.pipeline.store_writer import EmbeddingWriter
def status_mb(field):
    line = next(l for l in open("/proc/self/status") if l.startswith(field))
    return int(line.split()[1]) / 1024
n, row = 300, (240, 512)  # ST-EEGFormer's tokens: 0.5 MB a row, 147 MB in all
table = window_table(n)
batch = np.random.default_rng(0).standard_normal((30, *row), dtype=np.float32)
with EmbeddingWriter(sys.argv[1], identity_for(table), n, row, table) as writer:
    for _ in range(n // 30):
        writer.append(batch)
    del batch
    open("/proc/self/clear_refs", "w").write("5")  # the high-water mark restarts here
    before = status_mb("VmRSS")
    writer.finish()
print(round(status_mb("VmHWM") - before))
"""


def test_finishing_a_token_store_holds_one_small_block(tmp_path):
    """finish() reads every row back while the embed job still holds its model: one block
    of FINISH_BLOCK_BYTES at a time (two 64 MB blocks and their checks took 145 MB)."""
    tests = Path(__file__).resolve().parents[1]  # `python -c` finds helpers/ in its folder
    run = subprocess.run([sys.executable, "-c", FINISH_PROBE, str(tmp_path / "tokens.h5")],
                         capture_output=True, text=True, timeout=120, cwd=tests)
    assert run.returncode == 0, run.stderr
    grew_mb = int(run.stdout)
    block_mb = store_writer.FINISH_BLOCK_BYTES / 2**20
    assert block_mb <= grew_mb <= 2 * block_mb, run.stdout
    with open_embeddings(tmp_path / "tokens.h5") as store:
        assert store.embeddings.shape == (300, 240, 512)
        assert np.isfinite(store.embeddings[-30:]).all()
