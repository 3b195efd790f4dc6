"""What a cached store depends on (CacheIdentity): its dataset, model, window table,
preprocessing, weights and code. A store is reused only where every part is the same; messages
name the parts that differ.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass


def canonical_json(value) -> str:
    """The one JSON spelling of `value` (sorted keys, no spaces): equal settings, equal key."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True)
class CacheIdentity:
    """What the cached embeddings depend on; any change means the cache must be rebuilt."""

    dataset: str
    model: str
    windows_sha256: str
    preprocessing: str  # canonical JSON
    weights_sha256: str
    code_version: str

    def as_attrs(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_attrs(cls, attrs) -> CacheIdentity:
        return cls(**{f.name: str(attrs[f.name]) for f in dataclasses.fields(cls)})

    def diff(self, other: CacheIdentity) -> list[str]:
        """Names of the parts that differ, in field order."""
        return [f.name for f in dataclasses.fields(self)
                if getattr(self, f.name) != getattr(other, f.name)]

    def describe_diff(self, cached: CacheIdentity) -> str:
        """'weights_sha256 (cached 1a2b3c4d5e6f, now 9f8e7d6c5b4a), ...' for messages."""
        parts = []
        for name in self.diff(cached):
            old, new = _short(getattr(cached, name)), _short(getattr(self, name))
            parts.append(f"{name} (cached {old}, now {new})")
        return ", ".join(parts)


def _short(value: str) -> str:
    return value if len(value) <= 40 else value[:12] + "..."
