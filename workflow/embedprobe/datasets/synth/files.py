"""What every look-alike generator does before and after it writes its files: refuse to mix
with files it would not write, and mark completion with MANIFEST.tsv, written last."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from embedprobe.core.errors import UsageError
from embedprobe.datasets.walk import find_paths

MANIFEST = "MANIFEST.tsv"


def start_rewrite(root: Path, ours: Iterable[str], pattern: str, kind: str,
                  key: Callable[[Path], str] | None = None) -> None:
    """Drop root's MANIFEST.tsv (an interrupted rewrite must not look complete), then refuse
    files matching `pattern` that this look-alike would not write: the reader takes every such
    file under root, so a smaller look-alike over a bigger one would mix. `ours` holds the
    written files' keys: key(file) (default: the path relative to root, '/'-separated)."""
    root = Path(root)
    (root / MANIFEST).unlink(missing_ok=True)
    key = key or (lambda f: f.relative_to(root).as_posix())
    ours = set(ours)
    others = sorted(key(f) for f in find_paths(root, pattern) if key(f) not in ours) \
        if root.is_dir() else []
    if others:
        raise UsageError(f"{root} holds {len(others)} {kind} files this look-alike would not "
                         f"write ({others[0]}, ...)",
                         fix=f"delete {root} or write the look-alike into an empty folder")


def write_manifest(root: Path, files: Sequence[Path]) -> Path:
    """MANIFEST.tsv (file relative to root, bytes), written atomically: its presence = complete."""
    lines = ["file\tbytes"] + [
        f"{f.relative_to(root).as_posix()}\t{f.stat().st_size}" for f in files
    ]
    partial = root / (MANIFEST + ".partial")
    partial.write_text("\n".join(lines) + "\n")
    return partial.replace(root / MANIFEST)


def write_flat(root: Path, plans: Sequence[Any], pattern: str, kind: str,
               write: Callable[[Any, Path], Path]) -> list[Path]:
    """A look-alike of one file per plan, straight under root (root / plan.name, written by
    write(plan, path)); other `pattern` files anywhere under root, known by name, are refused
    first. Returns the files written, MANIFEST.tsv last."""
    root = Path(root)
    start_rewrite(root, (p.name for p in plans), pattern, kind, key=lambda f: f.name)
    root.mkdir(parents=True, exist_ok=True)
    files = [write(p, root / p.name) for p in plans]
    return [*files, write_manifest(root, files)]


def write_nested(root: Path, plans: Sequence[Any], pattern: str, kind: str,
                 write: Callable[[Any, Path], Sequence[Path]],
                 after: Callable[[Path], Sequence[Path]] | None = None) -> list[Path]:
    """A look-alike of files in folders: per plan, write(plan, root / plan.relative) writes the
    file there (its folder made) and returns it with any files beside it; after(root) writes
    files for the whole look-alike (a label table). Other `pattern` files under root are
    refused first. Returns the files written, MANIFEST.tsv last."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    start_rewrite(root, (p.relative for p in plans), pattern, kind)
    files: list[Path] = []
    for p in plans:
        path = root / p.relative
        path.parent.mkdir(parents=True, exist_ok=True)
        files += write(p, path)
    files += after(root) if after else []
    return [*files, write_manifest(root, files)]


def with_defaults(settings: dict, defaults: dict, what: str) -> dict:
    """A look-alike's settings over its defaults; a setting it does not know is refused
    (`what` names the look-alike: "the TUAB look-alike")."""
    unknown = set(settings) - set(defaults)
    if unknown:
        raise UsageError(f"{what}: unknown look-alike setting(s) {sorted(unknown)}",
                         fix=f"use {', '.join(defaults)}")
    return defaults | settings
