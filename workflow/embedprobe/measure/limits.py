"""Memory that is really there: the limit a job here runs under.

Locally the smaller of host memory and the job's own cgroup limit (psutil reports the host even
inside a container or a SLURM job); on a cluster the largest memory the profile allows.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from embedprobe.core.units import MIB
from embedprobe.measure.cgroups import (
    CGROUP_ROOT,
    PROC_ROOT,
    memory_cgroup_dirs,
    own_cgroups,
    read_cgroup_bytes,
)


def cgroup_memory_limit(proc_root: Path = PROC_ROOT, cgroup_root: Path = CGROUP_ROOT) -> int | None:
    """The job's own cgroup memory limit in bytes (v2 memory.max, v1 memory.limit_in_bytes).

    Parents limit children too, so the smallest limit on the way up to the mount point counts.
    None when no cgroup sets a limit or none can be read.
    """
    limits = []
    for directory, mount, kind in memory_cgroup_dirs(Path(proc_root), Path(cgroup_root)):
        name = "memory.max" if kind == "v2" else "memory.limit_in_bytes"
        for level in [directory, *directory.parents]:
            value = read_cgroup_bytes(level / name)
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
        return int(cluster_max_mb) * MIB
    return available_memory_limit()


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
        return any(marker in path for _, path in own_cgroups(proc_root))
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
