"""Turn a recorded night into model-ready windows: resample, cut, scale. Never pads."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from scipy.signal import resample_poly

from .errors import UsageError


def resample(signals: np.ndarray, from_sfreq: float, to_sfreq: float) -> np.ndarray:
    """Polyphase resampling of a whole night at once (one filter pass, float32 out)."""
    if from_sfreq == to_sfreq:
        return signals.astype(np.float32, copy=False)
    ratio = Fraction(to_sfreq / from_sfreq).limit_denominator(1000)
    out = resample_poly(signals, ratio.numerator, ratio.denominator, axis=-1)
    return out.astype(np.float32, copy=False)


def cut_windows(signals: np.ndarray, starts: np.ndarray, length: int) -> np.ndarray:
    """(n_windows, n_channels, length) copies of the signal at the given start samples."""
    if len(starts) and starts.max() + length > signals.shape[-1]:
        raise UsageError(
            f"a window starting at sample {int(starts.max())} runs past the signal end "
            f"({signals.shape[-1]} samples)",
            fix="rebuild the window index: it no longer matches the recording",
        )
    # A strided view selects the windows without building an index array of every sample;
    # indexing its first axis copies each window once, straight into (windows, channels, time).
    view = np.lib.stride_tricks.sliding_window_view(signals, length, axis=-1)
    return view.transpose(1, 0, 2)[starts]


SCALE_BLOCK = 256  # windows per block of the percentile scaling: bounds its temporaries


def scale(windows: np.ndarray, scaling: str, in_place: bool = False) -> np.ndarray:
    """Each model's own amplitude convention; input is in volts, output float32.

    `in_place` reuses a float32 `windows` (cut_windows' fresh copy) rather than allocating a
    second night of windows.
    """
    out = windows if in_place and windows.dtype == np.float32 else windows.astype(np.float32)
    if scaling == "percentile95":
        # BIOT's convention: each channel of each window divided by its 95th percentile of |x|.
        for first in range(0, len(out), SCALE_BLOCK):
            block = out[first:first + SCALE_BLOCK]
            block /= np.quantile(np.abs(block), 0.95, axis=-1, keepdims=True) + np.float32(1e-8)
        return out
    factors = {"microvolts": 1e6, "millivolts": 1e3, "0.1mV": 1e4, "none": 1.0}
    out *= np.float32(factors[scaling])
    return out


def split_subwindows(windows: np.ndarray, n_times: int) -> tuple[np.ndarray, int]:
    """Epochs longer than the model's window become k consecutive model windows each."""
    epoch_len = windows.shape[-1]
    if epoch_len % n_times:
        raise UsageError(
            f"an epoch of {epoch_len} samples is not a whole number of model windows of "
            f"{n_times} samples",
            fix="choose a model window_seconds that divides the dataset's epoch_seconds",
        )
    k = epoch_len // n_times
    n, c, _ = windows.shape
    sub = windows.reshape(n, c, k, n_times).transpose(0, 2, 1, 3).reshape(n * k, c, n_times)
    return np.ascontiguousarray(sub), k
