"""Limits from the job's own cgroup, peaks from the kernel, a runs table safe for many writers."""

from __future__ import annotations

import mmap
import multiprocessing
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from embedprobe.core.units import MIB
from embedprobe.measure.limits import (
    available_memory_limit,
    cgroup_memory_limit,
    host_memory_total,
    job_memory_limit,
)
from embedprobe.measure.peaks import (
    cgroup_memory_peak,
    measure_peak_growth,
    run_measured,
    self_peak_rss,
    signal_name,
)
from embedprobe.memory.runs import append_runs_row

from helpers.project import PROJECT

GiB = 1 << 30
V1_UNLIMITED = "9223372036854771712"


def fake_tree(tmp_path: Path, cgroup_line: str, files: dict[str, str], meminfo_kb: int = 0):
    """A /proc and /sys/fs/cgroup of our own: (proc_root, cgroup_root)."""
    proc, sys_root = tmp_path / "proc", tmp_path / "cgroup"
    (proc / "self").mkdir(parents=True)
    (proc / "self" / "cgroup").write_text(cgroup_line + "\n")
    (proc / "meminfo").write_text(f"MemTotal:       {meminfo_kb} kB\nMemFree:  1 kB\n")
    for relative, text in files.items():
        path = sys_root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n")
    return proc, sys_root


def test_cgroup_v2_limit_is_the_smallest_on_the_way_up(tmp_path):
    proc, root = fake_tree(tmp_path, "0::/system.slice/slurmstepd/job_42", {
        "system.slice/memory.max": "max",
        "system.slice/slurmstepd/memory.max": str(3 * GiB),
        "system.slice/slurmstepd/job_42/memory.max": str(4 * GiB),
        "system.slice/slurmstepd/job_42/memory.peak": str(1234 * MIB),
    })
    assert cgroup_memory_limit(proc, root) == 3 * GiB
    assert cgroup_memory_peak(proc, root) == 1234 * MIB


def test_cgroup_v2_unlimited_is_none(tmp_path):
    proc, root = fake_tree(tmp_path, "0::/user.slice/session-1.scope", {
        "user.slice/memory.max": "max",
        "user.slice/session-1.scope/memory.max": "max",
    })
    assert cgroup_memory_limit(proc, root) is None
    assert cgroup_memory_peak(proc, root) is None


def test_cgroup_namespace_reads_the_mount_point(tmp_path):
    # inside a container with its own cgroup namespace the own cgroup is "/" at the mount
    proc, root = fake_tree(tmp_path, "0::/", {"memory.max": str(8 * GiB)})
    assert cgroup_memory_limit(proc, root) == 8 * GiB


def test_cgroup_v1_memory_controller(tmp_path):
    proc, root = fake_tree(
        tmp_path,
        "12:pids:/slurm/uid_0/job_7\n4:memory:/slurm/uid_0/job_7\n1:name=systemd:/",
        {
            "memory/memory.limit_in_bytes": V1_UNLIMITED,
            "memory/slurm/memory.limit_in_bytes": V1_UNLIMITED,
            "memory/slurm/uid_0/job_7/cgroup.procs": "1",
            "memory/slurm/uid_0/job_7/memory.limit_in_bytes": str(2 * GiB),
            "memory/slurm/uid_0/job_7/memory.max_usage_in_bytes": str(700 * MIB),
        },
    )
    assert cgroup_memory_limit(proc, root) == 2 * GiB
    assert cgroup_memory_peak(proc, root) == 700 * MIB


def test_available_memory_is_the_smaller_of_host_and_cgroup(tmp_path):
    limited = tmp_path / "limited"
    proc, root = fake_tree(limited, "0::/job", {"job/memory.max": str(2 * GiB)},
                           meminfo_kb=16 * GiB // 1024)
    assert host_memory_total(proc) == 16 * GiB
    assert available_memory_limit(proc, root) == 2 * GiB
    free = tmp_path / "free"
    proc, root = fake_tree(free, "0::/job", {"job/memory.max": "max"}, meminfo_kb=4 * GiB // 1024)
    assert available_memory_limit(proc, root) == 4 * GiB


def test_available_memory_here_is_positive_and_at_most_the_host():
    assert 0 < available_memory_limit() <= host_memory_total()
    assert job_memory_limit() == available_memory_limit()
    assert job_memory_limit(cluster_max_mb=256_000) == 256_000 * MIB


ALLOCATE = "import sys; a = b'x' * {n}; sys.exit({code})"  # every page written


def test_run_measured_measures_the_child_not_its_parent():
    # The test process peaks at 600 MB first: a child forked from it reports that much in
    # ru_maxrss unless the measurement starts from a small launcher.
    ballast = b"x" * (600 * MIB)
    baseline = run_measured([sys.executable, "-c", ALLOCATE.format(n=1, code=0)])
    del ballast
    assert baseline.ok and baseline.peak_bytes < 100 * MIB
    run = run_measured([sys.executable, "-c", ALLOCATE.format(n=200 * MIB, code=3)])
    assert run.returncode == 3 and run.killed_by_signal is None and not run.timed_out
    assert run.peak_bytes - baseline.peak_bytes == pytest.approx(200 * MIB, rel=0.15)
    assert run.seconds > 0


def test_run_measured_reports_kills_timeouts_and_output():
    killed = run_measured([sys.executable, "-c", "import os; os.kill(os.getpid(), 9)"])
    assert killed.returncode == -9 and killed.killed_by_signal == signal.SIGKILL
    assert signal_name(killed.killed_by_signal) == "SIGKILL"
    slow = run_measured([sys.executable, "-c", "import time; time.sleep(30)"], timeout=1)
    assert slow.timed_out and slow.killed_by_signal == signal.SIGKILL and slow.seconds < 10
    talk = run_measured(
        [sys.executable, "-c", "import sys; print('out'); print('err', file=sys.stderr)"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert (talk.stdout, talk.stderr, talk.returncode) == ("out\n", "err\n", 0)
    with pytest.raises(FileNotFoundError):
        run_measured(["embedprobe-no-such-program"])


def touched_pages(size: int) -> mmap.mmap:
    """`size` bytes of fresh anonymous memory, every page written: resident whatever malloc
    keeps from earlier tests in this process (a heap that reuses freed memory grows by 0)."""
    pages = mmap.mmap(-1, size)
    for offset in range(0, size, mmap.PAGESIZE):
        pages[offset] = 1
    return pages


def test_peak_growth_of_a_step_after_a_higher_peak():
    touched_pages(300 * MIB).close()

    def step():
        pages = touched_pages(100 * MIB)
        size = len(pages)
        pages.close()
        return size

    result, growth = measure_peak_growth(step)
    assert result == 100 * MIB
    assert growth == pytest.approx(100 * MIB, rel=0.15)
    assert self_peak_rss() >= 300 * MIB  # the job's peak survives the reset


def _append_rows(path: str, writer: int, rows: int) -> None:
    for k in range(rows):
        append_runs_row(path, {"writer": writer, "row": k, "text": "a\tb"})


def test_runs_table_keeps_every_row_of_concurrent_writers(tmp_path):
    path = tmp_path / "results" / "memory" / "runs.tsv"
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_append_rows, args=(str(path), w, 100)) for w in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
        assert worker.exitcode == 0
    lines = path.read_text().splitlines()
    assert lines[0] == "writer\trow\ttext"
    rows = [line.split("\t") for line in lines[1:]]
    assert all(len(row) == 3 and row[2] == "a b" for row in rows)
    assert sorted((int(w), int(k)) for w, k, _ in rows) == [
        (w, k) for w in range(4) for k in range(100)]


def test_runs_table_follows_its_header(tmp_path):
    path = tmp_path / "runs.tsv"
    append_runs_row(path, {"job": "embed", "peak_bytes": 5, "ratio": 0.123456789})
    append_runs_row(path, {"peak_bytes": 7, "job": "probe"})
    assert path.read_text() == "job\tpeak_bytes\tratio\nembed\t5\t0.123457\nprobe\t7\t\n"
    with pytest.raises(ValueError, match="not in its header"):
        append_runs_row(path, {"job": "x", "surprise": 1})


ARENA_PROBE = """
import ctypes, sys, threading
from embedprobe.measure.allocator import use_one_malloc_arena
print(use_one_malloc_arena())
def work():
    blocks = [bytearray(200_000) for _ in range(50)]  # past glibc's first-malloc lazy paths
threads = [threading.Thread(target=work) for _ in range(6)]
for t in threads: t.start()
for t in threads: t.join()
sys.stderr.flush()
ctypes.CDLL(None).malloc_stats()  # one "Arena N:" block per malloc arena, on stderr
"""


@pytest.mark.parametrize("env, one_arena", [({}, True), ({"MALLOC_ARENA_MAX": "8"}, False)])
def test_jobs_allocate_from_one_malloc_arena_unless_told_otherwise(env, one_arena):
    """With glibc's default, each new thread gets an arena of its own (freed memory of one is
    not reused by another); embedprobe's steps limit it to one before any thread starts."""
    run = subprocess.run([sys.executable, "-c", ARENA_PROBE], capture_output=True, text=True,
                         timeout=60, env={**{k: v for k, v in os.environ.items()
                                             if k != "MALLOC_ARENA_MAX"},
                                          "PYTHONPATH": str(PROJECT / "workflow"), **env})
    assert run.returncode == 0, run.stderr
    arenas = len(re.findall(r"^Arena \d+:", run.stderr, re.MULTILINE))
    assert run.stdout.split() == [str(one_arena)]
    assert arenas == 1 if one_arena else arenas > 1, run.stderr


HEAP_PROBE = """
import ctypes, sys
from embedprobe.measure.allocator import FreedHeapRelease
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
def rss_mb():
    return int(open("/proc/self/statm").read().split()[1]) * 4096 / 2**20
# 64 KiB blocks come from the heap (below glibc's mmap threshold); the last one kept stops
# free() from giving the heap's top back, as a live block above freed activations does
blocks = [libc.malloc(65536) for _ in range(3000)]
for b in blocks:
    ctypes.memset(b, 1, 65536)
for b in blocks[:-1]:
    libc.free(b)
freed = rss_mb()
heap = FreedHeapRelease(None if sys.argv[1] == "off" else 0.0)
print(heap.after_batch(), round(freed - rss_mb()))
"""


@pytest.mark.parametrize("setting, released", [("0", True), ("off", False)])
def test_freed_heap_pages_go_back_to_the_kernel_between_batches(setting, released):
    """~190 MB freed below a live block stay resident until embed releases them (glibc's
    malloc_trim); with the release off they stay."""
    run = subprocess.run([sys.executable, "-c", HEAP_PROBE, setting], capture_output=True,
                         text=True, timeout=60,
                         env={**os.environ, "PYTHONPATH": str(PROJECT / "workflow")})
    assert run.returncode == 0, run.stderr
    did, dropped_mb = run.stdout.split()
    assert did == str(released)
    assert (int(dropped_mb) > 150) if released else (abs(int(dropped_mb)) < 20), run.stdout


def test_the_heap_is_released_after_slow_batches_only():
    """A release and its page faults cost ~20 ms: a few percent of a 0.5 s batch, a fifth of
    a fast model's 0.1 s one (whose passes reuse their freed blocks anyway)."""
    from embedprobe.measure.allocator import FreedHeapRelease

    now = [100.0]
    heap = FreedHeapRelease(0.5, clock=lambda: now[0])
    done = []
    for took in (0.6, 0.1, 0.2, 0.5, 2.0, 0.49):
        now[0] += took
        done.append(heap.after_batch())
    assert done == [True, False, False, True, True, False]
    assert heap.trims == 3


# ------------------------------------------------------------------------- the module layers

# the memory model's modules that preflight, the runs record and the workflow's resources
# callables build on
MODEL = ("formulas", "estimate", "calibration")


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports, function-level imports included."""
    import ast

    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def test_measuring_imports_only_core_and_the_model_nothing_of_the_pipeline():
    """The measuring package (peaks, limits, cgroups, the GPU, the allocator) needs only core,
    so that check and embed measure without importing the memory model; the model (formulas,
    estimate, calibration) needs nothing of the pipeline: preflight, the runs record and the
    workflow's resources callables build on them, never the other way."""
    package = PROJECT / "workflow" / "embedprobe"
    for path in (package / "measure").glob("*.py"):
        ours = {m for m in imported_modules(path) if m.split(".")[0] == "embedprobe"}
        assert all(m.startswith(("embedprobe.core", "embedprobe.measure")) for m in ours), (
            path.name, sorted(ours))
    allowed = ("embedprobe.core", "embedprobe.measure", "embedprobe.probing.probe_forms",
               *(f"embedprobe.memory.{module}" for module in MODEL))
    for module in MODEL:
        ours = {m for m in imported_modules(package / "memory" / f"{module}.py")
                if m.split(".")[0] == "embedprobe" and m != "embedprobe.memory"}
        assert all(m.startswith(allowed) for m in ours), (module, sorted(ours))
    for path in (package / "memory").glob("*.py"):
        assert not {m for m in imported_modules(path)
                    if m.startswith(("embedprobe.smk", "embedprobe.cli"))}, path.name


def test_bytes_per_mib_have_one_owner():
    """core.units.MIB; no other module or script defines its own (MiB = 2**20 and the like)."""
    own = re.compile(r"^\s*MI?B\s*=|(?<![\w.])(1 << 20|2 ?\*\* ?20|1024 \* 1024)(?![\w.])",
                     re.MULTILINE | re.IGNORECASE)
    paths = [*(PROJECT / "workflow" / "embedprobe").rglob("*.py"),
             *(PROJECT / "scripts").glob("*.py")]
    owner = PROJECT / "workflow" / "embedprobe" / "core" / "units.py"
    offenders = [f"{path.relative_to(PROJECT)}: {match.group(0).strip()}"
                 for path in paths if path != owner for match in own.finditer(path.read_text())]
    assert offenders == []
