"""One embed job's peak memory against the length of its recording, at one channel count
and rate: what the reader holds must not grow with the recording (docs/memory.md).

For each of `--hours` a generated Sleep-EDF night of that length (one subject, one night: 2
EEG channels at 100 Hz), its check and preflight, then the embed job from scratch in its own
process, measured by the kernel (ru_maxrss, peaks.run_measured), `--repeats` times (the
largest counts: the peak a request must cover). With `--null-model` (what a loaded 2-core
machine can run: BIOT's forward of a 14-h night took over 15 minutes at load 16) that job is
`run_embed` with bench_embed's null encoder: the readers, batching and the store as embed
runs them, without the model's weights and activations (a fixed amount whatever the
length). BIOT (the default) normalises by its recording's 95th percentile, the statistic
streamed in part-sized stretches
(pipeline/streamed_statistics.py). `--code DIR` runs the embed jobs with another checkout's
package (its `workflow` folder) to compare, the estimate still this one's.
scripts/bench_recording_length.py runs it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from embedprobe.core.units import MIB
from embedprobe.devtools import workloads
from embedprobe.measure.peaks import run_measured


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="biot_random")
    p.add_argument("--hours", type=float, nargs="+", default=[1 / 6, 4.0, 12.0],
                   help="sleep per night of each recording (the file adds its wake)")
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--nights", type=int, default=1,
                   help="recordings of that length (2: the second's statistic is computed "
                        "while the first's parts are in flight)")
    p.add_argument("--code", type=Path, help="another checkout's `workflow` folder: its embed")
    p.add_argument("--workdir", type=Path, help="keep the generated nights here")
    p.add_argument("--null-model", action="store_true",
                   help="embed with a null encoder: the reading side's peak alone")
    return p


# The embed job with bench_embed's null encoder, in a child: (config, roots, dataset, model,
# index, out) as JSON.
NULL_EMBED_CHILD = """
import json, sys
from pathlib import Path
import embedprobe.pipeline.embed as embed_step
from embedprobe.devtools.bench_embed import NullEncoder
from embedprobe.pipeline.context import DatasetContext
config, roots, dataset, model, index, out = json.loads(sys.argv[1])
embed_step.Encoder = NullEncoder
settings = embed_step.EmbedSettings.from_environment(
    batch_size=config["embed"]["batch_size"], reader_threads=config["embed"]["reader_threads"])
embed_step.run_embed(DatasetContext.build(config, roots, dataset), model, Path(index),
                     Path(out), settings)
"""


def null_embed_argv(demo, model: str, out: Path) -> list[str]:
    out.unlink(missing_ok=True)
    return [sys.executable, "-c", NULL_EMBED_CHILD,
            json.dumps([demo.config, demo.roots, demo.dataset, model, str(demo.index),
                        str(out)])]


def measure_length(folder: Path, hours: float, model: str, repeats: int, code: Path | None,
                   null_model: bool, nights: int) -> dict:
    """(samples, windows, peak MB, estimate MB, statistic MB) of one recording's embed job."""
    demo = workloads.demo_set(folder, hours, subjects=1, nights=nights)
    check, _ = workloads.run_check(demo, model)
    estimate_path = demo.folder / "preflight.json"
    record = workloads.preflight(demo, {**demo.config, "benchmarks": {}}, model, check,
                                 estimate_path)
    embed = record["jobs"]["embed"]
    env = workloads.job_env()
    if code is not None:
        env["PYTHONPATH"] = str(code.resolve())
    peaks = []
    for _ in range(repeats):
        out = demo.folder / "out.h5"
        argv = (null_embed_argv(demo, model, out) if null_model
                else workloads.embed_argv(demo, model, estimate_path, out))
        run = run_measured(argv, timeout=workloads.CHILD_TIMEOUT_S, stdout=-1, stderr=-1,
                           text=True, env=env)
        if not run.ok:
            raise RuntimeError(f"embed of {hours:g} h failed:\n{(run.stderr or '')[-2000:]}")
        peaks.append(run.peak_bytes)
    inputs = embed["inputs"]
    return {"hours": hours, "windows": demo.n_windows, "samples": _recorded_samples(demo),
            "peak_mb": max(peaks) / MIB, "estimate_mb": embed["total"] / MIB,
            "statistic_mb": inputs.get("statistic_bytes", 0) / MIB}


def _recorded_samples(demo) -> int:
    from embedprobe.pipeline.context import DatasetContext

    context = DatasetContext.build(demo.config, demo.roots, demo.dataset)
    return max(context.reader.read_header(r).n_samples for r in context.recordings())


def format_rows(rows: list[dict]) -> str:
    head = (f"{'sleep h':>7} {'recorded h':>10} {'windows':>7} {'peak MB':>8} {'x shortest':>10} "
            f"{'estimate MB':>11} {'est/peak':>8} {'statistic MB':>12}")
    lines = [head, "-" * len(head)]
    first = rows[0]["peak_mb"]
    for r in rows:
        lines.append(f"{r['hours']:>7.2f} {r['samples'] / 100 / 3600:>10.2f} {r['windows']:>7} "
                     f"{r['peak_mb']:>8.0f} {r['peak_mb'] / first:>10.3f} "
                     f"{r['estimate_mb']:>11.0f} {r['estimate_mb'] / r['peak_mb']:>8.2f} "
                     f"{r['statistic_mb']:>12.1f}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """The table; 0 when the peak stays within 10% of the shortest recording's, else 1."""
    with tempfile.TemporaryDirectory(prefix="recording_length_") as tmp:
        workdir = args.workdir or Path(tmp)
        rows = [measure_length(workdir / f"{hours:g}h{args.nights}n", hours, args.model,
                               args.repeats, args.code, args.null_model, args.nights)
                for hours in args.hours]
    print(format_rows(rows))
    load = os.getloadavg()[0]
    model = f"{args.model} (null encoder)" if args.null_model else args.model
    print(f"{model}, {args.nights} recording(s) of 2 channels at 100 Hz each, embed from "
          f"scratch, largest "
          f"of {args.repeats}; embed code: {args.code or 'this checkout'}; load average "
          f"{load:.2f}", file=sys.stdout)
    flat = max(r["peak_mb"] for r in rows) <= 1.1 * rows[0]["peak_mb"]
    return 0 if flat else 1
