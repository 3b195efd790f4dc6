"""Synthetic steady-state visual evoked potentials (SSVEP) for the look-alike generators.

A flicker at f Hz drives the visual cortex at f and its harmonics, phase-locked to the
stimulus (Regan 1989; Herrmann 2001): the response is largest over the occipital pole (Oz,
O1/O2) and fades towards the parietal rows. Here it is the fundamental plus the 2nd harmonic,

    a1 * sin(2 pi f (t - L) + phase + theta1) + a2 * sin(2 pi 2f (t - L) + 2 phase + theta2),

from the stimulus onset plus the visual latency L (~0.13-0.15 s) until the flicker ends
(plus L), with 0.1 s ramps. `phase` is the stimulus's own phase (joint frequency-phase coding);
theta1, theta2 are the subject's response phase (its visual pathway), a1 12-20 microvolts at
Oz (a2 ~ half of a1), varying from subject to subject and a little from trial to trial. That is
about four times a real SSVEP (3-5 uV): at 3-5 uV a random-init CBraMod's pooled features
scored chance (0.08 of 12 classes; BIOT's spectra 0.31), at 12-20 uV 0.58 (BIOT 0.97).
The background is motor_imagery.synthesize_run's (1/f noise, posterior alpha, volume
conduction, per-subject gains) with no cues. A probe that sees the spectrum (power at each
target frequency and its harmonic) finds every class; the 0.5 Hz spacing of the targets needs
more than ~2 s of signal to resolve.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from embedprobe.datasets.synth.motor_imagery import _weights, scalp_position

OZ = (0.0, 8.0)  # grid position (motor_imagery.scalp_position) of the response's maximum
SPREAD = 2.5  # grid units: sd of the response's fall-off from Oz (PO7/PO8 ~0.25 of Oz)
FUNDAMENTAL_UV = (12.0, 20.0)  # a1 at Oz, per subject
HARMONIC_SHARE = (0.35, 0.6)  # a2 / a1, per subject
LATENCY_S = (0.13, 0.15)  # per subject
RAMP_S = 0.1


@dataclass(frozen=True)
class SsvepProfile:
    """What makes one subject's SSVEP differ from another's."""

    fundamental_uv: float
    harmonic_share: float
    latency_s: float
    theta1: float  # response phase of the fundamental, radians
    theta2: float  # of the harmonic


def ssvep_profile(rng: np.random.Generator) -> SsvepProfile:
    return SsvepProfile(
        fundamental_uv=float(rng.uniform(*FUNDAMENTAL_UV)),
        harmonic_share=float(rng.uniform(*HARMONIC_SHARE)),
        latency_s=float(rng.uniform(*LATENCY_S)),
        theta1=float(rng.uniform(-0.6, 0.6)),
        theta2=float(rng.uniform(-0.9, 0.9)),
    )


def occipital_weights(channels: Sequence[str]) -> np.ndarray:
    """Per channel, the share of the response it sees (1 at Oz; 0 without a 10-10 position)."""
    out = np.zeros(len(channels))
    for i, name in enumerate(channels):
        position = scalp_position(name)
        if position is not None:
            out[i] = _weights(np.array([position]), (OZ,), SPREAD)[0]
    return out


def ssvep_response(rng: np.random.Generator, channels: Sequence[str], sfreq: float, n: int,
                   onset_s: float, duration_s: float, frequency: float, phase: float,
                   profile: SsvepProfile) -> np.ndarray:
    """One trial's response in microvolts, (len(channels), n): the stimulus starts at
    onset_s (from the first sample) and flickers at `frequency` Hz with `phase` radians."""
    t = np.arange(n) / sfreq - onset_s - profile.latency_s
    envelope = np.clip(np.minimum(t, duration_s - t) / RAMP_S, 0.0, 1.0)
    gain = rng.uniform(0.75, 1.2)  # attention and gaze vary from trial to trial
    # Each channel sees the response with a slightly different lag (a travelling wave).
    lags = rng.normal(0.0, 0.15, len(channels))[:, None]
    first = 2 * np.pi * frequency * t[None, :] + phase + profile.theta1 + lags
    second = 2 * np.pi * 2 * frequency * t[None, :] + 2 * phase + profile.theta2 + 2 * lags
    wave = np.sin(first) + profile.harmonic_share * np.sin(second)
    weights = occipital_weights(channels)[:, None]
    return profile.fundamental_uv * gain * weights * envelope[None, :] * wave
