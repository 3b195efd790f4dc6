"""Memory a process uses on the GPU: the caching allocator's peaks per batch size, what the
driver says a process holds (NVML, else nvidia-smi), and the CUDA context beside the allocator.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass

from embedprobe.core.units import MIB


@dataclass
class GpuPeaks:
    """The allocator's peaks per batch size: allocated (tensors) and reserved (what the
    caching allocator holds from the driver, rounding and free blocks included)."""

    allocated: dict[int, int]
    reserved: dict[int, int]


def gpu_batch_peaks(run_batch: Callable[[int], object], batch_sizes: list[int],
                    device) -> GpuPeaks:
    """Allocator peaks of `run_batch(b)` for each batch size b on a CUDA device.

    Each is taken after empty_cache and reset_peak_memory_stats, with everything else the
    process keeps on the device (weights, buffers) included; the CUDA context is not in it.
    """
    import torch

    allocated, reserved = {}, {}
    for batch_size in batch_sizes:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)
        run_batch(batch_size)
        torch.cuda.synchronize(device)
        allocated[int(batch_size)] = int(torch.cuda.max_memory_allocated(device))
        reserved[int(batch_size)] = int(torch.cuda.max_memory_reserved(device))
    return GpuPeaks(allocated, reserved)


class GpuMemoryUnavailable(RuntimeError):
    """Neither NVML (nvidia-ml-py) nor nvidia-smi could say what a process uses on the GPU."""


def parse_compute_apps(text: str) -> dict[int, int]:
    """pid -> bytes from `nvidia-smi --query-compute-apps=pid,used_memory
    --format=csv,noheader,nounits` (MiB per line; "[N/A]" where the driver cannot tell)."""
    used: dict[int, int] = {}
    for line in text.splitlines():
        parts = [part.strip() for part in line.split(",")]
        if len(parts) != 2 or not parts[0].isdigit() or not parts[1].isdigit():
            continue
        used[int(parts[0])] = used.get(int(parts[0]), 0) + int(parts[1]) * MIB
    return used


def _nvml_process_memory(device_index: int) -> dict[int, int]:
    try:
        import pynvml  # nvidia-ml-py
    except ImportError as exc:
        raise GpuMemoryUnavailable("nvidia-ml-py (pynvml) is not installed") from exc
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        raise GpuMemoryUnavailable(f"NVML does not start: {exc}") from exc
    try:
        handle = pynvml.nvmlDeviceGetHandleByIndex(device_index)
        return {p.pid: int(p.usedGpuMemory or 0)
                for p in pynvml.nvmlDeviceGetComputeRunningProcesses(handle)}
    finally:
        pynvml.nvmlShutdown()


def gpu_process_memory(pid: int | None = None, device_index: int = 0) -> int:
    """Bytes process `pid` (default: this one) uses on the GPU, context included: NVML, else
    nvidia-smi. Raises GpuMemoryUnavailable, naming both, when neither can tell."""
    pid = os.getpid() if pid is None else pid
    reasons = []
    try:
        used = _nvml_process_memory(device_index)
    except GpuMemoryUnavailable as exc:
        reasons.append(f"NVML: {exc}")
        used = {}
    if pid not in used and shutil.which("nvidia-smi"):
        try:
            out = subprocess.run(
                ["nvidia-smi", f"--id={device_index}", "--query-compute-apps=pid,used_memory",
                 "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=30)
            used = parse_compute_apps(out.stdout)
        except (OSError, subprocess.SubprocessError) as exc:
            reasons.append(f"nvidia-smi: {exc}")
    elif pid not in used:
        reasons.append("nvidia-smi: not on PATH")
    if pid not in used:
        reasons.append(f"no entry for process {pid} (a container's own pid namespace hides it)")
        raise GpuMemoryUnavailable("; ".join(reasons))
    return used[pid]


def parse_gpu_used(text: str) -> list[int]:
    """Bytes used per GPU from `nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits`
    (MiB, one line per GPU)."""
    return [int(line.strip()) * MIB for line in text.splitlines() if line.strip().isdigit()]


def gpu_device_used(device_index: int = 0) -> int:
    """Bytes in use on the whole GPU (every process): NVML, else nvidia-smi."""
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            handle = pynvml.nvmlDeviceGetHandleByIndex(device_index)
            return int(pynvml.nvmlDeviceGetMemoryInfo(handle).used)
        finally:
            pynvml.nvmlShutdown()
    except Exception as exc:  # no module, no driver: try nvidia-smi
        reason = f"NVML: {exc}"
    if shutil.which("nvidia-smi") is None:
        raise GpuMemoryUnavailable(f"{reason}; nvidia-smi: not on PATH")
    out = subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                         capture_output=True, text=True, timeout=30).stdout
    used = parse_gpu_used(out)
    if len(used) <= device_index:
        raise GpuMemoryUnavailable(f"{reason}; nvidia-smi listed {len(used)} GPUs")
    return used[device_index]


def cuda_context_bytes(device) -> int:
    """The CUDA context of this process: what the driver says it uses on the GPU minus what
    the caching allocator reserved. torch.cuda.mem_get_info differences miss it: the context
    exists before the first reading (FACTS.md: 168 MB read against 719 MB used)."""
    import torch

    torch.cuda.synchronize(device)
    index = torch.device(device).index or 0
    return max(0, gpu_process_memory(device_index=index) - int(torch.cuda.memory_reserved(device)))
