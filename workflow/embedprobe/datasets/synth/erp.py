"""Synthetic P300 (visual oddball) EEG for the ERP look-alikes (BNCI 2014-008, Brain Invaders
2013a).

Background: the motor-imagery generator's (synth/motor_imagery.py: 1/f noise, posterior alpha,
sensorimotor mu and beta, volume conduction, per-subject gains) with no cues. On top, every
flash evokes a small visual response over the occipital channels (P1 ~100 ms, N1 ~170 ms, a few
microvolts); a flash of the attended item (Target) adds the oddball components (Polich 2007,
Krusienski et al. 2008, the speller P300s of Riccio et al. 2013):

    N200  negative, peaking ~230 ms, over parieto-occipital sites (PO7/PO8, Oz)
    P300  positive, peaking 300-400 ms, centro-parietal maximum (Pz, then Cz, P3/P4)

The P300 is 40-60 uV here, several times a real single-trial P300 (5-10 uV): the demos probe
random-init encoders over 4 subjects, and at 8-12 uV no random encoder's pooled features
carried it (CBraMod 0.49, BIOT 0.50 balanced accuracy on the BNCI 2014-008 look-alike; 20-30 uV:
0.54; 40-60 uV: 0.70, EEGPT's flattened tokens 0.80; docs/measurements, the BCI demo).

Amplitudes and latencies vary between subjects (profile) and from flash to flash (jitter, and
some targets barely answered: the attention lapses of real spellers), so a probe fitted on some
subjects transfers to another but single flashes stay noisy. Responses to flashes 250 ms apart
overlap, as in the real recordings. Positions come from the 10-10 names on the flat grid of
motor_imagery.scalp_position, so the topography needs no montage file.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from embedprobe.datasets.synth.motor_imagery import scalp_position, subject_profile, synthesize_run

# (grid x, row) foci and spreads (grid units) of each component.
P300_FOCUS, P300_WIDTH = (0.0, 5.6), 2.2  # between Cz (row 4) and Pz (row 6), nearer Pz
N200_FOCUS, N200_WIDTH = (0.0, 7.5), 2.5  # parieto-occipital
VEP_FOCUS, VEP_WIDTH = (0.0, 8.0), 2.0  # occipital
KERNEL_S = 0.9  # how long one flash's response lasts
LAPSE_SHARE = 0.1  # targets answered at a quarter of the amplitude


@dataclass(frozen=True)
class Flash:
    onset_s: float  # from the start of the signal
    target: bool


@dataclass(frozen=True)
class ErpProfile:
    """What makes one subject's evoked responses differ from another's."""

    p300_uv: float
    p300_s: float  # peak latency
    n200_uv: float  # negative
    vep_uv: float
    jitter_s: float  # sd of the flash-to-flash latency


def erp_profile(rng: np.random.Generator) -> ErpProfile:
    return ErpProfile(p300_uv=float(rng.uniform(40.0, 60.0)), p300_s=float(rng.uniform(0.3, 0.4)),
                      n200_uv=-float(rng.uniform(2.0, 4.0)), vep_uv=float(rng.uniform(1.5, 3.0)),
                      jitter_s=float(rng.uniform(0.015, 0.035)))


def _topography(positions: np.ndarray, focus: tuple[float, float], width: float) -> np.ndarray:
    d2 = ((positions - np.asarray(focus)) ** 2).sum(axis=1)
    return np.exp(-d2 / (2 * width**2))


def _bump(t: np.ndarray, peak: float, width: float) -> np.ndarray:
    return np.exp(-0.5 * ((t - peak) / width) ** 2)


def evoked(rng: np.random.Generator, channels: Sequence[str], sfreq: float, n: int,
           flashes: Sequence[Flash], profile: ErpProfile) -> np.ndarray:
    """The evoked responses alone: (len(channels), n) microvolts; zero on channels without a
    10-10 position."""
    scalp = [i for i, c in enumerate(channels) if scalp_position(c) is not None]
    positions = np.array([scalp_position(channels[i]) for i in scalp], dtype=float)
    where = {"p300": _topography(positions, P300_FOCUS, P300_WIDTH),
             "n200": _topography(positions, N200_FOCUS, N200_WIDTH),
             "vep": _topography(positions, VEP_FOCUS, VEP_WIDTH)}
    t = np.arange(int(KERNEL_S * sfreq)) / sfreq
    out = np.zeros((len(channels), n))
    for flash in flashes:
        shift = rng.normal(0.0, profile.jitter_s)
        gain = rng.lognormal(0.0, 0.25)
        wave = profile.vep_uv * gain * (np.outer(where["vep"], _bump(t, 0.10 + shift / 2, 0.02)
                                                 - _bump(t, 0.17 + shift / 2, 0.025)))
        if flash.target:
            answer = gain * (0.25 if rng.uniform() < LAPSE_SHARE else 1.0)
            wave = wave + answer * (
                profile.n200_uv * np.outer(where["n200"], _bump(t, 0.23 + shift, 0.03))
                + profile.p300_uv * np.outer(where["p300"],
                                             _bump(t, profile.p300_s + shift, 0.075)))
        first = int(round(flash.onset_s * sfreq))
        stop = min(n, first + len(t))
        if first < n:
            out[scalp, first:stop] += wave[:, : stop - first]
    return out


def synthesize_erp_run(rng: np.random.Generator, channels: Sequence[str], sfreq: float, n: int,
                       flashes: Sequence[Flash], subject_rng: np.random.Generator) -> np.ndarray:
    """One run's scalp channels in microvolts, (len(channels), n) float64: the motor-imagery
    background (no cues) of the subject drawn from `subject_rng`, plus the evoked responses."""
    background = subject_profile(subject_rng)
    profile = erp_profile(subject_rng)
    data = synthesize_run(rng, channels, sfreq, n, [], background)
    return data + background.gain * evoked(rng, channels, sfreq, n, flashes, profile)


def flash_order(rng: np.random.Generator, n_items: int, targets: Sequence[int]) -> list[int]:
    """One repetition: every item once, in random order, never two targets in a row (the
    spellers' constraint that keeps target responses apart)."""
    while True:
        order = [int(i) for i in rng.permutation(n_items)]
        spots = [k for k, item in enumerate(order) if item in targets]
        if all(b - a > 1 for a, b in zip(spots, spots[1:], strict=False)):
            return order
