"""Content digests: a file's sha256 (weights, hub files, the cache's key)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from embedprobe.core.units import MIB


def sha256_file(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(MIB), b""):
            digest.update(block)
    return digest.hexdigest()
