"""Seconds of scored events inside each window: the label every sleep-event probe thresholds.

One number per window and event field, so every threshold of the field reads the same
overlaps; a window is positive when its overlap is strictly greater than the threshold (the
reference's `_epoch_labels.binary_labels_from_fraction_seconds`: share of the epoch x epoch
seconds > threshold).

A field of several kinds (`ahi`: the apneas and hypopneas) is, as the reference's readers
build it (`dataio/physionet2026.py`, `dataio/ucddb.py`), the sum of its kinds' overlaps capped
at the window (`FIELD_OVERLAPS[0]`, "capped_sum"): an apnea inside a hypopnea's span counts
twice until the window is full. Each kind on its own is the union of its spans (the
reference's PhysioNet reader reads a kind from a code signal, so the same kind cannot count
twice; its UCDDB reader adds a kind's overlapping events, which UCDDB's scorers do not write).
"union" (a benchmark's `probe: {field_overlap: union}`) counts the seconds any of the field's
kinds covers: a second holds an event or not.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

FIELD_OVERLAPS = ("capped_sum", "union")  # the first is the reference's and the default


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


def field_overlap_seconds(window_starts: np.ndarray, window_seconds: float,
                          spans_by_kind: dict[str, list[tuple[float, float]]],
                          how: str = FIELD_OVERLAPS[0]) -> np.ndarray:
    """Seconds of each window a field of several kinds covers (`spans_by_kind`: the field's
    kinds' spans): each kind's union summed and capped at the window ("capped_sum"), or the
    union of every kind's spans ("union")."""
    if how == "union":
        spans = [span for kind_spans in spans_by_kind.values() for span in kind_spans]
        return overlap_seconds(window_starts, window_seconds, spans)
    total = np.zeros(len(np.asarray(window_starts)))
    for kind_spans in spans_by_kind.values():
        total += overlap_seconds(window_starts, window_seconds, kind_spans)
    return np.minimum(total, float(window_seconds))
