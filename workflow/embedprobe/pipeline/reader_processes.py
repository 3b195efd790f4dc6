"""Reader processes: parts of a recording made in other processes, handed over in shared memory.

Processes keep the model's own thread free of the readers' Python work (what a fast GPU needs).
Each reader forks from a small server process that imported the reading code once
(READER_PRELOAD), makes a part with the window recipe (pipeline/window_recipe.make_windows)
straight into a shared-memory slot, and ends when the embed process does. There are
`workers + 2` slots (the parts in flight, pipeline/window_parts.in_flight, and the part being
batched), each the size of the largest part. A `source` here is the WindowSource
(pipeline/window_source.py) whose parts they make.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from contextlib import contextmanager
from typing import TYPE_CHECKING

import numpy as np

from embedprobe.core.errors import DataError, EmbedprobeError, OutOfMemory
from embedprobe.core.units import MIB
from embedprobe.pipeline.window_parts import in_flight
from embedprobe.pipeline.window_recipe import WindowRecipe, make_windows, share_statistics

# A reader process imports this module: it stays free of torch and pandas (start-up, memory).
if TYPE_CHECKING:
    import pandas as pd

_WORKER: dict = {}  # in a reader process: its recipe and the slots it has attached


def _worker_start(recipe: WindowRecipe, embed_pid: int, statistics: str) -> None:
    import signal
    import threading

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the embed process's to handle
    _WORKER.update(recipe=recipe, slots={})
    share_statistics(statistics)  # one reader computes a recording's statistic for all
    threading.Thread(target=_exit_with, args=(embed_pid,), daemon=True).start()


def _exit_with(embed_pid: int) -> None:
    """End this reader when the embed process is gone (a SIGKILL, the OOM killer). Nothing
    else would: a reader's parent is the forkserver, which itself waits for its readers, and
    both hold the job's stdout and stderr open (a caller reading them would wait forever)."""
    while _running(embed_pid):
        time.sleep(0.5)
    os._exit(0)


def _running(pid: int) -> bool:
    """False once `pid` has ended; a killed process stays a zombie until its parent reaps it,
    and its parent may be waiting for the job's output pipes, which the readers hold."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False
    except OSError:  # no /proc: a signal 0 tells whether it exists
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True


def _attach(name: str):
    from multiprocessing import shared_memory

    if name not in _WORKER["slots"]:
        _WORKER["slots"][name] = shared_memory.SharedMemory(name=name)
    return _WORKER["slots"][name]


def _worker_fill(slot: str, rec, starts: np.ndarray, index_sfreq: float | None
                 ) -> tuple[int, float]:
    """Make one recording's windows into shared slot `slot`: (windows, CPU seconds)."""
    began = time.process_time()
    recipe = _WORKER["recipe"]
    shape = (len(starts), recipe.n_inputs, recipe.window_samples)
    out = np.ndarray(shape, np.float32, buffer=_attach(slot).buf)
    make_windows(recipe, rec, starts, out, index_sfreq)
    del out  # no export of the buffer left behind
    return len(starts), time.process_time() - began


# What the reader processes' server imports once, before it forks them (~2.3 s here, ~100 MB,
# shared by the forked readers): the window source and what it imports (this module, the
# window recipe, the pools), MNE's EDF reader and the band-pass's check of its input (mne.epochs),
# the resampling's scipy.signal and the .mat reader's scipy.io. `mne.io` alone loads its
# readers lazily: every reader process then imported 49 modules for its first part (0.2 s of
# CPU each, half that part's cost). `_strptime` is what the EDF header's date parsing imports
# on first use (pandas brought it in while the reading code imported the task registry, which
# imported pandas).
READER_PRELOAD = ["embedprobe.pipeline.window_source", "mne.io.edf.edf", "mne.epochs",
                  "scipy.signal", "scipy.io", "_strptime"]


def reader_imports(source) -> list[str]:
    """What a reader imports on its first part: READER_PRELOAD, and the modules the dataset's
    reader imports only when it reads signals (its SIGNAL_IMPORTS, e.g. wfdb)."""
    return READER_PRELOAD + list(getattr(source.reader, "SIGNAL_IMPORTS", ()))


def reader_context():
    """forkserver: each reader forks from a small server process that imported the reading
    code once (not from the embed process, which holds torch, the model and its threads)."""
    import multiprocessing

    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(READER_PRELOAD)
    return context


def start_reader_server() -> None:
    """Start the readers' server now, so that its imports overlap the caller's own work."""
    from multiprocessing import forkserver

    reader_context()
    forkserver.ensure_running()


class ProcessReaders:
    """A bounded pool of reader processes writing into shared-memory slots: one for each part
    in flight and one for the part being batched."""

    def __init__(self, source, workers: int):
        from concurrent.futures import ProcessPoolExecutor
        from multiprocessing import shared_memory

        self.source = source
        recipe = source.recipe
        self.slot_bytes = max(1, source.largest_part() * recipe.window_bytes())
        count = in_flight(workers) + 1
        _require_shared_memory(self.slot_bytes, count)
        self.slots = []
        try:
            for _ in range(count):
                self.slots.append(shared_memory.SharedMemory(create=True, size=self.slot_bytes))
        except BaseException:
            self._free_slots()
            raise
        self.free = list(range(count))
        self.handed_out: int | None = None  # the slot the model is batching
        self.processes: dict = {}  # pid -> multiprocessing.Process
        # the readers' recording statistics (window_recipe.share_statistics): a few bytes each
        self.statistics = tempfile.mkdtemp(prefix="embedprobe-statistics-")
        self.pool = ProcessPoolExecutor(max_workers=workers, mp_context=reader_context(),
                                        initializer=_worker_start,
                                        initargs=(recipe, os.getpid(), self.statistics))

    def submit(self, recording: str, rows: pd.DataFrame):
        if recording not in self.source.recordings:
            raise DataError(f"recording {recording} of the window index is not in the dataset",
                            fix="rebuild the window index: the dataset changed")
        slot = self.free.pop()
        index_sfreq = float(rows["sfreq"].iloc[0]) if "sfreq" in rows and len(rows) else None
        with _main_module_hidden():  # a submit may start a reader process
            future = self.pool.submit(_worker_fill, self.slots[slot].name,
                                      self.source.recordings[recording],
                                      rows["start"].to_numpy(), index_sfreq)
        # the pool forgets a dead process; kept here, its exit code says why it died
        self.processes.update(getattr(self.pool, "_processes", None) or {})
        return future, slot

    def take(self, submitted) -> np.ndarray:
        future, slot = submitted
        if self.handed_out is not None:  # the model asked for more: it is done with that one
            self.free.append(self.handed_out)
            self.handed_out = None
        try:
            count, seconds = future.result()
        except EmbedprobeError:
            raise
        except Exception as exc:
            if type(exc).__name__ == "BrokenProcessPool":
                raise self._died() from exc
            raise
        self.source.reader_seconds += seconds
        self.handed_out = slot
        shape = (count, self.source.recipe.n_inputs, self.source.window_samples)
        return np.ndarray(shape, np.float32, buffer=self.slots[slot].buf)

    def _died(self) -> EmbedprobeError:
        # The pool's own thread reaps its broken processes: let it finish first. Polling a
        # forkserver child from two threads at once loses its exit status to one of them
        # (the other reads 255), and a SIGKILL read as 255 would not be called out of memory.
        self.pool.shutdown(wait=True, cancel_futures=True)
        for process in self.processes.values():
            process.join(timeout=5)  # the pool may not have reaped it yet
        codes = [p.exitcode for p in self.processes.values() if p.exitcode]
        killed = -9 in codes
        why = ("killed (signal 9), most likely out of memory" if killed
               else f"ended unexpectedly (exit codes {codes})")
        error = OutOfMemory if killed else EmbedprobeError
        return error(f"a reader process of embed was {why}",
                     fix="rerun: embed resumes at the last durable batch (with fewer reader "
                         "workers, embed.reader_threads, each holds less)")

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)
        self._free_slots()
        shutil.rmtree(self.statistics, ignore_errors=True)

    def _free_slots(self) -> None:
        for slot in self.slots:
            try:
                slot.close()
            except BufferError:  # an array still points into it: the mapping goes at exit
                pass
            slot.unlink()
        self.slots = []


@contextmanager
def _main_module_hidden():
    """multiprocessing makes each new process import the parent's __main__ (a script's own
    imports: torch, for one, ~1 s and ~300 MB a reader); the readers need only what their
    server preloaded. Without a file or spec to name it, __main__ is not imported there."""
    main = sys.modules.get("__main__")
    if main is None:
        yield
        return
    saved = {key: main.__dict__[key] for key in ("__file__", "__spec__") if key in main.__dict__}
    main.__dict__.pop("__file__", None)
    main.__spec__ = None
    try:
        yield
    finally:
        main.__dict__.pop("__spec__", None)
        main.__dict__.update(saved)


def _require_shared_memory(slot_bytes: int, slots: int) -> None:
    """Refuse to start when /dev/shm cannot hold the slots (containers often give it 64 MB):
    a full tmpfs would kill a reader with SIGBUS mid-recording."""
    needed = slot_bytes * slots
    try:
        stats = os.statvfs("/dev/shm")
    except OSError:
        return  # no /dev/shm to check (not Linux): shared_memory reports its own errors
    free = stats.f_bavail * stats.f_frsize
    if free < needed:
        raise EmbedprobeError(
            f"the reader processes need {needed / MIB:,.0f} MB of shared memory "
            f"({slots} slots of the largest part's windows), /dev/shm has "
            f"{free / MIB:,.0f} MB free",
            fix="give the job a larger /dev/shm (docker run --shm-size=...), or fewer reader "
                "workers (embed.reader_threads)")
