"""The GPU grid of `validate_memory.py --device cuda`: device and host, predicted vs measured.

4 models x 2 batch sizes x 2 night lengths of the generated demo (2 subjects x 2 nights). Per
model one `embedprobe check` on the GPU (at the larger batch: it measures the allocator's
peaks, the CUDA context of its process and this node's host baseline), then per batch size
and night length preflight (embed.device cuda) and the real `embedprobe embed` job in its own
child. Measured: the GPU's used memory (NVML, else nvidia-smi) sampled every 0.1 s while the
job runs, less what was in use before it started; the host peak is the child's ru_maxrss.
Sized to finish in a few minutes on one GPU (16 embed jobs, 4 checks).
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from embedprobe.core.units import MIB
from embedprobe.devtools import workloads
from embedprobe.measure.gpu import GpuMemoryUnavailable, gpu_device_used

MODELS = ("biot_random", "labram_random", "cbramod_random", "eegpt_random")
BATCH_SIZES = (64, 256)
HOURS = (0.5, 2.0)
SAMPLE_SECONDS = 0.1


class GpuUnavailable(SystemExit):
    pass


def require_gpu() -> int:
    """The GPU's used bytes now; exit 2 with the reason and a fix where there is none to read."""
    import torch

    if not torch.cuda.is_available():
        print("error: --device cuda needs an NVIDIA GPU that torch can use; none is visible\n"
              "fix: run it on a GPU node with a CUDA build of torch, or validate the CPU grid "
              "(leave out --device)", file=sys.stderr)
        raise GpuUnavailable(2)
    try:
        return gpu_device_used()
    except GpuMemoryUnavailable as exc:
        print(f"error: cannot read the GPU's memory: {exc}\n"
              "fix: pip install nvidia-ml-py (NVML), or put nvidia-smi on PATH", file=sys.stderr)
        raise GpuUnavailable(2) from exc


class DeviceSampler:
    """The GPU's used memory, sampled in a thread; `peak` above the level before start."""

    def __init__(self):
        self.before = gpu_device_used()
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_SECONDS):
            self.peak = max(self.peak, gpu_device_used() - self.before)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def cuda_config(config: dict, batch_size: int) -> dict:
    embed = {**config["embed"], "device": "cuda", "batch_size": batch_size}
    return {**config, "embed": embed, "benchmarks": {}}


def gpu_check(demo, model: str, batch_size: int) -> Path:
    path = demo.folder / "check_cuda" / f"{model}.json"
    if not path.is_file():
        argv = workloads.cli_argv(cuda_config(demo.config, batch_size), "check", "--dataset",
                                  workloads.DEMO_DATASET, "--model", model, "--out", path)
        done = subprocess.run(argv, env=workloads.job_env(), capture_output=True, text=True,
                              timeout=workloads.CHILD_TIMEOUT_S)
        if not path.is_file():
            raise RuntimeError(f"check {model} on cuda wrote nothing:\n{done.stderr[-3000:]}")
    return path


def error(predicted: float, measured: float) -> str:
    return f"{(predicted - measured) / measured:+.1%}" if measured else "-"


def gpu_grid(workdir: Path | None = None) -> int:
    require_gpu()
    started = time.monotonic()
    print("| model | batch | windows | device predicted MB | device request MB | device measured "
          "MB | device error | host predicted MB | host request MB | host measured MB | host "
          "error |")
    print("|" + "---|" * 11, flush=True)
    uncovered = 0
    with tempfile.TemporaryDirectory(prefix="validate_gpu_") as tmp:
        root = workdir or Path(tmp)
        for hours in HOURS:
            demo = workloads.demo_set(root / f"gpu_{hours:g}h", hours)
            for model in MODELS:
                check = gpu_check(demo, model, max(BATCH_SIZES))
                for batch in BATCH_SIZES:
                    config = cuda_config(demo.config, batch)
                    out = demo.folder / "preflight" / f"{model}_{batch}.json"
                    record = workloads.preflight(demo, config, model, check, out)
                    embed = record["jobs"]["embed"]
                    device = embed["device"]
                    argv = workloads.embed_argv(dataclasses.replace(demo, config=config),
                                                model, out, demo.folder / f"{model}.h5")
                    with DeviceSampler() as sampler:
                        run = workloads.measure(argv, f"embed {model} batch {batch}")
                    host_mb, device_mb = run.peak_bytes / MIB, sampler.peak / MIB
                    uncovered += (device["request_mb"] <= device_mb) + (
                        embed["request_mb"] <= host_mb)
                    print(f"| {model} | {embed['knobs']['batch_size']} | "
                          f"{demo.n_windows} | {device['total'] / MIB:,.0f} | "
                          f"{device['request_mb']:,} | {device_mb:,.0f} | "
                          f"{error(device['total'] / MIB, device_mb)} | "
                          f"{embed['total'] / MIB:,.0f} | {embed['request_mb']:,} | "
                          f"{host_mb:,.0f} | {error(embed['total'] / MIB, host_mb)} |",
                          flush=True)
    print(f"{'PASS' if not uncovered else 'FAIL'}: {uncovered} measured peaks above their "
          f"request; {time.monotonic() - started:.0f} s")
    return 0 if not uncovered else 1
