"""Throughput of the embed step: the pipeline's ceiling, and embed against the model's forward.

On a generated Sleep-EDF demo (2 EEG channels at 100 Hz, resampled to each model's rate), three
tables from one run:

ceiling  `run_embed` with a null encoder (it returns zeros: no model cost) for 1, 2, ... reader
         workers: what the CPU side (EDF reading, resampling, cutting, scaling, batching, HDF5
         appends, the finished store) can feed a model at most. `win/s/worker` divides by the
         workers; `win/CPU-s` is windows per CPU second of the whole pipeline (the embed
         process and its readers), `readers` the same for the readers alone: both free of what
         other jobs on a shared machine take. Targets: >= 3,000 windows/s per worker with one,
         >= 1.7x from one worker to two (the embed process needs CPU too: on two cores two
         workers reach it only on an otherwise idle machine).
feed     `run_embed` with a device-like encoder: a stand-in for a GPU of `--feed-rates`
         windows/s whose work runs off the host's CPU (launching a batch returns at once, the
         host waits only for its vectors, as with CUDA). `busy` is the share of the run the
         device computes: what the CPU side between batches (taking parts, batching, HDF5
         appends) and the fixed costs leave of a fast GPU's time, measurable without one. The
         readers run as in the ceiling (its largest worker count); the first model's windows.
forward  For each model, `run_embed` end to end (index read, model build, reading,
         preprocessing, forward, HDF5 append, finish) against the encoder alone
         (`Encoder.__call__`) on random float32 windows of the same shape, count and batch.
         They alternate (forward, embed, forward, ... forward) and each side keeps its fastest
         run: on a shared machine the least disturbed run is the best estimate of what the code
         costs. `in-embed fwd` is the time embed spent inside the encoder, so `fwd share` is the
         pipeline's efficiency within one run (on a GPU: the time spent queueing its work).
         Target: embed / forward >= 0.95 on the CPU, >= 0.9 on a GPU.

start-up (--startup: that table alone) For each model, fresh interpreters embed the
         forward table's demo with one reader thread, the readers started early (before the
         model is built, after its imports: core/thread_imports.py) or late (after it;
         EMBEDPROBE_EARLY_READERS=off), alternating. `first batch` is from the interpreter's
         start to the first batch computed; `gain` what starting the readers early saves.

Every run of either table keeps its fastest of `--repeats`. Readers are processes beside a GPU
encoder and threads beside a CPU one, as in the workflow (--readers forces one kind).
scripts/bench_embed.py runs it (its docstring: the command line).
"""

from __future__ import annotations

import argparse
import cProfile
import inspect
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

import embedprobe.pipeline.embed as embed_step
from embedprobe.core.config import load_config
from embedprobe.core.errors import DeviceError, EmbedprobeError
from embedprobe.datasets.sleep_edf.lookalike import generate
from embedprobe.models.encoder import Encoder
from embedprobe.models.registry import model_spec
from embedprobe.pipeline.channel_maps import channel_plan
from embedprobe.pipeline.context import DatasetContext
from embedprobe.pipeline.embed import EmbedSettings, run_embed
from embedprobe.pipeline.index import build_index, read_index, write_index

DATASET = "sleep_edf_demo"
TARGETS = {"cpu": 0.95, "cuda": 0.9}  # embed / forward
CEILING_PER_WORKER = 3000  # windows/s
CEILING_SCALING = 1.7  # from one worker to two
# The device-like encoder's speeds: below two workers' ceiling on a 2-core machine; on a GPU
# node, up to the H200's BIOT forward (~29,000 windows/s at batch 256).
FEED_RATES = {"cpu": [3000.0, 5000.0], "cuda": [10000.0, 20000.0, 30000.0]}
NULL_WIDTH = 256
# What a GPU node's run uses unless told otherwise (the measurement).
CUDA_DEFAULTS = {"subjects": 16, "nights": 2, "hours": 8.0, "batch_size": 256,
                 "ceiling_subjects": 16, "ceiling_hours": 8.0, "ceiling_batch_size": 256}
# The ceiling's own demo is the GPU node's size (16 subjects x 2 nights x 8 h, 34,253 windows):
# many parts keep two workers busy to the end, and the job's fixed costs (start-up, the
# store's verified finish: ~0.3 s) weigh on a run of seconds as little as on the node's (with
# 8 subjects they were a tenth of the two-worker run). Its batch is the one a GPU is fed
# (256): the ceiling is what the CPU side can feed a fast model, and a batch of 32 spends the
# embed process's CPU on 8x the appends.
CPU_DEFAULTS = {"subjects": 4, "nights": 2, "hours": 1.0, "batch_size": 32,
                "ceiling_subjects": 16, "ceiling_hours": 8.0, "ceiling_batch_size": 256}


@dataclass
class Row:
    model: str
    windows: int
    batch: int
    embed_s: float
    forward_s: float
    in_embed_forward_s: float

    @property
    def ratio(self) -> float:
        return self.forward_s / self.embed_s  # = embed windows/s over forward windows/s

    @property
    def forward_share(self) -> float:
        return self.in_embed_forward_s / self.embed_s


@dataclass
class CeilingRow:
    model: str
    readers: str
    workers: int
    windows: int
    seconds: float
    reader_cpu_s: float
    first_batch_s: float
    main_cpu_s: float = float("nan")  # the embed process (its reader threads included)
    finish_s: float = float("nan")  # the store's verified finish, after the last batch

    @property
    def rate(self) -> float:
        return self.windows / self.seconds

    @property
    def per_worker(self) -> float:
        return self.rate / max(self.workers, 1)

    @property
    def per_cpu_second(self) -> float:
        return self.windows / self.reader_cpu_s if self.reader_cpu_s else float("nan")

    @property
    def per_cpu_second_all(self) -> float:
        """Windows per CPU second of the whole pipeline: embed process and reader processes."""
        extra = self.reader_cpu_s if self.readers == "processes" else 0.0
        return self.windows / (self.main_cpu_s + extra)


class TimedEncoder(Encoder):
    """An Encoder that adds up the seconds spent in its calls (run_embed builds one)."""

    seconds = 0.0

    def launch(self, windows: np.ndarray):
        began = time.perf_counter()
        try:
            return super().launch(windows)
        finally:
            TimedEncoder.seconds += time.perf_counter() - began


class Later:
    """A device-like batch's vectors: ready at `done` (perf_counter seconds)."""

    def __init__(self, done: float, count: int):
        self.done, self.count = done, count

    def result(self) -> np.ndarray:
        time.sleep(max(0.0, self.done - time.perf_counter()))  # as .cpu() waits on a GPU
        return np.zeros((self.count, NULL_WIDTH), np.float32)


class NullEncoder(Encoder):
    """No model: zeros of a fixed width, so the run measures the pipeline alone."""

    def __init__(self, spec, ch_names, roots, device="cpu"):
        self.spec, self.ch_names = spec, tuple(ch_names)
        self.device = torch.device("cpu")
        self.weights_sha256 = "null-encoder"

    def launch(self, windows: np.ndarray) -> Later:
        return Later(0.0, len(windows))

    def __call__(self, windows: np.ndarray) -> np.ndarray:  # an older checkout calls this
        return self.launch(windows).result()


class DeviceLikeEncoder(NullEncoder):
    """A stand-in for a fast GPU, measurable on any machine: each batch takes len / `rate`
    seconds of a device that works off the host's CPU, after the batches queued before it;
    launching returns at once and the host waits only for a result, as with CUDA. The share
    of the run the device is busy is how well embed feeds a GPU of that speed."""

    rate = 3000.0
    busy_until = 0.0

    def launch(self, windows: np.ndarray) -> Later:
        cls = DeviceLikeEncoder
        cls.busy_until = max(time.perf_counter(), cls.busy_until) + len(windows) / cls.rate
        return Later(cls.busy_until, len(windows))


def settings_for(batch_size: int, workers: int, readers: str | None) -> EmbedSettings:
    # from the environment: EMBEDPROBE_HEAP_RELEASE_S=off compares embed without the release
    settings = EmbedSettings.from_environment(batch_size=batch_size, reader_threads=workers)
    settings.reader_kind = readers  # (an older checkout has no kinds: the bench still runs)
    return settings


def embed_once(config: dict, roots: dict, index: Path, model_id: str, settings: EmbedSettings,
               encoder_class, profile: str | None = None) -> tuple[float, dict]:
    """(wall seconds of run_embed from an empty cache, its report of timings)."""
    output = Path(roots["cache_root"]) / "embeddings" / DATASET / f"{model_id}.h5"
    output.unlink(missing_ok=True)  # a finished cache would be reused, not recomputed
    report: dict = {}
    extra = {"report": report} if "report" in inspect.signature(run_embed).parameters else {}
    profiler = cProfile.Profile() if profile else None
    embed_step.Encoder = encoder_class
    try:
        began, cpu = time.perf_counter(), time.process_time()
        if profiler:
            profiler.enable()
        run_embed(DatasetContext.build(config, roots, DATASET), model_id, index, output,
                  settings, **extra)
        wall = time.perf_counter() - began
        report["main_cpu_s"] = time.process_time() - cpu
    finally:
        embed_step.Encoder = Encoder
        if profiler:
            profiler.disable()
            profiler.dump_stats(f"{profile}.{model_id}")
    return wall, report


def time_forward(encoder: Encoder, n_windows: int, batch: int, shape: tuple[int, int],
                 seed: int) -> float:
    """Encoder.__call__ over n_windows random windows in batches; inputs made before timing."""
    rng = np.random.default_rng(seed)
    sizes = [min(batch, n_windows - i) for i in range(0, n_windows, batch)]
    inputs = [rng.standard_normal((size, *shape), dtype=np.float32) for size in sizes]
    encoder(inputs[0][:1])  # warm-up, as run_embed's width probe is
    began = time.perf_counter()
    for x in inputs:
        encoder(x)
    return time.perf_counter() - began


def bench_model(config: dict, roots: dict, index: Path, model_id: str, args) -> Row:
    spec = model_spec(config, model_id, DATASET)
    plan = channel_plan(config, DATASET, spec.family)
    n_windows = len(read_index(index))
    epoch_samples = int(round(config["datasets"][DATASET]["epoch_seconds"] * spec.sfreq))
    shape = (len(plan.model_names), epoch_samples)  # every model input: BIOT's 16 slots
    encoder = Encoder(spec, plan.model_names, roots, device=args.device)
    settings = settings_for(args.batch_size, args.reader_threads, args.readers)
    forwards = [time_forward(encoder, n_windows, args.batch_size, shape, seed=0)]
    embeds = []
    for repeat in range(args.repeats):
        TimedEncoder.seconds = 0.0
        wall, _ = embed_once(config, roots, index, model_id, settings, TimedEncoder,
                             args.profile if repeat == 0 else None)
        embeds.append((wall, TimedEncoder.seconds))
        forwards.append(time_forward(encoder, n_windows, args.batch_size, shape, seed=repeat + 1))
    embed_s, inside_s = min(embeds)
    return Row(model_id, n_windows, args.batch_size, embed_s, min(forwards), inside_s)


def bench_ceiling(config: dict, roots: dict, index: Path, model_id: str, args
                  ) -> list[CeilingRow]:
    """The null encoder's run at each worker count, fastest of `repeats` (a first run warms
    the page cache and starts the readers' server). The worker counts take turns (1, 2, 1,
    2, ...): a busy spell on a shared machine then falls on all of them alike, not on the
    repeats of one."""
    readers = args.readers or ("processes" if args.device == "cuda" else "threads")
    readers = args.ceiling_readers or readers
    embed_once(config, roots, index, model_id, settings_for(args.ceiling_batch_size, 1, readers),
               NullEncoder)
    runs: dict[int, list] = {workers: [] for workers in args.ceiling_workers}
    for _ in range(args.repeats):
        for workers in args.ceiling_workers:
            settings = settings_for(args.ceiling_batch_size, workers, readers)
            runs[workers].append(embed_once(config, roots, index, model_id, settings,
                                            NullEncoder))
    rows = []
    for workers in args.ceiling_workers:
        wall, report = min(runs[workers], key=lambda run: run[0])
        # an older checkout reports nothing: it only had reader threads
        rows.append(CeilingRow(model_id, report.get("readers", "threads"), workers,
                               len(read_index(index)), wall, report.get("reader_cpu_s", 0.0),
                               report.get("first_batch_s", float("nan")),
                               report["main_cpu_s"], report.get("finish_s", float("nan"))))
    return rows


@dataclass
class FeedRow:
    rate: float  # the device's windows/s
    workers: int
    windows: int
    seconds: float
    setup_s: float
    finish_s: float

    @property
    def device_s(self) -> float:
        return self.windows / self.rate

    @property
    def busy(self) -> float:
        """The share of the run the device computes: 1.0 when the CPU side never holds it up."""
        return self.device_s / self.seconds


def bench_feed(config: dict, roots: dict, index: Path, model_id: str, args) -> list[FeedRow]:
    """The device-like encoder at each rate, fastest of `repeats` after a warm-up run."""
    workers = max(args.ceiling_workers)
    settings = settings_for(args.ceiling_batch_size, workers, args.ceiling_readers)
    n_windows = len(read_index(index))
    rows = []
    for position, rate in enumerate(args.feed_rates):
        DeviceLikeEncoder.rate = rate
        runs = [embed_once(config, roots, index, model_id, settings, DeviceLikeEncoder)
                for _ in range(args.repeats + (position == 0))]
        wall, report = min(runs, key=lambda run: run[0])
        rows.append(FeedRow(rate, workers, n_windows, wall, report.get("setup_s", float("nan")),
                            report.get("finish_s", float("nan"))))
    return rows


def format_feed(rows: list[FeedRow]) -> str:
    head = (f"{'device win/s':>12} {'workers':>7} {'windows':>7} {'device s':>8} "
            f"{'embed s':>7} {'busy':>5} {'setup s':>7} {'finish s':>8}")
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(f"{r.rate:>12.0f} {r.workers:>7} {r.windows:>7} {r.device_s:>8.2f} "
                     f"{r.seconds:>7.2f} {r.busy:>5.2f} {r.setup_s:>7.2f} {r.finish_s:>8.2f}")
    return "\n".join(lines)


def format_table(rows: list[Row]) -> str:
    head = (f"{'model':<16} {'windows':>7} {'batch':>5} {'embed s':>8} {'embed win/s':>11} "
            f"{'forward s':>9} {'forward win/s':>13} {'ratio':>6} {'in-embed fwd':>12} "
            f"{'fwd share':>9}")
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(
            f"{r.model:<16} {r.windows:>7} {r.batch:>5} {r.embed_s:>8.1f} "
            f"{r.windows / r.embed_s:>11.1f} {r.forward_s:>9.1f} "
            f"{r.windows / r.forward_s:>13.1f} {r.ratio:>6.2f} {r.in_embed_forward_s:>12.1f} "
            f"{r.forward_share:>9.2f}"
        )
    return "\n".join(lines)


def format_ceiling(rows: list[CeilingRow]) -> str:
    head = (f"{'model':<16} {'readers':<9} {'workers':>7} {'windows':>7} {'seconds':>7} "
            f"{'win/s':>7} {'win/s/worker':>12} {'x 1 worker':>10} {'main CPU-s':>10} "
            f"{'win/CPU-s':>9} {'readers':>7} {'1st batch s':>11} {'finish s':>8}")
    lines = [head, "-" * len(head)]
    for r in rows:
        one = next((o for o in rows if o.model == r.model and o.workers == 1), None)
        speedup = f"{r.rate / one.rate:>10.2f}" if one else f"{'-':>10}"
        lines.append(
            f"{r.model:<16} {r.readers:<9} {r.workers:>7} {r.windows:>7} {r.seconds:>7.2f} "
            f"{r.rate:>7.0f} {r.per_worker:>12.0f} {speedup} {r.main_cpu_s:>10.2f} "
            f"{r.per_cpu_second_all:>9.0f} {r.per_cpu_second:>7.0f} {r.first_batch_s:>11.2f} "
            f"{r.finish_s:>8.2f}")
    return "\n".join(lines)


def ceiling_verdict(rows: list[CeilingRow]) -> bool:
    ok = True
    for model in dict.fromkeys(r.model for r in rows):
        by_workers = {r.workers: r for r in rows if r.model == model}
        if 1 in by_workers:
            ok &= by_workers[1].per_worker >= CEILING_PER_WORKER
        if 1 in by_workers and 2 in by_workers:
            ok &= by_workers[2].rate / by_workers[1].rate >= CEILING_SCALING
    return ok


# A fresh interpreter's embed: seconds from its start to the first batch, as JSON.
STARTUP_CHILD = """
import time
began = time.perf_counter()
import json, sys
from pathlib import Path
from embedprobe.pipeline.context import DatasetContext
from embedprobe.pipeline.embed import EmbedSettings, run_embed
config, roots, index, model, out, batch = json.loads(sys.argv[1])
report = {}
imported = time.perf_counter() - began
settings = EmbedSettings.from_environment(batch_size=batch, reader_threads=1,
                                          reader_kind="threads")
run_embed(DatasetContext.build(config, roots, "sleep_edf_demo"), model, Path(index), Path(out),
          settings, report)
print(json.dumps({"first_batch_s": imported + report["first_batch_s"]}))
"""


@dataclass
class StartupRow:
    model: str
    early_s: float  # readers started before the model is built
    late_s: float  # after it

    @property
    def gain(self) -> float:
        return self.late_s - self.early_s


def startup_once(config: dict, roots: dict, index: Path, model_id: str, batch: int,
                 early: bool, out: Path) -> float:
    import subprocess

    out.unlink(missing_ok=True)  # a fresh run: the early readers start only then
    env = dict(os.environ, EMBEDPROBE_EARLY_READERS="on" if early else "off")
    child = json.dumps([config, roots, str(index), model_id, str(out), batch])
    done = subprocess.run([sys.executable, "-c", STARTUP_CHILD, child], capture_output=True,
                          text=True, env=env, check=True)
    return json.loads(done.stdout.splitlines()[-1])["first_batch_s"]


def startup_rows(config: dict, workdir: Path, args) -> list[StartupRow]:
    roots, index = indexed_demo(config, workdir, args.subjects, args.nights, args.hours)
    rows = []
    for model_id in args.models:
        best = {True: float("inf"), False: float("inf")}
        for _ in range(args.repeats):
            for early in (True, False):  # alternating: both see the same load
                seconds = startup_once(config, roots, index, model_id, args.batch_size, early,
                                       workdir / "startup.h5")
                best[early] = min(best[early], seconds)
        rows.append(StartupRow(model_id, best[True], best[False]))
    return rows


def format_startup(rows: list[StartupRow]) -> str:
    lines = [f"{'model':<16} {'early first batch s':>20} {'late first batch s':>19} "
             f"{'gain s':>7}"]
    lines += [f"{r.model:<16} {r.early_s:>20.2f} {r.late_s:>19.2f} {r.gain:>7.2f}"
              for r in rows]
    return "\n".join(lines)


def make_demo(workdir: Path, config: dict, subjects: int, nights: int, hours: float) -> dict:
    """A generated demo and its roots under `workdir` (kept there for the same size)."""
    roots = {name: str(workdir / name.removesuffix("_root"))
             for name in ("data_root", "cache_root", "results_root", "weights_root")}
    entry = config["datasets"][DATASET]
    folder = Path(roots["data_root"]) / entry["path"]
    entry["expected_recordings"] = subjects * nights
    stamp = folder / "BENCH_SIZE"
    size = f"{subjects} {nights} {hours}"
    if not (stamp.is_file() and stamp.read_text() == size):  # --workdir keeps a demo
        generate(folder, n_subjects=subjects, nights=nights, hours=hours, seed=0)
        stamp.write_text(size)
    return roots


def indexed_demo(config: dict, workdir: Path, subjects: int, nights: int, hours: float
                 ) -> tuple[dict, Path]:
    """A demo of that size under `workdir` (one per size: the tables share one when equal)."""
    workdir = workdir / f"demo_{subjects}x{nights}x{hours:g}h"
    roots = make_demo(workdir, config, subjects, nights, hours)
    index = workdir / "index.tsv"
    stamp = Path(roots["data_root"]) / config["datasets"][DATASET]["path"] / "BENCH_SIZE"
    if not index.is_file() or index.stat().st_mtime < stamp.stat().st_mtime:
        write_index(build_index(DatasetContext.build(config, roots, DATASET)), index)
    return roots, index


def ceiling_demo(config: dict, workdir: Path, args) -> tuple[dict, dict, Path]:
    """The ceiling's and the feed table's demo: (its own config, roots, index)."""
    config = json.loads(json.dumps(config))  # its own demo size
    roots, index = indexed_demo(config, workdir, args.ceiling_subjects, args.nights,
                                args.ceiling_hours)
    return config, roots, index


def ceiling_rows(config: dict, workdir: Path, args) -> list[CeilingRow]:
    config, roots, index = ceiling_demo(config, workdir, args)
    return [row for model_id in args.models
            for row in bench_ceiling(config, roots, index, model_id, args)]


def feed_rows(config: dict, workdir: Path, args) -> list[FeedRow]:
    config, roots, index = ceiling_demo(config, workdir, args)
    return bench_feed(config, roots, index, args.models[0], args)


def forward_rows(config: dict, workdir: Path, args) -> list[Row]:
    roots, index = indexed_demo(config, workdir, args.subjects, args.nights, args.hours)
    return [bench_model(config, roots, index, model_id, args) for model_id in args.models]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", nargs="+", default=["biot_random", "cbramod_random"])
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                   help="where the encoder runs (cuda: defaults sized for a GPU node)")
    p.add_argument("--subjects", type=int)
    p.add_argument("--nights", type=int, choices=(1, 2))
    p.add_argument("--hours", type=float, help="sleep period per night")
    p.add_argument("--batch-size", type=int)
    p.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)),
                   help="torch threads (default: the CPUs this process may use)")
    p.add_argument("--reader-threads", type=int,
                   help="reader workers of the embed runs (default 2; cuda: the CPUs less 2)")
    p.add_argument("--readers", choices=("threads", "processes"),
                   help="reader kind (default: processes on cuda, threads on cpu)")
    p.add_argument("--ceiling-workers", type=int, nargs="+",
                   help="worker counts of the ceiling table (default 1 2; cuda: 1 2 4 8 ...)")
    p.add_argument("--ceiling-subjects", type=int, help="the ceiling demo's subjects")
    p.add_argument("--ceiling-hours", type=float, help="the ceiling demo's sleep per night")
    p.add_argument("--ceiling-batch-size", type=int, help="the ceiling's batch (default 256)")
    p.add_argument("--ceiling-readers", choices=("threads", "processes"),
                   help="reader kind of the ceiling table (default: processes, the GPU path)")
    p.add_argument("--feed-rates", type=float, nargs="+",
                   help="windows/s of the device-like encoder's table (default 3000 5000, "
                        "below two workers' ceiling on 2 cores; cuda: 10000 20000 30000; "
                        "--skip-ceiling leaves it out)")
    p.add_argument("--repeats", type=int, default=2,
                   help="runs per measurement, the fastest counts (forward runs: one more)")
    skip = p.add_mutually_exclusive_group()
    skip.add_argument("--skip-ceiling", action="store_true", help="only the forward table")
    skip.add_argument("--skip-forward", action="store_true", help="only the ceiling table")
    p.add_argument("--startup", action="store_true",
                   help="only the start-up table: readers started early or late, in fresh "
                        "interpreters")
    p.add_argument("--workdir", type=Path, help="keep the demo and caches here")
    p.add_argument("--profile", help="write cProfile stats of the first embed to PATH.MODEL")
    return p


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The arguments, with the device's defaults filled in."""
    args = parser().parse_args(argv)
    defaults = CUDA_DEFAULTS if args.device == "cuda" else CPU_DEFAULTS
    for name, value in defaults.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    cpus = len(os.sched_getaffinity(0))
    if args.reader_threads is None:
        args.reader_threads = max(1, cpus - 2) if args.device == "cuda" else 2
    if args.ceiling_workers is None:
        counts = [1, 2, 4, 8, max(1, cpus - 2)] if args.device == "cuda" else [1, 2]
        args.ceiling_workers = sorted({c for c in counts if c <= max(cpus, 2)})
    args.ceiling_readers = args.ceiling_readers or "processes"
    if args.feed_rates is None:
        args.feed_rates = FEED_RATES[args.device]
    if args.skip_ceiling:
        args.feed_rates = []
    return args


def require_device(device: str) -> None:
    """Refuse --device cuda where torch sees no GPU, with what to do."""
    if device == "cuda" and not torch.cuda.is_available():
        build = torch.version.cuda or "none (a CPU build)"
        raise DeviceError(
            f"--device cuda, but torch {torch.__version__} sees no CUDA device "
            f"(its CUDA: {build})",
            fix="run it on a GPU node with a CUDA build of torch (scripts/install.sh --cuda "
                "cu126), or leave out --device for the CPU table")


def run(args: argparse.Namespace) -> int:
    """The tables `args` ask for, printed; 0 when every target is met, 1 when one is not."""
    try:
        require_device(args.device)
    except EmbedprobeError as exc:
        print(exc.render(), file=sys.stderr)
        return exc.exit_code
    torch.set_num_threads(args.threads)
    config = load_config()
    config["embed"]["device"] = args.device
    with tempfile.TemporaryDirectory(prefix="bench_embed_") as tmp:
        workdir = args.workdir or Path(tmp)
        try:
            load_before = os.getloadavg()
            startup = startup_rows(config, workdir, args) if args.startup else []
            others = not args.startup  # --startup: that table alone
            ceiling = ceiling_rows(config, workdir, args) if others and not args.skip_ceiling \
                else []
            feed = feed_rows(config, workdir, args) if others and args.feed_rates else []
            rows = forward_rows(config, workdir, args) if others and not args.skip_forward \
                else []
            load_after = os.getloadavg()
        except EmbedprobeError as exc:
            print(exc.render(), file=sys.stderr)
            return exc.exit_code
    ok = True
    if ceiling:
        print("pipeline ceiling (null encoder)")
        print(format_ceiling(ceiling))
        ok &= ceiling_verdict(ceiling)
    if feed:
        print(f"\nfeeding a device-like encoder ({args.models[0]} windows, batch "
              f"{args.ceiling_batch_size}): the share of the run it is busy")
        print(format_feed(feed))
    if rows:
        print(("\n" if ceiling or feed else "") + f"embed against forward ({args.device})")
        print(format_table(rows))
        ok &= all(r.ratio >= TARGETS[args.device] for r in rows)
    if startup:
        print("\nstart-up: a fresh interpreter to its first batch, one reader thread")
        print(format_startup(startup))
    print(f"device {args.device}, torch threads {args.threads}, reader workers "
          f"{args.reader_threads} ({args.readers or 'by device'}), {os.cpu_count()} CPUs, "
          f"{args.subjects} subjects x {args.nights} nights x {args.hours:g} h (ceiling: "
          f"{args.ceiling_subjects} subjects x {args.ceiling_hours:g} h, batch "
          f"{args.ceiling_batch_size}), batch "
          f"{args.batch_size}, best of {args.repeats}; load average before {load_before[0]:.2f}, "
          f"after {load_after[0]:.2f}; targets: ceiling >= {CEILING_PER_WORKER:,} win/s per "
          f"worker and >= {CEILING_SCALING}x from 1 to 2 workers, embed/forward >= "
          f"{TARGETS[args.device]}")
    return 0 if ok else 1

