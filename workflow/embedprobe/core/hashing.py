"""Content digests: a file's sha256 (weights, hub files, the cache's key), or any hashlib
algorithm's (a download checked against its publisher's listing)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from embedprobe.core.units import MIB


def file_digest(path: str | Path, algorithm: str):
    """The hashlib object of the file's bytes (to be continued with what a resume appends)."""
    digest = hashlib.new(algorithm)
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(MIB), b""):
            digest.update(block)
    return digest


def sha256_file(path: str | Path) -> str:
    return file_digest(path, "sha256").hexdigest()
