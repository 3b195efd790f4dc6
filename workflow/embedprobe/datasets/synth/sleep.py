"""Sleep look-alikes' shared signal makers: a hypnogram that visits every stage within a
quarter hour, and EEG whose rhythm follows the stage (alpha in wake, theta in N1 and REM,
spindle-band in N2, delta in N3), so that a probe on it has something to find."""

from __future__ import annotations

import numpy as np

# The stage rhythms: (frequency Hz, amplitude uV); an unscored epoch gets (10, 10)
RHYTHM = {0: (10.0, 20.0), 1: (6.0, 25.0), 2: (13.0, 30.0), 3: (1.5, 80.0), 4: (7.0, 20.0)}


def cycling_hypnogram(rng: np.random.Generator, n: int) -> np.ndarray:
    """n epochs in runs of 2-5 cycling wake, N1, N2, N3, N2, REM (0 W ... 4 REM)."""
    order = (0, 1, 2, 3, 2, 4)
    stages, k = [], 0
    while len(stages) < n:
        stages += [order[k % len(order)]] * int(rng.integers(2, 6))
        k += 1
    return np.array(stages[:n], np.int64)


def stage_eeg(rng: np.random.Generator, stages: np.ndarray, sfreq: float,
              epoch_seconds: float, flat: bool = False) -> np.ndarray:
    """One EEG channel in microvolts, each epoch the stage's rhythm plus noise (`flat`: noise
    alone, a mastoid)."""
    per = int(round(epoch_seconds * sfreq))
    t = np.arange(per) / sfreq
    out = np.empty(len(stages) * per)
    for k, stage in enumerate(stages):
        freq, amp = RHYTHM.get(int(stage), (10.0, 10.0))
        wave = 0.0 if flat else amp * np.sin(2 * np.pi * freq * t + rng.uniform(0, 6.3))
        out[k * per:(k + 1) * per] = wave + rng.normal(0, 5.0, per)
    return out
