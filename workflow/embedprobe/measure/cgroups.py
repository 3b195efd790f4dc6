"""Reading the own process's cgroups and /proc: what limits.py and peaks.py both read.

A cgroup namespace shows the own cgroup as "/" and mounts it at the mount point; cgroup v1
writes "no limit" as LONG_MAX rounded down to a page. The roots are parameters, so tests can
point them at a fake tree.
"""

from __future__ import annotations

from pathlib import Path

PROC_ROOT = Path("/proc")
CGROUP_ROOT = Path("/sys/fs/cgroup")

# cgroup v1 writes "no limit" as LONG_MAX rounded down to a page (9223372036854771712); anything
# this large is no limit at all.
UNLIMITED_FLOOR = 1 << 60


def own_cgroups(proc_root: Path = PROC_ROOT) -> list[tuple[str, str]]:
    """(controllers, path) pairs of /proc/self/cgroup; v2 has empty controllers."""
    entries = []
    path = Path(proc_root) / "self" / "cgroup"
    text = path.read_text() if path.is_file() else ""
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3:
            entries.append((parts[1], parts[2]))
    return entries


def memory_cgroup_dirs(proc_root: Path = PROC_ROOT,
                       cgroup_root: Path = CGROUP_ROOT) -> list[tuple[Path, Path, str]]:
    """(own memory cgroup directory, its mount point, "v2" or "v1"): v2 first, then v1.

    A cgroup namespace shows the own cgroup as "/" and mounts it at the mount point, so the
    path is joined to the mount point and, where that does not exist, is the mount point.
    """
    found = []
    root = Path(cgroup_root)
    for controllers, path in own_cgroups(proc_root):
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


def read_cgroup_bytes(path: Path) -> int | None:
    """An integer byte count from a cgroup file; None for "max", a huge value or no file."""
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    if not text or text == "max":
        return None
    value = int(text)
    return None if value >= UNLIMITED_FLOOR else value
