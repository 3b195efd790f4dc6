"""Memory that is really there and memory that was really used.

Limits: locally the smaller of host memory and the job's own cgroup limit (psutil reports the
host even inside a container or a SLURM job); on a cluster the largest memory the profile allows.
Peaks: the kernel's high-water marks (VmHWM of the own process, ru_maxrss of a child started from
a small launcher, cgroup `memory.peak`), never polling, which misses short spikes.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

MIB = 1 << 20
PROC_ROOT = Path("/proc")
CGROUP_ROOT = Path("/sys/fs/cgroup")

# cgroup v1 writes "no limit" as LONG_MAX rounded down to a page (9223372036854771712); anything
# this large is no limit at all.
_UNLIMITED_FLOOR = 1 << 60

# Highest peak seen before `measure_peak_growth` reset the process's high-water mark.
_peak_before_resets = 0


# ----------------------------------------------------------------------------------- limits


def _own_cgroups(proc_root: Path) -> list[tuple[str, str]]:
    """(controllers, path) pairs of /proc/self/cgroup; v2 has empty controllers."""
    entries = []
    path = Path(proc_root) / "self" / "cgroup"
    text = path.read_text() if path.is_file() else ""
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3:
            entries.append((parts[1], parts[2]))
    return entries


def _cgroup_dirs(proc_root: Path, cgroup_root: Path) -> list[tuple[Path, Path, str]]:
    """(own memory cgroup directory, its mount point, "v2" or "v1"): v2 first, then v1.

    A cgroup namespace shows the own cgroup as "/" and mounts it at the mount point, so the
    path is joined to the mount point and, where that does not exist, is the mount point.
    """
    found = []
    root = Path(cgroup_root)
    for controllers, path in _own_cgroups(proc_root):
        if controllers == "":
            kind, mounts, marker = "v2", [root, root / "unified"], "memory.max"
        elif "memory" in controllers.split(","):
            kind, mounts, marker = "v1", [root / "memory", root / controllers], "cgroup.procs"
        else:
            continue
        for mount in mounts:
            candidates = [mount / path.lstrip("/"), mount]
            own = next((c for c in candidates if (c / marker).exists()), None)
            if own is not None:
                found.append((own, mount, kind))
                break
    return found


def _read_bytes(path: Path) -> int | None:
    """An integer byte count from a cgroup file; None for "max", a huge value or no file."""
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    if not text or text == "max":
        return None
    value = int(text)
    return None if value >= _UNLIMITED_FLOOR else value


def cgroup_memory_limit(proc_root: Path = PROC_ROOT, cgroup_root: Path = CGROUP_ROOT) -> int | None:
    """The job's own cgroup memory limit in bytes (v2 memory.max, v1 memory.limit_in_bytes).

    Parents limit children too, so the smallest limit on the way up to the mount point counts.
    None when no cgroup sets a limit or none can be read.
    """
    limits = []
    for directory, mount, kind in _cgroup_dirs(Path(proc_root), Path(cgroup_root)):
        name = "memory.max" if kind == "v2" else "memory.limit_in_bytes"
        for level in [directory, *directory.parents]:
            value = _read_bytes(level / name)
            if value is not None:
                limits.append(value)
            if level == mount:
                break
    return min(limits) if limits else None


def host_memory_total(proc_root: Path = PROC_ROOT) -> int:
    """Physical memory of the host in bytes (MemTotal of /proc/meminfo)."""
    meminfo = Path(proc_root) / "meminfo"
    text = meminfo.read_text() if meminfo.is_file() else ""
    match = re.search(r"^MemTotal:\s+(\d+)\s*kB", text, re.MULTILINE)
    if match is None:
        import psutil  # only where /proc/meminfo is not Linux's

        return int(psutil.virtual_memory().total)
    return int(match.group(1)) * 1024


def available_memory_limit(proc_root: Path = PROC_ROOT, cgroup_root: Path = CGROUP_ROOT) -> int:
    """The most memory a job here may use: min(host total, own cgroup limit), in bytes."""
    host = host_memory_total(proc_root)
    limit = cgroup_memory_limit(proc_root, cgroup_root)
    return host if limit is None else min(host, limit)


def job_memory_limit(cluster_max_mb: int | None = None) -> int:
    """Bytes a job may use: the cluster's largest allowed memory (MiB, from the profile's
    config) where the jobs go to a cluster, else what this machine and its cgroup allow."""
    if cluster_max_mb is not None:
        return int(cluster_max_mb) * 1024 * 1024
    return available_memory_limit()


# ------------------------------------------------------------------------------------ peaks


def self_peak_rss() -> int:
    """Peak resident memory of this process in bytes: the kernel's VmHWM of its own image.

    Not ru_maxrss: Linux carries the replaced image's high-water mark across exec, so the
    ru_maxrss of a job started by a big process (snakemake, a shell that exec'd it) is at
    least that process's peak. Includes any peak from before a `measure_peak_growth` reset.
    """
    own = peak_since_reset() or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return max(own, _peak_before_resets)


def cgroup_memory_peak(proc_root: Path = PROC_ROOT, cgroup_root: Path = CGROUP_ROOT) -> int | None:
    """High-water mark of the own cgroup (v2 memory.peak, v1 memory.max_usage_in_bytes).

    This counts everything in the cgroup (page cache too); it is the job's own peak only where
    the job has its own cgroup (a SLURM or HTCondor job), not in a shared container.
    """
    for directory, _, kind in _cgroup_dirs(Path(proc_root), Path(cgroup_root)):
        name = "memory.peak" if kind == "v2" else "memory.max_usage_in_bytes"
        value = _read_bytes(directory / name)
        if value is not None:
            return value
    return None


def running_under_scheduler() -> bool:
    """True inside a SLURM or HTCondor job."""
    return "SLURM_JOB_ID" in os.environ or "_CONDOR_JOB_AD" in os.environ


def job_owns_cgroup(proc_root: Path = PROC_ROOT) -> bool:
    """True when this process's memory cgroup is the scheduler job's own (it holds only this
    job); inside a container a SLURM job may share the container's cgroup instead."""
    if not running_under_scheduler():
        return False
    job_id = os.environ.get("SLURM_JOB_ID")
    marker = f"job_{job_id}" if job_id else "condor"
    try:
        return any(marker in path for _, path in _own_cgroups(proc_root))
    except OSError:
        return False


def cluster_memory_limit_mb() -> int | None:
    """Inside a SLURM job: the largest node memory the cluster offers (`sinfo`), else None."""
    if "SLURM_JOB_ID" not in os.environ or shutil.which("sinfo") is None:
        return None
    try:
        out = subprocess.run(["sinfo", "-h", "-o", "%m"], capture_output=True, text=True,
                             timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    sizes = [int(m.rstrip("+")) for m in out.split() if m.rstrip("+").isdigit()]
    return max(sizes) if sizes else None


def _status_kb(field: str, proc_root: Path = PROC_ROOT) -> int:
    """A kB field of /proc/self/status in bytes; 0 where there is no /proc (not Linux)."""
    try:
        text = (Path(proc_root) / "self" / "status").read_text()
    except OSError:
        return 0
    match = re.search(rf"^{field}:\s+(\d+)\s*kB", text, re.MULTILINE)
    return int(match.group(1)) * 1024 if match else 0


def resident_now() -> int:
    """Resident memory of this process now (VmRSS), in bytes."""
    return _status_kb("VmRSS")


def peak_since_reset() -> int:
    """High-water mark of this process (VmHWM), since start or the last reset, in bytes."""
    return _status_kb("VmHWM")


def measure_peak_growth(work: Callable[[], object]) -> tuple[object, int]:
    """Run `work()` and return (its result, the peak resident growth it caused, in bytes).

    Resets the process's high-water mark first (writing 5 to /proc/self/clear_refs), so the
    growth is that of `work` even when the process peaked higher earlier; the earlier peak is
    kept for `self_peak_rss`. Where the reset is refused, the growth is measured against the
    old mark and may be too small (never too large).
    """
    global _peak_before_resets
    _peak_before_resets = max(_peak_before_resets, self_peak_rss())
    try:
        (PROC_ROOT / "self" / "clear_refs").write_text("5")
    except OSError:
        pass
    resident_before = resident_now()
    result = work()
    return result, max(0, peak_since_reset() - resident_before)


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


# ------------------------------------------------------------------------- measured children


@dataclass
class MeasuredRun:
    """A finished child process and its kernel-measured peak."""

    argv: list[str]
    returncode: int
    peak_bytes: int
    seconds: float
    killed_by_signal: int | None
    timed_out: bool = False
    stdout: str | bytes | None = None
    stderr: str | bytes | None = None

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def as_dict(self) -> dict:
        return asdict(self)


def _drain(stream, sink: list) -> threading.Thread:
    """Read a pipe to its end in a thread, so a chatty child never blocks on a full pipe."""
    thread = threading.Thread(target=lambda: sink.append(stream.read()), daemon=True)
    thread.start()
    return thread


# A small process between us and the measured child. A child's ru_maxrss starts at the high-water
# mark of the image it replaced at exec (a copy of its parent's), so a child forked straight from
# a big process would report at least that process's peak. Forked from this launcher, the floor is
# the launcher's own few MB; the launcher waits for the child and hands back its rusage.
_LAUNCHER = """
import os, sys
fd = int(sys.argv[1])
pid = os.fork()
if pid == 0:
    os.close(fd)
    try:
        os.execvp(sys.argv[2], sys.argv[2:])
    except OSError as exc:
        os.write(2, ("error: cannot run %s: %s\\n" % (sys.argv[2], exc)).encode())
    os._exit(127)
os.write(fd, b"%d\\n" % pid)
_, status, usage = os.wait4(pid, 0)
os.write(fd, b"%d %d\\n" % (status, usage.ru_maxrss))
"""


def run_measured(
    argv: list[str], timeout: float | None = None, **popen_kwargs
) -> MeasuredRun:
    """Run `argv` to its end; its peak is the kernel's ru_maxrss of that child (from wait4).

    The peak covers the child and the largest of any grandchildren it waited for, not their
    sum (joblib workers, for one, must report their own peaks). `popen_kwargs` go to
    subprocess.Popen (stdout=subprocess.PIPE, env=..., cwd=...); captured output comes back in
    `stdout`/`stderr`. After `timeout` seconds the child is killed (SIGKILL), `timed_out` set.
    """
    env = popen_kwargs.get("env")
    search_path = (env if env is not None else os.environ).get("PATH", os.defpath)
    if shutil.which(argv[0], path=search_path) is None:
        raise FileNotFoundError(f"no such program: {argv[0]}")
    read_end, write_end = os.pipe()
    popen_kwargs["pass_fds"] = (*popen_kwargs.get("pass_fds", ()), write_end)
    launcher = [sys.executable, "-I", "-S", "-c", _LAUNCHER, str(write_end), *map(str, argv)]
    start = time.monotonic()
    try:
        proc = subprocess.Popen(launcher, **popen_kwargs)
    finally:
        os.close(write_end)
    with os.fdopen(read_end, "rb") as report:
        child_pid = int(report.readline() or 0)
        outputs: dict[str, list] = {}
        readers = []
        for name in ("stdout", "stderr"):
            stream = getattr(proc, name)
            if stream is not None:
                outputs[name] = []
                readers.append(_drain(stream, outputs[name]))
        expired = threading.Event()
        timer = None
        if timeout is not None and child_pid:

            def kill() -> None:
                expired.set()
                with contextlib.suppress(ProcessLookupError):
                    os.kill(child_pid, signal.SIGKILL)

            timer = threading.Timer(timeout, kill)
            timer.start()
        try:
            result = report.readline().split()
        finally:
            if timer is not None:
                timer.cancel()
    proc.wait()
    seconds = time.monotonic() - start
    for reader in readers:
        reader.join()
    for name in outputs:
        getattr(proc, name).close()
    if len(result) != 2:
        raise RuntimeError(f"the measuring launcher of {argv[0]} died (exit {proc.returncode})")
    status, max_rss_kb = int(result[0]), int(result[1])
    return MeasuredRun(
        argv=[str(a) for a in argv],
        returncode=os.waitstatus_to_exitcode(status),
        peak_bytes=max_rss_kb * 1024,
        seconds=seconds,
        killed_by_signal=os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
        timed_out=expired.is_set(),
        stdout=outputs.get("stdout", [None])[0],
        stderr=outputs.get("stderr", [None])[0],
    )


def signal_name(number: int | None) -> str:
    """SIGKILL for 9, '' for None: killed runs are reported by name."""
    return signal.Signals(number).name if number else ""


# -------------------------------------------------------------------------------- runs table


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value).replace("\t", " ").replace("\n", " ")


def append_runs_row(path: str | Path, row: dict) -> None:
    """Append one row to a TSV runs table; safe when several jobs append at once.

    An exclusive flock serialises writers; the first writer writes the header (the row's keys).
    Later rows follow that header: missing columns stay empty, unknown keys are refused (a
    silently dropped column is how measurements get lost).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+", encoding="utf-8") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            handle.seek(0)
            header_line = handle.readline()
            if header_line:
                columns = header_line.rstrip("\n").split("\t")
                unknown = sorted(set(row) - set(columns))
                if unknown:
                    raise ValueError(
                        f"{path}: columns {unknown} are not in its header {columns}; "
                        "write them to a new runs table"
                    )
                text = ""
            else:
                columns = list(row)
                text = "\t".join(columns) + "\n"
            text += "\t".join(_cell(row.get(column)) for column in columns) + "\n"
            handle.seek(0, os.SEEK_END)
            handle.write(text)
            handle.flush()
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
