"""Model windows as check and embed make them: the reference protocol's, step by step (whole
recordings filtered, each window resampled on its own, scaled; BIOT's 16 slots), to float32
tolerance, and the same bytes from threads or reader processes, any window starts and lengths;
continuous resampling the same bytes as the pipeline before the rewrite (whole-night
resampling, a fancy-indexed cut, np.quantile scaling); reader processes bounded, cleaned up,
and loud when one dies."""

import json
import os
import signal
import time
from dataclasses import replace
from fractions import Fraction
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from scipy.signal import resample_poly

from embedprobe.core.config import load_config
from embedprobe.core.errors import DataError, EmbedprobeError, OutOfMemory, UsageError
from embedprobe.datasets.sleep_edf import reader as sleep_edf
from embedprobe.datasets.sleep_edf.lookalike import generate
from embedprobe.models.registry import model_spec
from embedprobe.pipeline.channel_maps import ChannelPlan, channel_plan, input_positions
from embedprobe.pipeline.context import DatasetContext
from embedprobe.pipeline.filters import FilterStep
from embedprobe.pipeline.filters import reach as filter_reach
from embedprobe.pipeline.index import build_index
from embedprobe.pipeline.preprocess import abs_quantile, model_windows, recorded_span
from embedprobe.pipeline.protocol import Preprocessing
from embedprobe.pipeline.reader_processes import ProcessReaders
from embedprobe.pipeline.window_parts import PART_WINDOWS, largest_part
from embedprobe.pipeline.window_source import PROCESSES, THREADS, WindowSource

from helpers.results import roots_in

DATASET = "sleep_edf_demo"
LINE_FREQ = 50.0  # the demo's, as Sleep-EDF's (config/datasets.yaml): above Nyquist at 100 Hz
FACTORS = {"microvolts": 1e6, "millivolts": 1e3, "nanovolts": 1e9, "0.1mV": 1e4, "none": 1.0}


def reference_windows(signals, sfreq, to_sfreq, starts, length, scaling):
    """The pipeline before the rewrite, step by step: resample the whole night, cut by fancy
    indexing, scale with np.quantile."""
    signals = signals.astype(np.float32)
    if sfreq != to_sfreq:
        ratio = Fraction(to_sfreq / sfreq).limit_denominator(1000)
        signals = resample_poly(signals, ratio.numerator, ratio.denominator, axis=-1)
    signals = signals.astype(np.float32, copy=False)
    starts = np.round(np.asarray(starts) * (to_sfreq / sfreq)).astype(np.int64)
    view = np.lib.stride_tricks.sliding_window_view(signals, length, axis=-1)
    windows = view.transpose(1, 0, 2)[starts].astype(np.float32)
    if scaling == "percentile95":
        windows /= np.quantile(np.abs(windows), 0.95, axis=-1, keepdims=True) + np.float32(1e-8)
    else:
        windows *= np.float32(FACTORS[scaling.removesuffix("_clip")])
        if scaling.endswith("_clip"):  # CBraMod: +-100 µV, +-1 in units of 100 µV
            windows = np.clip(windows, -1.0, 1.0)
    return windows


RATES = [(100, 200), (100, 100), (250, 200), (256, 200), (200, 256), (128, 200), (512, 200),
         (100, 250)]


@pytest.mark.parametrize("scaling", ["percentile95", "0.1mV", "0.1mV_clip", "microvolts",
                                     "nanovolts"])
def test_model_windows_equal_the_whole_night_pipeline_bit_for_bit(scaling):
    """Random recordings, rates, window lengths and starts (unsorted, overlapping, at both ends,
    far apart so that several stretches are resampled): the same bytes."""
    rng = np.random.default_rng(0)
    for trial in range(120):
        sfreq, to_sfreq = RATES[trial % len(RATES)]
        seconds = float(rng.choice([1, 4, 10, 30]))
        length, length_in = round(seconds * to_sfreq), round(seconds * sfreq)
        n = int(rng.integers(length_in + 2, 80 * length_in))
        signals = (rng.standard_normal((int(rng.integers(1, 4)), n)) * 3e-5).astype(np.float32)
        if trial % 5 == 0:
            signals[:, : n // 3] = 0  # flat stretches: the percentile is 0
        last_in = n - length_in
        # a start whose window at the model rate ends past the resampled signal is refused
        n_out = n if sfreq == to_sfreq else -(-n * to_sfreq // sfreq)
        fits = [s for s in range(0, last_in + 1)
                if round(s * to_sfreq / sfreq) + length <= n_out]
        starts = rng.choice(fits, size=int(rng.integers(1, 30)))
        if trial % 3 == 0:
            starts = np.concatenate([[fits[0], fits[-1]], starts])  # both ends of the night
        expected = reference_windows(signals, sfreq, to_sfreq, starts, length, scaling)
        got = model_windows(signals, sfreq, to_sfreq, starts, length, scaling)
        assert got.dtype == np.float32 and got.shape == expected.shape
        assert got.tobytes() == expected.tobytes(), (trial, sfreq, to_sfreq, n, seconds)
        # a part of the windows from only the stretch they span (what a reader reads)
        part = rng.choice(len(starts), size=int(rng.integers(1, len(starts) + 1)), replace=False)
        first, stop = recorded_span(starts[part], sfreq, to_sfreq, length)
        assert 0 <= first and (sfreq == to_sfreq or first % Fraction(to_sfreq / sfreq)
                                                    .limit_denominator(1000).denominator == 0)
        got = model_windows(signals[:, first:stop], sfreq, to_sfreq, starts[part], length,
                            scaling, first_sample=first)
        assert got.tobytes() == expected[part].tobytes(), (trial, sfreq, to_sfreq, first, stop)


@pytest.mark.parametrize("up", [2, 3, 4, 5])
def test_integer_upsampling_is_resample_poly_bit_for_bit(up):
    """preprocess.resample's own loop for whole-number rate ratios (100 -> 200 Hz, ...)."""
    from embedprobe.pipeline.preprocess import resample

    rng = np.random.default_rng(up)
    for n in (1, 2, 7, 50, 999, 20_001, 40_000):
        x = (rng.standard_normal((int(rng.integers(1, 4)), n)) * 3e-5).astype(np.float32)
        x[:, : n // 4] = 0
        expected = resample_poly(x, up, 1, axis=-1)
        got = resample(x, 100, 100 * up)
        assert got.dtype == np.float32 and got.tobytes() == expected.tobytes(), (up, n)


def test_a_2x_upsamplings_single_tap_phase_is_the_full_sum_bit_for_bit(monkeypatch):
    """Every second output of a 2x upsampling is 1.0005 x one input sample plus terms of
    ~1e-17: that product alone where it is provably the sum, the full sum where it may not be
    (exact zeros of either sign, samples tiny against the peak), and no shortcut at all for a
    signal that is not finite."""
    from embedprobe.pipeline import preprocess

    shortcut = []
    original = preprocess._single_tap_sums
    monkeypatch.setattr(preprocess, "_single_tap_sums",
                        lambda *args: shortcut.append(1) or original(*args))
    rng = np.random.default_rng(11)
    x = (rng.standard_normal((2, 70_000)) * 3e-5).astype(np.float32)
    x[0, rng.choice(70_000, 700)] = 0.0
    x[1, rng.choice(70_000, 700)] = -0.0
    x[1, rng.choice(70_000, 300)] = 1e-21  # below 2**27 * 4e-16 * the peak
    x[0, 5] = 0.05  # the peak
    got = preprocess.resample(x, 100, 200)
    assert got.tobytes() == resample_poly(x, 2, 1, axis=-1).tobytes()
    assert len(shortcut) == 3  # one phase of two, in blocks of UPSAMPLE_BLOCK, not the other
    shortcut.clear()
    x[1, 40_000] = np.inf
    got = preprocess.resample(x, 100, 200)
    np.testing.assert_array_equal(got, resample_poly(x, 2, 1, axis=-1))  # NaN where it is
    assert np.isnan(got).any() and not shortcut


def test_model_windows_write_into_a_given_array_and_refuse_windows_past_the_end():
    signals = np.random.default_rng(1).standard_normal((2, 3000)).astype(np.float32) * 1e-5
    out = np.full((3, 2, 600), np.nan, np.float32)
    got = model_windows(signals, 100, 200, np.array([0, 900, 2700]), 600, "0.1mV", out=out)
    assert got is out and np.isfinite(out).all()
    with pytest.raises(UsageError, match="runs past the signal end"):
        model_windows(signals, 100, 200, np.array([2701]), 600, "0.1mV")


@pytest.mark.parametrize("length", [4, 5, 100, 2000, 6000, 7681])
def test_abs_quantile_is_numpys_quantile_bit_for_bit(length):
    """Ties, zeros, NaN (one, or more than the top 5%) and infinities included."""
    x = np.random.default_rng(length).standard_normal((40, 3, length)).astype(np.float32)
    x[0] = 0
    x[1, 0, 3] = np.nan
    x[2, 1] = 1.0
    x[3, 2, ::2] = np.inf
    x[4, :, : length // 2] = np.nan
    x[5] = np.round(x[5])
    with np.errstate(invalid="ignore"):
        expected = np.quantile(np.abs(x), 0.95, axis=-1, keepdims=True)
        got = abs_quantile(x, 0.95)
    assert got.dtype == expected.dtype and got.tobytes() == expected.tobytes()


# ------------------------------------------------------------------ on generated recordings


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """Three short generated nights and their window index."""
    root = tmp_path_factory.mktemp("window_source")
    config = load_config()
    config["datasets"][DATASET].update(expected_recordings=3, path="sleep-edf")
    roots = roots_in(root)
    generate(Path(roots["data_root"]) / "sleep-edf", n_subjects=3, nights=1, hours=0.25, seed=5)
    return config, roots, build_index(DatasetContext.build(config, roots, DATASET))


def source_for(demo, model, table=None):
    config, roots, index = demo
    spec = model_spec(config, model, DATASET)
    plan = channel_plan(config, DATASET, spec.family)
    return WindowSource(DatasetContext.build(config, roots, DATASET),
                        spec, plan, index if table is None else table)


def reference_filtered(data, sfreq, line_freq):
    """A whole recording filtered as the reference's loaders do, with scipy directly: a
    5th-order Butterworth high-pass at 0.5 Hz, then an iirnotch (Q 30) at the line frequency
    where it lies below Nyquist, each forwards and backwards in float64, float32 after each."""
    from scipy.signal import butter, iirnotch, sosfiltfilt

    out = sosfiltfilt(butter(5, 0.5, btype="high", fs=sfreq, output="sos"),
                      data.astype(np.float64), axis=-1).astype(np.float32)
    if line_freq < sfreq / 2:
        b, a = iirnotch(line_freq, 30.0, fs=sfreq)
        out = sosfiltfilt(np.concatenate([b, a])[None], out.astype(np.float64),
                          axis=-1).astype(np.float32)
    return out


def reference_each_window(data, sfreq, to_sfreq, starts, length, centre):
    """The reference's model wrappers: each window cut at the recorded rate, centred per
    channel (BIOT), then resampled on its own with resample_poly."""
    length_in = round(length * sfreq / to_sfreq)
    windows = np.stack([data[:, start:start + length_in] for start in starts])
    if centre:
        windows = windows - windows.mean(axis=-1, keepdims=True)
    if sfreq != to_sfreq:
        ratio = Fraction(to_sfreq / sfreq).limit_denominator(1000)
        windows = resample_poly(windows, ratio.numerator, ratio.denominator, axis=-1)
    return windows.astype(np.float32)


def expected_for(source, table):
    """Each recording read whole through the reader interface and made as the reference
    protocol makes it, step by step: filtered whole (reference_filtered), each window on its
    own (reference_each_window), then BIOT's windows divided by the whole filtered recording's
    95th percentile of |x| in µV, every other model's scaled by its unit; placed in the
    model's inputs (BIOT: 16 slots, those no recorded channel feeds left zero)."""
    biot = source.spec.scaling == "percentile95"
    prep = source.recipe.preprocessing
    assert (prep.centre_windows, prep.normalisation) == ((True, "recording_q95") if biot
                                                         else (False, None))
    positions = input_positions(source.plan)
    parts = []
    for recording, rows in table.groupby("recording", sort=False):
        signals = sleep_edf.read_signals(source.recordings[recording], source.plan.recorded)
        data = reference_filtered(signals.data, signals.sfreq, LINE_FREQ)
        windows = reference_each_window(data, signals.sfreq, source.spec.sfreq,
                                        rows["start"].to_numpy(), source.window_samples, biot)
        if biot:
            q95 = np.quantile(np.abs(data * np.float32(1e6)), 0.95, axis=-1)
            windows = windows * 1e6 / (q95[None, :, None] + 1e-8)
        else:
            windows = windows * FACTORS[source.spec.scaling.removesuffix("_clip")]
            if source.spec.scaling.endswith("_clip"):
                windows = np.clip(windows, -1.0, 1.0)
        inputs = np.zeros((len(rows), len(source.plan.model_names), source.window_samples),
                          np.float32)
        inputs[:, positions] = windows
        parts.append(inputs)
    return np.concatenate(parts)


# Windows from a filtered stretch against the whole recording's filtering: float32 rounding
# (tests/pipeline/test_filters.py), carried through resampling and scaling.
WINDOW_TOLERANCE = 1e-6


def assert_windows_close(got, expected):
    assert got.shape == expected.shape and got.dtype == np.float32
    assert np.abs(got - expected).max() <= WINDOW_TOLERANCE * np.abs(expected).max()


@pytest.mark.parametrize("model", ["biot_random", "cbramod_random"])
def test_every_reader_kind_gives_the_reference_bytes(demo, model):
    """Every reader kind gives the same bytes, and those are the whole-recording pipeline's
    to float32 tolerance (the filters run on stretches)."""
    source = source_for(demo, model)
    expected = expected_for(source, demo[2])
    first = np.concatenate([w.copy() for w in source.stream(0, 0)])
    assert_windows_close(first, expected)
    for kind, workers in [(THREADS, 2), (PROCESSES, 1), (PROCESSES, 2)]:
        got = np.concatenate([w.copy() for w in source.stream(0, workers, kind)])
        assert got.tobytes() == first.tobytes(), (kind, workers)
    # resuming mid-index starts at that row, mid-recording too (bit for bit:
    # test_a_resumed_stream_makes_the_fresh_streams_windows_bit_for_bit)
    tail = np.concatenate([w.copy() for w in source.stream(100, 2, PROCESSES)])
    assert tail.tobytes() == first[100:].tobytes()


@pytest.mark.parametrize("model", ["biot_random", "eegpt_random"])
def test_recordings_in_parts_read_only_their_stretch_and_give_the_same_bytes(demo, model,
                                                                              monkeypatch):
    """Parts of 7 windows (100 -> 200 Hz and 100 -> 256 Hz, 30-s and 10-s windows): each read
    covers its windows and the filters' reach, far less than the file; the windows are those
    of whole recordings to float32 tolerance, the same bytes from every reader kind, and a
    resume mid-part starts at its row."""
    from embedprobe.pipeline import window_parts, window_recipe

    config, roots, index = demo
    if model == "eegpt_random":  # 10-s windows: three per 30-s epoch row, every 10 s
        config = {**config, "datasets": {**config["datasets"]}}
        config["datasets"][DATASET] = {**config["datasets"][DATASET], "epoch_seconds": 10}
        index = pd.concat([index.assign(start=index["start"] + 1000 * k) for k in range(3)])
        index = index.sort_values(["recording", "start"], kind="stable", ignore_index=True)
    source = source_for((config, roots, index), model, index)
    expected = expected_for(source, index)
    monkeypatch.setattr(window_parts, "PART_WINDOWS", 7)
    reads = []
    original = sleep_edf.read_signals

    statistic_reads, computing = [], []
    streamed = window_recipe.streamed_statistic

    def read_signals(rec, channels, span=None):
        signals = original(rec, channels, span=span)
        (statistic_reads if computing else reads).append(
            (rec.recording, span, signals.data.shape[-1]))
        return signals

    def streamed_statistic(recipe, rec, index_sfreq):
        computing.append(rec)  # the reads until it returns are the statistic's
        try:
            return streamed(recipe, rec, index_sfreq)
        finally:
            computing.clear()
            statistic_reads.append(rec.recording)

    monkeypatch.setattr(sleep_edf, "read_signals", read_signals)
    monkeypatch.setattr(window_recipe, "streamed_statistic", streamed_statistic)
    # this process's readers forget the statistics earlier tests had them compute
    monkeypatch.setattr(window_recipe, "_STATISTICS", {})
    got = np.concatenate([w.copy() for w in source.stream(0, 0)])
    assert_windows_close(got, expected)
    sizes = index.groupby("recording", sort=False).size()
    parts = list(window_parts.parts(index))
    reach = filter_reach(source.recipe.preprocessing.filters, 100.0)
    # BIOT's recording statistic reads each recording once (one reader here), in stretches
    # of a part's 7 adjacent windows with the filters' reach, never whole
    done = [read for read in statistic_reads if isinstance(read, str)]
    assert sorted(done) == (sorted(sizes.index) if model == "biot_random" else [])
    stretches = [read for read in statistic_reads if isinstance(read, tuple)]
    assert all(span is not None and n <= 7 * 3000 + 2 * reach for _, span, n in stretches)
    assert len(stretches) >= 2 * len(done)
    assert all(span is not None for _, span, _ in reads)
    assert len(reads) == len(parts) >= sum(-(-n // 7) for n in sizes)
    # cut at recording ends and every 7th row: batches of 7 never span two parts of a recording
    ends = np.cumsum([len(rows) for _, rows in parts])
    assert set(ends) == set(np.arange(7, len(index), 7)) | set(np.cumsum(sizes))
    file_samples = {rec: original(source.recordings[rec], ["EEG Fpz-Cz"]).data.shape[-1]
                    for rec in sizes.index}
    window_in = round(source.epoch_seconds * 100)
    for (rec, span, n), (part_rec, rows) in zip(reads, parts, strict=True):
        assert rec == part_rec and len(rows) <= 7
        assert span is not None and n == span[1] - span[0]  # wholly inside the file
        # the part's windows, the resampling's reach (25-100 samples a side) and the
        # high-pass's (21.5 s at 100 Hz), nothing more
        covered = rows["start"].max() + window_in - rows["start"].min()
        assert span[0] <= rows["start"].min() and covered <= n <= covered + 2 * reach + 200
        assert n < file_samples[rec] / 3
    for kind, workers in [(THREADS, 2), (PROCESSES, 2)]:
        again = np.concatenate([w.copy() for w in source.stream(0, workers, kind)])
        assert again.tobytes() == got.tobytes(), (kind, workers)
    # a resume mid-part makes the whole part and skips to its row: the same bytes
    tail = np.concatenate([w.copy() for w in source.stream(100, 2, PROCESSES)])
    assert tail.tobytes() == got[100:].tobytes()
    assert source.largest_part() == 7


@pytest.mark.parametrize("part_windows", [7, PART_WINDOWS])
def test_a_resumed_stream_makes_the_fresh_streams_windows_bit_for_bit(demo, part_windows,
                                                                     monkeypatch):
    """embed resumes at its last durable batch (any multiple of the batch size): the windows
    from there on must be the uninterrupted run's, byte for byte (the SIGKILL tests of
    test_embed.py compare the embeddings' bytes), from a part's first row, mid-part and
    mid-recording, with parts smaller and larger than a recording."""
    from embedprobe.pipeline import window_parts

    monkeypatch.setattr(window_parts, "PART_WINDOWS", part_windows)
    source = source_for(demo, "biot_random")
    fresh = np.concatenate([w.copy() for w in source.stream(0, 0)])
    differing = [row for row in range(0, len(demo[2]), 8)
                 if np.concatenate([w.copy() for w in source.stream(row, 0)]).tobytes()
                 != fresh[row:].tobytes()]
    assert differing == []


def test_the_largest_part_is_what_preflight_sizes_the_readers_by():
    """Parts of PART_WINDOWS consecutive rows: the most windows and recorded samples one holds;
    a dataset that band-passes whole recordings reads them whole."""
    rows = [(rec, 3000 * k) for rec, n in (("a", 1100), ("b", 300), ("c", 100))
            for k in range(n)]
    table = pd.DataFrame(rows, columns=["recording", "start"]).assign(sfreq=100.0)
    part = largest_part(table, whole=False, to_sfreq=200, window_samples=6000)
    assert part.windows == PART_WINDOWS == 512
    # 512 windows of 30 s at 100 Hz, and the filter's reach on both sides (under 0.5 s)
    assert PART_WINDOWS * 3000 < part.samples < PART_WINDOWS * 3000 + 100
    assert largest_part(table, whole=True, to_sfreq=200, window_samples=6000).windows == 1100
    assert largest_part(table, whole=True, to_sfreq=200, window_samples=6000).samples is None
    same_rate = largest_part(table, whole=False, to_sfreq=100, window_samples=3000)
    assert same_rate.samples == PART_WINDOWS * 3000


def test_windows_come_from_the_index_rows_and_the_datasets_epoch_length(demo):
    """Nothing sleep-specific: 10 s windows at arbitrary sample starts (seizure-like), in any
    order, are what the index rows and epoch_seconds say."""
    config, roots, index = demo
    config = {**config, "datasets": {**config["datasets"]}}
    config["datasets"][DATASET] = {**config["datasets"][DATASET], "epoch_seconds": 10}
    rng = np.random.default_rng(2)
    table = pd.concat([
        pd.DataFrame({"recording": rec, "start": rng.integers(0, 200_000, size=7), "sfreq": 100.0})
        for rec in index["recording"].unique()], ignore_index=True)
    source = source_for((config, roots, index), "biot_random", table)
    assert source.window_samples == 2000
    expected = expected_for(source, table)
    for kind, workers in [(THREADS, 0), (PROCESSES, 2)]:
        got = np.concatenate([w.copy() for w in source.stream(0, workers, kind)])
        assert got.shape == (len(table), 16, 2000)  # BIOT's 16 slots, 2 fed
        assert_windows_close(got, expected)


def test_a_file_at_another_rate_than_the_index_is_refused(demo):
    table = demo[2].iloc[:5].assign(sfreq=50.0)
    source = source_for(demo, "biot_random", table)
    with pytest.raises(DataError, match="window index was built at 50.0 Hz"):
        next(source.stream(0, 0))
    with pytest.raises(DataError, match="built at 50.0 Hz") as caught:  # from a reader process
        next(source.stream(0, 1, PROCESSES))
    assert caught.value.fix == "rebuild the window index: it no longer matches the recording"


def shm_exists(name: str) -> bool:
    return Path("/dev/shm", name.lstrip("/")).exists()


def test_reader_processes_are_bounded_and_leave_no_shared_memory(demo, monkeypatch):
    """However slow the model: at most `workers + 1` parts submitted and not yet taken, one
    more held by the model, in workers + 2 slots; every slot is gone after the stream, also
    when the consumer stops early."""
    from embedprobe.pipeline import window_parts

    monkeypatch.setattr(window_parts, "PART_WINDOWS", 64)  # 3 nights of 146-148: 9 parts
    index = demo[2]
    seen: dict = {"outstanding": 0, "most": 0, "slots": set(), "names": []}
    original_submit, original_take = ProcessReaders.submit, ProcessReaders.take

    def submit(self, recording, rows):
        seen["names"] = [slot.name for slot in self.slots]
        submitted = original_submit(self, recording, rows)
        seen["outstanding"] += 1
        seen["most"] = max(seen["most"], seen["outstanding"])
        seen["slots"].add(submitted[1])
        return submitted

    def take(self, submitted):
        seen["outstanding"] -= 1
        return original_take(self, submitted)

    monkeypatch.setattr(ProcessReaders, "submit", submit)
    monkeypatch.setattr(ProcessReaders, "take", take)
    for workers in (1, 2):
        seen.update(outstanding=0, most=0, slots=set())
        source = source_for(demo, "cbramod_random", index)
        count = 0
        for windows in source.stream(0, workers, PROCESSES):
            time.sleep(0.2)  # a slow model: readers would run ahead if they could
            count += len(windows)
        assert count == len(index)
        assert seen["most"] == workers + 1 and len(seen["slots"]) == workers + 2
        assert len(seen["names"]) == workers + 2
        assert not any(shm_exists(name) for name in seen["names"])
    stream = source_for(demo, "cbramod_random").stream(0, 2, PROCESSES)
    next(stream)
    stream.close()  # the model stopped (an error, a kill of the loop): the readers go too
    assert not any(shm_exists(name) for name in seen["names"])


def test_a_killed_reader_process_stops_embed_with_an_out_of_memory_error(demo, monkeypatch):
    """A reader killed by the kernel (SIGKILL, as the OOM killer does) is an `oom` failure
    that names the remedy, not a hang or a bare traceback."""
    readers: list = []
    original_init = ProcessReaders.__init__

    def init(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        readers.append(self)

    monkeypatch.setattr(ProcessReaders, "__init__", init)
    stream = source_for(demo, "cbramod_random").stream(0, 1, PROCESSES)
    next(stream)
    for process in list(readers[0].processes.values()):
        os.kill(process.pid, signal.SIGKILL)
    with pytest.raises(OutOfMemory) as caught:
        next(stream)
    assert "reader process of embed was killed (signal 9)" in caught.value.message
    assert "resumes at the last durable batch" in caught.value.fix


def test_too_little_shared_memory_is_refused_before_any_reader_starts(demo, monkeypatch):
    class Tiny:
        f_bavail, f_frsize = 10, 4096

    monkeypatch.setattr("embedprobe.pipeline.reader_processes.os.statvfs", lambda path: Tiny())
    with pytest.raises(EmbedprobeError, match="/dev/shm has 0 MB free") as caught:
        next(source_for(demo, "biot_random").stream(0, 2, PROCESSES))
    assert "--shm-size" in caught.value.fix


def test_a_gpu_jobs_estimate_counts_its_reader_processes():
    """embed_gpu's readers are processes: a server once, and each reader's own memory, on top
    of the nights in flight every reader kind holds; embed_cpu's threads add no process."""
    from embedprobe.core.units import MIB as MiB
    from embedprobe.memory.calibration import load_calibration
    from embedprobe.memory.estimate import estimate

    calibration = load_calibration()
    inputs = {"batch_size": 256, "n_channels": 2, "n_samples": 6000, "feature_dim": 256,
              "weights_bytes": 13_000_000, "recording_bytes": 2 * 8 * 8 * 3600 * 100,
              "night_windows": 1000, "gpu_peaks": {1: 200 * MiB, 256: 900 * MiB},
              "gpu_total_bytes": 80 * 2**30, "batch_activation_bytes": 50 * MiB,
              "activation_batch_size": 32}

    def terms(job, workers):
        return estimate(job, inputs | {"n_workers": workers}, calibration, None).terms

    server = "reader processes: their server (the reading code's imports, shared by the readers)"
    each = "reader processes: what each one writes beyond its server's"
    assert terms("embed_gpu", 0)[server] == terms("embed_gpu", 0)[each] == 0
    assert terms("embed_gpu", 2)[server] == terms("embed_gpu", 14)[server] == 70 * MiB
    assert terms("embed_gpu", 14)[each] == 14 * 25 * MiB
    assert server not in terms("embed_cpu", 2) and each not in terms("embed_cpu", 2)


# A reader process: what its server preloaded, and what a forked pool worker runs on.
READER_SCRIPT = """
import json, pickle, sys
import concurrent.futures.process, multiprocessing.forkserver, multiprocessing.shared_memory
from embedprobe.pipeline.reader_processes import READER_PRELOAD
for module in READER_PRELOAD:
    __import__(module)
before = set(sys.modules)
from embedprobe.pipeline.window_recipe import make_windows
with open(sys.argv[1], "rb") as jobs:
    for recipe, rec, starts, index_sfreq in pickle.load(jobs):
        assert make_windows(recipe, rec, starts, None, index_sfreq).shape[0] == len(starts)
print(json.dumps(sorted(set(sys.modules) - before)))
"""


def test_a_reader_process_imports_nothing_its_server_did_not_preload(demo, tmp_path):
    """A reader process forks from a server that imported READER_PRELOAD: whatever its first
    part imports on top is paid again by every reader (mne.io alone left MNE's EDF reader to
    each reader's first part: 49 modules, 0.2 s of CPU a reader). EDF through MNE, a
    band-passed recording, and a BNCI run read from .mat."""
    import pickle
    import subprocess
    import sys

    from embedprobe.datasets.bnci2014_001 import lookalike
    from embedprobe.datasets.bnci2014_001 import reader as bnci
    from embedprobe.pipeline.window_recipe import WindowRecipe

    source = source_for(demo, "biot_random")
    recording, rows = next(iter(demo[2].groupby("recording", sort=False)))
    rec, starts = source.recordings[recording], rows["start"].to_numpy()[:40]
    band = replace(source.recipe, preprocessing=Preprocessing(
        (FilterStep("mne_notch", (50.0,)), FilterStep("mne_bandpass", (4.0, 40.0))),
        whole_recordings=True))
    lookalike.write_lookalike(tmp_path / "bnci", {"subjects": 1, "sessions": ["T"],
                                                  "runs_per_session": 1, "trials_per_run": 4,
                                                  "eog_runs": 1, "eog_run_seconds": [2], "seed": 1})
    run = bnci.find_recordings(tmp_path / "bnci", sessions=["T"])[0]
    names = ("C3", "Cz", "C4")
    trials = WindowRecipe("bnci2014_001", ChannelPlan("labels as recorded", names, names), 200.0,
                          3.0, Preprocessing(band.preprocessing.filters, whole_recordings=True,
                                             scaling="microvolts", average_reference=names))
    jobs = [(source.recipe, rec, starts, 100.0), (band, rec, starts, None),
            (trials, run, np.array([0, 250 * 8]), None)]
    (tmp_path / "jobs.pkl").write_bytes(pickle.dumps(jobs))
    done = subprocess.run([sys.executable, "-c", READER_SCRIPT, str(tmp_path / "jobs.pkl")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    imported = json.loads(done.stdout)
    assert imported == [], " ".join(imported)


def test_a_reused_slot_gets_zeros_where_no_channel_feeds_a_model_input(demo):
    """BIOT's 16 inputs from Sleep-EDF's 2 channels: a fresh part's other 14 slots are the
    kernel's zeros, untouched; a reused shared slot holding another part's values has those
    runs zeroed, and both give the same bytes."""
    from embedprobe.pipeline.window_parts import parts

    source = source_for(demo, "biot_random")
    rec, rows = next(parts(demo[2]))
    fresh = source.load(rec, rows)
    stale = np.full_like(fresh, np.nan)
    got = source.load(rec, rows, out=stale)
    assert got is stale and got.tobytes() == fresh.tobytes()
    empty = np.setdiff1d(np.arange(16), input_positions(source.plan))
    assert len(empty) == 14 and not fresh[:, empty].any() and fresh.any()


def test_reader_threads_wanting_one_recording_s_statistic_compute_it_once(monkeypatch):
    """Two reader threads taking parts of one recording: the second waits for the first's
    statistic instead of reading and filtering the whole recording again at the same time."""
    import threading

    from embedprobe.pipeline import window_recipe

    reads = []
    recorded = np.linspace(-50e-6, 50e-6, 4000, dtype=np.float32).reshape(2, 2000)

    def slow_read(recipe, rec, span, index_sfreq):
        reads.append(rec.signal_path)
        time.sleep(0.3)  # long enough that the other thread asks meanwhile
        return recorded, window_recipe.ReadSpan(0, 100.0)

    monkeypatch.setattr(window_recipe, "_read", slow_read)
    monkeypatch.setattr(window_recipe, "_STATISTICS", {})
    recipe = _Recipe()  # the cache keys on (recipe, path)
    monkeypatch.setattr(window_recipe, "apply_filters", lambda data, sfreq, steps: data)
    header = SimpleNamespace(sfreq=100.0, n_samples=2000)  # one stretch: read at once
    monkeypatch.setattr(window_recipe, "FORMATS", {"stub": SimpleNamespace(
        reader=SimpleNamespace(read_header=lambda rec: header))})
    rec = SimpleNamespace(signal_path=Path("/data/night 1.edf"))
    results = []

    def want():
        results.append(window_recipe.recording_statistic(recipe, rec, None))

    threads = [threading.Thread(target=want) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert reads == [rec.signal_path]  # read (and filtered) once
    expected = np.quantile(np.abs(recorded * 1e6), 0.95, axis=1)
    assert len(results) == 3
    for value in results:
        np.testing.assert_allclose(value, expected, rtol=1e-5)
    assert window_recipe._COMPUTING == {}  # nothing left waiting
    # another recording is computed anew
    other = SimpleNamespace(signal_path=Path("/data/night 2.edf"))
    window_recipe.recording_statistic(recipe, other, None)
    assert len(reads) == 2


class _Recipe:
    """A recipe stand-in: what recording_statistic reads of it, hashable as WindowRecipe is."""

    preprocessing = SimpleNamespace(filters=(), normalisation="recording_q95")
    reader_format, epoch_seconds = "stub", 30.0

    def __hash__(self):
        return 1
