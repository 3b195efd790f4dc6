"""The dataset band-pass (motor imagery: 8-32 Hz) on whole recordings before windows are cut."""

import numpy as np
import pytest

from embedprobe.models.registry import ModelSpec
from embedprobe.pipeline.channel_maps import ChannelPlan
from embedprobe.pipeline.embed import preprocessing_key
from embedprobe.pipeline.window_source import band_pass


def test_band_pass_keeps_the_band_and_drops_the_rest():
    sfreq = 250.0
    t = np.arange(int(60 * sfreq)) / sfreq
    slow, mu, fast = (np.sin(2 * np.pi * f * t) for f in (2.0, 12.0, 60.0))
    data = np.stack([slow + mu + fast, mu]).astype(np.float32)
    out = band_pass(data, sfreq, (8.0, 32.0))
    assert out.dtype == np.float32 and out.shape == data.shape
    middle = slice(int(5 * sfreq), int(55 * sfreq))  # away from the recording's edges
    # only the 12 Hz component is left, in phase (zero-phase filter)
    assert np.abs(out[0, middle] - mu[middle]).max() < 0.02
    assert np.abs(out[1, middle] - mu[middle]).max() < 0.02


def test_a_band_pass_keys_the_cache_and_no_band_keeps_the_old_key():
    spec = ModelSpec("m", "biot", "BIOT", "random", 200.0, 4.0)
    plan = ChannelPlan("labels as recorded", ("C3",), ("C3",))
    plain = preprocessing_key(spec, plan, 4.0, None)
    assert "band_hz" not in plain
    assert preprocessing_key(spec, plan, 4.0, None, (8.0, 32.0)) != plain
    assert '"band_hz": [8.0, 32.0]' in preprocessing_key(spec, plan, 4.0, None, (8.0, 32.0))


@pytest.mark.parametrize("band", [(8, 32)])
def test_band_pass_is_deterministic(band):
    data = np.random.default_rng(0).standard_normal((3, 5000)).astype(np.float32)
    assert np.array_equal(band_pass(data, 160.0, band), band_pass(data, 160.0, band))
