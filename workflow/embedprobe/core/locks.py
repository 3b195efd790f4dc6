"""One process at a time: an exclusive flock on a lock file that its holder unlinks on release.

The kernel drops the flock when its holder dies. Because release unlinks the file, an opener
can lock an inode that was unlinked after it opened it; it then holds a lock nobody else sees,
so after locking it checks that the path still names the inode it holds, and else tries again.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path


class CannotLock(Exception):
    """The file system refused the flock for another reason than a holder (some network
    mounts have none); `error` is its OSError."""

    def __init__(self, path: Path, error: OSError):
        super().__init__(f"cannot lock {path} ({error})")
        self.path, self.error = path, error


def hold_lock(path: Path, held: Exception) -> int:
    """The open descriptor of `path` (created), exclusively flocked by this process; `held` is
    raised where another process holds it, CannotLock where the file system refuses."""
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise held from None
        except OSError as error:
            os.close(fd)
            raise CannotLock(path, error) from error
        try:
            same = os.fstat(fd).st_ino == os.stat(path).st_ino
        except FileNotFoundError:
            same = False
        if same:  # else the previous holder unlinked it after we opened it: take the new one
            return fd
        os.close(fd)


def release_lock(path: Path, fd: int) -> None:
    # Unlinked while still held: an opener that got the old inode sees it is gone, retries.
    path.unlink(missing_ok=True)
    os.close(fd)
