"""Seconds of scored events inside each window: the label every sleep-event probe thresholds.

One number per window and event field (the union of the field's kinds: an apnea inside a
hypopnea's span counts once), so every threshold of the field reads the same overlaps. The
reference (NeuroAtlas _epoch_labels) stores the share of the epoch and compares share x epoch
seconds with the threshold; a window is positive when its overlap is strictly greater.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np


def merged_intervals(spans: Iterable[tuple[float, float]]) -> np.ndarray:
    """(k, 2) float64 of disjoint [start, end) spans, sorted, touching spans joined; spans of
    no length are left out (they overlap no window by any length)."""
    rows = sorted((float(a), float(b)) for a, b in spans if float(b) > float(a))
    out: list[list[float]] = []
    for start, end in rows:
        if out and start <= out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([start, end])
    return np.array(out, dtype=np.float64).reshape(-1, 2)


def overlap_seconds(window_starts: np.ndarray, window_seconds: float,
                    spans: Iterable[tuple[float, float]]) -> np.ndarray:
    """Seconds of each window [start, start + window_seconds) covered by the spans' union.

    The covered time up to t is piecewise linear in t (slope 1 inside a span, 0 between), so
    it is np.interp over the spans' ends; a window's overlap is its difference at the
    window's two ends: exact, and one pass over any number of windows."""
    starts = np.asarray(window_starts, dtype=np.float64)
    intervals = merged_intervals(spans)
    if not len(intervals):
        return np.zeros(len(starts))
    points = intervals.ravel()  # s0, e0, s1, e1, ... strictly increasing
    lengths = intervals[:, 1] - intervals[:, 0]
    covered = np.repeat(np.concatenate([[0.0], np.cumsum(lengths)]), 2)[1:-1]

    def covered_to(t: np.ndarray) -> np.ndarray:
        return np.interp(t, points, covered, left=0.0, right=covered[-1])

    return covered_to(starts + window_seconds) - covered_to(starts)
