"""Model-ready windows of a window index, in index order, for check and embed.

Each part of the index (pipeline/window_parts.py) is made by the window recipe
(pipeline/window_recipe.py), here or ahead of the model by reader threads (this process,
pipeline/reader_threads.py) or reader processes (pipeline/reader_processes.py). Either way at
most `workers + 1` parts are in flight (one being made by each reader, and one more queued or
made and waiting for the model), and a new one is submitted only when the model takes one:
memory stays bounded whatever the model's speed. The one more keeps a reader that finished
early busy while the model waits for an older part (parts are taken in order). Processes keep
the model's own thread free of the readers' Python work (what a fast GPU needs); they hand the
windows over in shared memory, in `workers + 2` slots (those in flight and the part being
batched), each the size of the largest part.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterator
from itertools import islice
from typing import TYPE_CHECKING

import numpy as np

from embedprobe.core.errors import DataError
from embedprobe.pipeline.channel_maps import ChannelPlan
from embedprobe.pipeline.reader_processes import ProcessReaders
from embedprobe.pipeline.reader_threads import ThreadReaders
from embedprobe.pipeline.window_parts import in_flight, largest_part, parts_from
from embedprobe.pipeline.window_recipe import WindowRecipe, make_windows

# The reader processes' server imports this module (reader_processes.READER_PRELOAD): it stays
# free of torch and pandas (start-up, memory).
if TYPE_CHECKING:
    import pandas as pd

    from embedprobe.models.registry import ModelSpec
    from embedprobe.pipeline.context import DatasetContext

THREADS, PROCESSES = "threads", "processes"


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

