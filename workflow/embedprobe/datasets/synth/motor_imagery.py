"""Synthetic motor-imagery EEG for the look-alike generators (PhysioNet MMI, BNCI 2014-001).

Every scalp channel carries a 1/f background, a posterior alpha rhythm and sensorimotor mu
(~10 Hz) and beta (~20 Hz) rhythms, spread over neighbouring electrodes (volume conduction).
The class signature is event-related desynchronisation (ERD, Pfurtscheller & Lopes da Silva
1999): from ~0.5 s after a cue until the task ends, mu and beta amplitude drop over the cortex
the imagined movement uses, and rise over the hand areas when the movement is not a hand
movement (the "focal ERD / surround ERS" of foot and tongue imagery):

    right_hand -> C3             left_hand -> C4, and C3 at 0.8 (the non-dominant hand of a
                                              right-hander desynchronises both hemispheres)
    hands (both fists) -> C3 and C4
    feet   -> Cz, strong ERS over C3/C4       tongue -> both lateral, inferior to the hand
                                                        areas (C5-FT7 / C6-FT8), ERS at C3/C4

ERD changes the shape of each channel's spectrum (less mu and beta against an unchanged
background), so it survives any per-window, per-channel amplitude scaling (BIOT divides each
channel by its 95th percentile). A probe that sees channels apart (log band power per channel
+ logistic regression) finds every class from the location alone. A random-init encoder whose
features are a mean over channel tokens sees mostly the channel-averaged spectrum, where a
pure left/right mirror image cancels: the bilateral left-hand ERD and the different amounts of
ERD and ERS per class are what it can pick up (measured with biot_random on 4 s trials,
leave-one-subject-out: left/right 0.68, hands/feet 0.94, BNCI four classes 0.50 balanced
accuracy; it was at chance with mirror-image classes). ERD depth, mu and beta frequencies and
channel gains vary between subjects, depth from trial to trial; the peaks vary less than in
real people, so that a probe fitted on some subjects transfers to another. Positions come from
the 10-10 names on a flat grid (one unit ~ one electrode step): no montage file is needed and
the same name gets the same place in both datasets.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.fft

# Grid row of each 10-10 prefix (front to back); the number gives the column (odd left).
_ROWS = {"FP": 0, "AF": 1, "F": 2, "FC": 3, "FT": 3, "C": 4, "T": 4, "CP": 5, "TP": 5, "P": 6,
         "PO": 7, "O": 8, "I": 9}
_NAME = re.compile(r"^(?P<prefix>[A-Z]+?)(?P<column>\d+|Z)$")

# ERD foci per class: ((grid x, row), strength). ERS_AT_HANDS: the hand areas' rise for feet
# and tongue.
C3, C4, CZ = (-2.0, 4.0), (2.0, 4.0), (0.0, 4.0)
ERD_FOCI = {
    "left_hand": ((C4, 1.0), (C3, 0.8)),  # the non-dominant hand: both hemispheres
    "right_hand": ((C3, 1.0),),
    "hands": ((C3, 1.0), (C4, 1.0)),
    "feet": (((0.0, 4.3), 1.0),),
    "tongue": (((-3.5, 3.5), 1.0), ((3.5, 3.5), 1.0)),
}
ERS_AT_HANDS = {"feet": 0.5, "tongue": 0.2}
ERD_WIDTH = 1.3  # grid units (sd of the Gaussian around each focus)
MIXING_WIDTH = 0.6  # volume conduction: sd of the spatial smoothing, grid units

# RMS amplitudes in microvolts at a rhythm's strongest place.
BACKGROUND_UV = 9.0
ALPHA_UV = 6.0
MU_UV = 10.0
BETA_UV = 3.5
# Subjects' mu and beta peaks: narrower than in real people, so that every two subjects'
# bands overlap and a probe fitted on some subjects transfers to another.
MU_HZ = (9.75, 10.75)
BETA_HZ = (19.0, 22.0)
ERD_LATENCY_S = (0.3, 0.7)  # after the cue
ERD_RISE_S = 0.4
ERD_FALL_S = 0.5


def scalp_position(name: str) -> tuple[float, float] | None:
    """(x, row) of a 10-10 electrode name ("C3", "Fc5.", "FCz"); None for non-scalp channels
    (EOG). x: 0 on the midline, negative on the left; one unit per electrode step."""
    match = _NAME.match(name.strip(".").strip().upper())
    if not match or match["prefix"] not in _ROWS:
        return None
    column = match["column"]
    if column == "Z":
        x = 0.0
    else:
        n = int(column)
        x = -(n + 1) / 2 if n % 2 else n / 2
    return x, float(_ROWS[match["prefix"]])


@dataclass(frozen=True)
class SubjectProfile:
    """What makes one synthetic subject differ from another."""

    mu_hz: float
    beta_hz: float
    alpha_hz: float
    erd_depth: float  # share of mu amplitude removed at the focus in a typical trial
    gain: float  # overall amplitude (skull, impedance)
    channel_gain_sd: float = 0.15


def subject_profile(rng: np.random.Generator) -> SubjectProfile:
    return SubjectProfile(
        mu_hz=float(rng.uniform(*MU_HZ)),
        beta_hz=float(rng.uniform(*BETA_HZ)),
        alpha_hz=float(rng.uniform(9.0, 11.0)),
        erd_depth=float(rng.uniform(0.6, 0.85)),
        gain=float(rng.lognormal(0.0, 0.2)),
    )


@dataclass(frozen=True)
class Cue:
    """One trial as the generator performs it: the imagery period and its class."""

    onset_s: float
    duration_s: float
    class_name: str


def _weights(positions: np.ndarray, foci: Sequence[tuple[float, float]], width: float,
             strengths: Sequence[float] | None = None) -> np.ndarray:
    """Per channel, the largest Gaussian weight over the foci (a focus's strength at it)."""
    d2 = ((positions[:, None, :] - np.asarray(foci)[None, :, :]) ** 2).sum(-1)
    weights = np.exp(-d2 / (2 * width**2))
    if strengths is not None:
        weights = weights * np.asarray(strengths)[None, :]
    return weights.max(axis=1)


def _erd_reach(positions: np.ndarray, class_name: str) -> np.ndarray:
    """How much of a trial's ERD each channel sees (negative: ERS)."""
    foci, strengths = zip(*ERD_FOCI[class_name], strict=True)
    hands = _weights(positions, (C3, C4), ERD_WIDTH)
    return _weights(positions, foci, ERD_WIDTH, strengths) \
        - ERS_AT_HANDS.get(class_name, 0.0) * hands


def _band_noise(rng: np.random.Generator, n_channels: int, n: int, sfreq: float,
                amplitude: np.ndarray) -> np.ndarray:
    """Gaussian noise, one row per channel, whose amplitude spectrum is `amplitude(freqs)`
    scaled to RMS 1 (float32)."""
    freqs = scipy.fft.rfftfreq(n, 1 / sfreq)
    shape = amplitude(freqs).astype(np.float32)
    shape /= np.sqrt(2 * np.sum(shape**2) / n) + np.float32(1e-12)
    spectrum = np.empty((n_channels, len(freqs)), np.complex64)
    spectrum.real = rng.standard_normal((n_channels, len(freqs)), dtype=np.float32)
    spectrum.imag = rng.standard_normal((n_channels, len(freqs)), dtype=np.float32)
    spectrum *= shape * np.float32(np.sqrt(n / 2))
    return scipy.fft.irfft(spectrum, n, axis=-1).astype(np.float32)


def _band(low: float, high: float):
    return lambda f: ((f >= low) & (f <= high)).astype(np.float32)


def _pink(f: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.where(f >= 0.5, f**-0.75, 0.0)


def _envelopes(cues: Sequence[Cue], depths: np.ndarray, latencies: np.ndarray, n: int,
               sfreq: float) -> np.ndarray:
    """(n_cues, n): 0 outside the imagery, ramping to 1 after each cue's latency."""
    t = np.arange(n, dtype=np.float32) / np.float32(sfreq)
    out = np.zeros((len(cues), n), np.float32)
    for k, cue in enumerate(cues):
        start = cue.onset_s + latencies[k]
        end = cue.onset_s + cue.duration_s
        first = max(0, int(start * sfreq))
        last = min(n, int((end + ERD_FALL_S) * sfreq) + 1)
        tt = t[first:last]
        rise = np.clip((tt - start) / ERD_RISE_S, 0, 1)
        fall = np.clip(1 - (tt - end) / ERD_FALL_S, 0, 1)
        out[k, first:last] = depths[k] * np.minimum(rise, fall)
    return out


def synthesize_run(rng: np.random.Generator, channels: Sequence[str], sfreq: float, n: int,
                   cues: Sequence[Cue], profile: SubjectProfile, alpha_scale: float = 1.0
                   ) -> np.ndarray:
    """The scalp channels of one run in microvolts, (len(channels), n) float64.

    Channels without a 10-10 position (EOG) come back as zeros: the caller writes them."""
    scalp = [i for i, c in enumerate(channels) if scalp_position(c) is not None]
    positions = np.array([scalp_position(channels[i]) for i in scalp])
    m = len(scalp)
    gains = profile.gain * rng.lognormal(0.0, profile.channel_gain_sd, m).astype(np.float32)
    # Where each rhythm is strongest: mu and beta over the motor strip, alpha at the back.
    mu_where = np.maximum(_weights(positions, (C3, C4), 1.5),
                          0.6 * _weights(positions, (CZ,), 1.5)).astype(np.float32)
    alpha_where = _weights(positions, ((0.0, 7.5),), 2.0).astype(np.float32)
    # Per trial: depth (some trials barely show it, as in real data) and latency.
    depths = profile.erd_depth * rng.uniform(0.7, 1.15, len(cues))
    depths[rng.uniform(size=len(cues)) < 0.1] *= 0.25
    depths = np.clip(depths, 0, 0.95).astype(np.float32)
    latencies = rng.uniform(*ERD_LATENCY_S, len(cues))
    envelopes = _envelopes(cues, depths, latencies, n, sfreq)
    # Per channel, how much of each trial's envelope it sees: ERD where the class acts,
    # surround ERS (negative) at the hand areas for feet and tongue.
    reach = np.stack([_erd_reach(positions, c.class_name) for c in cues], axis=1) \
        if cues else np.zeros((m, 0), np.float32)
    mu_gain = 1 - reach.astype(np.float32) @ envelopes  # (m, n)

    background = _band_noise(rng, m, n, sfreq, _pink) * np.float32(BACKGROUND_UV)
    alpha = _band_noise(rng, m, n, sfreq, _band(profile.alpha_hz - 1, profile.alpha_hz + 1))
    mu = _band_noise(rng, m, n, sfreq, _band(profile.mu_hz - 1.5, profile.mu_hz + 1.5))
    beta = _band_noise(rng, m, n, sfreq, _band(profile.beta_hz - 4, profile.beta_hz + 4))
    sources = background
    sources += alpha * (np.float32(ALPHA_UV * alpha_scale) * alpha_where)[:, None]
    sources += mu * (np.float32(MU_UV) * mu_where)[:, None] * mu_gain
    # Beta desynchronises with mu, a little less deeply.
    sources += beta * (np.float32(BETA_UV) * mu_where)[:, None] * (1 - 0.8 * (1 - mu_gain))
    d2 = ((positions[:, None, :] - positions[None, :, :]) ** 2).sum(-1)
    mixing = np.exp(-d2 / (2 * MIXING_WIDTH**2)).astype(np.float32)
    mixing /= np.sqrt((mixing**2).sum(axis=1, keepdims=True))  # keeps each channel's RMS
    out = np.zeros((len(channels), n))
    out[scalp] = gains[:, None] * (mixing @ sources)
    return out


def balanced_classes(rng: np.random.Generator, classes: Sequence[str], n: int,
                     extra_first: int = 0) -> list[str]:
    """n class names in random order, as balanced as n allows; `extra_first` rotates which
    classes take the remainder (so runs of odd length even out over a session)."""
    order = [classes[(extra_first + k) % len(classes)] for k in range(len(classes))]
    names = [order[k % len(order)] for k in range(n)]
    return [names[i] for i in rng.permutation(n)]
