"""The opt-in MOABB cross-checks' setting: MOABB reads a cache folder offline, never the network."""

from __future__ import annotations

import socket
from pathlib import Path


def _no_network(*args, **kwargs):
    raise OSError("the MOABB cross-check reached for the network")


def offline_moabb(monkeypatch, cache_root: Path, sign: str) -> None:
    """MNE's download cache (MNE_DATA and the dataset's MNE_DATASETS_<sign>_PATH) at
    `cache_root`, MOABB's own mirror left out, and every socket connect refused."""
    monkeypatch.setenv("MNE_DATA", str(cache_root))
    monkeypatch.setenv(f"MNE_DATASETS_{sign}_PATH", str(cache_root))
    monkeypatch.setenv("MOABB_DOWNLOAD_PROVIDER", "upstream")
    monkeypatch.setattr(socket.socket, "connect", _no_network)
