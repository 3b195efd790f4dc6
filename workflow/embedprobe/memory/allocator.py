"""One malloc arena for all of a job's threads, so its peak memory does not hang on timing.

glibc moves a thread that finds its arena locked to another arena, and the thread stays there;
memory freed into one arena is not reused by allocations from another. With reader threads and
torch's threads busy at once, which arena the next batch's activations land in depends on
timing, and each arena keeps its own freed batch. The same 1 h demo embed (BIOT, 2 reader
threads; scripts/bench_embed_memory.py) peaked 665-702 MB with an arena per thread
(MALLOC_ARENA_MAX=8, as glibc does by default) and 617-643 MB with one, at the same speed; a CI
run once measured it ~15% above its estimate.
"""

from __future__ import annotations

import ctypes
import os

M_ARENA_MAX = -8  # glibc's mallopt parameter


def use_one_malloc_arena() -> bool:
    """Limit glibc to one arena. Call before the process starts a second thread: the limit is
    read when the first extra arena would be made. MALLOC_ARENA_MAX, when set, wins. True when
    the limit was set (False off glibc)."""
    if os.environ.get("MALLOC_ARENA_MAX"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(M_ARENA_MAX, 1))
