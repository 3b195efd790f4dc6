"""The one file search of every reader: what `Path.rglob(pattern)` finds, through linked folders.

Python 3.11's rglob does not descend into a folder that is a symbolic link (its
`follow_symlinks` arrived in 3.13), so a data root whose dataset folder is a link (common on
clusters: `sleep-cassette -> /big/disk/...`) looked empty. os.walk(followlinks=True) follows
links; each real folder is entered once, so a link cycle (`a/loop -> a`) ends where it closes
and two links to one folder do not find its files twice.
"""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path

from embedprobe.core.errors import DataError


def require_folder(folder: Path, dataset: str, fix: str) -> Path:
    """`folder` as a Path, where a search can start, or a DataError naming the dataset and
    the folder that is not there."""
    folder = Path(folder)
    if not folder.is_dir():
        raise DataError(f"{dataset} folder {folder} does not exist", fix=fix)
    return folder


def find_paths(root: Path, pattern: str = "*") -> list[Path]:
    """Every file and folder under `root` (not root itself) whose name matches `pattern`
    (case-sensitive, as rglob's on Linux), sorted; reached through linked folders too, under
    the path that reaches them (`root/link/x.edf`)."""
    if "/" in pattern:
        raise ValueError(f"find_paths matches names, not paths: {pattern!r}")
    root = Path(root)
    found: list[Path] = []
    seen: set[tuple[int, int]] = set()
    for folder, folders, files in os.walk(root, followlinks=True):
        info = os.stat(folder)
        if (info.st_dev, info.st_ino) in seen:  # entered already: a cycle or a second link
            folders[:] = []
            continue
        seen.add((info.st_dev, info.st_ino))
        found += [Path(folder, name) for name in folders + files
                  if fnmatch.fnmatchcase(name, pattern)]
    return sorted(found)
