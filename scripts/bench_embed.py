#!/usr/bin/env python3
"""Throughput of the full embed step against the model's pure forward pass, in the same run.

On a generated Sleep-EDF demo, for each model: `run_embed` end to end (index read, model build,
EDF reading, resampling, cutting, scaling, forward, HDF5 append, finish) against the encoder alone
(`Encoder.__call__`) on random float32 windows of the same shape, count and batch size.

The two alternate (forward, embed, forward, ... forward) and each side keeps its fastest run:
on a CPU shared with other jobs, the least disturbed run is the best estimate of what the code
costs. `in-embed fwd` is the time the embed step itself spent inside the encoder, so
`fwd share` (= in-embed fwd / embed s) is the pipeline's efficiency measured within one run,
free of run-to-run noise: what the rest (reading, preprocessing, writing) costs on top.
Target: embed / forward throughput >= 0.9.

Usage: python scripts/bench_embed.py [--models biot_random cbramod_random] [--subjects 4]
           [--nights 1] [--hours 0.5] [--batch-size 32] [--threads 2] [--reader-threads 2]
           [--repeats 2] [--workdir DIR] [--profile OUT.prof]
"""

from __future__ import annotations

import argparse
import cProfile
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

try:
    import embedprobe  # noqa: F401
except ImportError:  # run from a checkout without installing the package
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow"))

import numpy as np
import torch

import embedprobe.embed as embed_step
from embedprobe.channel_maps import channel_plan
from embedprobe.config import load_config
from embedprobe.demo_data import generate
from embedprobe.embed import EmbedSettings, run_embed
from embedprobe.errors import EmbedprobeError
from embedprobe.models.encoder import Encoder
from embedprobe.models.registry import model_spec
from embedprobe.windows import build_index, read_index, write_index

DATASET = "sleep_edf_demo"
TARGET = 0.9


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


class TimedEncoder(Encoder):
    """An Encoder that adds up the seconds spent in its calls (run_embed builds one)."""

    seconds = 0.0

    def __call__(self, windows: np.ndarray) -> np.ndarray:
        began = time.perf_counter()
        try:
            return super().__call__(windows)
        finally:
            TimedEncoder.seconds += time.perf_counter() - began


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


def time_embed(config: dict, roots: dict, index: Path, model_id: str, settings: EmbedSettings,
               profile: str | None) -> tuple[float, float]:
    """(wall seconds of run_embed, seconds of it inside the encoder), from an empty cache."""
    output = Path(roots["cache_root"]) / "embeddings" / DATASET / f"{model_id}.h5"
    output.unlink(missing_ok=True)  # a finished cache would be reused, not recomputed
    profiler = cProfile.Profile() if profile else None
    TimedEncoder.seconds = 0.0
    embed_step.Encoder = TimedEncoder
    try:
        began = time.perf_counter()
        if profiler:
            profiler.enable()
        run_embed(config, roots, DATASET, model_id, index, output, settings)
        wall = time.perf_counter() - began
    finally:
        embed_step.Encoder = Encoder
        if profiler:
            profiler.disable()
            profiler.dump_stats(f"{profile}.{model_id}")
    return wall, TimedEncoder.seconds


def bench_model(config: dict, roots: dict, index: Path, model_id: str, args) -> Row:
    spec = model_spec(config, model_id)
    plan = channel_plan(config, DATASET, spec.family)
    n_windows = len(read_index(index))
    epoch_samples = int(round(config["datasets"][DATASET]["epoch_seconds"] * spec.sfreq))
    shape = (len(plan.recorded), epoch_samples)
    encoder = Encoder(spec, plan.model_names, roots)
    settings = EmbedSettings(batch_size=args.batch_size, reader_threads=args.reader_threads)
    forwards = [time_forward(encoder, n_windows, args.batch_size, shape, seed=0)]
    embeds = []
    for repeat in range(args.repeats):
        embeds.append(time_embed(config, roots, index, model_id, settings,
                                 args.profile if repeat == 0 else None))
        forwards.append(time_forward(encoder, n_windows, args.batch_size, shape, seed=repeat + 1))
    embed_s, inside_s = min(embeds)
    return Row(model_id, n_windows, args.batch_size, embed_s, min(forwards), inside_s)


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


def make_demo(workdir: Path, config: dict, subjects: int, nights: int, hours: float) -> dict:
    roots = {name: str(workdir / name.removesuffix("_root"))
             for name in ("data_root", "cache_root", "results_root", "weights_root")}
    entry = config["datasets"][DATASET]
    generate(Path(roots["data_root"]) / entry["path"], n_subjects=subjects, nights=nights,
             hours=hours, seed=0)
    entry["expected_recordings"] = subjects * nights
    return roots


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["biot_random", "cbramod_random"])
    parser.add_argument("--subjects", type=int, default=4)
    parser.add_argument("--nights", type=int, default=1, choices=(1, 2))
    parser.add_argument("--hours", type=float, default=0.5, help="sleep period per night")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)),
                        help="torch threads (default: the CPUs this process may use)")
    parser.add_argument("--reader-threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2,
                        help="embed runs per model (forward runs: one more)")
    parser.add_argument("--workdir", type=Path, help="keep the demo and caches here")
    parser.add_argument("--profile", help="write cProfile stats of the first embed to PATH.MODEL")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    config = load_config()
    with tempfile.TemporaryDirectory(prefix="bench_embed_") as tmp:
        workdir = args.workdir or Path(tmp)
        try:
            roots = make_demo(workdir, config, args.subjects, args.nights, args.hours)
            index = workdir / "index.tsv"
            write_index(build_index(config, roots, DATASET), index)
            load_before = os.getloadavg()
            rows = [bench_model(config, roots, index, model_id, args) for model_id in args.models]
            load_after = os.getloadavg()
        except EmbedprobeError as exc:
            print(exc.render(), file=sys.stderr)
            return exc.exit_code
    print(format_table(rows))
    print(f"threads {args.threads}, reader threads {args.reader_threads}, {os.cpu_count()} CPUs, "
          f"best of {args.repeats} embed / {args.repeats + 1} forward runs; load average "
          f"before {load_before[0]:.2f}, after {load_after[0]:.2f}; target ratio >= {TARGET}")
    return 0 if all(r.ratio >= TARGET for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
