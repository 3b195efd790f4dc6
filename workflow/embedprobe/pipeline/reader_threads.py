"""Reader threads: parts of a recording made ahead of the model by threads of this process,
beside a CPU encoder. A `source` here is the WindowSource (pipeline/window_source.py) whose
parts they make; they import what the reading code needs first (reader_processes.reader_imports).
"""

from __future__ import annotations

import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING

import numpy as np

from embedprobe.core.thread_imports import import_before_threads
from embedprobe.pipeline.reader_processes import reader_imports

if TYPE_CHECKING:
    import pandas as pd


class ThreadReaders:
    """Reader threads of this process: the kernels (EDF decoding, filtering, selection) release
    the GIL; a fresh array per recording."""

    def __init__(self, source, workers: int):
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

