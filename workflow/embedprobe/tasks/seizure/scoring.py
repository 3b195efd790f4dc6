"""Seizure-detection scores of one fold and over folds: window metrics, the reference's event
sensitivity vs false alarms per hour curve and its area (the headline), its any-overlap F1, SzCORE
event counts, and the validation-F1 decision threshold.

Windows
-------
Every scored unit is a window [start, start + window_s) of one recording, with a seizure
probability. A window is positive when it overlaps a seizure by more than zero seconds
(`window_labels`). A prediction is positive when probability >= threshold.

Window metrics (`window_metrics`)
---------------------------------
auroc, auprc       threshold-free; AUPRC is average precision (scikit-learn's, as the reference).
                   NaN when the fold's test windows hold one class only.
balanced_accuracy  mean of sensitivity and specificity at the tuned threshold.
mcc                Matthews correlation at the tuned threshold (0 when a margin is empty).
sensitivity_at_fpr the window sensitivity (TPR) at the ROC point with the highest TPR whose false
                   positives stay within `max_fp_per_hour` false-positive windows per hour of
                   non-seizure windows; default 1 per hour, the reference's "sens@1FA/h" (for 10 s
                   windows a false-positive rate of 10/3600 = 0.28%). Computed on every ROC
                   point (no intermediate point dropped).

The headline: event sensitivity vs FA/h, as the reference computes it
----------------------------------------------------------------------
Reference: kkontras/NeuroAtlas, src/neuroatlas/extensions/tasks/_event_sens_fa.py
(threshold_sweep, fold_curve, curve_auc, median_curve, aggregate), aggregated over folds by
src/neuroatlas/results.py (_event_sens_fa); its docs/guide/benchmarks.md section 4.4.
Re-implemented here step by step:
  events      A fold's test windows are read per recording in start order, and the k-th window of
              a recording stands at [k, k + 1) window lengths (`recording_rows`): the reference
              reads windows in array order, so a gap between two windows never splits an event
              (our windows have no gaps: every whole window of a recording is scored). True events
              are runs of seizure-labelled windows, predicted events runs of positive windows.
  scoring     any overlap: a true event is detected when a predicted event overlaps it; a
              predicted event overlapping no true event is one false alarm. No tolerance, no
              merging of close events, no splitting of long ones. We count with SzCORE's library
              (timescoring 0.0.7) under ANY_OVERLAP_RULES (tolerances 0, minOverlap 0, no merge,
              no split), which is exactly that rule: EventScoring marks a true event detected when
              any predicted sample falls in it and counts a predicted event as a false alarm when
              none of its samples falls in a detected true event (pinned against a plain-numpy
              count of the rule in tests/tasks/test_seizure_scoring.py).
  sweep       thresholds tau = linspace(0, 1, 200) (CURVE_THRESHOLDS, threshold_sweep); per tau,
              sensitivity = detected / true events and FA/h = false alarms / test hours, test
              hours = number of test windows x window_s / 3600 (the reference's total_hours).
  branch      the sweep is cut to its descending branch: the thresholds from the first one with
              the highest FA/h up (np.nanargmax over tau ascending; fold_curve). Below it, a
              recording turns into one long event, so FA/h falls while sensitivity stays high:
              those points are dropped.
  grid        the branch sorted by FA/h, the best sensitivity kept at equal FA/h, linearly
              interpolated (in FA/h, np.interp) onto FA_GRID_PER_HOUR = geomspace(0.01, 100, 80);
              grid points outside [lowest, highest] FA/h of the branch are NaN (`fold_curve`).
  area        trapezoid of sensitivity over log10(FA/h) on the finite grid points inside
              [0.1, 100] FA/h, divided by the log10 width of those points (first to last finite
              one), not by the full 3 decades; NaN with fewer than two such points
              (`curve_auc`). A fold with no seizure window has an all-NaN curve.
  over folds  the headline is the area of the point-wise np.nanmedian of the fold curves (a grid
              point NaN in every fold stays NaN); +- is the sample SD (ddof=1) of the per-fold
              areas that are finite, NaN with fewer than two (`event_auc_over_folds`). So the
              headline is not the mean of the per-fold areas; that mean is reported beside it
              (`event_auc_fold_mean`).
A constant predictor, or a perfect one, never raises an alarm below "everything positive" (one
event per recording): its branch is a single FA/h of 0 and its area NaN, as in the reference.

ovlp_f1 (`overlap_scores`)
--------------------------
Reference: _seizure_evaluation.py, event_overlap_metrics_grouped, applied to the test windows
at the tuned threshold (full_binary_probe's test_ovlp_f1). The same events and any-overlap rule
as the curve, pooled over the fold's recordings: sensitivity = detected / true events,
precision = predicted events overlapping a true event / predicted events,
F1 = 2 s p / max(s + p, 1e-12). No true event: s = 0, p = 0 (1 when nothing is predicted),
F1 = 0; no predicted event: all 0.

SzCORE event counts at the tuned threshold (`score_events`: event_sensitivity, fa_per_24h)
-----------------------------------------------------------------------------------------
Per recording, positive windows that touch merge into one predicted event; the true events are
the recording's seizure intervals. `timescoring.EventScoring` applies SzCORE's published rules
(SZCORE_RULES):
  toleranceStart=30 s, toleranceEnd=60 s  a prediction up to 30 s before a seizure's onset or 60 s
                        after its end still counts as detecting it (and is no false alarm);
  minOverlap=0          any overlap detects a seizure;
  maxEventDuration=300  events (true and predicted) longer than 5 min are split into 5 min pieces;
  minDurationBetweenEvents=90  events less than 90 s apart merge into one (true and predicted).
A fold pools the counts: event sensitivity = detected / true events, FA/24h = false alarms /
(sum of the recordings' durations in days); only recordings with a window in the fold count.

Decision threshold (`tune_threshold`)
-------------------------------------
The threshold of THRESHOLD_GRID (0.01 ... 0.99, 101 values, the reference's) with the highest
validation F1 of the seizure class; the smallest such threshold on ties.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from embedprobe.core.errors import DataError, UsageError
from embedprobe.probing.metrics import balanced_accuracy

# A fold's numbers, as `score_fold` returns them; the headline first.
METRICS = (
    "event_auc",
    "auroc",
    "auprc",
    "ovlp_f1",
    "event_sensitivity",
    "fa_per_24h",
    "sensitivity_at_fpr",
    "balanced_accuracy",
    "mcc",
)
THRESHOLD_GRID = np.linspace(0.01, 0.99, 101)
MAX_FP_PER_HOUR = 1.0  # sensitivity_at_fpr: the reference's sens@1FA/h
# The reference's curve (_event_sens_fa.py: N_THRESHOLDS, FA_GRID, AUC_FA_RANGE)
CURVE_THRESHOLDS = np.linspace(0.0, 1.0, 200)
FA_GRID_PER_HOUR = np.geomspace(0.01, 100.0, 80)
AUC_RANGE_PER_HOUR = (0.1, 100.0)
SCORING_HZ = 10  # timescoring scores events on a 10 Hz grid (0.1 s)
_EPS = 1e-6  # seconds: float slack when comparing window and recording edges


@dataclass(frozen=True)
class EventRules:
    """timescoring.EventScoring.Parameters, frozen and JSON-ready (seconds; overlap relative;
    max_event_duration_s None: never split)."""

    tolerance_start_s: float = 30.0
    tolerance_end_s: float = 60.0
    min_overlap: float = 0.0
    max_event_duration_s: float | None = 300.0
    min_duration_between_events_s: float = 90.0

    def to_timescoring(self):
        from timescoring.scoring import EventScoring

        longest = self.max_event_duration_s
        return EventScoring.Parameters(
            toleranceStart=self.tolerance_start_s,
            toleranceEnd=self.tolerance_end_s,
            minOverlap=self.min_overlap,
            maxEventDuration=math.inf if longest is None else longest,
            minDurationBetweenEvents=self.min_duration_between_events_s,
        )

    def as_dict(self) -> dict:
        return asdict(self)


SZCORE_RULES = EventRules()
# The reference's plain any-overlap rule (module docstring): events must come in merged.
ANY_OVERLAP_RULES = EventRules(0.0, 0.0, 0.0, None, 0.0)


@dataclass(frozen=True)
class RecordingTruth:
    """One recording's length and its annotated seizures [(onset_s, end_s)], from its start."""

    duration_s: float
    seizures: tuple[tuple[float, float], ...] = ()


@dataclass
class WindowTimeline:
    """Where every scored window lies: its recording and start (s), rows aligned with the
    fold's labels and probabilities; `recordings` holds each recording's truth (extra ones are
    ignored)."""

    recording: np.ndarray  # (n,) recording name of each window
    start_s: np.ndarray  # (n,) float, from the recording's start
    window_s: float
    recordings: Mapping[str, RecordingTruth] = field(default_factory=dict)


@dataclass
class EventCounts:
    """Pooled event counts of a fold at one threshold (SzCORE rules)."""

    n_seizures: int  # true events after SzCORE's merge and split
    n_detected: int
    n_false_alarms: int
    hours: float  # summed duration of the recordings scored

    @property
    def sensitivity(self) -> float:
        return self.n_detected / self.n_seizures if self.n_seizures else float("nan")

    @property
    def fa_per_24h(self) -> float:
        return self.n_false_alarms / (self.hours / 24.0) if self.hours > 0 else float("nan")

    def as_dict(self) -> dict:
        return {**asdict(self), "sensitivity": self.sensitivity, "fa_per_24h": self.fa_per_24h}


@dataclass
class OverlapCounts:
    """Any-overlap event counts (the reference's rule) pooled over a fold's recordings."""

    n_true: int
    n_predicted: int
    n_detected: int  # true events overlapped by a predicted event
    n_false_alarms: int  # predicted events overlapping no true event

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class FoldCurve:
    """The reference's sweep of one fold (CURVE_THRESHOLDS ascending) and its curve on the
    FA/h grid (NaN where the fold does not reach)."""

    thresholds: np.ndarray
    sensitivity: np.ndarray  # NaN when the fold has no true event
    fa_per_hour: np.ndarray
    curve: np.ndarray  # on FA_GRID_PER_HOUR
    hours: float


@dataclass
class FoldScores:
    metrics: dict[str, float]  # the METRICS keys
    curves: dict[str, np.ndarray]  # what the figures draw (save them in the fold's .npz)
    events: EventCounts  # SzCORE's, at the tuned threshold
    overlap: OverlapCounts  # the reference's any-overlap, at the tuned threshold


# ----------------------------------------------------------------------------------------------
# Labels and window metrics
# ----------------------------------------------------------------------------------------------
def window_labels(start_s, window_s: float, seizures: Sequence[tuple[float, float]]) -> np.ndarray:
    """1 where [start, start + window_s) overlaps a seizure [onset, end) by more than 0 s."""
    starts = np.asarray(start_s, dtype=np.float64)
    labels = np.zeros(starts.shape, dtype=np.int64)
    for onset, end in seizures:
        labels[(starts < end) & (onset < starts + window_s)] = 1
    return labels


def _binary(name: str, y) -> np.ndarray:
    y = np.asarray(y)
    if y.ndim != 1 or (y.size and not np.isin(y, (0, 1)).all()):
        raise DataError(
            f"{name}: seizure labels must be a 1-D array of 0 (background) and 1 (seizure)",
            fix="label each window 1 when it overlaps a seizure, else 0 (window_labels)",
        )
    return y.astype(np.int64)


def _probabilities(name: str, proba, n: int) -> np.ndarray:
    proba = np.asarray(proba, dtype=np.float64)
    if proba.shape != (n,) or not np.isfinite(proba).all():
        raise DataError(
            f"{name}: need {n} finite seizure probabilities, got shape {proba.shape}",
            fix="pass one probability per window, from the probe of this fold",
        )
    return proba


def mcc(y_true, y_pred) -> float:
    """Matthews correlation of two 0/1 arrays; 0.0 when a row or column of the confusion is
    empty (scikit-learn's convention)."""
    t, p = _binary("y_true", y_true), _binary("y_pred", y_pred)
    tp = float(np.sum((t == 1) & (p == 1)))
    tn = float(np.sum((t == 0) & (p == 0)))
    fp = float(np.sum((t == 0) & (p == 1)))
    fn = float(np.sum((t == 1) & (p == 0)))
    denominator = np.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
    return float((tp * tn - fp * fn) / denominator) if denominator > 0 else 0.0


def sensitivity_at_fpr(y_true, proba, window_s: float,
                       max_fp_per_hour: float = MAX_FP_PER_HOUR) -> float:
    """Highest window TPR over the thresholds whose false positives per hour of background
    (false-positive windows / (non-seizure windows x window_s / 3600)) stay <= max_fp_per_hour."""
    from sklearn.metrics import roc_curve

    y = _binary("y_true", y_true)
    proba = _probabilities("probabilities", proba, len(y))
    if not 0 < y.sum() < len(y):
        return float("nan")
    fpr, tpr, _ = roc_curve(y, proba, drop_intermediate=False)
    fp_per_hour = fpr * 3600.0 / window_s  # fpr x negatives / (negatives x window_s / 3600)
    within = fp_per_hour <= max_fp_per_hour + 1e-12
    return float(tpr[within].max())  # the first ROC point (nothing positive) is always within


def window_metrics(y_true, proba, threshold: float, window_s: float,
                   max_fp_per_hour: float = MAX_FP_PER_HOUR) -> dict[str, float]:
    """auroc, auprc, sensitivity_at_fpr (threshold-free); balanced_accuracy, mcc at threshold."""
    from sklearn.metrics import average_precision_score, roc_auc_score

    y = _binary("y_true", y_true)
    proba = _probabilities("probabilities", proba, len(y))
    pred = (proba >= threshold).astype(np.int64)
    both = 0 < y.sum() < len(y)
    return {
        "auroc": float(roc_auc_score(y, proba)) if both else float("nan"),
        "auprc": float(average_precision_score(y, proba)) if both else float("nan"),
        "sensitivity_at_fpr": sensitivity_at_fpr(y, proba, window_s, max_fp_per_hour),
        "balanced_accuracy": balanced_accuracy(y, pred) if len(y) else float("nan"),
        "mcc": mcc(y, pred),
    }


def tune_threshold(y_val, proba_val, grid=THRESHOLD_GRID) -> tuple[float, float]:
    """(threshold, its F1) with the highest validation F1 of the seizure class over `grid`; the
    smallest threshold among ties."""
    y = _binary("validation labels", y_val)
    proba = _probabilities("validation probabilities", proba_val, len(y))
    grid = np.sort(np.asarray(grid, dtype=np.float64))
    if grid.size == 0:
        raise UsageError("the threshold grid is empty", fix="use THRESHOLD_GRID (0.01 ... 0.99)")
    positives, negatives = np.sort(proba[y == 1]), np.sort(proba[y == 0])
    tp = len(positives) - np.searchsorted(positives, grid, side="left")  # proba >= t
    fp = len(negatives) - np.searchsorted(negatives, grid, side="left")
    fn = len(positives) - tp
    denominator = 2 * tp + fp + fn
    f1 = np.divide(2.0 * tp, denominator, out=np.zeros(len(grid)), where=denominator > 0)
    best = int(np.argmax(f1))  # first maximum: the smallest threshold
    return float(grid[best]), float(f1[best])


# ----------------------------------------------------------------------------------------------
# Events
# ----------------------------------------------------------------------------------------------
def merge_windows(start_s, window_s: float) -> list[tuple[float, float]]:
    """Windows [start, start + window_s) as events: touching or overlapping windows merge."""
    starts = np.sort(np.asarray(start_s, dtype=np.float64))
    events: list[list[float]] = []
    for start in starts:
        if events and start <= events[-1][1] + _EPS:
            events[-1][1] = max(events[-1][1], start + window_s)
        else:
            events.append([float(start), float(start + window_s)])
    return [(a, b) for a, b in events]


class _RecordingScorer:
    """One recording's windows (sorted by start) and true events, scored by timescoring."""

    def __init__(self, truth: RecordingTruth, rows: np.ndarray, starts: np.ndarray,
                 window_s: float, rules: EventRules):
        from timescoring.annotations import Annotation

        order = np.argsort(starts[rows], kind="stable")
        self.rows = rows[order]
        self.starts = starts[self.rows]
        self.window_s = window_s
        self.duration_s = float(truth.duration_s)
        self.samples = int(round(self.duration_s * SCORING_HZ))
        self.params = rules.to_timescoring()
        self.Annotation = Annotation
        self.reference = Annotation(merge_intervals(truth.seizures), SCORING_HZ, self.samples)
        empty = self._score([])
        self.n_seizures = int(empty.refTrue)
        self._memo: dict[tuple, tuple[int, int]] = {(): (0, 0)}

    def _score(self, events):
        from timescoring.scoring import EventScoring

        hypothesis = self.Annotation(events, SCORING_HZ, self.samples)
        return EventScoring(self.reference, hypothesis, self.params)

    def counts(self, positive: np.ndarray) -> tuple[int, int]:
        """(detected true events, false alarms) with these windows (rows of the fold) positive."""
        key = tuple(merge_windows(self.starts[positive[self.rows]], self.window_s))
        if key not in self._memo:
            score = self._score(list(key))
            self._memo[key] = (int(score.tp), int(score.fp))
        return self._memo[key]


def merge_intervals(intervals) -> list[tuple[float, float]]:
    """Sorted, overlapping or touching intervals joined (timescoring expects disjoint events)."""
    merged: list[list[float]] = []
    for onset, end in sorted((float(a), float(b)) for a, b in intervals):
        if merged and onset <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([onset, end])
    return [(a, b) for a, b in merged]


def _scorers(timeline: WindowTimeline, n: int, rules: EventRules) -> list[_RecordingScorer]:
    recording = np.asarray(timeline.recording).astype(str)
    starts = np.asarray(timeline.start_s, dtype=np.float64)
    window_s = float(timeline.window_s)
    if recording.shape != (n,) or starts.shape != (n,):
        raise DataError(
            f"the window timeline has {recording.size} recordings and {starts.size} starts for "
            f"{n} windows",
            fix="pass one recording name and one start time per scored window, in fold order",
        )
    if not window_s > 0:
        raise UsageError(f"window length {window_s} s", fix="use the benchmark's window_s (10)")
    scorers = []
    for name in np.unique(recording):
        if name not in timeline.recordings:
            raise DataError(
                f"recording {name}: windows in the fold but no duration and seizure list",
                fix="pass every recording of the fold's windows in timeline.recordings",
            )
        truth = timeline.recordings[name]
        rows = np.flatnonzero(recording == name)
        _check_recording(name, truth, starts[rows], window_s)
        scorers.append(_RecordingScorer(truth, rows, starts, window_s, rules))
    return scorers


def _check_recording(name: str, truth: RecordingTruth, starts: np.ndarray, window_s: float):
    duration = float(truth.duration_s)
    if not duration > 0:
        raise DataError(f"recording {name}: duration {duration} s",
                        fix="read the duration from the recording's header")
    for onset, end in truth.seizures:
        if not 0 <= onset < end <= duration + _EPS:
            raise DataError(
                f"recording {name}: seizure {onset}-{end} s is not inside the recording "
                f"(0-{duration} s)",
                fix="check the dataset's seizure list against the recording's length",
            )
    if starts.min() < -_EPS or starts.max() + window_s > duration + _EPS:
        raise DataError(
            f"recording {name}: window starts {starts.min()}-{starts.max()} s fall outside the "
            f"recording (0-{duration} s)",
            fix="rebuild the window index; its windows and the recording disagree",
        )


def score_events(proba, threshold: float, timeline: WindowTimeline,
                 rules: EventRules = SZCORE_RULES) -> EventCounts:
    """Pooled SzCORE event counts with windows of probability >= threshold as predictions."""
    proba = np.asarray(proba, dtype=np.float64)
    scorers = _scorers(timeline, len(proba), rules)
    positive = proba >= threshold
    detected = false_alarms = 0
    for scorer in scorers:
        tp, fp = scorer.counts(positive)
        detected, false_alarms = detected + tp, false_alarms + fp
    return EventCounts(
        n_seizures=sum(s.n_seizures for s in scorers),
        n_detected=detected,
        n_false_alarms=false_alarms,
        hours=sum(s.duration_s for s in scorers) / 3600.0,
    )



# ----------------------------------------------------------------------------------------------
# The reference's any-overlap events, its curve and its area (module docstring)
# ----------------------------------------------------------------------------------------------
def recording_rows(recording, start_s) -> list[np.ndarray]:
    """Each recording's rows (positions in the fold), sorted by window start: the order the
    reference reads a recording's windows in."""
    recording = np.asarray(recording).astype(str)
    order = np.lexsort((np.asarray(start_s, dtype=np.float64), recording))
    names = recording[order]
    return np.split(order, np.flatnonzero(names[1:] != names[:-1]) + 1) if len(order) else []


def window_runs(mask, window_s: float) -> list[tuple[float, float]]:
    """Runs of True in a recording's windows (start order) as (start, end) seconds, the k-th
    window standing at [k, k + 1) window lengths."""
    edges = np.diff(np.concatenate([[0], np.asarray(mask, dtype=np.int8), [0]]))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    return [(float(a * window_s), float(b * window_s)) for a, b in zip(starts, ends, strict=True)]


class _OverlapScorer:
    """One recording's true events; any-overlap counts of a set of positive windows through
    timescoring under ANY_OVERLAP_RULES, remembered per set of predicted events."""

    def __init__(self, labels: np.ndarray, window_s: float):
        from timescoring.annotations import Annotation

        self.window_s = float(window_s)
        self.samples = int(round(len(labels) * self.window_s * SCORING_HZ))
        self.Annotation = Annotation
        self.truth = Annotation(window_runs(labels == 1, self.window_s), SCORING_HZ, self.samples)
        self.n_true = len(self.truth.events)
        self.params = ANY_OVERLAP_RULES.to_timescoring()
        self._memo: dict[tuple, tuple[int, int, int]] = {(): (0, 0, 0)}

    def counts(self, positive: np.ndarray) -> tuple[int, int, int]:
        """(predicted events, detected true events, false alarms)."""
        from timescoring.scoring import EventScoring

        key = tuple(window_runs(positive, self.window_s))
        if key not in self._memo:
            predicted = self.Annotation(list(key), SCORING_HZ, self.samples)
            score = EventScoring(self.truth, predicted, self.params)
            self._memo[key] = (len(key), int(score.tp), int(score.fp))
        return self._memo[key]


class _FoldEvents:
    """A fold's windows per recording (start order) with their any-overlap scorers."""

    def __init__(self, y, recording, start_s, window_s: float):
        y = _binary("test labels", y)
        if not float(window_s) > 0:
            raise UsageError(f"window length {window_s} s",
                             fix="use the benchmark's window_s (10)")
        if np.shape(recording) != y.shape or np.shape(start_s) != y.shape:
            raise DataError(
                f"{np.size(recording)} recording names and {np.size(start_s)} window starts "
                f"for {y.size} windows",
                fix="pass one recording name and one start time per scored window, in fold "
                "order")
        self.rows = recording_rows(recording, start_s)
        self.scorers = [_OverlapScorer(y[rows], window_s) for rows in self.rows]
        self.n_true = sum(s.n_true for s in self.scorers)
        self.hours = y.size * float(window_s) / 3600.0  # the reference's total_hours

    def counts(self, positive: np.ndarray) -> OverlapCounts:
        per = [s.counts(positive[rows]) for s, rows in zip(self.scorers, self.rows, strict=True)]
        predicted, detected, false_alarms = np.reshape(per, (-1, 3)).sum(axis=0).tolist()
        return OverlapCounts(self.n_true, predicted, detected, false_alarms)


def overlap_counts(y_true, y_pred, recording, start_s, window_s: float) -> OverlapCounts:
    """Any-overlap event counts of the positive windows of y_pred, pooled over recordings."""
    events = _FoldEvents(y_true, recording, start_s, window_s)
    return events.counts(_binary("predictions", y_pred).astype(bool))


def overlap_scores(counts: OverlapCounts) -> dict[str, float]:
    """ovlp_sensitivity, ovlp_precision, ovlp_f1 as the reference's
    event_overlap_metrics_grouped (module docstring), including its empty cases."""
    if counts.n_true == 0:
        precision = 0.0 if counts.n_predicted else 1.0
        return {"ovlp_sensitivity": 0.0, "ovlp_precision": precision, "ovlp_f1": 0.0}
    if counts.n_predicted == 0:
        return {"ovlp_sensitivity": 0.0, "ovlp_precision": 0.0, "ovlp_f1": 0.0}
    sensitivity = counts.n_detected / counts.n_true
    precision = (counts.n_predicted - counts.n_false_alarms) / counts.n_predicted
    f1 = 2 * sensitivity * precision / max(sensitivity + precision, 1e-12)
    return {"ovlp_sensitivity": sensitivity, "ovlp_precision": precision, "ovlp_f1": f1}


def fold_curve(sensitivity, fa_per_hour, fa_grid=FA_GRID_PER_HOUR) -> np.ndarray:
    """The sweep's descending branch interpolated onto fa_grid, NaN outside the FA/h it
    reaches (the reference's fold_curve; sweep points in ascending threshold order)."""
    grid = np.asarray(fa_grid, dtype=np.float64)
    sens = np.asarray(sensitivity, dtype=np.float64)
    fa = np.asarray(fa_per_hour, dtype=np.float64)
    out = np.full(grid.shape, np.nan)
    if sens.size == 0 or np.isnan(sens).any() or not np.isfinite(fa).any():
        return out  # no true event in the fold
    peak = int(np.nanargmax(fa))  # the first threshold with the most false alarms
    levels, where = np.unique(fa[peak:], return_inverse=True)
    best = np.zeros(len(levels))
    np.maximum.at(best, where, sens[peak:])  # the best sensitivity at each FA/h
    inside = (grid >= levels[0]) & (grid <= levels[-1])
    out[inside] = np.interp(grid[inside], levels, best)
    return out


def curve_auc(curve, fa_grid=FA_GRID_PER_HOUR, fa_range=AUC_RANGE_PER_HOUR) -> float:
    """Trapezoid area under sensitivity vs log10(FA/h) over the finite grid points in
    fa_range, divided by their log10 width; NaN with fewer than two (reference curve_auc)."""
    curve = np.asarray(curve, dtype=np.float64)
    grid = np.asarray(fa_grid, dtype=np.float64)
    lo, hi = (float(v) for v in fa_range)
    if not 0 < lo < hi:
        raise UsageError(f"FA/h range {fa_range}", fix="use two rates 0 < lo < hi, e.g. 0.1, 100")
    use = (grid >= lo) & (grid <= hi) & np.isfinite(curve)
    if use.sum() < 2:
        return float("nan")
    x = np.log10(grid[use])
    return float(np.trapezoid(curve[use], x) / (x[-1] - x[0]))


def event_curve(y_true, proba, recording, start_s, window_s: float,
                thresholds=CURVE_THRESHOLDS, fa_grid=FA_GRID_PER_HOUR) -> FoldCurve:
    """One fold's sweep over `thresholds` (ascending) and its curve on fa_grid."""
    events = _FoldEvents(y_true, recording, start_s, window_s)
    proba = _probabilities("test probabilities", proba, len(np.asarray(y_true)))
    thresholds = np.sort(np.asarray(thresholds, dtype=np.float64))
    sens, fa = np.empty(len(thresholds)), np.empty(len(thresholds))
    for i, tau in enumerate(thresholds):
        counts = events.counts(proba >= tau)
        sens[i] = counts.n_detected / counts.n_true if counts.n_true else np.nan
        fa[i] = counts.n_false_alarms / events.hours if events.hours > 0 else np.nan
    return FoldCurve(thresholds, sens, fa, fold_curve(sens, fa, fa_grid), events.hours)


def median_curve(curves) -> np.ndarray:
    """Point-wise np.nanmedian of the fold curves; a point NaN in every fold stays NaN."""
    stacked = np.asarray(curves, dtype=np.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns
        return np.nanmedian(stacked, axis=0)


@dataclass
class EventAucOverFolds:
    headline: float  # the area of the folds' median curve
    sd: float  # sample SD of the finite per-fold areas
    fold_mean: float  # mean of the finite per-fold areas (ours, beside the headline)
    per_fold: np.ndarray


def event_auc_over_folds(curves, fa_grid=FA_GRID_PER_HOUR,
                         fa_range=AUC_RANGE_PER_HOUR) -> EventAucOverFolds:
    """The headline over folds and its +- (the reference's aggregate, module docstring). With
    one fold the SD is 0, as for every other metric over one fold."""
    stacked = np.asarray(curves, dtype=np.float64)
    if stacked.size == 0:
        return EventAucOverFolds(float("nan"), float("nan"), float("nan"), np.zeros(0))
    per_fold = np.array([curve_auc(c, fa_grid, fa_range) for c in stacked])
    finite = per_fold[np.isfinite(per_fold)]
    if len(stacked) == 1:
        sd = 0.0
    else:
        sd = float(np.std(finite, ddof=1)) if finite.size >= 2 else float("nan")
    mean = float(finite.mean()) if finite.size else float("nan")
    headline = curve_auc(median_curve(stacked), fa_grid, fa_range)
    return EventAucOverFolds(headline, sd, mean, per_fold)


def curve_to_json(curve) -> list[float | None]:
    """A curve for a JSON record: NaN as null (strict JSON)."""
    return [float(v) if np.isfinite(v) else None for v in np.asarray(curve, dtype=np.float64)]


def curve_from_json(values) -> np.ndarray:
    return np.array([np.nan if v is None else float(v) for v in values], dtype=np.float64)


# ----------------------------------------------------------------------------------------------
# One fold
# ----------------------------------------------------------------------------------------------
def score_fold(
    y_true,
    proba,
    threshold: float,
    timeline: WindowTimeline,
    *,
    max_fp_per_hour: float = MAX_FP_PER_HOUR,
    rules: EventRules = SZCORE_RULES,
) -> FoldScores:
    """Every METRICS value of one test fold, the curves its figures draw (and the fold curve
    the headline over folds needs), and the event counts at the tuned threshold."""
    from sklearn.metrics import precision_recall_curve, roc_curve

    y = _binary("test labels", y_true)
    proba = _probabilities("test probabilities", proba, len(y))
    window_s = float(timeline.window_s)
    window = window_metrics(y, proba, threshold, window_s, max_fp_per_hour)
    events = score_events(proba, threshold, timeline, rules)
    overlap = overlap_counts(y, proba >= threshold, timeline.recording, timeline.start_s,
                             window_s)
    sweep = event_curve(y, proba, timeline.recording, timeline.start_s, window_s)
    metrics = {
        "event_auc": curve_auc(sweep.curve),
        **window,
        **overlap_scores(overlap),
        "event_sensitivity": float(events.sensitivity),
        "fa_per_24h": float(events.fa_per_24h),
    }
    curves = {
        "event_threshold": sweep.thresholds,
        "event_sensitivity": sweep.sensitivity,
        "event_fa_per_hour": sweep.fa_per_hour,
        "event_fa_grid": FA_GRID_PER_HOUR,
        "event_curve": sweep.curve,
        "event_auc_range": np.asarray(AUC_RANGE_PER_HOUR, dtype=np.float64),
        "prevalence": np.float64(y.mean() if len(y) else np.nan),
        "threshold": np.float64(threshold),
        **{key: np.float64(metrics[key]) for key in ("auroc", "auprc", "event_auc")},
    }
    if 0 < y.sum() < len(y):
        curves["roc_fpr"], curves["roc_tpr"], _ = roc_curve(y, proba)
        precision, recall, _ = precision_recall_curve(y, proba)
        curves["pr_precision"], curves["pr_recall"] = precision, recall
    return FoldScores({key: float(metrics[key]) for key in METRICS}, curves, events,
                      overlap)
