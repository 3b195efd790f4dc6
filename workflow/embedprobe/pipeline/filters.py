"""The reference protocol's signal filters: zero-phase, over a recording or a stretch of it.

The reference (NeuroAtlas, its dataset loaders, e.g. dataio/sleep_edf_expanded.py
`_load_recording_edf`) filters each recording at its recorded rate, before any resampling:
a 5th-order Butterworth high-pass, then a band-pass where a dataset sets one, then a notch
(scipy's `iirnotch`, Q 30) at the powerline frequency when it lies below Nyquist, each applied
forwards and backwards (`sosfiltfilt`) in float64 and cast back to float32 after each step.
MNE is not used for these: its IIR path pads differently (`padlen` from its own estimate of
the impulse response) and its notch is a Butterworth band-stop, so its numbers would not be
the reference's; scipy's are, step for step.

A stretch of a recording filtered with `reach` recorded samples on each side (or up to the
recording's own ends) equals the whole recording's filtering to float32 tolerance: the
recursive filters' responses to the stretch's edges decay below REACH_TOLERANCE of the signal
within that reach (tests/pipeline/test_filters.py measures it).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from functools import lru_cache

import numpy as np

BUTTERWORTH_ORDER = 5  # the reference's butter(5, ...)
NOTCH_Q = 30.0  # the reference's iirnotch(..., Q=30)
# A filter's response to a stretch edge must fall below this fraction of its peak within the
# reach: 1e-9 keeps the stretch's samples within float32 rounding of the whole recording's.
REACH_TOLERANCE = 1e-9


@dataclass(frozen=True)
class FilterStep:
    """One zero-phase filter: `highpass` (freqs: cut-off), `bandpass` (low, high), `notch`
    (the frequency to remove), all scipy IIR as the reference's loaders; `mne_bandpass`
    (low, high): MNE's default FIR band-pass, `mne_highpass` (cut-off): its high-pass alone,
    and `mne_notch` (line): MNE's default FIR notch
    at the line frequency and its harmonics below Nyquist, both over whole recordings only
    (the reference's BCI loaders)."""

    kind: str
    freqs: tuple[float, ...]

    def describe(self) -> str:
        return f"{self.kind} {'-'.join(f'{f:g}' for f in self.freqs)} Hz"


def step_sos(step: FilterStep, sfreq: float) -> np.ndarray | None:
    """The step's second-order sections at `sfreq`, or None where it does not apply (a notch
    at or above Nyquist, as the reference skips it: Sleep-EDF's 50 Hz at 100 Hz)."""
    return _sos(step.kind, step.freqs, float(sfreq))


@lru_cache(maxsize=64)
def _sos(kind: str, freqs: tuple[float, ...], sfreq: float) -> np.ndarray | None:
    from scipy.signal import butter, iirnotch

    nyquist = sfreq / 2.0
    if kind == "highpass":
        return butter(BUTTERWORTH_ORDER, freqs[0] / nyquist, btype="high", output="sos")
    if kind == "bandpass":
        low, high = freqs
        return butter(BUTTERWORTH_ORDER, [low / nyquist, high / nyquist], btype="band",
                      output="sos")
    if kind == "notch":
        if freqs[0] >= nyquist:
            return None
        b, a = iirnotch(freqs[0], Q=NOTCH_Q, fs=sfreq)
        return np.array([[b[0], b[1], b[2], a[0], a[1], a[2]]])
    raise ValueError(f"unknown filter kind {kind!r}")


def apply_filters(data: np.ndarray, sfreq: float, steps: tuple[FilterStep, ...]) -> np.ndarray:
    """(channels, samples) float32 after each step in turn, as the reference casts them."""
    from scipy.signal import sosfiltfilt

    out = data.astype(np.float32, copy=False)
    for step in steps:
        if step.kind in MNE_STEPS:
            out = MNE_STEPS[step.kind](out, sfreq, step.freqs)
            continue
        sos = step_sos(step, sfreq)
        if sos is None:
            continue
        if out.shape[-1] <= _padlen(sos):
            raise ValueError(f"{out.shape[-1]} samples are too few for the {step.describe()} "
                             f"filter (it pads {_padlen(sos)} on each side)")
        out = sosfiltfilt(sos, out, axis=-1).astype(np.float32)
    return out


def _mne_bandpass(data: np.ndarray, sfreq: float, freqs: tuple[float, ...]) -> np.ndarray:
    """MNE's zero-phase FIR band-pass (its default design) in float64; a high-pass alone
    where `freqs` holds only the cut-off."""
    import mne

    low, high = freqs if len(freqs) == 2 else (freqs[0], None)
    # n_jobs=1: a reader is already one of several; MNE's default would import joblib to
    # find out that it runs alone
    return mne.filter.filter_data(data.astype(np.float64), sfreq, low, high, n_jobs=1,
                                  verbose="error").astype(np.float32)


def _mne_notch(data: np.ndarray, sfreq: float, freqs: tuple[float, ...]) -> np.ndarray:
    """MNE's zero-phase FIR notch (its default design) at the line frequency and each of its
    harmonics below Nyquist, in float64: the reference's BCI notch, notch_filter(freqs=
    np.arange(line, native_sfreq / 2, line)) (dataio/moabb_loader.py
    load_and_preprocess_moabb, dataio/bci.py load_and_preprocess)."""
    import mne

    harmonics = np.arange(freqs[0], sfreq / 2.0, freqs[0])
    if not len(harmonics):  # the line frequency at or above Nyquist: nothing to remove
        return data
    return mne.filter.notch_filter(data.astype(np.float64), sfreq, harmonics, n_jobs=1,
                                   verbose="error").astype(np.float32)


# FIR steps whose reach is not bounded here: they run over whole recordings
MNE_STEPS = {"mne_bandpass": _mne_bandpass, "mne_highpass": _mne_bandpass,
             "mne_notch": _mne_notch}


def average_reference(data: np.ndarray, names: tuple[str, ...],
                      reference: tuple[str, ...]) -> np.ndarray:
    """(channels, samples) float32 with the mean of the `reference` rows subtracted from each
    of them (MNE's set_eeg_reference("average"), as the reference's BCI loaders apply it to
    the recording's EEG channels); rows outside `reference` are left as they are. A spatial
    step: it needs every reference channel, not only those a model reads."""
    rows = [names.index(name) for name in reference]
    out = data.astype(np.float32, copy=True)
    out[rows] = data[rows] - data[rows].astype(np.float64).mean(axis=0)
    return out


def _padlen(sos: np.ndarray) -> int:
    """sosfiltfilt's default odd-extension length for these sections."""
    n_sections = sos.shape[0]
    zeros = min(int((sos[:, 2] == 0).sum()), int((sos[:, 5] == 0).sum()))
    return 3 * (2 * n_sections + 1 - zeros)


def reach(steps: tuple[FilterStep, ...], sfreq: float) -> int:
    """Recorded samples a stretch needs on each side so that its filtered samples equal the
    whole recording's: the slowest pole's decay to REACH_TOLERANCE (each pass of filtfilt
    starts from the stretch's edge), summed over the steps, plus each step's padding."""
    total = 0
    for step in steps:
        if step.kind in MNE_STEPS:
            raise ValueError(f"the {step.describe()} filter runs over whole recordings only")
        sos = step_sos(step, sfreq)
        if sos is None:
            continue
        poles = np.concatenate([np.roots(section[3:]) for section in sos])
        slowest = float(np.max(np.abs(poles)))
        total += int(np.ceil(np.log(REACH_TOLERANCE) / np.log(slowest))) + _padlen(sos)
    return total


def describe(steps: tuple[FilterStep, ...]) -> list[dict]:
    """The steps as plain data (the embeddings' preprocessing key, check's table)."""
    return [asdict(step) | {"freqs": list(step.freqs)} for step in steps]
