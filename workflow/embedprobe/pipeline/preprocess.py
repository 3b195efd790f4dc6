"""Turn a recorded night into model-ready windows: resample, cut, scale. Never pads.

`model_windows` does all three for a recording's windows at once: it resamples only the
stretches of signal the windows cover (plus the filter's reach), which gives exactly the samples
resampling the whole recording would (tests/pipeline/test_window_source.py checks it bitwise), and
scales
whole recordings with vectorised, exact kernels.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from embedprobe.core.errors import UsageError


def _ratio(from_sfreq: float, to_sfreq: float) -> Fraction:
    return Fraction(to_sfreq / from_sfreq).limit_denominator(1000)


def resample(signals: np.ndarray, from_sfreq: float, to_sfreq: float) -> np.ndarray:
    """Polyphase resampling of a whole night at once (one filter pass, float32 out)."""
    if from_sfreq == to_sfreq:
        return signals.astype(np.float32, copy=False)
    ratio = _ratio(from_sfreq, to_sfreq)
    if ratio.denominator == 1 and signals.dtype == np.float32 and signals.ndim == 2:
        upsampled = _upsample(signals, ratio.numerator)
        if upsampled is not None:
            return upsampled
    from scipy.signal import resample_poly

    out = resample_poly(signals, ratio.numerator, ratio.denominator, axis=-1)
    return out.astype(np.float32, copy=False)


# output samples per phase and block: the running sums stay in cache (2 channels x 32768
# float32 = 256 KiB); on 2 x 3 h at 100 Hz: 44 ms, against 52 ms at 16384 and 81 at 131072
UPSAMPLE_BLOCK = 32768


def _upsample(signals: np.ndarray, up: int) -> np.ndarray | None:
    """scipy's resample_poly(signals, up, 1, axis=-1) for float32 signals, term for term, ~1.4x
    faster: its filter, and the sum of its upfirdn loop (`out = out + x * h`, in float32, taps
    in the same order) taken over a block of output samples of one phase at a time by numpy,
    instead of one sample at a time. Bit for bit the same (tests/pipeline/test_window_source.py
    checks
    it at random); None where scipy's private helpers moved (resample_poly is then used)."""
    try:
        from scipy.signal import firwin
        from scipy.signal._upfirdn import _output_len, _pad_h
    except ImportError:
        return None
    n_channels, n_in = signals.shape
    n_out = n_in * up
    half_len = 10 * up
    # resample_poly's filter: firwin in float64, cast to the signal's dtype, then scaled
    taps = firwin(2 * half_len + 1, 1.0 / up, window=("kaiser", 5.0)).astype(np.float32)
    taps *= up
    pre_pad, post_pad = 1, 0  # down - half_len % down, with down 1
    pre_remove = half_len + pre_pad
    while _output_len(len(taps) + pre_pad + post_pad, n_in, up, 1) < n_out + pre_remove:
        post_pad += 1
    taps = np.concatenate((np.zeros(pre_pad, np.float32), taps,
                           np.zeros(post_pad, np.float32)))
    flipped = _pad_h(taps, up)  # upfirdn's per-phase, reversed taps
    per_phase = len(flipped) // up
    # Zeros around the signal stand for the terms upfirdn skips or pads with zeros: adding a
    # zero product leaves every sum as it was.
    left = per_phase
    padded = np.zeros((n_channels, left + n_in + per_phase + 1), np.float32)
    padded[:, left:left + n_in] = signals
    out = np.empty((n_channels, n_out), np.float32)
    peak = max(float(padded.max(initial=0.0)), -float(padded.min(initial=0.0)))  # no |x| copy
    for phase_start in range(min(up, n_out)):
        # upfirdn's output sample y = pre_remove + n, n = phase_start + k * up: phase y % up,
        # newest input sample y // up (= its first one + k)
        y = pre_remove + phase_start
        coefficients = [np.float32(c) for c in
                        flipped[(y % up) * per_phase:(y % up + 1) * per_phase]]
        single = _single_tap(coefficients, peak)
        first = y // up - per_phase + 1 + left
        count = len(range(phase_start, n_out, up))
        sums = out[:, phase_start::up]
        # one pair of buffers for every block: np.zeros per block was ~3% of a reader's CPU
        totals = np.empty((n_channels, min(count, UPSAMPLE_BLOCK)), np.float32)
        products = np.empty_like(totals)
        for begin in range(0, count, UPSAMPLE_BLOCK):
            size = min(count, begin + UPSAMPLE_BLOCK) - begin
            total, product = totals[:, :size], products[:, :size]
            if single is None:
                _tap_sums(padded, coefficients, first + begin, total, product)
            else:
                _single_tap_sums(padded, coefficients, first + begin, total, *single)
            sums[:, begin:begin + size] = total
    return out


def _tap_sums(padded: np.ndarray, coefficients: list, at: int, total: np.ndarray,
              product: np.ndarray) -> None:
    """upfirdn's sums for a block of one phase: +0.0, then + x * h tap after tap, in float32."""
    size = total.shape[1]
    total.fill(0)
    for tap, coefficient in enumerate(coefficients):
        np.multiply(padded[:, at + tap:at + tap + size], coefficient, out=product)
        np.add(total, product, out=total)


# A phase whose other taps are below 2**-30 of its largest: the half-band filter of a 2x
# upsampling gives every second output sample as 1.0005 x one input sample plus terms of ~1e-17.
NEGLIGIBLE_TAPS = 2.0 ** -30


def _single_tap(coefficients: list, peak: float) -> tuple[int, float] | None:
    """(its largest tap, the |product| above which that tap's product is the whole sum) for a
    phase whose other taps are negligible; None otherwise, or for a signal that is not finite.

    Where |p| = |fl(h_d * x_d)| exceeds 2**27 * (sum of the other |h|) * max|x|, every other
    product, and every partial sum of them, is below 2**-27 |p|: under a quarter of half the
    gap between p and its float32 neighbours (that gap is at least 2**-24 |p|), so adding them
    before and after p in upfirdn's sequential float32 sum rounds back to p each time. Below
    it (a zero sample, or one tiny against the peak) the sum is taken in full."""
    magnitudes = [abs(float(c)) for c in coefficients]
    tap = int(np.argmax(magnitudes))
    rest = sum(m for k, m in enumerate(magnitudes) if k != tap)
    if not np.isfinite(peak) or not rest < magnitudes[tap] * NEGLIGIBLE_TAPS:
        return None
    return tap, 2.0 ** 27 * rest * peak


def _single_tap_sums(padded: np.ndarray, coefficients: list, at: int, total: np.ndarray,
                     tap: int, threshold: float) -> None:
    """_tap_sums, bit for bit, from one product where it is the whole sum (_single_tap)."""
    size = total.shape[1]
    np.multiply(padded[:, at + tap:at + tap + size], coefficients[tap], out=total)
    channels, columns = np.nonzero(~(np.abs(total) > threshold))
    if len(channels):  # the few sums the other taps may still change: taken in full
        exact = np.zeros(len(channels), np.float32)
        for k, coefficient in enumerate(coefficients):
            exact += padded[channels, at + k + columns] * coefficient
        total[channels, columns] = exact


def cut_windows(signals: np.ndarray, starts: np.ndarray, length: int) -> np.ndarray:
    """(n_windows, n_channels, length) copies of the signal at the given start samples."""
    _check_inside(starts, length, signals.shape[-1])
    # A strided view selects the windows without building an index array of every sample;
    # indexing its first axis copies each window once, straight into (windows, channels, time).
    view = np.lib.stride_tricks.sliding_window_view(signals, length, axis=-1)
    return view.transpose(1, 0, 2)[starts]


def _check_inside(starts: np.ndarray, length: int, n_samples: int) -> None:
    if len(starts) and (starts.max() + length > n_samples or starts.min() < 0):
        bad = int(starts.max()) if starts.max() + length > n_samples else int(starts.min())
        raise UsageError(
            f"a window starting at sample {bad} runs past the signal end "
            f"({n_samples} samples)",
            fix="rebuild the window index: it no longer matches the recording",
        )


# ------------------------------------------------------------------- a recording's windows


def model_starts(starts: np.ndarray, from_sfreq: float, to_sfreq: float) -> np.ndarray:
    """Window starts (samples at the recorded rate) in samples at the model's rate."""
    return np.round(np.asarray(starts) * (to_sfreq / from_sfreq)).astype(np.int64)


def model_windows(signals: np.ndarray, from_sfreq: float, to_sfreq: float,
                  starts: np.ndarray, length: int, scaling: str,
                  out: np.ndarray | None = None, first_sample: int = 0) -> np.ndarray:
    """(n_windows, n_channels, length) float32 model windows of one recording, scaled.

    `starts` are samples at the recorded rate (any order), `length` samples at the model rate.
    Equal, bit for bit, to `scale(cut_windows(resample(signals), starts * ratio), scaling)`,
    but only the signal the windows need is resampled. `out`, when given, receives them.
    `signals` may be a stretch of the recording that begins at sample `first_sample` and holds
    at least `recorded_span(starts, ...)` (or runs to the recording's end): the windows are
    then the same, bit for bit, as from the whole recording.
    """
    starts_out = model_starts(starts, from_sfreq, to_sfreq)
    offset = _model_sample(first_sample, from_sfreq, to_sfreq)
    n_out = offset + _resampled_length(signals.shape[-1], from_sfreq, to_sfreq)
    _check_inside(starts_out, length, n_out)
    starts_out = starts_out - offset
    if out is None:
        out = np.empty((len(starts_out), signals.shape[0], length), np.float32)
    for first, stop, members in _spans(starts_out, length, _reach(from_sfreq, to_sfreq)):
        span, at = resampled_span(signals, from_sfreq, to_sfreq, first, stop)
        for row, start in zip(members.tolist(), (starts_out[members] - at).tolist(),
                              strict=True):
            out[row] = span[:, start:start + length]  # one copy (fancy indexing makes two)
    return scale(out, scaling, in_place=True)


def recorded_span(starts: np.ndarray, from_sfreq: float, to_sfreq: float, length: int,
                  extra: int = 0) -> tuple[int, int]:
    """[first, stop): the recorded samples that windows at `starts` (recorded rate; `length`
    samples at the model rate) need, the filter's reach included. model_windows over just
    these samples (first_sample=first) makes the same windows, bit for bit, as over the whole
    recording: `first` falls on the resampling's phase (a multiple of its down factor).
    `extra` recorded samples more on each side: the reach of filters run on the stretch
    before it is resampled (pipeline/filters.reach).
    `stop` may lie past the recording's end: read what there is."""
    starts_out = model_starts(starts, from_sfreq, to_sfreq)
    first, stop = int(starts_out.min()), int(starts_out.max()) + length
    if from_sfreq == to_sfreq:
        return max(0, first - extra), stop + extra
    ratio = _ratio(from_sfreq, to_sfreq)
    reach = _input_reach(from_sfreq, to_sfreq) + extra
    up, down = ratio.numerator, ratio.denominator
    begin = max(0, first * down // up - reach)
    return begin - begin % down, -(-stop * down // up) + reach


def _model_sample(sample: int, from_sfreq: float, to_sfreq: float) -> int:
    """A recorded sample on the resampling's phase, as a sample at the model rate (exact)."""
    if from_sfreq == to_sfreq:
        return sample
    ratio = _ratio(from_sfreq, to_sfreq)
    if sample % ratio.denominator:
        raise ValueError(f"sample {sample} is not on the resampling's phase ({ratio})")
    return sample * ratio.numerator // ratio.denominator


def _resampled_length(n_in: int, from_sfreq: float, to_sfreq: float) -> int:
    if from_sfreq == to_sfreq:
        return n_in
    ratio = _ratio(from_sfreq, to_sfreq)
    return -(-n_in * ratio.numerator // ratio.denominator)  # resample_poly's: ceil


def _reach(from_sfreq: float, to_sfreq: float) -> int:
    """Output samples one output sample's filter reaches on either side (generously)."""
    if from_sfreq == to_sfreq:
        return 0
    ratio = _ratio(from_sfreq, to_sfreq)
    up, down = ratio.numerator, ratio.denominator
    # resample_poly's filter: 2 * 10 * max(up, down) + 1 taps at the upsampled rate, padded
    # by at most `down` zeros on each side; up / down output samples per input sample.
    taps = 20 * max(up, down) + 2 * down + 2
    return -(-taps // down) + up


def _spans(starts: np.ndarray, length: int, reach: int):
    """(first, stop, member indices) of runs of windows resampled together: windows closer
    than a window and the filter's reach share one stretch of signal."""
    if not len(starts):
        return
    order = np.argsort(starts, kind="stable")
    sorted_starts = starts[order]
    gaps = sorted_starts[1:] - (sorted_starts[:-1] + length)
    cuts = np.flatnonzero(gaps > max(length, 4 * reach)) + 1
    for members in np.split(order, cuts):
        yield int(starts[members].min()), int(starts[members].max()) + length, members


def _input_reach(from_sfreq: float, to_sfreq: float) -> int:
    """The filter's reach in recorded samples, with a phase's worth to spare."""
    ratio = _ratio(from_sfreq, to_sfreq)
    return -(-_reach(from_sfreq, to_sfreq) * ratio.denominator // ratio.numerator) \
        + ratio.denominator


def resampled_span(signals: np.ndarray, from_sfreq: float, to_sfreq: float, first: int,
                   stop: int) -> tuple[np.ndarray, int]:
    """(resampled samples covering [first, stop) at the output rate, the output index of its
    first sample). Every covered sample equals the whole recording's resampled one bit for bit:
    the stretch read starts on the filter's phase (a multiple of `down`) and takes the filter's
    whole reach on both sides, or the recording's own end, which the whole pass sees too."""
    if from_sfreq == to_sfreq:
        return signals[:, first:stop].astype(np.float32, copy=False), first
    ratio, reach_in = _ratio(from_sfreq, to_sfreq), _input_reach(from_sfreq, to_sfreq)
    up, down = ratio.numerator, ratio.denominator
    n_in = signals.shape[-1]
    begin = max(0, first * down // up - reach_in)
    begin -= begin % down
    end = min(n_in, -(-stop * down // up) + reach_in)
    return resample(signals[:, begin:end], from_sfreq, to_sfreq), begin * up // down


# ---------------------------------------------------- the reference's resampling kinds

EACH_WINDOW_BLOCK = 64  # windows resampled at once: bounds resample_poly's temporaries


def windows_resampled_each(signals: np.ndarray, from_sfreq: float, to_sfreq: float,
                           starts: np.ndarray, length: int, first_sample: int = 0,
                           centre: bool = False) -> np.ndarray:
    """(n_windows, channels, length) float32: each window cut at the recorded rate, centred
    per channel if asked, then resampled on its own with scipy's resample_poly, as the
    reference's model wrappers take a batch of windows (NeuroAtlas backbones/_preproc.py
    resample_poly_with_fallback; each window's edges see resample_poly's zero padding).
    `signals` begins at recorded sample `first_sample`."""
    length_in = int(round(length * from_sfreq / to_sfreq))
    local = np.asarray(starts, np.int64) - first_sample
    out = np.empty((len(local), signals.shape[0], length), np.float32)
    ratio = _ratio(from_sfreq, to_sfreq)
    for first in range(0, len(local), EACH_WINDOW_BLOCK):
        block = cut_windows(signals, local[first:first + EACH_WINDOW_BLOCK], length_in)
        block = block.astype(np.float32, copy=False)
        if centre:
            centre_windows(block)
        if from_sfreq != to_sfreq:
            block = _resample_each(block, ratio)
        if block.shape[-1] != length:
            raise UsageError(f"a {length_in}-sample window at {from_sfreq:g} Hz resamples to "
                             f"{block.shape[-1]} samples at {to_sfreq:g} Hz, not {length}",
                             fix="choose an epoch length that is whole at both rates")
        out[first:first + len(block)] = block
    return out


def _resample_each(block: np.ndarray, ratio: Fraction) -> np.ndarray:
    """resample_poly(block, up, down, axis=-1) of (windows, channels, samples) float32, bit for
    bit: each row on its own, so an integer upsampling takes _upsample over the rows (~1.7x
    faster on 64 windows of 2 channels)."""
    if ratio.denominator == 1 and block.dtype == np.float32:
        rows = np.ascontiguousarray(block).reshape(-1, block.shape[-1])
        upsampled = _upsample(rows, ratio.numerator)
        if upsampled is not None:
            return upsampled.reshape(*block.shape[:-1], -1)
    from scipy.signal import resample_poly

    return resample_poly(block, ratio.numerator, ratio.denominator, axis=-1)


def resample_whole_mne(signals: np.ndarray, from_sfreq: float, to_sfreq: float) -> np.ndarray:
    """A whole recording resampled as MNE's Raw.resample does (FFT, npad and pad "auto"): the
    reference's BCI loaders resample each run before cutting its trials."""
    if from_sfreq == to_sfreq:
        return signals.astype(np.float32, copy=False)
    import mne

    out = mne.filter.resample(signals.astype(np.float64), up=float(to_sfreq),
                              down=float(from_sfreq), npad="auto", window="auto", pad="auto",
                              method="fft", verbose="error")
    return out.astype(np.float32)


# ------------------------------------------------------------------------------- scaling


SCALE_BLOCK = 256  # windows per block of the percentile scaling: bounds its temporaries
PERCENTILE = 0.95


def scale(windows: np.ndarray, scaling: str, in_place: bool = False) -> np.ndarray:
    """Each model's own amplitude convention; input is in volts, output float32.

    `in_place` reuses a float32 `windows` (a fresh copy) rather than allocating a second night
    of windows.
    """
    out = windows if in_place and windows.dtype == np.float32 else windows.astype(np.float32)
    if scaling in WINDOW_NORMALISERS:
        for first in range(0, len(out), SCALE_BLOCK):
            WINDOW_NORMALISERS[scaling](out[first:first + SCALE_BLOCK])
        return out
    if scaling == "percentile95":
        # BIOT's convention: each channel of each window divided by its 95th percentile of |x|.
        for first in range(0, len(out), SCALE_BLOCK):
            block = out[first:first + SCALE_BLOCK]
            block /= abs_quantile(block, PERCENTILE) + np.float32(1e-8)
        return out
    out *= np.float32(SCALE_FACTORS[scaling.removesuffix(CLIP_SUFFIX)])
    if scaling.endswith(CLIP_SUFFIX):
        # CBraMod's wrapper clips at +-100 µV before dividing by 100: +-1 in these units
        np.clip(out, -1.0, 1.0, out=out)
    return out


def window_zscore(block: np.ndarray) -> np.ndarray:
    """Each channel of each window to zero mean and unit SD over the window, in place (LUNA's
    pretraining and fine-tuning input); a flat channel gives zeros."""
    block -= block.mean(axis=-1, keepdims=True)
    sd = block.std(axis=-1, keepdims=True)
    np.divide(block, sd, out=block, where=sd > 0)
    block[np.broadcast_to(sd == 0, block.shape)] = 0
    return block


def window_minmax(block: np.ndarray) -> np.ndarray:
    """Each window, all its channels together, to [-1, 1] by its minimum and maximum, in place
    (BENDR's pretraining input: DN3's MappingDeep1010); a flat window gives zeros."""
    low = block.min(axis=(-2, -1), keepdims=True)
    span = block.max(axis=(-2, -1), keepdims=True) - low
    block -= low
    np.divide(block, span, out=block, where=span > 0)
    block *= 2
    block -= 1
    block[np.broadcast_to(span == 0, block.shape)] = 0
    return block


# Conventions computed from each window itself: name -> the in-place normaliser of a block
WINDOW_NORMALISERS = {"window_zscore": window_zscore, "window_minmax": window_minmax}

# volts -> each convention's unit: V x 1e9 is EEGPT's "µV x 1000" (the reference's wrapper
# outside BCI), V x 1e3 its BCI one; 0.1mV is LaBraM's and CBraMod's µV / 100
SCALE_FACTORS = {"microvolts": 1e6, "millivolts": 1e3, "nanovolts": 1e9, "0.1mV": 1e4,
                 "none": 1.0}
CLIP_SUFFIX = "_clip"


def abs_quantile(x: np.ndarray, q: float) -> np.ndarray:
    """np.quantile(np.abs(x), q, axis=-1, keepdims=True) for float32 x, bit for bit, ~6x faster.

    np.quantile partitions a copy moved to axis 0 at four positions (two of them for its NaN
    check); one partition at the lower neighbour along the contiguous last axis, and the
    minimum above it, give the same two order statistics. The interpolation is numpy's `_lerp`
    with a Python-float weight (float32 arithmetic); a NaN lands above the lower neighbour or
    on it, and either way the result is NaN, as numpy's.
    """
    values = np.abs(x)
    n = values.shape[-1]
    below, gamma = quantile_rank(n, q)
    if below + 1 >= n:  # q == 1: the maximum
        return values.max(axis=-1, keepdims=True)
    values.partition(below, axis=-1)
    lower = values[..., below:below + 1]
    upper = values[..., below + 1:].min(axis=-1, keepdims=True)
    return quantile_lerp(lower, upper, gamma)


def quantile_rank(n: int, q: float) -> tuple[int, float]:
    """(the lower neighbour's rank, the weight of the upper one) of numpy's "linear" quantile
    (Hyndman & Fan 7) of n values."""
    virtual = (n - 1) * np.float64(q)
    below = int(np.floor(virtual))
    return below, float(virtual - below)


def quantile_lerp(lower: np.ndarray, upper: np.ndarray, gamma: float) -> np.ndarray:
    """numpy's `_lerp` of two float32 order statistics with a Python-float weight (float32
    arithmetic, as np.quantile does it)."""
    diff = upper - lower
    if gamma >= 0.5:
        return upper - diff * (1 - gamma)
    return lower + diff * gamma


# ---------------------------------------------------------- per-recording normalisation


MICROVOLTS_PER_VOLT = 1e6
Q95_EPSILON_UV = 1e-8  # BIOT's q95 + 1e-8, with q95 in µV as the reference takes it


def recording_q95(signals: np.ndarray) -> np.ndarray:
    """(channels,) float32: each channel's 95th percentile of |x| in µV over a whole (filtered)
    recording in volts: the reference's recording_q95 (np.quantile(np.abs(x_uV), 0.95)).
    One channel at a time: two copies of a channel, not of the recording."""
    out = np.empty(signals.shape[0], np.float32)
    for channel, row in enumerate(signals):
        microvolts = row.astype(np.float32) * np.float32(MICROVOLTS_PER_VOLT)
        out[channel] = abs_quantile(microvolts, PERCENTILE)[0]
    return out


ZSCORE_CLIP_SD = 15.0  # REVE's reference input clips at +-15 SD


def recording_zscore(signals: np.ndarray) -> np.ndarray:
    """(2, channels) float64: each channel's mean and SD over a whole (filtered) recording,
    one channel at a time."""
    out = np.empty((2, signals.shape[0]))
    for channel, row in enumerate(signals):
        out[:, channel] = row.mean(dtype=np.float64), row.std(dtype=np.float64)
    return out


def zscore_by_recording(windows: np.ndarray, moments: np.ndarray,
                        clip_sd: float | None = None) -> np.ndarray:
    """windows (volts) as (x - mean) / SD per channel with the recording's moments, clipped
    at +-`clip_sd` SD when given, in place; a flat channel (SD 0) gives zeros."""
    mean, sd = moments[0], moments[1]
    factors = np.divide(1.0, sd, out=np.zeros_like(sd), where=sd > 0)
    windows -= mean.astype(np.float32)[None, :, None]
    windows *= factors.astype(np.float32)[None, :, None]
    if clip_sd is not None:
        np.clip(windows, -clip_sd, clip_sd, out=windows)
    return windows


def zscore_by_recording_clipped(windows: np.ndarray, moments: np.ndarray) -> np.ndarray:
    """zscore_by_recording clipped at +-15 SD (REVE's reference input)."""
    return zscore_by_recording(windows, moments, ZSCORE_CLIP_SD)


def centre_windows(windows: np.ndarray) -> np.ndarray:
    """Each window's mean removed per channel, in place (BIOT's wrapper before it normalises)."""
    windows -= windows.mean(axis=-1, keepdims=True, dtype=np.float64).astype(np.float32)
    return windows


def divide_by_recording(windows: np.ndarray, q95_uv: np.ndarray) -> np.ndarray:
    """windows (volts) as x_uV / (q95_uV + 1e-8), in place, per channel."""
    factors = (MICROVOLTS_PER_VOLT / (q95_uv.astype(np.float64) + Q95_EPSILON_UV))
    windows *= factors.astype(np.float32)[None, :, None]
    return windows
