"""braindecode's models, imported without MOABB.

braindecode's package imports MOABB (and through it MOABB's benchmark and paradigms) only to
copy two MOABB docstrings onto its own dataset classes, inside `except ModuleNotFoundError`
(braindecode/datasets/moabb.py). Since MOABB is a dependency here, every check and embed job
paid for that import at start-up (docs/measurements/2026-12-08-suite-time.md). MOABB is hidden
while braindecode loads and is importable as usual afterwards; a job that has already imported
it (a MOABB reader) keeps it.
"""

from __future__ import annotations

import sys
from types import ModuleType

MODULE = "braindecode.models"


def braindecode_models() -> ModuleType:
    """`braindecode.models`, imported on the calling thread (core/thread_imports.py)."""
    if MODULE in sys.modules:
        return sys.modules[MODULE]
    hidden = "moabb" not in sys.modules
    if hidden:
        sys.modules["moabb"] = None  # an import of it raises ModuleNotFoundError meanwhile
    try:
        import braindecode.models
    finally:
        if hidden and "moabb" in sys.modules and sys.modules["moabb"] is None:
            del sys.modules["moabb"]
    return braindecode.models
