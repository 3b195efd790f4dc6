"""How a recording becomes model windows: read, filter, resample, cut, scale, normalise.

Generic over tasks and datasets: a recording's windows are its index rows (`start`: samples at
the recorded rate, from the start of its signal file) and the dataset's `epoch_seconds`; the
signals come from the dataset reader's `read_signals(rec, channels, span)` (datasets/base.py):
only the stretch of the file the windows need. Sleep epochs, seizure windows and motor-imagery
trials all come through here. What it makes is a function of the recipe and the recording:
the reader threads and processes (pipeline/window_source.py) only choose where it runs.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from embedprobe.core.errors import DataError
from embedprobe.datasets.registry import FORMATS
from embedprobe.pipeline import window_parts
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
from embedprobe.pipeline.streamed_statistics import MomentsStream, Q95Stream


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
    # first, so that a reader holds a stretch of the statistic's or its part's, not both;
    # a whole recording read for its part gives its statistic itself
    statistic = (recording_statistic(recipe, rec, index_sfreq)
                 if prep.normalisation and not prep.whole_recordings else None)
    span = None
    if not prep.whole_recordings and index_sfreq is not None and len(starts):
        span = recorded_span(starts, index_sfreq, recipe.sfreq, recipe.window_samples,
                             extra=filter_reach(prep.filters, index_sfreq))
    signals, span = _read(recipe, rec, span, index_sfreq)
    data = apply_filters(signals, span.sfreq, prep.filters)
    del signals  # the filtered copy replaces it
    if prep.normalisation and prep.whole_recordings:
        statistic = whole_statistic(prep.normalisation, data)
    shape = (len(starts), recipe.n_inputs, recipe.window_samples)
    positions = input_positions(recipe.plan)
    direct = np.array_equal(positions, np.arange(recipe.n_inputs))
    if out is None:  # zeroed pages from the kernel: the slots without a source cost nothing
        out = np.empty(shape, np.float32) if direct else np.zeros(shape, np.float32)
    elif not direct:  # a reused slot: those slots zeroed, not the whole part (BIOT: 14 of 16)
        for first, stop in _runs_without_source(positions, recipe.n_inputs):
            out[:, first:stop] = 0
    windows = resampled_windows(prep, data, span, recipe, starts, out if direct else None)
    if statistic is not None:
        NORMALISERS[prep.normalisation][1](windows, statistic)
    if not direct:
        for row, position in enumerate(positions.tolist()):
            out[:, position] = windows[:, row]
    return out


def _runs_without_source(positions: np.ndarray, n_inputs: int) -> list[tuple[int, int]]:
    """[first, stop) runs of model inputs no recorded channel feeds."""
    empty = np.ones(n_inputs, bool)
    empty[positions] = False
    edges = np.flatnonzero(np.diff(np.concatenate([[0], empty.astype(np.int8), [0]])))
    return list(zip(edges[::2].tolist(), edges[1::2].tolist(), strict=True))


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
# filter it whole, at once). Reader processes share theirs through files (_SHARED below).
_STATISTICS: dict = {}
_STATISTICS_KEPT = 4
_STATISTICS_LOCK = threading.Lock()
_COMPUTING: dict = {}  # key -> the lock its computing thread holds
# Reader processes (pipeline/reader_processes.py) share theirs through files in this folder
# (set in each reader by share_statistics): two processes taking parts of one recording
# computed its statistic each, the whole recording read and filtered twice
# (docs/measurements/2026-12-08-reader-speed.md). One computes it under a file lock while the
# others wait for its file, as the threads do above.
_SHARED: dict = {"folder": None}


def share_statistics(folder: str | None) -> None:
    """Share recording statistics with the other readers through files in `folder`."""
    _SHARED["folder"] = folder


# Per-recording normalisation (protocol.RECORDING_NORMALISATIONS): (the stream that computes
# the statistic of a whole filtered recording one stretch at a time, how windows are
# normalised by it in place).
NORMALISERS = {RECORDING_Q95: (Q95Stream, divide_by_recording),
               RECORDING_ZSCORE: (MomentsStream, zscore_by_recording),
               RECORDING_ZSCORE_CLIP15: (MomentsStream, zscore_by_recording_clipped)}


def recording_statistic(recipe: WindowRecipe, rec, index_sfreq: float | None) -> np.ndarray:
    """The recording's per-input statistic over the whole filtered recording (the reference's
    recording_q95 for BIOT, its mean and SD for REVE), computed once per recording and
    reader, from one stretch at a time (streamed_statistic)."""
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
            value = _shared_statistic(recipe, rec, index_sfreq)
            with _STATISTICS_LOCK:
                _STATISTICS[key] = value
                while len(_STATISTICS) > _STATISTICS_KEPT:
                    del _STATISTICS[next(iter(_STATISTICS))]
        finally:
            with _STATISTICS_LOCK:
                _COMPUTING.pop(key, None)
    return value


def _shared_statistic(recipe: WindowRecipe, rec, index_sfreq: float | None) -> np.ndarray:
    """streamed_statistic, computed by one reader process and read back by the others (the
    readers of one embed run share one recipe: the recording names the value)."""
    folder = _SHARED["folder"]
    if folder is None:
        return streamed_statistic(recipe, rec, index_sfreq)
    import fcntl
    import hashlib
    import os

    name = os.path.join(folder, hashlib.sha256(str(rec.signal_path).encode()).hexdigest())
    with open(name + ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also on an error
        if os.path.exists(name + ".npy"):
            return np.load(name + ".npy")
        value = streamed_statistic(recipe, rec, index_sfreq)
        np.save(name + ".part.npy", value)
        os.replace(name + ".part.npy", name + ".npy")
    return value


def whole_statistic(normalisation: str, data: np.ndarray) -> np.ndarray:
    """The statistic a normalisation (NORMALISERS) takes of a whole filtered recording in
    memory (one stretch of the stream)."""
    stream = NORMALISERS[normalisation][0](len(data), data.shape[-1])
    stream.add(data)
    if stream.needs_second_pass():
        stream.add(data)
    return stream.result()


def streamed_statistic(recipe: WindowRecipe, rec, index_sfreq: float | None) -> np.ndarray:
    """The statistic of the whole filtered recording, from stretches of
    window_parts.statistic_stretch samples on a fixed grid from its start, each read and
    filtered with the filters' reach on each side (or up to the recording's ends) and cut
    back to its own samples: each
    sample as the whole recording's filtering gives it, to float32 rounding
    (pipeline/filters.py), whichever parts and readers the recording is made in. A recording
    of one stretch is filtered whole, as before: the same bytes."""
    prep = recipe.preprocessing
    header = FORMATS[recipe.reader_format].reader.read_header(rec)
    stretch = window_parts.statistic_stretch(recipe.epoch_seconds, header.sfreq)
    stream = None
    while stream is None or stream.needs_second_pass():
        for data in _filtered_stretches(recipe, rec, index_sfreq, header, stretch):
            if stream is None:
                stream = NORMALISERS[prep.normalisation][0](len(data), stretch)
            stream.add(data)
    return stream.result()


def _filtered_stretches(recipe: WindowRecipe, rec, index_sfreq: float | None, header,
                        stretch: int):
    """(inputs, samples) filtered stretches of the recording, in order, together its whole."""
    prep = recipe.preprocessing
    if header.n_samples <= stretch:  # one stretch: the whole recording, as the reference
        signals, span = _read(recipe, rec, None, index_sfreq)
        yield apply_filters(signals, span.sfreq, prep.filters)
        return
    reach = filter_reach(prep.filters, header.sfreq)
    for first in range(0, header.n_samples, stretch):
        stop = min(header.n_samples, first + stretch)
        signals, span = _read(recipe, rec, (max(0, first - reach), stop + reach), index_sfreq)
        data = apply_filters(signals, span.sfreq, prep.filters)
        del signals
        yield data[:, first - span.first:stop - span.first]
        del data
