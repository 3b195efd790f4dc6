"""The publishers' own files beside the checkout (../shared/realdata, read-only; its README says
what each folder holds and which values are documented)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from helpers.project import PROJECT

REALDATA = PROJECT.parent / "shared" / "realdata"


def realdata(*parts: str) -> Path:
    """A path under REALDATA. Skips only where the whole folder is absent (a checkout without
    shared/); where the folder is there, a missing part fails the test instead of skipping."""
    if not REALDATA.is_dir():
        pytest.skip(f"no {REALDATA} (the real files ship beside the checkout in shared/)")
    path = REALDATA.joinpath(*parts)
    assert path.exists(), f"{path} is missing from {REALDATA}: its README lists what it holds"
    return path


def checksums() -> dict[str, str]:
    """Relative path -> SHA-256 of every file, from the folder's SHA256SUMS-here.txt."""
    listed = {}
    for line in realdata("SHA256SUMS-here.txt").read_text().splitlines():
        digest, name = line.split(maxsplit=1)
        listed[name.removeprefix("./")] = digest
    return listed


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
