"""The parts a window index is handed over in: which rows each holds, how many are in flight,
and what the largest asks of a reader (preflight sizes the readers by it).

A recording is handed to the model in parts of at most PART_WINDOWS windows, in index order;
the readers (pipeline/reader_threads.py, pipeline/reader_processes.py) make one part at a time
each (pipeline/window_recipe.make_windows). Pure functions of the index table: a reader
process imports this module, so it stays free of torch and pandas (start-up, memory).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from embedprobe.pipeline.filters import reach as filter_reach
from embedprobe.pipeline.preprocess import recorded_span

if TYPE_CHECKING:
    import pandas as pd

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


def statistic_stretch(epoch_seconds: float, sfreq: float) -> int:
    """Recorded samples of each stretch a recording's statistic is computed from
    (window_recipe.streamed_statistic): those a part of PART_WINDOWS adjacent windows spans,
    so that computing it holds no more than making a part does."""
    return max(1, int(round(PART_WINDOWS * epoch_seconds * sfreq)))


def statistic_read(prep, epoch_seconds: float, sfreq: float, n_samples: int) -> int:
    """Recorded samples a reader reads and filters at once for the statistic of a recording of
    `n_samples` (`prep`: its pipeline/protocol.Preprocessing): a stretch and the filters'
    reach on each side, the whole recording where it is one stretch; 0 where the model needs
    no statistic, or where whole recordings are read for their parts (the part's own read
    gives it)."""
    if not prep.normalisation or prep.whole_recordings:
        return 0
    stretch = statistic_stretch(epoch_seconds, sfreq)
    if n_samples <= stretch:
        return n_samples
    return min(n_samples, stretch + 2 * filter_reach(prep.filters, sfreq))


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

