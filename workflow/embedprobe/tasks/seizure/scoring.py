"""Seizure-detection scores of one fold: window metrics, event scoring, the sensitivity vs false
alarms per 24 h curve and its area (the headline), and the validation-F1 decision threshold.

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

Events (SzCORE's rules through its library, timescoring 0.0.7)
--------------------------------------------------------------
Per recording, positive windows that touch (next start <= previous end) merge into one predicted
event; the true events are the recording's seizure intervals. `timescoring.EventScoring` then
applies SzCORE's event rules with these parameters (`SZCORE_RULES`, SzCORE's published defaults,
so that the numbers mean what SzCORE's users read them as):
  toleranceStart=30 s, toleranceEnd=60 s  a prediction up to 30 s before a seizure's onset or 60 s
                        after its end still counts as detecting it (and is no false alarm): EEG
                        onsets and ends are uncertain by tens of seconds;
  minOverlap=0          any overlap detects a seizure (the reference's any-overlap rule);
  maxEventDuration=300  events (true and predicted) longer than 5 min are split into 5 min pieces:
                        a detector that flags an hour scores as 12 alarms, not one;
  minDurationBetweenEvents=90  events less than 90 s apart merge into one (true and predicted):
                        one seizure flagged in bursts is one alarm, and the rate of alarms is
                        bounded (at most one per 100 s with 10 s windows).
The library counts, per recording, true events (after its merge and split), detected true
events and false alarms (predicted events touching no detected true event's tolerance zone).
A fold pools them: event sensitivity = detected / true events over all its recordings,
FA/24h = false alarms / (sum of the recordings' durations in days). Only recordings with at
least one window in the fold count; their full duration is the denominator (as timescoring's).

The sensitivity vs FA/24h curve and its area (`event_sweep`, `event_auc`)
-------------------------------------------------------------------------
Thresholds swept: every distinct test probability when there are at most `max_thresholds`
(400); otherwise the probabilities of the k-th most probable window for k on a geometric grid of
`max_thresholds` ranks from 1 to n (fine where few windows are positive, the low-alarm end the
curve is about; the lowest threshold, every window positive, is always in). Each threshold gives
one point (FA/24h, event sensitivity). The curve is the best sensitivity within an alarm budget:
    S(f) = max { sensitivity(t) : FA/24h(t) <= f }   (0 where no threshold stays within f),
a non-decreasing step function (the points themselves need not be monotone: SzCORE's merging
can lower the alarm count as the threshold falls). The headline is its mean over a log axis:
    event_auc = integral of S(f) d log10 f over [lo, hi] / (log10 hi - log10 lo),
integrated exactly (S is piecewise constant), in [0, 1]. [lo, hi] = [2.4, 2400] FA/24h by
default: the reference's 0.1-100 false alarms per hour. A perfect ranking scores 1. A predictor
with one value everywhere scores (log10 hi - log10 FA_all) / 3, FA_all being the alarm rate of
"every window positive" (264/24h for a 1 h recording with one seizure: 11 of its 12 five-minute
pieces are alarms -> 0.32): above FA_all every predictor reaches its best sensitivity.
NaN when the fold has no true event. Differences from the reference's curve (kept on purpose):
SzCORE tolerances, merging and splitting instead of plain any-overlap; the budget envelope S
instead of interpolation on a descending branch; the full range as the normaliser (the
reference divides by the part of the range its interpolation reaches).

Decision threshold (`tune_threshold`)
-------------------------------------
The threshold of THRESHOLD_GRID (0.01 ... 0.99, 101 values, the reference's) with the highest
validation F1 of the seizure class; the smallest such threshold on ties.
"""

from __future__ import annotations

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
    "event_sensitivity",
    "fa_per_24h",
    "sensitivity_at_fpr",
    "balanced_accuracy",
    "mcc",
)
THRESHOLD_GRID = np.linspace(0.01, 0.99, 101)
MAX_FP_PER_HOUR = 1.0  # sensitivity_at_fpr: the reference's sens@1FA/h
FA_RANGE_PER_24H = (2.4, 2400.0)  # the reference's 0.1-100 FA/h
MAX_THRESHOLDS = 400
SCORING_HZ = 10  # timescoring scores events on a 10 Hz grid (0.1 s)
_EPS = 1e-6  # seconds: float slack when comparing window and recording edges


@dataclass(frozen=True)
class EventRules:
    """timescoring.EventScoring.Parameters, frozen and JSON-ready (seconds; overlap relative)."""

    tolerance_start_s: float = 30.0
    tolerance_end_s: float = 60.0
    min_overlap: float = 0.0
    max_event_duration_s: float = 300.0
    min_duration_between_events_s: float = 90.0

    def to_timescoring(self):
        from timescoring.scoring import EventScoring

        return EventScoring.Parameters(
            toleranceStart=self.tolerance_start_s,
            toleranceEnd=self.tolerance_end_s,
            minOverlap=self.min_overlap,
            maxEventDuration=self.max_event_duration_s,
            minDurationBetweenEvents=self.min_duration_between_events_s,
        )

    def as_dict(self) -> dict:
        return asdict(self)


SZCORE_RULES = EventRules()


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
class EventSweep:
    """One point per swept threshold (descending thresholds)."""

    thresholds: np.ndarray
    fa_per_24h: np.ndarray
    sensitivity: np.ndarray
    n_seizures: int
    hours: float


@dataclass
class FoldScores:
    metrics: dict[str, float]  # the METRICS keys
    curves: dict[str, np.ndarray]  # what the figures draw (save them in the fold's .npz)
    events: EventCounts  # at the tuned threshold


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


def sweep_thresholds(proba, max_thresholds: int = MAX_THRESHOLDS) -> np.ndarray:
    """The thresholds of the curve, descending (module docstring)."""
    proba = np.asarray(proba, dtype=np.float64)
    distinct = np.unique(proba)[::-1]
    if len(distinct) <= max_thresholds:
        return distinct
    ranked = np.sort(proba)[::-1]
    ranks = np.unique(np.round(np.geomspace(1, len(ranked), max_thresholds)).astype(np.int64))
    return np.unique(ranked[ranks - 1])[::-1]


def event_sweep(proba, timeline: WindowTimeline, rules: EventRules = SZCORE_RULES,
                max_thresholds: int = MAX_THRESHOLDS) -> EventSweep:
    """(FA/24h, event sensitivity) at every swept threshold. Windows turn positive one
    threshold after another, and only the recordings that gained a window are scored again."""
    proba = _probabilities("probabilities", proba, len(np.asarray(proba)))
    scorers = _scorers(timeline, len(proba), rules)
    owner = np.empty(len(proba), dtype=np.int64)
    for k, scorer in enumerate(scorers):
        owner[scorer.rows] = k
    thresholds = sweep_thresholds(proba, max_thresholds)
    order = np.argsort(-proba, kind="stable")
    descending = -proba[order]  # ascending, for searchsorted
    positive = np.zeros(len(proba), dtype=bool)
    counts = np.zeros((len(scorers), 2), dtype=np.int64)  # detected, false alarms
    n_seizures = sum(s.n_seizures for s in scorers)
    hours = sum(s.duration_s for s in scorers) / 3600.0
    fa, sensitivity = np.empty(len(thresholds)), np.empty(len(thresholds))
    taken = 0
    for i, threshold in enumerate(thresholds):
        stop = int(np.searchsorted(descending, -threshold, side="right"))  # proba >= t
        newly = order[taken:stop]
        positive[newly] = True
        taken = stop
        for k in np.unique(owner[newly]):
            counts[k] = scorers[k].counts(positive)
        fa[i] = counts[:, 1].sum() / (hours / 24.0)
        sensitivity[i] = counts[:, 0].sum() / n_seizures if n_seizures else np.nan
    return EventSweep(thresholds, fa, sensitivity, n_seizures, hours)


def sensitivity_envelope(fa_per_24h, sensitivity) -> tuple[np.ndarray, np.ndarray]:
    """The budget curve S at its steps: (distinct FA/24h ascending, best sensitivity with at most
    that many false alarms)."""
    fa = np.asarray(fa_per_24h, dtype=np.float64)
    sens = np.asarray(sensitivity, dtype=np.float64)
    order = np.argsort(fa, kind="stable")
    steps, first = np.unique(fa[order], return_index=True)
    best = np.maximum.reduceat(sens[order], first) if len(fa) else np.zeros(0)
    return steps, np.maximum.accumulate(best)


def event_auc(fa_per_24h, sensitivity, fa_range=FA_RANGE_PER_24H) -> float:
    """Mean of S(f) over log10 f in [lo, hi], integrated exactly (module docstring)."""
    lo, hi = (float(v) for v in fa_range)
    if not 0 < lo < hi:
        raise UsageError(f"FA/24h range {fa_range}",
                         fix="use two rates 0 < lo < hi, e.g. 2.4, 2400")
    sens = np.asarray(sensitivity, dtype=np.float64)
    if sens.size == 0 or not np.isfinite(sens).all():
        return float("nan")
    steps, best = sensitivity_envelope(fa_per_24h, sens)
    edges = np.concatenate([[lo], steps[(steps > lo) & (steps < hi)], [hi]])
    at = np.searchsorted(steps, edges[:-1], side="right") - 1  # the last step at or below
    level = np.where(at >= 0, best[np.maximum(at, 0)], 0.0)
    return float(np.sum(level * np.diff(np.log10(edges))) / (np.log10(hi) - np.log10(lo)))


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
    fa_range=FA_RANGE_PER_24H,
    max_thresholds: int = MAX_THRESHOLDS,
) -> FoldScores:
    """Every METRICS value of one test fold, the curves its figures draw, and the event counts
    at the tuned threshold."""
    from sklearn.metrics import precision_recall_curve, roc_curve

    y = _binary("test labels", y_true)
    proba = _probabilities("test probabilities", proba, len(y))
    window = window_metrics(y, proba, threshold, timeline.window_s, max_fp_per_hour)
    events = score_events(proba, threshold, timeline, rules)
    sweep = event_sweep(proba, timeline, rules, max_thresholds)
    metrics = {
        "event_auc": event_auc(sweep.fa_per_24h, sweep.sensitivity, fa_range),
        **window,
        "event_sensitivity": float(events.sensitivity),
        "fa_per_24h": float(events.fa_per_24h),
    }
    curves = {
        "event_threshold": sweep.thresholds,
        "event_fa_per_24h": sweep.fa_per_24h,
        "event_sensitivity": sweep.sensitivity,
        "fa_range_per_24h": np.asarray(fa_range, dtype=np.float64),
        "prevalence": np.float64(y.mean() if len(y) else np.nan),
        "threshold": np.float64(threshold),
        **{key: np.float64(metrics[key]) for key in ("auroc", "auprc", "event_auc")},
    }
    if 0 < y.sum() < len(y):
        curves["roc_fpr"], curves["roc_tpr"], _ = roc_curve(y, proba)
        precision, recall, _ = precision_recall_curve(y, proba)
        curves["pr_precision"], curves["pr_recall"] = precision, recall
    return FoldScores({key: float(metrics[key]) for key in METRICS}, curves, events)
