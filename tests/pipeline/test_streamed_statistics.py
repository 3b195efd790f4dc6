"""A recording's statistic from one filtered stretch at a time (pipeline/streamed_statistics.py,
window_recipe.streamed_statistic) against numpy on the whole recording: the 95th percentile
of |x| bit for bit over the samples streamed (its band kept, narrowed, or a second pass), the
mean and SD within 1e-12, and over a filtered recording within the stretches' float32
rounding."""

from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest

from embedprobe.pipeline import window_recipe
from embedprobe.pipeline.filters import FilterStep, apply_filters, reach
from embedprobe.pipeline.preprocess import recording_q95, recording_zscore
from embedprobe.pipeline.protocol import Preprocessing
from embedprobe.pipeline.streamed_statistics import MomentsStream, Q95Stream
from embedprobe.pipeline.window_parts import statistic_read


def stretches(x: np.ndarray, size: int) -> list[np.ndarray]:
    return [x[:, first:first + size] for first in range(0, x.shape[-1], size)]


def streamed_q95(x: np.ndarray, size: int, cap: int) -> tuple[np.ndarray, Q95Stream]:
    stream = Q95Stream(len(x), cap)
    passes = 0
    while passes == 0 or stream.needs_second_pass():
        for part in stretches(x, size):
            stream.add(part)
        passes += 1
    assert passes <= 2
    return stream.result(), stream


def numpy_q95(x: np.ndarray) -> np.ndarray:
    return np.quantile(np.abs(x * np.float32(1e6)), 0.95, axis=-1).astype(np.float32)


def test_the_95th_percentile_streamed_is_numpys_on_the_whole_recording_bit_for_bit():
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((3, 50_003)) * [[1e-5], [3e-5], [2e-6]]).astype(np.float32)
    got, stream = streamed_q95(x, 4096, cap=1 << 20)
    assert not stream.second and np.array_equal(got, numpy_q95(x))
    assert np.array_equal(got, recording_q95(x))  # the whole recording's own statistic


def test_a_scale_that_changes_after_the_first_stretch_takes_a_second_pass_and_stays_exact():
    """The band is set around the first stretch's quantile: a recording three times louder
    later leaves it behind, and a second pass counts the two order statistics' bins."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 80_000)).astype(np.float32) * np.float32(1e-5)
    x[:, 8_000:] *= np.float32(3.0)
    got, stream = streamed_q95(x, 8_000, cap=1 << 20)
    assert stream.second and np.array_equal(got, numpy_q95(x))


def test_the_band_narrows_to_its_cap_and_stays_exact():
    rng = np.random.default_rng(2)
    x = (rng.standard_normal((2, 400_000)) * 1e-5).astype(np.float32)
    cap = 1 << 16
    got, stream = streamed_q95(x, 20_000, cap=cap)
    assert not stream.second and np.array_equal(got, numpy_q95(x))
    assert all(sum(len(k) for k in kept) <= cap for kept in stream.kept)  # memory: the cap
    assert all(hi - lo < 2 * 128 for lo, hi in stream.band)


def test_a_flat_channel_and_a_nan_are_numpys_too():
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((3, 300_000)) * 1e-5).astype(np.float32)
    x[1] = 0.0  # every value in one bin: more than the cap, counted in a second pass
    x[2, 12_345] = np.nan
    got, _ = streamed_q95(x, 30_000, cap=1 << 16)
    expected = numpy_q95(x)
    assert np.array_equal(got[:2], expected[:2]) and np.isnan(got[2]) and np.isnan(expected[2])


def test_the_mean_and_sd_streamed_are_numpys_and_one_stretch_its_bytes():
    rng = np.random.default_rng(4)
    x = (rng.standard_normal((2, 100_001)) * 2e-5 + 3e-6).astype(np.float32)
    stream = MomentsStream(2)
    for part in stretches(x, 7_777):
        stream.add(part)
    np.testing.assert_allclose(stream.result(), recording_zscore(x), rtol=1e-12)
    whole = MomentsStream(2)
    whole.add(x)
    assert np.array_equal(whole.result(), recording_zscore(x))


@pytest.mark.parametrize(("normalisation", "sfreq"), [("recording_q95", 100.0),
                                                       ("recording_zscore", 256.0)])
def test_a_recordings_statistic_from_filtered_stretches_is_its_whole_filterings(
        monkeypatch, normalisation, sfreq):
    """window_recipe.streamed_statistic reads stretches of a part's length with the filters'
    reach on each side: the statistic of the whole filtered recording within float32
    rounding, and no read of the whole recording."""
    rng = np.random.default_rng(5)
    n = int(sfreq * 3600)
    x = (rng.standard_normal((2, n)).cumsum(-1) * 1e-6 + rng.standard_normal((2, n)) * 2e-5
         ).astype(np.float32)
    steps = (FilterStep("highpass", (0.5,)), FilterStep("notch", (50.0,)))
    reads = []

    def read(recipe, rec, span, index_sfreq):
        reads.append(span)
        first, stop = span
        return x[:, first:stop], window_recipe.ReadSpan(first, sfreq)

    header = SimpleNamespace(sfreq=sfreq, n_samples=n)
    monkeypatch.setattr(window_recipe, "_read", read)
    monkeypatch.setattr(window_recipe, "FORMATS",
                        {"stub": SimpleNamespace(reader=SimpleNamespace(
                            read_header=lambda rec: header))})
    monkeypatch.setattr(window_recipe.window_parts, "PART_WINDOWS", 40)  # 20-minute stretches
    recipe = SimpleNamespace(reader_format="stub", epoch_seconds=30.0,
                             preprocessing=SimpleNamespace(filters=steps,
                                                           normalisation=normalisation))
    got = window_recipe.streamed_statistic(recipe, None, sfreq)
    filtered = apply_filters(x, sfreq, steps)
    if normalisation == "recording_q95":
        np.testing.assert_allclose(got, recording_q95(filtered), rtol=1e-6)
    else:
        np.testing.assert_allclose(got, recording_zscore(filtered), rtol=1e-6, atol=1e-12)
    stretch = int(40 * 30 * sfreq)
    assert len(reads) >= 3 and None not in reads
    assert max(stop - first for first, stop in reads) < stretch + 2 * 30 * sfreq


def test_the_statistic_reads_a_part_sized_stretch_whatever_the_recordings_length():
    """What preflight counts for it (window_parts.statistic_read): a recording of one stretch
    whole, a longer one a stretch of 512 windows and the filters' reach, however long."""
    steps = (FilterStep("highpass", (0.5,)), FilterStep("notch", (50.0,)))
    prep = Preprocessing(steps, normalisation="recording_q95")
    stretch = 512 * 30 * 100 + 2 * reach(steps, 100.0)
    assert statistic_read(prep, 30.0, 100.0, 600 * 100) == 600 * 100  # 10 minutes: whole
    for hours in (8, 24, 72):
        assert statistic_read(prep, 30.0, 100.0, hours * 3600 * 100) == stretch
    assert statistic_read(replace(prep, whole_recordings=True), 30.0, 100.0, 10**8) == 0
    assert statistic_read(replace(prep, normalisation=None), 30.0, 100.0, 10**8) == 0
