"""Model-ready windows of each recording, for check and embed: read, resample, cut, scale.

Generic over tasks and datasets: a recording's windows are its index rows (`start`: samples at
the recorded rate, from the start of its signal file) and the dataset's `epoch_seconds`; the
signals come from the dataset reader's `read_signals(rec, channels, span)` (datasets/base.py):
only the stretch of the file the windows need. Sleep epochs, seizure windows and motor-imagery
trials all come through here.

A recording is handed over in parts (PART_WINDOWS). Parts can be made ahead of the model by
reader threads (this process) or reader processes. Either way at most `workers + 1` parts are
in flight (one being made by each reader, and one more queued or made and waiting for the
model), and a new one is submitted only when the model takes one: memory stays bounded whatever
the model's speed. The one more keeps a reader that finished early busy while the model waits
for an older part (parts are taken in order). Processes keep the model's own thread free of the
readers' Python work (what a fast GPU needs); they hand the windows over in shared memory, in
`workers + 2` slots (those in flight and the part being batched), each the size of the largest
part.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import islice
from typing import TYPE_CHECKING

import numpy as np

from embedprobe.core.errors import DataError, EmbedprobeError, OutOfMemory
from embedprobe.core.thread_imports import import_before_threads
from embedprobe.core.units import MIB
from embedprobe.datasets.registry import FORMATS
from embedprobe.pipeline.channel_maps import (
    ChannelPlan,
    derive_inputs,
    input_positions,
    recorded_in,
)
from embedprobe.pipeline.filters import apply_filters, average_reference
from embedprobe.pipeline.filters import reach as filter_reach
from embedprobe.pipeline.preprocess import (
    centre_windows,
    cut_windows,
    divide_by_recording,
    model_starts,
    model_windows,
    recorded_span,
    recording_q95,
    recording_zscore,
    resample_whole_mne,
    scale,
    windows_resampled_each,
    zscore_by_recording,
    zscore_by_recording_clipped,
)
from embedprobe.pipeline.protocol import (
    CONTINUOUS,
    EACH_WINDOW,
    RECORDING_Q95,
    RECORDING_ZSCORE,
    RECORDING_ZSCORE_CLIP15,
    Preprocessing,
)

# A reader process imports this module: it stays free of torch and pandas (start-up, memory).
if TYPE_CHECKING:
    import pandas as pd

    from embedprobe.models.registry import ModelSpec
    from embedprobe.pipeline.context import DatasetContext

THREADS, PROCESSES = "threads", "processes"

# A recording reaches the model in parts of at most this many windows (4 h 16 min of 30-s
# epochs), each read from its own stretch of the file: the first batch waits for one part, not
# a whole night; many readers share out a few long recordings; the readers hold parts, not
# nights. A reader thread opens a file once for the parts it makes of it (datasets/edf.py).
PART_WINDOWS = 512


def parts(table: pd.DataFrame, whole: bool = False) -> Iterator[tuple[str, pd.DataFrame]]:
    """(recording, rows) in index order: each recording's rows in parts of at most
    PART_WINDOWS, or whole where the dataset band-passes whole recordings (`whole`: each part
    would read and filter all of it again).

    Parts end at recording ends and at every PART_WINDOWS-th row of `table`: a batch whose
    size divides PART_WINDOWS (32 ... 512) then never spans two parts of one recording, and
    `embed.batches` copies no more than it did with whole recordings."""
    position = 0  # rows of `table` before this recording
    for recording, rows in table.groupby("recording", sort=False):
        first = 0
        while first < len(rows):
            room = PART_WINDOWS - (position + first) % PART_WINDOWS
            stop = len(rows) if whole else min(len(rows), first + room)
            yield recording, rows.iloc[first:stop]
            first = stop
        position += len(rows)


def parts_from(table: pd.DataFrame, first_row: int, whole: bool = False
               ) -> Iterator[tuple[str, pd.DataFrame, int]]:
    """(recording, rows, windows to skip) of `parts(table)` from row `first_row` on. A resume
    mid-part makes the whole part and skips its first windows: each part reads the same
    stretch as in a fresh run, so its filtered samples, and so its windows, are the same bytes
    (a stretch that began at the resume row would round differently)."""
    position = 0
    for recording, rows in parts(table, whole):
        end = position + len(rows)
        if end > first_row:
            yield recording, rows, max(0, first_row - position)
        position = end


def in_flight(workers: int) -> int:
    """Parts submitted to `workers` readers and not yet taken by the model: one each, and one
    more that a reader starts as soon as it is done with its own (0 without readers)."""
    return workers + 1 if workers > 0 else 0


@dataclass(frozen=True)
class LargestPart:
    """What the largest part of a window index asks of a reader (preflight's embed inputs)."""

    windows: int
    samples: int | None  # recorded samples read for it; None: whole recordings are read


def part_spans(table: pd.DataFrame, whole: bool, to_sfreq: float, window_samples: int,
               filters: tuple = ()) -> Iterator[tuple[str, int, tuple[int, int] | None]]:
    """(recording, windows, recorded span) of each part of `table` in stream order (parts):
    the recorded samples [first, stop) its windows span (window_samples at the model rate
    `to_sfreq`, the `filters`' reach included; stop may pass the recording's end). None where
    make_windows reads whole files: whole recordings, or an index without its `sfreq` column
    (the recorded rate)."""
    spans = not whole and "sfreq" in table
    for recording, rows in parts(table, whole):
        span = None
        if spans:
            sfreq = float(rows["sfreq"].iloc[0])
            span = recorded_span(rows["start"].to_numpy(), sfreq, to_sfreq, window_samples,
                                 extra=filter_reach(filters, sfreq))
        yield recording, len(rows), span


def largest_part(table: pd.DataFrame, whole: bool, to_sfreq: float, window_samples: int,
                 filters: tuple = ()) -> LargestPart:
    """The most windows and recorded samples any part of `table` holds (part_spans; samples
    is None where whole files are read)."""
    windows, samples = 0, 0
    for _recording, n_windows, span in part_spans(table, whole, to_sfreq, window_samples,
                                                  filters):
        windows = max(windows, n_windows)
        if span is not None:
            samples = max(samples, span[1] - span[0])
    return LargestPart(windows, samples if not whole and "sfreq" in table else None)


@dataclass(frozen=True)
class WindowRecipe:
    """How a recording becomes model windows: all a reader process needs (it pickles)."""

    reader_format: str  # datasets/registry.FORMATS key
    plan: ChannelPlan  # the recorded channels read, and the model input each feeds
    sfreq: float  # the model's rate
    epoch_seconds: float  # one window (the dataset's epoch_seconds, or the variant's trial)
    preprocessing: Preprocessing  # filters, normalisation, scaling (pipeline/protocol.py)
    # seconds from a unit's indexed start to its window's (datasets/registry.entry_window: -1
    # for motor imagery's no_filtering trial, which starts at the cue)
    start_seconds: float = 0.0

    @property
    def channels(self) -> tuple[str, ...]:
        """The recorded channels read, in read order."""
        return tuple(self.plan.recorded)

    @property
    def n_inputs(self) -> int:
        """The model's input channels (slots without a source included: they stay zero)."""
        return len(self.plan.model_names)

    @property
    def window_samples(self) -> int:
        return int(round(self.epoch_seconds * self.sfreq))

    def window_bytes(self) -> int:
        return self.n_inputs * self.window_samples * 4


def make_windows(recipe: WindowRecipe, rec, starts: np.ndarray, out: np.ndarray | None = None,
                 index_sfreq: float | None = None) -> np.ndarray:
    """One recording's (len(starts), model inputs, samples) float32 model windows, into `out`
    if given. `index_sfreq` is the rate the index was built at: a file now at another rate
    means the index is stale. Only the stretch of the file the windows need, with the
    filters' reach on each side, is read (trimmed wake and unscored time stay on disk),
    unless the protocol filters whole recordings."""
    starts = np.asarray(starts)
    if recipe.start_seconds:  # the index's starts are at the recorded rate
        rate = index_sfreq or FORMATS[recipe.reader_format].reader.read_header(rec).sfreq
        starts = starts + int(round(recipe.start_seconds * rate))
    prep = recipe.preprocessing
    # first, so that a reader holds the whole recording or its part's stretch, not both
    statistic = (recording_statistic(recipe, rec, index_sfreq)
                 if prep.normalisation else None)
    span = None
    if not prep.whole_recordings and index_sfreq is not None and len(starts):
        span = recorded_span(starts, index_sfreq, recipe.sfreq, recipe.window_samples,
                             extra=filter_reach(prep.filters, index_sfreq))
    signals, span = _read(recipe, rec, span, index_sfreq)
    data = apply_filters(signals, span.sfreq, prep.filters)
    del signals  # the filtered copy replaces it
    shape = (len(starts), recipe.n_inputs, recipe.window_samples)
    if out is None:
        out = np.empty(shape, np.float32)
    positions = input_positions(recipe.plan)
    direct = np.array_equal(positions, np.arange(recipe.n_inputs))
    windows = resampled_windows(prep, data, span, recipe, starts, out if direct else None)
    if statistic is not None:
        NORMALISERS[prep.normalisation][1](windows, statistic)
    if not direct:  # slots without a source stay zero
        out[:] = 0
        out[:, positions] = windows
    return out


def resampled_windows(prep: Preprocessing, data: np.ndarray, span: ReadSpan,
                      recipe: WindowRecipe, starts: np.ndarray, out: np.ndarray | None
                      ) -> np.ndarray:
    """The windows at the model's rate, centred if the protocol says so, scaled by the
    model's convention, as `prep.resampling` makes them (into `out` where one is given)."""
    length = recipe.window_samples
    if prep.resampling == CONTINUOUS:
        windows = model_windows(data, span.sfreq, recipe.sfreq, starts, length, prep.scaling,
                                out=out, first_sample=span.first)
        return centre_windows(windows) if prep.centre_windows else windows
    if prep.resampling == EACH_WINDOW:  # the reference centres before it resamples
        windows = windows_resampled_each(data, span.sfreq, recipe.sfreq, starts, length,
                                         span.first, centre=prep.centre_windows)
    else:  # WHOLE_MNE: a whole run (span.first 0), then its trials
        whole = resample_whole_mne(data, span.sfreq, recipe.sfreq)
        windows = cut_windows(whole, model_starts(starts, span.sfreq, recipe.sfreq), length)
        if prep.centre_windows:
            centre_windows(windows)
    windows = scale(windows, prep.scaling, in_place=True)
    if out is None:
        return windows
    out[:] = windows
    return out


@dataclass(frozen=True)
class ReadSpan:
    first: int  # the recorded sample the data begins at (0: the whole recording)
    sfreq: float  # the recorded rate


def _read(recipe: WindowRecipe, rec, span: tuple[int, int] | None, index_sfreq: float | None
          ) -> tuple[np.ndarray, ReadSpan]:
    """The model inputs' recorded signals (channel-map derivations made) over `span`, or the
    whole recording: (inputs, samples) float32 in volts."""
    reader = FORMATS[recipe.reader_format].reader
    reference = recipe.preprocessing.average_reference
    channels = (recorded_in(recipe.plan, reader.read_header(rec).channels, rec.signal_path)
                if recipe.plan.choices else recipe.channels)  # a first_of: this recording's
    names = channels + tuple(c for c in reference if c not in channels)
    signals = reader.read_signals(rec, names, span=span)
    if span is not None and not signals.data.shape[-1]:  # past the end: the whole file says
        signals, span = reader.read_signals(rec, names), None  # by how much
    if index_sfreq is not None and signals.sfreq != index_sfreq:
        raise DataError(f"{rec.signal_path}: recorded at {signals.sfreq} Hz, but the window "
                        f"index was built at {index_sfreq} Hz",
                        fix="rebuild the window index: it no longer matches the recording")
    order = [signals.ch_names.index(name) for name in names]
    data = signals.data if order == list(range(len(order))) else signals.data[order]
    if reference:  # linear, like the filters after it: its order with them does not matter
        data = average_reference(data, names, reference)[:len(channels)]
    return (derive_inputs(recipe.plan, data),
            ReadSpan(span[0] if span else 0, float(signals.sfreq)))


# Per reader (thread or process): the statistic of the recordings it made parts of lately.
# Reader threads share it: one computes a recording's statistic while the others that want it
# wait for that value (two threads taking parts of one recording would otherwise each read and
# filter it whole, at once). Reader processes compute their own.
_STATISTICS: dict = {}
_STATISTICS_KEPT = 4
_STATISTICS_LOCK = threading.Lock()
_COMPUTING: dict = {}  # key -> the lock its computing thread holds


# Per-recording normalisation (protocol.RECORDING_NORMALISATIONS): (the statistic of a whole
# filtered recording, how windows are normalised by it in place).
NORMALISERS = {RECORDING_Q95: (recording_q95, divide_by_recording),
               RECORDING_ZSCORE: (recording_zscore, zscore_by_recording),
               RECORDING_ZSCORE_CLIP15: (recording_zscore, zscore_by_recording_clipped)}


def recording_statistic(recipe: WindowRecipe, rec, index_sfreq: float | None) -> np.ndarray:
    """The recording's per-input statistic over the whole filtered recording (the reference's
    recording_q95 for BIOT, its mean and SD for REVE), computed once per recording and
    reader."""
    key = (recipe, str(rec.signal_path))
    with _STATISTICS_LOCK:
        if key in _STATISTICS:
            return _STATISTICS[key]
        computing = _COMPUTING.setdefault(key, threading.Lock())
    with computing:
        with _STATISTICS_LOCK:  # computed by the thread this one waited for
            if key in _STATISTICS:
                return _STATISTICS[key]
        try:
            signals, span = _read(recipe, rec, None, index_sfreq)
            compute = NORMALISERS[recipe.preprocessing.normalisation][0]
            value = compute(apply_filters(signals, span.sfreq, recipe.preprocessing.filters))
            with _STATISTICS_LOCK:
                _STATISTICS[key] = value
                while len(_STATISTICS) > _STATISTICS_KEPT:
                    del _STATISTICS[next(iter(_STATISTICS))]
        finally:
            with _STATISTICS_LOCK:
                _COMPUTING.pop(key, None)
    return value


class WindowSource:
    """Model-ready windows of each recording of `table` (the window index), in index order."""

    reader_seconds = 0.0  # CPU seconds the readers spent making windows (benchmarks)

    def __init__(self, context: DatasetContext, spec: ModelSpec, plan: ChannelPlan,
                 table: pd.DataFrame):
        self.reader = context.reader
        self.recordings = {r.recording: r for r in context.recordings()}
        start, self.epoch_seconds = context.window(spec.bci_filtering)
        self.recipe = WindowRecipe(context.entry["format"], plan, spec.sfreq, self.epoch_seconds,
                                   context.preprocessing(spec), start)
        self.spec, self.plan, self.table = spec, plan, table

    @property
    def window_samples(self) -> int:
        return self.recipe.window_samples

    @property
    def whole_recordings(self) -> bool:
        """The filters run over whole recordings: they are read and handed over whole."""
        return self.recipe.preprocessing.whole_recordings

    def load(self, recording: str, rows: pd.DataFrame, out: np.ndarray | None = None
             ) -> np.ndarray:
        """The windows of `rows` (index rows of one recording), made in this process."""
        if recording not in self.recordings:
            raise DataError(f"recording {recording} of the window index is not in the dataset",
                            fix="rebuild the window index: the dataset changed")
        index_sfreq = float(rows["sfreq"].iloc[0]) if "sfreq" in rows and len(rows) else None
        return make_windows(self.recipe, self.recordings[recording], rows["start"].to_numpy(),
                            out, index_sfreq)

    def stream(self, first_row: int, workers: int, kind: str = THREADS) -> WindowStream:
        """Window arrays of each part (`parts`) in index order from row `first_row` on;
        `workers` readers (threads or processes) make them ahead of the model.

        Bounded by construction, whatever the model's speed: at most `in_flight(workers)`
        parts are in flight (being made, or made and waiting for the model), and a new one
        is submitted only when the model takes one; the one being batched is the only other
        part held.
        Without workers the next part is made when the model has finished the last one.
        With processes an array lives in a shared slot: it is valid until the next one is
        asked for (`batches` copies a part's tail before it asks).
        """
        return WindowStream(self, first_row, workers, kind)

    def largest_part(self) -> int:
        """Windows of the largest part the readers hand over (the slots' size)."""
        return largest_part(self.table, self.whole_recordings, self.recipe.sfreq,
                            self.window_samples, self.recipe.preprocessing.filters).windows


class WindowStream:
    """The iterator WindowSource.stream returns. `start()` sets the readers to work before the
    first array is asked for (embed starts a fresh run's readers while the model is built);
    `close()` stops them and frees their memory, also when nothing was asked for."""

    def __init__(self, source: WindowSource, first_row: int, workers: int, kind: str):
        self.source, self.workers, self.kind = source, workers, kind
        self.groups = parts_from(source.table, first_row, source.whole_recordings)
        self.readers: ThreadReaders | ProcessReaders | None = None
        self.in_flight: deque = deque()
        self._arrays: Iterator[np.ndarray] | None = None

    def start(self) -> WindowStream:
        if self.workers > 0 and self.readers is None:
            self.readers = (ProcessReaders(self.source, self.workers) if self.kind == PROCESSES
                            else ThreadReaders(self.source, self.workers))
            try:
                for rec, rows, skip in islice(self.groups, in_flight(self.workers)):
                    self.in_flight.append((self.readers.submit(rec, rows), skip))
            except BaseException:
                self._stop_readers()
                raise
        return self

    def __iter__(self) -> WindowStream:
        return self

    def __next__(self) -> np.ndarray:
        if self._arrays is None:
            self._arrays = self._made() if self.workers > 0 else self._made_here()
        return next(self._arrays)

    def _made_here(self) -> Iterator[np.ndarray]:
        for rec, rows, skip in self.groups:
            began = time.thread_time()
            windows = self.source.load(rec, rows)
            self.source.reader_seconds += time.thread_time() - began
            yield windows[skip:]

    def _made(self) -> Iterator[np.ndarray]:
        self.start()
        try:
            while self.in_flight:
                submitted, skip = self.in_flight.popleft()
                windows = self.readers.take(submitted)[skip:]
                following = next(self.groups, None)
                if following is not None:
                    rec, rows, following_skip = following
                    self.in_flight.append((self.readers.submit(rec, rows), following_skip))
                yield windows
                del windows  # not held while the next one is awaited
        finally:
            self._stop_readers()

    def close(self) -> None:
        if self._arrays is not None:
            self._arrays.close()
        self._stop_readers()

    def _stop_readers(self) -> None:
        if self.readers is not None:
            readers, self.readers = self.readers, None
            self.in_flight.clear()
            readers.close()


class ThreadReaders:
    """Reader threads of this process: the kernels (EDF decoding, filtering, selection) release
    the GIL; a fresh array per recording."""

    def __init__(self, source: WindowSource, workers: int):
        self.source = source
        import_before_threads(reader_imports(source))  # core/thread_imports.py
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="reader")

    def _load(self, recording: str, rows: pd.DataFrame) -> tuple[np.ndarray, float]:
        began = time.thread_time()
        windows = self.source.load(recording, rows)
        return windows, time.thread_time() - began

    def submit(self, recording: str, rows: pd.DataFrame) -> Future:
        return self.pool.submit(self._load, recording, rows)

    def take(self, future: Future) -> np.ndarray:
        windows, seconds = future.result()
        self.source.reader_seconds += seconds
        return windows

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)


# ---------------------------------------------------------------------- reader processes

_WORKER: dict = {}  # in a reader process: its recipe and the slots it has attached


def _worker_start(recipe: WindowRecipe, embed_pid: int) -> None:
    import signal
    import threading

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the embed process's to handle
    _WORKER.update(recipe=recipe, slots={})
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
# shared by the forked readers): this module, MNE's EDF reader and the band-pass's check of
# its input (mne.epochs), the resampling's scipy.signal and the .mat reader's scipy.io.
# `mne.io` alone loads its readers lazily: every reader process then imported 49 modules for
# its first part (0.2 s of CPU each, half that part's cost). `_strptime` is what the EDF
# header's date parsing imports on first use (pandas brought it in while this module imported
# the task registry, which imported pandas).
READER_PRELOAD = ["embedprobe.pipeline.window_source", "mne.io.edf.edf", "mne.epochs",
                  "scipy.signal", "scipy.io", "_strptime"]


def reader_imports(source: WindowSource) -> list[str]:
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

    def __init__(self, source: WindowSource, workers: int):
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
        self.pool = ProcessPoolExecutor(max_workers=workers, mp_context=reader_context(),
                                        initializer=_worker_start,
                                        initargs=(recipe, os.getpid()))

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
