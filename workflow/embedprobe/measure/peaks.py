"""Memory that was really used: the kernel's high-water marks, never polling (which misses
short spikes).

VmHWM of the own process, ru_maxrss of a child started from a small launcher (run_measured),
cgroup `memory.peak` of a job that has its own cgroup.
"""

from __future__ import annotations

import contextlib
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

from embedprobe.measure.cgroups import (
    CGROUP_ROOT,
    PROC_ROOT,
    memory_cgroup_dirs,
    read_cgroup_bytes,
)

# Highest peak seen before `measure_peak_growth` reset the process's high-water mark.
_peak_before_resets = 0


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
    for directory, _, kind in memory_cgroup_dirs(Path(proc_root), Path(cgroup_root)):
        name = "memory.peak" if kind == "v2" else "memory.max_usage_in_bytes"
        value = read_cgroup_bytes(directory / name)
        if value is not None:
            return value
    return None


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
