"""The one exclusive lock of the store's writer and of `data download`: real flocks on real
files, the holder's error, and the lock file its holder unlinked while another opened it."""

from __future__ import annotations

import errno
import fcntl

import pytest

from embedprobe.core import locks


class Held(Exception):
    pass


def test_a_held_lock_raises_the_callers_error_and_a_released_one_is_gone(tmp_path):
    path = tmp_path / "x.lock"
    fd = locks.hold_lock(path, Held("first"))
    with pytest.raises(Held, match="^second$"):
        locks.hold_lock(path, Held("second"))
    locks.release_lock(path, fd)
    assert not path.exists()
    again = locks.hold_lock(path, Held("third"))
    assert path.exists()
    locks.release_lock(path, again)


def test_a_lock_file_unlinked_between_open_and_flock_is_opened_again(tmp_path, monkeypatch):
    """Between this opener's open and its flock the holder releases (unlinks) and a third
    process takes the new file: the flock on the old inode succeeds, yet the lock is held."""
    path = tmp_path / "x.lock"
    first = locks.hold_lock(path, Held("first"))
    real_flock, handed = fcntl.flock, {}

    def flock_after_a_handover(fd, operation):
        if not handed:
            handed["over"] = True
            locks.release_lock(path, first)
            handed["third"] = locks.hold_lock(path, Held("third"))
        real_flock(fd, operation)

    monkeypatch.setattr(locks.fcntl, "flock", flock_after_a_handover)
    with pytest.raises(Held, match="^mine$"):
        locks.hold_lock(path, Held("mine"))
    locks.release_lock(path, handed["third"])


def test_a_file_system_without_flock_says_so(tmp_path, monkeypatch):
    def no_flock(fd, operation):
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(locks.fcntl, "flock", no_flock)
    with pytest.raises(locks.CannotLock) as caught:
        locks.hold_lock(tmp_path / "x.lock", Held("held"))
    assert caught.value.error.errno == errno.ENOLCK
    assert str(caught.value) == f"cannot lock {tmp_path / 'x.lock'} ([Errno 37] No locks available)"
