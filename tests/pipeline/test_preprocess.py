import io

import numpy as np
import pytest

from embedprobe.core.errors import UsageError
from embedprobe.core.progress import Progress
from embedprobe.models.encoder import split_subwindows
from embedprobe.pipeline.preprocess import cut_windows, resample, scale


def test_cut_windows_copies_the_right_samples():
    signals = np.arange(2 * 1000, dtype=np.float32).reshape(2, 1000)
    windows = cut_windows(signals, np.array([0, 300, 700]), 300)
    assert windows.shape == (3, 2, 300) and windows.flags["C_CONTIGUOUS"]
    assert windows[1, 0, 0] == 300 and windows[1, 1, 0] == 1300 and windows[2, 1, -1] == 1999
    with pytest.raises(UsageError, match="runs past the signal end"):
        cut_windows(signals, np.array([701]), 300)


def test_resample_keeps_a_sine_and_the_length():
    t = np.arange(3000) / 100.0
    signal = np.sin(2 * np.pi * 5 * t)[None, :]
    up = resample(signal, 100, 200)
    assert up.shape == (1, 6000) and up.dtype == np.float32
    expected = np.sin(2 * np.pi * 5 * np.arange(6000) / 200.0)
    assert np.abs(up[0, 200:-200] - expected[200:-200]).max() < 0.01


def test_scalings():
    volts = np.full((1, 1, 10), 50e-6, dtype=np.float32)
    assert scale(volts, "microvolts")[0, 0, 0] == pytest.approx(50.0)
    assert scale(volts, "0.1mV")[0, 0, 0] == pytest.approx(0.5)
    ramp = np.linspace(-1, 1, 101, dtype=np.float32)[None, None, :] * 1e-4
    normed = scale(ramp, "percentile95")
    assert np.quantile(np.abs(normed), 0.95) == pytest.approx(1.0, rel=1e-3)


def test_subwindows_are_consecutive_and_refuse_leftovers():
    epochs = np.arange(2 * 2 * 30, dtype=np.float32).reshape(2, 2, 30)
    sub, k = split_subwindows(epochs, 10)
    assert k == 3 and sub.shape == (6, 2, 10)
    assert np.array_equal(sub[4], epochs[1, :, 10:20])
    with pytest.raises(UsageError, match="not a whole number"):
        split_subwindows(epochs, 7)


def test_progress_off_terminal_prints_each_tenth_at_most_every_interval():
    now = [0.0]
    stream = io.StringIO()
    progress = Progress("ds model", 100, unit="windows", stream=stream, min_interval=5.0,
                        clock=lambda: now[0])
    for done in range(0, 101, 5):
        now[0] += 3.0  # 3 s per 5 windows: a tenth every 6 s
        progress.update(done)
    lines = stream.getvalue().splitlines()
    assert len(lines) == 10
    assert lines[0].startswith("ds model: 10% (10/100 windows, 0m 09s")
    assert "left" in lines[0] and lines[-1].startswith("ds model: 100% (100/100 windows")
