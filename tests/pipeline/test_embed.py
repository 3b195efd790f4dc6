"""The real embed process: SIGKILLs at five points resume to bitwise-identical embeddings,
and injected out-of-memory errors back off to a smaller batch that is remembered."""

import json
import os
import signal
import subprocess
import sys
import time

import h5py
import numpy as np
import pytest

from embedprobe.core.config import load_config
from embedprobe.datasets.sleep_edf.lookalike import generate

BATCH = 8


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """One subject, one short night (~150 windows, ~19 batches of 8), indexed."""
    root = tmp_path_factory.mktemp("sleep_edf_demo")
    generate(root / "data" / "tiny-edf", n_subjects=1, nights=1, hours=0.25, seed=3)
    config = load_config()
    config["datasets"] = {"sleep_edf_demo": {**config["datasets"]["sleep_edf_demo"],
                                             "path": "tiny-edf", "expected_recordings": 1}}
    config.update(data_root=str(root / "data"), cache_root=str(root / "cache"),
                  results_root=str(root / "results"), weights_root=str(root / "weights"))
    job = json.dumps(config)
    index = root / "index.tsv"
    subprocess.run([sys.executable, "-m", "embedprobe.cli", "--job-config", job, "index",
                    "--dataset", "sleep_edf_demo", "--out", str(index)],
                   check=True, capture_output=True)
    return root, job, index


def embed(tiny, out, env_extra=None, extra=(), wait=True):
    root, job, index = tiny
    cmd = [sys.executable, "-m", "embedprobe.cli", "--job-config", job, "embed",
           "--dataset", "sleep_edf_demo", "--model", "biot_random", "--index", str(index),
           "--out", str(out), "--batch-size", str(BATCH), "--threads", "1", *extra]
    env = dict(os.environ, **(env_extra or {}))
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)
    if not wait:
        return proc
    stdout, stderr = proc.communicate(timeout=300)
    return proc.returncode, stderr


def demo_context(config):
    """The look-alike's context, as the CLI builds it for an embed job."""
    from embedprobe.core.config import resolve_roots
    from embedprobe.pipeline.context import DatasetContext

    return DatasetContext.build(config, resolve_roots(config), "sleep_edf_demo")


def read(path):
    with h5py.File(path, "r") as f:
        return f["embeddings"][:], {k: f["windows"][k][:] for k in f["windows"]}


def resumed_at(stderr: str) -> int:
    for line in stderr.splitlines():
        if line.startswith("note: resuming"):
            return int(line.split(" at window ")[1].split()[0])
    return 0


@pytest.fixture(scope="module")
def reference(tiny):
    out = tiny[0] / "cache" / "reference.h5"
    code, stderr = embed(tiny, out)
    assert code == 0, stderr
    return read(out)


def kill_when_growing(tiny, out):
    """SIGKILL from outside at an arbitrary moment while batches are being appended."""
    proc = embed(tiny, out, wait=False)
    seen = []
    for line in proc.stderr:  # the resume note is printed as the batch loop starts
        seen.append(line)
        if line.startswith("note: resuming"):
            break
    time.sleep(0.7)  # a few batches of 8 windows on one thread
    assert proc.poll() is None, "the run ended before the kill: " + "".join(seen)
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    return "".join(seen)


def test_sigkill_at_five_points_resumes_bitwise_identical(tiny, reference):
    ref_emb, ref_windows = reference
    n_batches = -(-len(ref_emb) // BATCH)
    out = tiny[0] / "cache" / "killed.h5"
    # Four kills just before a batch becomes durable (the first batch, before anything was
    # flushed; the second; mid-file; the last one) and one from outside at an arbitrary moment.
    points = [0, 1, "outside", n_batches // 2, n_batches - 1]
    durable = outside_from = 0
    for point in points:
        if point == "outside":
            stderr = kill_when_growing(tiny, out)
            assert resumed_at(stderr) == durable
            # unknown: the last durable batch or after it (on a busy machine the kill may come
            # before another batch is stored)
            outside_from, durable = durable, -1
            continue
        code, stderr = embed(tiny, out, {"EMBEDPROBE_FAULT_KILL_BEFORE_BATCH": str(point)})
        assert code == -signal.SIGKILL, stderr
        if durable >= 0:
            assert resumed_at(stderr) == durable  # resumed exactly where the last kill left it
        else:
            assert resumed_at(stderr) >= outside_from and resumed_at(stderr) % BATCH == 0
        assert not out.exists()  # the final path only ever holds a complete file
        # every batch before the killed one is durable: the kill lost only the batch in flight
        durable = point * BATCH
    code, stderr = embed(tiny, out)
    assert code == 0, stderr
    assert resumed_at(stderr) == durable
    emb, windows = read(out)
    assert emb.tobytes() == ref_emb.tobytes()
    for key in ref_windows:
        assert np.array_equal(windows[key], ref_windows[key])


def test_oom_backoff_matches_and_is_remembered(tiny, reference):
    ref_emb, _ = reference
    out = tiny[0] / "cache" / "oom.h5"
    # batches above 2 "run out of memory": 8 -> 4 -> 2, then kill midway so a rerun resumes
    code, stderr = embed(tiny, out, {"EMBEDPROBE_FAULT_OOM_ABOVE": "2",
                                     "EMBEDPROBE_FAULT_KILL_BEFORE_BATCH": "12"})
    assert code == -signal.SIGKILL
    assert "batch size now 4" in stderr and "batch size now 2" in stderr
    code, stderr = embed(tiny, out)  # no fault now: the remembered size is used from the start
    assert code == 0, stderr
    assert "note: batch size 2 (it worked on an earlier run" in stderr
    assert "out of memory" not in stderr.replace("ran out of memory", "")
    emb, _ = read(out)
    with h5py.File(out, "r") as f:
        assert int(f.attrs["batch_size_hint"]) == 2
    # Smaller batches change float summation order only: equal to float32 precision.
    np.testing.assert_allclose(emb, ref_emb, rtol=1e-4, atol=1e-5)


def test_oom_at_batch_one_fails_with_a_record(tiny):
    out = tiny[0] / "cache" / "oom_floor.h5"
    code, stderr = embed(tiny, out, {"EMBEDPROBE_FAULT_OOM_ABOVE": "0"})
    assert code == 1
    assert "error: out of memory even at batch size 1" in stderr
    record = json.loads(out.with_name(out.name + ".failure.json").read_text())
    assert record["category"] == "oom" and record["step"] == "embed"


def test_batches_regroup_recordings_into_full_batches_in_order():
    """Any recording lengths (empty ones too) and batch size: every window once, in order,
    every batch full but the last."""
    from embedprobe.pipeline.embed import batches

    rng = np.random.default_rng(0)
    for _ in range(300):
        lengths = rng.integers(0, 40, size=rng.integers(0, 6))
        edges = np.concatenate([[0], np.cumsum(lengths)])
        recordings = [np.arange(a, b) for a, b in zip(edges[:-1], edges[1:], strict=True)]
        size = int(rng.integers(1, 10))
        out = list(batches(iter(recordings), lambda size=size: size))
        joined = np.concatenate(out) if out else np.arange(0)
        assert np.array_equal(joined, np.arange(edges[-1]))
        assert all(len(batch) == size for batch in out[:-1])
        assert not out or 0 < len(out[-1]) <= size
        # the OOM backoff halves the size between batches: still every window, none too big
        sizes = iter([size] * 3 + [max(1, size // 2)] * 1000)
        current = []

        def size_of(sizes=sizes, current=current):
            current.append(next(sizes))
            return current[-1]

        out = list(batches(iter(recordings), size_of))
        joined = np.concatenate(out) if out else np.arange(0)
        assert np.array_equal(joined, np.arange(edges[-1]))
        assert all(0 < len(batch) <= size for batch in out)


def test_reading_ahead_is_bounded_whatever_the_model_speed():
    """At most `threads + 1` parts in flight (one being read by each thread, one more read or
    waiting), plus the one the model is batching, however slow the model: the bound
    preflight's estimate takes."""
    import threading

    import pandas as pd

    from embedprobe.pipeline.embed import WindowSource

    class CountingSource(WindowSource):
        whole_recordings = False  # parts of PART_WINDOWS: these recordings are one part each

        def __init__(self, table):  # no dataset: load() makes the windows
            self.table, self.reader = table, None  # no format: nothing more to import
            self.lock = threading.Lock()
            self.started = self.taken = self.most_ahead = 0

        def load(self, recording, rows):
            with self.lock:
                self.started += 1
                self.most_ahead = max(self.most_ahead, self.started - self.taken)
            return np.zeros((len(rows), 1, 4), np.float32)

    table = pd.DataFrame({"recording": np.repeat([f"r{k}" for k in range(12)], 3),
                          "start": np.zeros(36, int)})
    for threads in (1, 2, 3):
        source = CountingSource(table)
        seen = 0
        for windows in source.stream(0, threads):
            time.sleep(0.02)  # a slow model: readers would run ahead if they could
            with source.lock:
                source.taken += 1
            seen += len(windows)
        assert seen == 36 and source.started == 12
        # in flight: `threads + 1`, and the one just handed over is being batched
        assert source.most_ahead == threads + 2, (threads, source.most_ahead)


def test_reader_processes_embed_the_same_bytes_and_resume_after_a_kill(tiny, reference):
    """Reader processes (what a GPU job uses) feed the same windows: a run killed before a
    batch resumes and ends bitwise identical to the threads' reference."""
    ref_emb, _ = reference
    out = tiny[0] / "cache" / "processes.h5"
    readers = {"EMBEDPROBE_READERS": "processes"}
    before = set(os.listdir("/dev/shm"))
    # the killed run's readers end with it: else they would hold its stderr open (and the
    # communicate() here would wait forever), and its shared slots would stay in /dev/shm
    code, stderr = embed(tiny, out, {**readers, "EMBEDPROBE_FAULT_KILL_BEFORE_BATCH": "5"})
    assert code == -signal.SIGKILL, stderr
    code, stderr = embed(tiny, out, readers)
    assert code == 0, stderr
    assert resumed_at(stderr) == 5 * BATCH
    emb, _ = read(out)
    assert emb.tobytes() == ref_emb.tobytes()
    deadline = time.time() + 10  # the killed run's resource tracker unlinks its slots
    while {p for p in os.listdir("/dev/shm") if p.startswith("psm_")} - before:
        assert time.time() < deadline, "shared memory left behind"
        time.sleep(0.2)


def test_an_unknown_reader_kind_is_refused(tiny):
    out = tiny[0] / "cache" / "bad_kind.h5"
    code, stderr = embed(tiny, out, {"EMBEDPROBE_READERS": "fibres"})
    assert code == 2
    assert "error: EMBEDPROBE_READERS is 'fibres'" in stderr
    assert "fix: set it to threads or processes, or unset it" in stderr


# ----------------------------------------------------------------- scripts/bench_embed.py


def bench():
    from embedprobe.devtools import bench_embed

    return bench_embed


def test_bench_defaults_follow_the_device():
    bench_embed = bench()
    cpu = bench_embed.parse_args([])
    assert (cpu.subjects, cpu.nights, cpu.hours, cpu.batch_size) == (4, 2, 1.0, 32)
    assert cpu.reader_threads == 2 and cpu.ceiling_workers == [1, 2]
    assert (cpu.ceiling_subjects, cpu.ceiling_hours, cpu.ceiling_batch_size) == (16, 8.0, 256)
    assert cpu.ceiling_readers == "processes" and cpu.readers is None
    cuda = bench_embed.parse_args(["--device", "cuda"])
    assert (cuda.subjects, cuda.nights, cuda.hours, cuda.batch_size) == (16, 2, 8.0, 256)
    assert (cuda.ceiling_subjects, cuda.ceiling_hours, cuda.ceiling_batch_size) == (16, 8.0, 256)
    cpus = len(os.sched_getaffinity(0))
    assert cuda.reader_threads == max(1, cpus - 2)
    assert cuda.ceiling_workers[0] == 1 and max(cuda.ceiling_workers) <= max(cpus, 2)
    chosen = bench_embed.parse_args(["--device", "cuda", "--batch-size", "64", "--hours", "2",
                                     "--ceiling-workers", "1", "3", "--readers", "threads"])
    assert (chosen.batch_size, chosen.hours, chosen.ceiling_workers, chosen.readers) == (
        64, 2.0, [1, 3], "threads")
    with pytest.raises(SystemExit):
        bench_embed.parse_args(["--device", "tpu"])
    with pytest.raises(SystemExit):
        bench_embed.parse_args(["--skip-ceiling", "--skip-forward"])


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="a GPU is here")
def test_bench_on_cuda_without_a_gpu_says_so_and_what_to_do(capsys):
    from helpers.project import script_main

    assert script_main("bench_embed")(["--device", "cuda"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("error: --device cuda, but torch ")
    assert "sees no CUDA device (its CUDA: none (a CPU build))" in err[0]
    assert err[1] == ("fix: run it on a GPU node with a CUDA build of torch (scripts/install.sh "
                      "--cuda cu126), or leave out --device for the CPU table")


def test_bench_tables_and_verdicts():
    bench_embed = bench()
    rows = [bench_embed.CeilingRow("biot_random", "processes", 1, 6000, 1.5, 1.6, 0.3, 0.4,
                                   0.12),
            bench_embed.CeilingRow("biot_random", "processes", 2, 6000, 0.8, 1.7, 0.3, 0.3)]
    table = bench_embed.format_ceiling(rows).splitlines()
    assert table[0].split() == ["model", "readers", "workers", "windows", "seconds", "win/s",
                                "win/s/worker", "x", "1", "worker", "main", "CPU-s",
                                "win/CPU-s", "readers", "1st", "batch", "s", "finish", "s"]
    assert table[2].split() == ["biot_random", "processes", "1", "6000", "1.50", "4000", "4000",
                                "1.00", "0.40", "3000", "3750", "0.30", "0.12"]
    assert table[3].split()[5:8] == ["7500", "3750", "1.88"]
    threads = bench_embed.CeilingRow("biot_random", "threads", 1, 6000, 2.0, 1.5, 0.3, 2.0)
    assert threads.per_cpu_second_all == 3000  # the readers' CPU is the embed process's
    assert bench_embed.ceiling_verdict(rows)  # 4,000/s on one worker, 1.88x on two
    rows[1].seconds = 1.0  # 1.5x
    assert not bench_embed.ceiling_verdict(rows)


def test_early_readers_are_turned_off_only_by_the_benchmarks_setting(monkeypatch):
    from embedprobe.pipeline.embed import EmbedSettings

    assert EmbedSettings.from_environment(batch_size=8, reader_threads=1).early_readers
    monkeypatch.setenv("EMBEDPROBE_EARLY_READERS", "off")
    assert not EmbedSettings.from_environment(batch_size=8, reader_threads=1).early_readers


def test_the_startup_table_runs_fresh_interpreters_early_and_late(tiny, tmp_path):
    """Each side a real fresh embed to its first batch; the table's gain is late - early."""
    bench_embed = bench()
    root, job, index = tiny
    config = json.loads(job)
    roots = {k: config[k] for k in ("data_root", "cache_root", "results_root", "weights_root")}
    out = tmp_path / "startup.h5"
    seconds = [bench_embed.startup_once(config, roots, index, "biot_random", BATCH, early, out)
               for early in (True, False)]
    assert all(0 < s < 120 for s in seconds) and out.stat().st_size > 0
    row = bench_embed.StartupRow("biot_random", 6.42, 6.51)
    table = bench_embed.format_startup([row]).splitlines()
    assert table[1].split() == ["biot_random", "6.42", "6.51", "0.09"]


def test_the_forward_is_timed_on_every_model_input_embed_feeds(monkeypatch):
    """The encoder alone gets windows of the shape embed feeds it: BIOT's 16 slots on
    Sleep-EDF (2 channels recorded, 30 s at 200 Hz), not the 2 channels read (8 times less
    work: its embed/forward once read 0.10)."""
    bench_embed = bench()
    shapes = {}
    monkeypatch.setattr(bench_embed, "read_index", lambda index: range(40))
    monkeypatch.setattr(bench_embed, "Encoder", lambda spec, names, roots, device: names)
    monkeypatch.setattr(bench_embed, "embed_once", lambda *a, **k: (1.0, {}))
    monkeypatch.setattr(bench_embed, "time_forward",
                        lambda encoder, n, batch, shape, seed: shapes.setdefault(seed, shape)
                        and 1.0)
    args = bench_embed.parse_args(["--repeats", "1"])
    row = bench_embed.bench_model(load_config(), {}, "index", "biot_random", args)
    assert shapes == {0: (16, 6000), 1: (16, 6000)}
    assert (row.windows, row.batch) == (40, 32)


def test_the_ceilings_worker_counts_take_turns_and_each_keeps_its_fastest(monkeypatch):
    """1, 2, 1, 2, ... after one warm-up: a busy spell on a shared machine slows every worker
    count alike instead of all repeats of one; each count reports its fastest run."""
    bench_embed = bench()
    calls = []
    walls = iter([9.0, 4.0, 2.5, 3.0, 2.0, 5.0, 2.2])  # warm-up, then 1, 2, 1, 2, 1, 2

    def embed_once(config, roots, index, model_id, settings, encoder_class, profile=None):
        calls.append(settings.reader_threads)
        wall = next(walls)
        return wall, {"readers": "processes", "reader_cpu_s": wall, "first_batch_s": 0.1,
                      "main_cpu_s": wall / 10}

    monkeypatch.setattr(bench_embed, "embed_once", embed_once)
    monkeypatch.setattr(bench_embed, "read_index", lambda index: [None] * 6000)
    args = bench_embed.parse_args(["--repeats", "3"])
    rows = bench_embed.bench_ceiling({}, {}, "index.tsv", "biot_random", args)
    assert calls == [1, 1, 2, 1, 2, 1, 2]
    assert [(r.workers, r.seconds, r.main_cpu_s) for r in rows] == [(1, 3.0, 0.3), (2, 2.0, 0.2)]


# ------------------------------------------------------------------ scripts/install.sh --cuda


def install_plan(tmp_path, *args, driver=None):
    """scripts/install.sh --dry-run with a fake nvidia-smi on PATH (or none): its stdout,
    stderr and exit code."""
    from helpers.project import PROJECT

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for tool in ("bash", "python3", "grep", "head", "dirname"):
        (bin_dir / tool).unlink(missing_ok=True)
        (bin_dir / tool).symlink_to(__import__("shutil").which(tool))
    smi = bin_dir / "nvidia-smi"
    smi.unlink(missing_ok=True)
    if driver:
        smi.write_text("#!/bin/bash\necho '| NVIDIA-SMI 570.86  Driver Version: 570.86  "
                       f"CUDA Version: {driver}     |'\n")
        smi.chmod(0o755)
    done = subprocess.run(["bash", str(PROJECT / "scripts" / "install.sh"), str(tmp_path / "venv"),
                           "--dry-run", *args], capture_output=True, text=True,
                          env={"PATH": str(bin_dir)}, timeout=60)
    return done.stdout, done.stderr, done.returncode


def test_install_keeps_the_cpu_wheel_without_a_driver(tmp_path):
    out, err, code = install_plan(tmp_path)
    assert code == 0, err
    assert "download.pytorch.org" not in out
    assert "-m pip install -q -r envs/requirements.txt" in out


@pytest.mark.parametrize("driver, build", [("12.8", "cu128"), ("13.0", "cu130"),
                                           ("12.6", "cu126"), ("12.9", "cu128")])
def test_install_takes_the_newest_cuda_build_the_driver_supports(tmp_path, driver, build):
    out, err, code = install_plan(tmp_path, driver=driver)
    assert code == 0, err
    lines = out.splitlines()
    torch_line = next(i for i, line in enumerate(lines) if "torch==2.13.0" in line)
    assert lines[torch_line].endswith(
        f"pip install -q torch==2.13.0 --index-url https://download.pytorch.org/whl/{build}")
    # before the pinned requirements, which then keep it
    assert torch_line < next(i for i, line in enumerate(lines) if "requirements.txt" in line)


def test_install_cuda_choice_by_hand_and_refusals(tmp_path):
    out, _, code = install_plan(tmp_path, "--cuda", "cu126")
    assert code == 0 and "whl/cu126" in out
    out, _, code = install_plan(tmp_path, "--cuda", "cpu", driver="12.8")
    assert code == 0 and "download.pytorch.org" not in out
    _, err, code = install_plan(tmp_path, driver="11.8")  # older than every build
    assert code == 0 and "supports none of cu126 cu128 cu130" in err
    _, err, code = install_plan(tmp_path, "--cuda", "12.6")
    assert code == 2 and "error: --cuda 12.6: not auto, cpu or a CUDA build like cu126" in err


def test_a_fresh_run_sets_its_readers_to_work_while_the_model_is_built(tiny, monkeypatch):
    """No partial store: the first recordings are read while the model is built. A resumed
    run learns its first row from the store, so its readers start after the model."""
    import torch

    from embedprobe.models.encoder import Ready
    from embedprobe.pipeline import embed as embed_step
    from embedprobe.pipeline.window_source import WindowStream

    root, job, index = tiny
    config = json.loads(job)
    events = []
    start = WindowStream.start
    monkeypatch.setattr(WindowStream, "start",  # the readers set to work (once a stream)
                        lambda self: (self.readers or events.append("readers")) or start(self))

    class Zeros:  # no model; fails on its fourth batch when asked to
        fail = False

        def __init__(self, spec, ch_names, roots, device="cpu"):
            events.append("model")
            self.device, self.weights_sha256, self.calls = torch.device("cpu"), "zeros", 0

        def __call__(self, windows):
            self.calls += 1
            if Zeros.fail and self.calls == 5:  # the width probe, then four batches
                raise RuntimeError("stop here")
            return np.zeros((len(windows), 4), np.float32)

        def launch(self, windows):
            return Ready(self(windows))

    monkeypatch.setattr(embed_step, "Encoder", Zeros)
    settings = embed_step.EmbedSettings(batch_size=BATCH, reader_threads=2)
    out = root / "cache" / "early.h5"
    Zeros.fail = True
    with pytest.raises(RuntimeError, match="stop here"):
        embed_step.run_embed(demo_context(config), "biot_random",
                             index, out, settings)
    assert events == ["readers", "model"]
    events.clear()
    Zeros.fail = False
    report = {}
    embed_step.run_embed(demo_context(config), "biot_random", index,
                         out, settings, report)
    # resumed at row 3 * BATCH: the third batch, computed before the fourth failed, was kept
    assert events == ["model", "readers"]
    assert report["windows"] == len(read(out)[0]) - 3 * BATCH


def test_each_batch_is_stored_while_the_next_one_is_computed(tiny, monkeypatch):
    """A GPU computes batch k + 1 while batch k is appended: the encoder is asked to start a
    batch before the one before is awaited and stored; the rows still land in order. (A
    failure keeps the batch computed before it: test_a_fresh_run_sets_its_readers_...)"""
    from embedprobe.pipeline import embed as embed_step
    from embedprobe.pipeline.store_writer import EmbeddingWriter

    root, job, index = tiny
    config = json.loads(job)
    events = []

    class Queued:  # each batch's vectors: the batch's first sample, ready when asked for
        def __init__(self, number, windows):
            self.number, self.vectors = number, windows[:, 0, :3].copy()

        def result(self):
            events.append(("result", self.number))
            return self.vectors

    class Device:
        launched = 0

        def __init__(self, spec, ch_names, roots, device="cpu"):
            self.device, self.weights_sha256 = __import__("torch").device("cpu"), "device"

        def __call__(self, windows):
            return windows[:, 0, :3].copy()  # the width probe

        def launch(self, windows):
            events.append(("launch", Device.launched))
            Device.launched += 1
            return Queued(Device.launched - 1, windows)

    appended = []
    append = EmbeddingWriter.append
    monkeypatch.setattr(EmbeddingWriter, "append",
                        lambda self, rows: (appended.append(len(rows)), append(self, rows)))
    monkeypatch.setattr(embed_step, "Encoder", Device)
    settings = embed_step.EmbedSettings(batch_size=BATCH, reader_threads=1)
    out = root / "cache" / "ahead.h5"
    embed_step.run_embed(demo_context(config), "biot_random",
                         index, out, settings)
    n = Device.launched
    assert n == len(appended) >= 10
    assert events == [("launch", 0)] + [event for k in range(1, n)
                                       for event in (("launch", k), ("result", k - 1))] + [
        ("result", n - 1)]
    embeddings, _ = read(out)
    assert embeddings.shape == (sum(appended), 3)
    windows = first_windows(config, index)  # the first recording, read on its own
    assert np.array_equal(embeddings[:len(windows)], windows[:, 0, :3])


def first_windows(config, index):
    """The index's first recording's windows as the readers make them (no model)."""
    from embedprobe.models.registry import model_spec
    from embedprobe.pipeline import embed as embed_step
    from embedprobe.pipeline.channel_maps import channel_plan
    from embedprobe.pipeline.index import read_index

    spec = model_spec(config, "biot_random", "sleep_edf_demo")
    plan = channel_plan(config, "sleep_edf_demo", spec.family)
    table = read_index(index)
    source = embed_step.WindowSource(demo_context(config), spec, plan, table)
    return next(iter(source.stream(0, 0)))


def test_the_feed_table_counts_the_devices_busy_share():
    bench_embed = bench()
    row = bench_embed.FeedRow(rate=5000, workers=2, windows=34000, seconds=8.5, setup_s=0.3,
                              finish_s=0.2)
    assert row.device_s == pytest.approx(6.8) and row.busy == pytest.approx(0.8)
    table = bench_embed.format_feed([row]).splitlines()
    assert table[2].split() == ["5000", "2", "34000", "6.80", "8.50", "0.80", "0.30", "0.20"]
    assert bench_embed.parse_args([]).feed_rates == [3000.0, 5000.0]
    assert bench_embed.parse_args(["--skip-ceiling"]).feed_rates == []


def test_the_device_like_encoder_queues_batches_and_waits_only_for_results(monkeypatch):
    bench_embed = bench()
    device = bench_embed.DeviceLikeEncoder.__new__(bench_embed.DeviceLikeEncoder)
    monkeypatch.setattr(bench_embed.DeviceLikeEncoder, "rate", 10.0)  # 0.1 s a window
    windows = np.zeros((5, 2, 10), np.float32)
    began = time.perf_counter()
    first, second = device.launch(windows), device.launch(windows)
    assert time.perf_counter() - began < 0.25  # queued, not run (0.5 s each)
    assert second.done - first.done == pytest.approx(0.5)  # one after the other
    assert first.done >= began + 0.5
    assert second.result().shape == (5, bench_embed.NULL_WIDTH)
    assert time.perf_counter() - began >= 1.0


def test_a_failed_append_stops_the_store_and_is_the_error_reported(tiny, monkeypatch):
    """An append that fails (a full disk) ends the run with its own error: the batch computed
    after it is not appended behind a half-written one, and the durable rows are those before."""
    from embedprobe.pipeline import embed as embed_step
    from embedprobe.pipeline.store_format import partial_path
    from embedprobe.pipeline.store_writer import EmbeddingWriter

    root, job, index = tiny
    config = json.loads(job)
    calls = []
    append = EmbeddingWriter.append

    def failing_append(self, rows):
        calls.append(len(rows))
        if len(calls) == 3:
            raise OSError("No space left on device")
        append(self, rows)

    monkeypatch.setattr(EmbeddingWriter, "append", failing_append)
    settings = embed_step.EmbedSettings(batch_size=BATCH, reader_threads=1)
    out = root / "cache" / "full-disk.h5"
    with pytest.raises(OSError, match="No space left"):
        embed_step.run_embed(demo_context(config), "biot_random",
                             index, out, settings)
    assert calls == [BATCH] * 3  # nothing after the failed one
    with h5py.File(partial_path(out), "r") as f:
        assert int(f["state"][0]) == 2 * BATCH


def test_a_batch_stored_after_an_out_of_memory_failure_keeps_its_own_size(tiny, monkeypatch):
    """The device runs out for good while the third batch is started (at every size down to
    1): the second batch, computed at the full size, is still stored, and the size kept for
    the rerun is the one it worked at, not the 1 that just failed."""
    import torch

    from embedprobe.core.errors import OutOfMemory
    from embedprobe.models.encoder import Ready
    from embedprobe.pipeline import embed as embed_step
    from embedprobe.pipeline.store_format import partial_path

    root, job, index = tiny
    config = json.loads(job)

    class RunsOut:
        launched = 0

        def __init__(self, spec, ch_names, roots, device="cpu"):
            self.device, self.weights_sha256 = torch.device("cpu"), "runs-out"

        def __call__(self, windows):
            return np.zeros((len(windows), 4), np.float32)

        def launch(self, windows):
            RunsOut.launched += 1
            if RunsOut.launched >= 3:
                raise torch.OutOfMemoryError("CUDA out of memory (test)")
            return Ready(self(windows))

    monkeypatch.setattr(embed_step, "Encoder", RunsOut)
    settings = embed_step.EmbedSettings(batch_size=BATCH, reader_threads=1)
    out = root / "cache" / "runs-out.h5"
    with pytest.raises(OutOfMemory, match="even at batch size 1"):
        embed_step.run_embed(demo_context(config), "biot_random",
                             index, out, settings)
    with h5py.File(partial_path(out), "r") as f:
        assert [int(v) for v in f["state"][:2]] == [2 * BATCH, BATCH]


@pytest.mark.parametrize("min_batch_s, every_batch", [(0.0, True), (60.0, False)])
def test_the_freed_heap_is_released_after_batches_as_long_as_the_setting(
        tiny, monkeypatch, min_batch_s, every_batch):
    """embed calls the release after every stored batch; it releases after those that took at
    least `heap_release_min_batch_s` (these take milliseconds: 0 releases each, 60 none)."""
    from embedprobe.models.encoder import Ready
    from embedprobe.pipeline import embed as embed_step

    root, job, index = tiny
    config = json.loads(job)
    launched = []

    class Zeros:
        def __init__(self, spec, ch_names, roots, device="cpu"):
            self.device, self.weights_sha256 = __import__("torch").device("cpu"), "zeros"

        def __call__(self, windows):
            return np.zeros((len(windows), 4), np.float32)

        def launch(self, windows):
            launched.append(len(windows))
            return Ready(self(windows))

    monkeypatch.setattr(embed_step, "Encoder", Zeros)
    settings = embed_step.EmbedSettings(batch_size=BATCH, reader_threads=1,
                                        heap_release_min_batch_s=min_batch_s)
    report = {}
    embed_step.run_embed(demo_context(config), "biot_random", index,
                         root / "cache" / f"release{min_batch_s}.h5", settings, report)
    assert len(launched) >= 10
    assert report["heap_releases"] == (len(launched) if every_batch else 0)


def test_install_adds_the_time_series_extra_under_the_runtime_pins(tmp_path):
    out, err, code = install_plan(tmp_path, "--time-series", "--cuda", "cpu")
    assert code == 0, err
    lines = out.splitlines()
    extra = [line for line in lines if "requirements-time-series.txt" in line]
    assert extra == [f"{tmp_path}/venv/bin/python -m pip install -q -r "
                     "envs/requirements-time-series.txt -c envs/requirements.txt"]
    # after the runtime pins, which it may not move
    assert lines.index(extra[0]) > next(i for i, line in enumerate(lines)
                                        if line.endswith("-r envs/requirements.txt"))
    out, err, code = install_plan(tmp_path, "--cuda", "cpu")
    assert "requirements-time-series" not in out
