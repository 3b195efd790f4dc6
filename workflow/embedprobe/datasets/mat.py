"""What the .mat readers share: scipy reads that name a bad file, channel columns, SubjectMat."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from embedprobe.core.errors import DataError


@dataclass(frozen=True)
class SubjectMat:
    """A recording that is one subject's whole .mat file: its id is the subject, session "0"."""

    recording: str  # the subject's id: "A01", "s01"
    mat: Path

    # The reader interface's names (datasets/base.py)
    @property
    def subject(self) -> str:
        return self.recording

    @property
    def session(self) -> str:
        return "0"

    @property
    def signal_path(self) -> Path:
        return self.mat

    @property
    def files(self) -> tuple[Path, ...]:
        return (self.mat,)

    @property
    def problem(self) -> str:
        return ""


def file_key(path: Path, fix: str) -> tuple[str, int, int]:
    """(path, size, mtime_ns): the key of a reader's cache of parsed files, which changes when
    the file does; a file that cannot be looked at is a DataError naming it."""
    path = Path(path)
    try:
        stat = path.stat()
    except OSError as exc:
        raise DataError(f"{path}: cannot read it ({exc})", fix=fix) from exc
    return str(path), stat.st_size, stat.st_mtime_ns


def channel_columns(path: Path, have: Sequence[str], wanted: Sequence[str]) -> list[int]:
    """Where each wanted channel is among a file's channels `have` (in their stored order); one
    the file lacks is a DataError naming it."""
    missing = [c for c in wanted if c not in have]
    if missing:
        raise DataError(f"{path}: no channel {', '.join(missing)}; it has {', '.join(have)}",
                        fix="choose channels this file has (config/channel_maps/)")
    return [list(have).index(c) for c in wanted]


@contextmanager
def _readable(path, fix: str):
    try:
        yield
    except Exception as exc:  # scipy raises several types for a damaged or foreign file
        raise DataError(f"{path}: not a readable .mat file ({type(exc).__name__}: {exc})",
                        fix=fix) from exc


def loadmat(path, fix: str, **options) -> dict:
    """scipy.io.loadmat(path, **options); a damaged or foreign file is a DataError naming it."""
    import scipy.io  # here: importing a reader stays cheap

    with _readable(path, fix):
        return scipy.io.loadmat(path, **options)


def whosmat(path, fix: str) -> list[tuple[str, tuple[int, ...], str]]:
    """scipy.io.whosmat(str(path)): the variables' names, shapes and classes from their headers
    (no data read); a damaged or foreign file is a DataError naming it."""
    import scipy.io

    with _readable(path, fix):
        return scipy.io.whosmat(str(path))
