"""The closest valid name to a misspelt one, for usage errors (standard library only)."""

from __future__ import annotations

import difflib


def closest(name: str, choices) -> str:
    """' (did you mean X?)' when a close valid name exists, else ''."""
    match = difflib.get_close_matches(str(name), [str(c) for c in choices], n=1, cutoff=0.5)
    return f" (did you mean '{match[0]}'?)" if match else ""
