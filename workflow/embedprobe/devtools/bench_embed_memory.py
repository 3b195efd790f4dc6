"""Run-to-run spread of one embed job's peak memory and time under glibc malloc settings.

The same `embedprobe embed` job (the calibration's real workload: a generated demo of 2 subjects
x 2 nights, check, preflight, embed from scratch; embedprobe.devtools.workloads) runs
`--repeats` times in each mode, the modes interleaved, each run in its own child process
measured by the kernel (ru_maxrss via peaks.run_measured). "one arena" is what every
embedprobe step does (allocator.py); "glibc default" sets MALLOC_ARENA_MAX=8, which the step
leaves alone: more arenas than the job has threads, so every thread may get its own, as with
glibc's own limit (8 per core). "fixed mmap threshold" is one arena with glibc's
MALLOC_MMAP_THRESHOLD_ at its starting 128 KiB: glibc otherwise raises the threshold to each
mapped block freed, so after the first batch the model's tensors come from the heap, which keeps
them resident and fragments; fixed, every large tensor is mapped and unmapped (the peak follows
what is live, each batch pays the page faults: why the steps do not set it). "mmap threshold
16 MiB" and "32 MiB" fix it higher (32 MiB is glibc's most, where the raised threshold stops):
only blocks that large are mapped. Every mode but the last two keeps embed's own release of the
freed heap after each batch of 0.5 s or more (measure/allocator.FreedHeapRelease); "no heap
release" turns it off, "heap release each batch" releases after every batch, however short
(`--modes` picks; the default runs the first three). scripts/bench_embed_memory.py runs it.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

from embedprobe.core.units import MIB
from embedprobe.devtools import workloads
from embedprobe.measure.peaks import run_measured

MODES = {"one arena": {}, "glibc default": {"MALLOC_ARENA_MAX": "8"},
         "fixed mmap threshold": {"MALLOC_MMAP_THRESHOLD_": "131072"},
         "mmap threshold 16 MiB": {"MALLOC_MMAP_THRESHOLD_": str(16 << 20)},
         "mmap threshold 32 MiB": {"MALLOC_MMAP_THRESHOLD_": str(32 << 20)},
         "no heap release": {"EMBEDPROBE_HEAP_RELEASE_S": "off"},
         "heap release each batch": {"EMBEDPROBE_HEAP_RELEASE_S": "0"}}


def run(args) -> int:
    """`args.repeats` runs of `args.model`'s embed job on nights of `args.hours` in each of
    `args.modes`, interleaved; the table printed. 1 when a run fails."""
    with tempfile.TemporaryDirectory(prefix="embed_memory_") as tmp:
        demo = workloads.demo_set(Path(tmp), args.hours)
        check, _ = workloads.run_check(demo, args.model)
        estimate_path = demo.folder / "preflight.json"
        record = workloads.preflight(demo, {**demo.config, "benchmarks": {}}, args.model, check,
                                     estimate_path)
        peaks: dict[str, list[float]] = {mode: [] for mode in args.modes}
        seconds: dict[str, list[float]] = {mode: [] for mode in args.modes}
        for _ in range(args.repeats):
            for mode in args.modes:
                extra = MODES[mode]
                argv = workloads.embed_argv(demo, args.model, estimate_path, demo.folder / "out.h5")
                started = time.monotonic()
                run = run_measured(argv, timeout=workloads.CHILD_TIMEOUT_S, stdout=-1,
                                   stderr=-1, text=True, env={**workloads.job_env(), **extra})
                if not run.ok:
                    print(run.stderr[-2000:], file=sys.stderr)
                    return 1
                peaks[mode].append(run.peak_bytes / MIB)
                seconds[mode].append(time.monotonic() - started)
    estimate = record["jobs"]["embed"]
    print(f"{args.model}, {demo.n_windows} windows ({args.hours:g} h nights), estimate "
          f"{estimate['total'] / MIB:.0f} MB, request {estimate['request_mb']} MB")
    print(f"{'mode':<20} {'runs':>4} {'min MB':>8} {'max MB':>8} {'spread':>7} {'mean s':>7}")
    for mode in args.modes:
        low, high = min(peaks[mode]), max(peaks[mode])
        print(f"{mode:<20} {len(peaks[mode]):>4} {low:>8.0f} {high:>8.0f} "
              f"{(high - low) / low:>7.1%} {statistics.mean(seconds[mode]):>7.1f}")
    return 0

