"""Modules a job's threads will use, imported on the calling thread before they start.

Python imports each module under a lock of its own. Two threads that import modules of one
package for the first time at once can each hold a lock the other waits for; Python breaks
that cycle by handing one of them a partly initialised module. Seen here under load as MNE's
docstring table half built (`KeyError: 'verbose'` in `mne.utils.docs.fill_doc`) while reader
threads imported MNE and the main thread imported braindecode, which imports MNE-BIDS
(docs/measurements/2026-12-06-import-race.md). So a job imports, on its main thread, what its
threads will import, and only then starts them: a thread then finds every module whole in
`sys.modules` (tests/pipeline/test_thread_imports.py runs the jobs with an import recorder).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable


def import_before_threads(modules: Iterable[str]) -> None:
    """Import each module here, on the calling thread (already imported ones cost nothing)."""
    for name in modules:
        importlib.import_module(name)
