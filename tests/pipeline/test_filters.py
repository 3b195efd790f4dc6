"""The reference protocol's filters (pipeline/filters.py) and per-recording statistic
(preprocess.recording_q95): the reference's scipy steps, MNE's Butterworth in the interior,
a stretch with the filters' reach equal to the whole recording's filtering, a notch at Nyquist
skipped, the statistic against numpy on the whole recording."""

import numpy as np
import pytest
from scipy.signal import butter, iirnotch, sosfiltfilt

from embedprobe.pipeline.filters import FilterStep, apply_filters, reach, step_sos
from embedprobe.pipeline.preprocess import (
    centre_windows,
    divide_by_recording,
    recording_q95,
)

HIGHPASS = FilterStep("highpass", (0.5,))
# A stretch's filtered samples against the whole recording's: float32 rounding of the peak
# (2**-23 ~ 1.2e-7 of it); measured: <= 2.3e-8 at 100, 160, 256 and 512 Hz.
STRETCH_TOLERANCE = 1.2e-7


def night(sfreq: float, seconds: float, seed: int = 0) -> np.ndarray:
    """Two channels of drifting noise with a powerline hum, in volts (float32)."""
    rng = np.random.default_rng(seed)
    n = int(sfreq * seconds)
    t = np.arange(n) / sfreq
    drift = rng.standard_normal((2, n)).cumsum(-1) * 1e-6
    hum = 5e-6 * np.sin(2 * np.pi * 50.0 * t)
    return (drift + rng.standard_normal((2, n)) * 2e-5 + hum).astype(np.float32)


def test_the_steps_are_the_references_scipy_filters_in_order():
    """butter(5) high-pass, then iirnotch(Q=30), each sosfiltfilt in float64 and cast back to
    float32 (the reference's dataio/sleep_edf_expanded.py `_load_recording_edf`)."""
    x = night(256.0, 120)
    steps = (HIGHPASS, FilterStep("notch", (50.0,)))
    expected = sosfiltfilt(butter(5, 0.5 / 128.0, btype="high", output="sos"), x,
                           axis=-1).astype(np.float32)
    b, a = iirnotch(50.0, Q=30.0, fs=256.0)
    expected = sosfiltfilt(np.array([[*b, *a]]), expected, axis=-1).astype(np.float32)
    got = apply_filters(x, 256.0, steps)
    assert got.dtype == np.float32 and got.tobytes() == expected.tobytes()


def test_the_high_pass_is_mnes_zero_phase_butterworth_away_from_the_ends():
    """MNE's IIR path (5th-order Butterworth, zero phase) on the whole recording: the same
    samples to float32 tolerance once its own edge padding has decayed (it pads differently,
    which is why the reference's scipy call is used)."""
    import mne

    sfreq, x = 100.0, night(100.0, 600)
    ours = apply_filters(x, sfreq, (HIGHPASS,))
    theirs = mne.filter.filter_data(x.astype(np.float64), sfreq, 0.5, None, method="iir",
                                    iir_params={"order": 5, "ftype": "butter", "output": "sos"},
                                    phase="zero", verbose="error")
    inner = slice(int(60 * sfreq), int(540 * sfreq))
    peak = np.abs(theirs[:, inner]).max()
    assert np.abs(ours[:, inner] - theirs[:, inner]).max() <= STRETCH_TOLERANCE * peak


def test_the_high_pass_removes_drift_and_keeps_eeg_bands():
    sfreq = 200.0
    t = np.arange(int(sfreq * 300)) / sfreq
    slow, alpha = np.sin(2 * np.pi * 0.05 * t), np.sin(2 * np.pi * 10.0 * t)
    out = apply_filters(np.stack([slow, alpha]).astype(np.float32), sfreq, (HIGHPASS,))
    inner = slice(int(60 * sfreq), int(240 * sfreq))
    assert np.abs(out[0, inner]).max() < 1e-4  # 0.05 Hz: 10th-order roll-off, ~1e-5 left
    assert np.abs(out[1, inner]).max() == pytest.approx(1.0, abs=1e-3)


@pytest.mark.parametrize("sfreq, line", [(100.0, 50.0), (160.0, 60.0), (256.0, 60.0),
                                         (512.0, 50.0)])
def test_a_stretch_with_the_reach_equals_the_whole_recording(sfreq, line):
    steps = (HIGHPASS, FilterStep("notch", (line,)))
    x = night(sfreq, 1800, seed=int(sfreq))
    whole = apply_filters(x, sfreq, steps)
    extra = reach(steps, sfreq)
    first, stop = int(600 * sfreq), int(900 * sfreq)
    stretch = apply_filters(x[:, first - extra:stop + extra], sfreq, steps)
    got = stretch[:, extra:extra + stop - first]
    peak = np.abs(whole).max()
    assert np.abs(got - whole[:, first:stop]).max() <= STRETCH_TOLERANCE * peak
    # at the recording's start the stretch begins where the recording does: the same edge
    start = apply_filters(x[:, :stop + extra], sfreq, steps)[:, :stop]
    assert np.abs(start - whole[:, :stop]).max() <= STRETCH_TOLERANCE * peak


def test_the_reach_is_the_slowest_poles_decay_plus_the_padding():
    """~20-25 s of signal on each side: the 0.5 Hz Butterworth's slowest pole decays to 1e-9
    in that time, whatever the rate."""
    for sfreq in (100.0, 256.0, 512.0):
        seconds = reach((HIGHPASS,), sfreq) / sfreq
        assert 15 < seconds < 30, (sfreq, seconds)
    assert reach((), 100.0) == 0


def test_a_notch_at_or_above_nyquist_is_skipped_as_the_reference_does():
    """Sleep-EDF: 100 Hz, 50 Hz powerline (the reference: `if notch < sfreq / 2`)."""
    notch = FilterStep("notch", (50.0,))
    assert step_sos(notch, 100.0) is None
    x = night(100.0, 60)
    assert apply_filters(x, 100.0, (notch,)).tobytes() == x.tobytes()
    assert reach((notch,), 100.0) == 0
    assert step_sos(notch, 256.0) is not None


def test_the_notch_removes_the_powerline_and_keeps_its_neighbours():
    sfreq = 256.0
    t = np.arange(int(sfreq * 120)) / sfreq
    x = np.stack([np.sin(2 * np.pi * 60.0 * t), np.sin(2 * np.pi * 40.0 * t)]).astype(np.float32)
    out = apply_filters(x, sfreq, (FilterStep("notch", (60.0,)),))
    inner = slice(int(20 * sfreq), int(100 * sfreq))
    assert np.abs(out[0, inner]).max() < 1e-3
    assert np.abs(out[1, inner]).max() == pytest.approx(1.0, abs=1e-2)


def test_the_recording_statistic_is_numpys_quantile_of_the_whole_recording_in_microvolts():
    x = night(100.0, 3600, seed=3)
    expected = np.quantile(np.abs(x * np.float32(1e6)), 0.95, axis=-1)
    got = recording_q95(x)
    assert got.shape == (2,) and got.dtype == np.float32
    assert np.array_equal(got, expected.astype(np.float32))


def test_windows_are_centred_then_divided_by_the_recordings_statistic():
    """BIOT's wrapper: x - mean(x) per window and channel, then x_uV / (q95_uV + 1e-8)."""
    rng = np.random.default_rng(1)
    windows = (rng.standard_normal((3, 2, 50)) * 1e-5 + 4e-6).astype(np.float32)
    q95 = np.array([20.0, 40.0], np.float32)
    expected = (windows - windows.mean(-1, keepdims=True)) * 1e6 / (q95[None, :, None] + 1e-8)
    got = divide_by_recording(centre_windows(windows.copy()), q95)
    assert np.allclose(got, expected, rtol=1e-5, atol=1e-6)
    assert np.abs(got.mean(-1)).max() < 1e-5
