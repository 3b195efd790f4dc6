"""One malloc arena for all of a job's threads, so its peak memory does not hang on timing;
the freed heap given back between batches (FreedHeapRelease).

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
import functools
import os
import time

M_ARENA_MAX = -8  # glibc's mallopt parameter


def use_one_malloc_arena() -> bool:
    """Limit glibc to one arena. Call before the process starts a second thread: the limit is
    read when the first extra arena would be made. MALLOC_ARENA_MAX, when set, wins. True when
    the limit was set (False off glibc)."""
    if os.environ.get("MALLOC_ARENA_MAX"):
        return False
    mallopt = _glibc("mallopt")
    return bool(mallopt(M_ARENA_MAX, 1)) if mallopt else False


# A batch that takes this long pays for a release and its page faults (~20 ms) with a few
# percent; a fast model's batches (~0.1 s) would lose ~20% and reuse their blocks anyway.
HEAP_RELEASE_MIN_BATCH_S = 0.5


class FreedHeapRelease:
    """Gives the pages of freed heap blocks back to the kernel (glibc's malloc_trim) after each
    stored batch that took at least `min_batch_s` (0: after every batch; None: never).

    A forward pass frees its activations into the heap, and glibc keeps them for reuse; when the
    next pass's blocks do not fit among them (BIOT's, beside the readers' copies), the heap
    grows while the freed pages stay resident: BIOT's embed held ~1.33x the one-batch growth
    check measures. Released, the fitted factor fell to 1.144 and BIOT's long-file peak by a
    third (docs/measurements/2026-12-04-heap-release.md)."""

    def __init__(self, min_batch_s: float | None = HEAP_RELEASE_MIN_BATCH_S,
                 clock=time.monotonic):
        self.min_batch_s, self.clock = min_batch_s, clock
        self.trims = 0
        self._since = clock()

    def after_batch(self) -> bool:
        """Trim when the batch since the last call took long enough; True when it trimmed."""
        now = self.clock()
        took, self._since = now - self._since, now
        if self.min_batch_s is None or took < self.min_batch_s or not release_freed_heap():
            return False
        self.trims += 1
        return True


def release_freed_heap() -> bool:
    """Give the pages of freed heap blocks back to the kernel now (glibc's malloc_trim).
    False off glibc."""
    malloc_trim = _glibc("malloc_trim")
    if malloc_trim is None:
        return False
    malloc_trim(0)
    return True


@functools.cache
def _glibc(name: str):
    """The C library's function `name`, or None off glibc."""
    try:
        return getattr(ctypes.CDLL(None), name)
    except (OSError, AttributeError):
        return None
