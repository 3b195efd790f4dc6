"""Seizure scores against values worked out by hand (the arithmetic is in the comments)."""

import math

import numpy as np
import pytest

from embedprobe.core.errors import DataError
from embedprobe.tasks.seizure.scoring import (
    AUC_RANGE_PER_HOUR,
    CURVE_THRESHOLDS,
    FA_GRID_PER_HOUR,
    METRICS,
    OverlapCounts,
    RecordingTruth,
    WindowTimeline,
    curve_auc,
    curve_from_json,
    curve_to_json,
    event_auc_over_folds,
    event_curve,
    mcc,
    median_curve,
    merge_intervals,
    merge_windows,
    overlap_counts,
    overlap_scores,
    score_events,
    score_fold,
    sensitivity_at_fpr,
    tune_threshold,
    window_labels,
    window_metrics,
)

HOUR = np.arange(0, 3600, 10.0)  # the starts of a 1 h recording's 360 windows of 10 s


def one_recording(seizures=((100.0, 160.0),), duration=3600.0, name="chb01_03"):
    starts = np.arange(0, duration, 10.0)
    timeline = WindowTimeline(np.array([name] * len(starts)), starts, 10.0,
                              {name: RecordingTruth(duration, tuple(seizures))})
    return timeline, window_labels(starts, 10.0, seizures)


def flagged(*spans, duration=3600.0):
    """Probability 0.9 on the windows inside each (start, end) span, 0.1 elsewhere."""
    starts = np.arange(0, duration, 10.0)
    proba = np.full(len(starts), 0.1)
    for a, b in spans:
        proba[(starts >= a) & (starts < b)] = 0.9
    return proba


# ----------------------------------------------------------------------------------------------
# Labels and window metrics
# ----------------------------------------------------------------------------------------------
def test_a_window_is_positive_when_it_overlaps_a_seizure():
    labels = window_labels(HOUR, 10.0, [(100.0, 160.0), (1005.0, 1006.0)])
    # 100-160 covers the windows starting at 100 ... 150; the window 90-100 only touches it,
    # 160-170 starts at its end. 1005-1006 lies inside the window 1000-1010.
    assert (HOUR[labels == 1]).tolist() == [100, 110, 120, 130, 140, 150, 1000]


def test_window_metrics_by_hand():
    # sorted by probability: 0.8 (+), 0.4 (-), 0.35 (+), 0.1 (-)
    # AUROC: of the 4 (positive, negative) pairs 3 are ordered right -> 0.75
    # AP: recall 0.5 at precision 1, recall 1 at precision 2/3 -> 0.5 * 1 + 0.5 * 2/3 = 5/6
    # threshold 0.5 -> predictions [0, 0, 0, 1]: TP 1, TN 2, FP 0, FN 1
    #   balanced accuracy (1/2 + 2/2) / 2 = 0.75; MCC (1*2 - 0*1) / sqrt(1 * 2 * 2 * 3) = 2/sqrt(12)
    m = window_metrics([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8], threshold=0.5, window_s=10.0)
    assert m["auroc"] == pytest.approx(0.75)
    assert m["auprc"] == pytest.approx(5 / 6)
    assert m["balanced_accuracy"] == pytest.approx(0.75)
    assert m["mcc"] == pytest.approx(2 / math.sqrt(12))


def test_mcc_is_one_for_agreement_minus_one_for_inversion_zero_for_an_empty_margin():
    assert mcc([0, 1, 0, 1], [0, 1, 0, 1]) == 1.0
    assert mcc([0, 1, 0, 1], [1, 0, 1, 0]) == -1.0
    assert mcc([0, 1, 0, 1], [0, 0, 0, 0]) == 0.0  # nothing predicted positive


def test_sensitivity_at_a_false_positive_rate_per_hour_by_hand():
    # 360 background windows of 10 s = 1 h; one false-positive window = 1 FP per hour.
    # seizure windows score 0.9, 0.8, 0.3, 0.2; background: one 0.85, one 0.5, the rest 0.1
    y = np.r_[np.ones(4, int), np.zeros(360, int)]
    proba = np.r_[0.9, 0.8, 0.3, 0.2, 0.85, 0.5, np.full(358, 0.1)]
    # >= 0.8: TP 2, FP 1 (1/h) -> 0.5;  >= 0.9: TP 1, FP 0 -> 0.25;  >= 0.2: TP 4, FP 2 (2/h) -> 1
    assert sensitivity_at_fpr(y, proba, 10.0, max_fp_per_hour=1.0) == 0.5
    assert sensitivity_at_fpr(y, proba, 10.0, max_fp_per_hour=0.5) == 0.25
    assert sensitivity_at_fpr(y, proba, 10.0, max_fp_per_hour=2.0) == 1.0
    # 30 s windows: the same 360 windows are 3 h of background, one FP = 1/3 per hour
    assert sensitivity_at_fpr(y, proba, 30.0, max_fp_per_hour=0.5) == 0.5


def test_threshold_tuned_on_validation_f1_by_hand():
    y, proba = [0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8]
    # 0.2: TP 2 FP 1 FN 0 -> F1 4/5; 0.36: TP 1 FP 1 FN 1 -> 1/2; 0.5: TP 1 FN 1 -> 2/3; 0.9: 0
    assert tune_threshold(y, proba, [0.2, 0.36, 0.5, 0.9]) == (0.2, pytest.approx(0.8))
    # ties: the smallest threshold
    assert tune_threshold([0, 1], [0.2, 0.8], [0.7, 0.3, 0.5]) == (0.3, 1.0)
    # the default grid is the reference's 0.01 ... 0.99 in 100 steps of 0.0098; its first value
    # above 0.2 (F1 1 from there up to 0.8) is 0.01 + 20 * 0.0098 = 0.206
    assert tune_threshold([0, 1], [0.2, 0.8])[0] == pytest.approx(0.206)


# ----------------------------------------------------------------------------------------------
# Events
# ----------------------------------------------------------------------------------------------
def test_touching_windows_merge_into_one_event():
    assert merge_windows([140.0, 120.0, 130.0, 500.0], 10.0) == [(120.0, 150.0), (500.0, 510.0)]
    assert merge_windows([], 10.0) == []
    assert merge_intervals([(200, 230), (100, 130), (120, 150)]) == [(100, 150), (200, 230)]


def test_the_brief_example_one_detection_one_false_alarm_in_one_hour():
    # seizure 100-160 s; predictions cover 120-150 s and 500-510 s of a 1 h recording
    timeline, _ = one_recording()
    counts = score_events(flagged((120, 150), (500, 510)), 0.5, timeline)
    assert (counts.n_seizures, counts.n_detected, counts.n_false_alarms) == (1, 1, 1)
    assert counts.hours == 1.0
    assert counts.sensitivity == 1.0
    assert counts.fa_per_24h == 24.0  # 1 false alarm in 1/24 day


@pytest.mark.parametrize(
    "span, detected, false_alarms",
    [
        ((70, 80), 1, 0),  # ends 20 s before the onset: inside the 30 s start tolerance
        ((60, 70), 0, 1),  # ends 30 s before it: the tolerance zone starts at 70 s
        ((200, 210), 1, 0),  # starts 40 s after the end: inside the 60 s end tolerance
        ((220, 230), 0, 1),  # starts 60 s after it: outside
        ((150, 160), 1, 0),  # any overlap detects
    ],
)
def test_szcore_tolerances_around_a_seizure(span, detected, false_alarms):
    timeline, _ = one_recording()
    counts = score_events(flagged(span), 0.5, timeline)
    assert (counts.n_detected, counts.n_false_alarms) == (detected, false_alarms)


def test_predictions_less_than_90_s_apart_are_one_alarm():
    timeline, _ = one_recording(seizures=())
    assert score_events(flagged((500, 510), (590, 600)), 0.5, timeline).n_false_alarms == 1
    assert score_events(flagged((500, 510), (600, 610)), 0.5, timeline).n_false_alarms == 2


def test_a_long_prediction_is_split_into_five_minute_alarms():
    # everything positive in 1 h: 12 pieces of 5 min; with a seizure, the piece holding it
    # detects it and the 11 others are alarms -> 11 in 1/24 day = 264 per 24 h
    timeline, _ = one_recording(seizures=())
    assert score_events(np.ones(360), 0.5, timeline).n_false_alarms == 12
    timeline, _ = one_recording()
    counts = score_events(np.ones(360), 0.5, timeline)
    assert (counts.n_detected, counts.n_false_alarms, counts.fa_per_24h) == (1, 11, 264.0)


def test_a_long_seizure_counts_as_five_minute_events_and_close_seizures_as_one():
    # 0-400 s -> true events 0-300 and 300-400; a detection at 50-60 s reaches only the first
    timeline, _ = one_recording(seizures=[(0.0, 400.0)])
    counts = score_events(flagged((50, 60)), 0.5, timeline)
    assert (counts.n_seizures, counts.n_detected, counts.n_false_alarms) == (2, 1, 0)
    # 100-130 and 200-230 are 70 s apart: one true event
    timeline, _ = one_recording(seizures=[(100.0, 130.0), (200.0, 230.0)])
    assert score_events(flagged(), 0.5, timeline).n_seizures == 1


def test_a_fold_pools_events_and_duration_over_its_recordings():
    # A (1 h, seizure 100-160, detected) and B (2 h, no seizure, alarms at 500 s and 5000 s):
    # sensitivity 1/1, 2 alarms in 3 h = 1/8 day -> 16 per 24 h
    starts_a, starts_b = np.arange(0, 3600, 10.0), np.arange(0, 7200, 10.0)
    timeline = WindowTimeline(
        np.array(["A"] * 360 + ["B"] * 720), np.r_[starts_a, starts_b], 10.0,
        {"A": RecordingTruth(3600.0, ((100.0, 160.0),)), "B": RecordingTruth(7200.0),
         "C": RecordingTruth(3600.0, ((10.0, 20.0),))},  # no window in the fold: not scored
    )
    proba = np.r_[flagged((120, 130)), flagged((500, 510), (5000, 5010), duration=7200.0)]
    counts = score_events(proba, 0.5, timeline)
    assert (counts.n_seizures, counts.n_detected, counts.n_false_alarms) == (1, 1, 2)
    assert counts.hours == 3.0
    assert counts.fa_per_24h == pytest.approx(16.0)


def test_windows_may_come_in_any_order():
    timeline, _ = one_recording()
    proba = flagged((120, 150), (500, 510))
    shuffled = np.random.default_rng(0).permutation(360)
    mixed = WindowTimeline(timeline.recording[shuffled], timeline.start_s[shuffled], 10.0,
                           timeline.recordings)
    counts = score_events(proba[shuffled], 0.5, mixed)
    assert (counts.n_detected, counts.n_false_alarms) == (1, 1)


# ----------------------------------------------------------------------------------------------
# The reference's any-overlap events, curve and area
# ----------------------------------------------------------------------------------------------
D = 4 / 79  # log10 spacing of FA_GRID_PER_HOUR = geomspace(0.01, 100, 80): 10 ** (-2 + k D)
# [0.1, 100] FA/h holds the grid points k = 20 ... 79: -2 + 19 D = -0.962 < -1 < -2 + 20 D


def test_the_reference_grid_threshold_and_range():
    assert FA_GRID_PER_HOUR[0] == pytest.approx(0.01) and FA_GRID_PER_HOUR[-1] == 100.0
    np.testing.assert_allclose(np.diff(np.log10(FA_GRID_PER_HOUR)), D)
    assert np.flatnonzero(FA_GRID_PER_HOUR >= 0.1)[0] == 20
    assert len(CURVE_THRESHOLDS) == 200 and CURVE_THRESHOLDS[[0, -1]].tolist() == [0.0, 1.0]
    assert AUC_RANGE_PER_HOUR == (0.1, 100.0)


def overlap_oracle(y, pred, recording):
    """The any-overlap rule in plain numpy, for comparison: runs of 1 per recording (array
    order); a true run is detected when a predicted run shares a window with it; a predicted
    run sharing none with any true run is a false alarm."""
    detected = false_alarms = n_true = n_pred = 0
    for name in dict.fromkeys(recording):
        rows = np.flatnonzero(recording == name)
        truth = [set(range(a, b)) for a, b in runs(y[rows])]
        predicted = [set(range(a, b)) for a, b in runs(pred[rows])]
        n_true, n_pred = n_true + len(truth), n_pred + len(predicted)
        detected += sum(any(t & p for p in predicted) for t in truth)
        false_alarms += sum(not any(t & p for t in truth) for p in predicted)
    return n_true, n_pred, detected, false_alarms


def runs(mask):
    out, start = [], None
    for i, v in enumerate(list(mask) + [0]):
        if v and start is None:
            start = i
        elif not v and start is not None:
            out.append((start, i))
            start = None
    return out


@pytest.mark.parametrize("seed", range(5))
def test_timescoring_counts_the_reference_any_overlap_rule(seed):
    # timescoring under ANY_OVERLAP_RULES (no tolerance, merge or split) against the rule
    # written out: the same counts on random labels and predictions over three recordings
    rng = np.random.default_rng(seed)
    recording = np.repeat(["a", "b", "c"], 120)
    starts = np.tile(np.arange(0, 1200, 10.0), 3)
    y = (rng.random(360) < 0.15).astype(int)
    pred = (rng.random(360) < 0.25).astype(int)
    counts = overlap_counts(y, pred, recording, starts, 10.0)
    expected = overlap_oracle(y, pred, recording)
    assert (counts.n_true, counts.n_predicted, counts.n_detected,
            counts.n_false_alarms) == expected


def test_overlap_events_never_span_two_recordings_and_follow_start_order():
    # a: windows 0-2 seizure; b: window 0 predicted. Fold order mixes them and reverses a.
    recording = np.array(["a", "b", "a", "a", "b", "a"])
    starts = np.array([30.0, 0.0, 20.0, 10.0, 10.0, 0.0])  # a's windows at 0, 10, 20, 30
    y = np.array([0, 0, 1, 1, 0, 1])  # a: [1, 1, 1, 0] in start order; b: [0, 0]
    pred = np.array([1, 1, 0, 0, 0, 0])  # a: window at 30 (after the seizure); b: window at 0
    counts = overlap_counts(y, pred, recording, starts, 10.0)
    # a: one true event (0-30 s), one predicted event at 30-40 s touching, not overlapping
    # -> not detected, 1 false alarm; b: its window at 0 s, a false alarm of its own
    assert (counts.n_true, counts.n_predicted, counts.n_detected,
            counts.n_false_alarms) == (1, 2, 0, 2)


def test_ovlp_f1_by_hand():
    # recording A (30 windows): seizures on windows 5-8 and 20-21; predicted windows 3-5
    # (overlaps the first), 10 and 12-13 (false alarms); recording B (10 windows): no seizure,
    # window 0 predicted (a false alarm). True events 2, detected 1; predicted events 4, of
    # which 1 overlaps a true event.
    # sensitivity 1/2, precision 1/4, F1 = 2 (1/2)(1/4) / (1/2 + 1/4) = (1/4) / (3/4) = 1/3
    y = np.zeros(40, int)
    y[5:9] = y[20:22] = 1
    pred = np.zeros(40, int)
    pred[3:6] = pred[10] = pred[12:14] = pred[30] = 1
    recording = np.array(["A"] * 30 + ["B"] * 10)
    starts = np.r_[np.arange(30) * 10.0, np.arange(10) * 10.0]
    counts = overlap_counts(y, pred, recording, starts, 10.0)
    assert (counts.n_true, counts.n_predicted, counts.n_detected,
            counts.n_false_alarms) == (2, 4, 1, 3)
    assert overlap_scores(counts) == {"ovlp_sensitivity": 0.5, "ovlp_precision": 0.25,
                                      "ovlp_f1": pytest.approx(1 / 3)}
    # the reference's empty cases: nothing predicted -> 0; no true event -> 0 (precision 1
    # when nothing is predicted either, else 0)
    assert overlap_scores(OverlapCounts(2, 0, 0, 0))["ovlp_f1"] == 0.0
    assert overlap_scores(OverlapCounts(0, 0, 0, 0)) == {
        "ovlp_sensitivity": 0.0, "ovlp_precision": 1.0, "ovlp_f1": 0.0}
    assert overlap_scores(OverlapCounts(0, 3, 0, 3))["ovlp_precision"] == 0.0


def test_the_fold_curve_keeps_the_descending_branch_by_hand():
    # 1 h (360 windows of 10 s), seizure windows 100-105 at 0.5, background windows 10 and 200
    # at 0.7, the rest 0.1. tau_i = i / 199:
    #   i = 0..19   (tau <= 0.1): every window positive, one event holding the seizure
    #               -> sensitivity 1, FA 0/h
    #   i = 20..99  (0.1 < tau <= 0.5): 10, 100-105, 200 -> sensitivity 1, FA 2/h
    #   i = 100..139 (0.5 < tau <= 0.7): 10 and 200 -> sensitivity 0, FA 2/h
    #   i = 140..199: nothing -> 0, 0
    timeline, y = one_recording(seizures=((1000.0, 1060.0),))  # windows 100-105
    proba = np.full(360, 0.1)
    proba[100:106], proba[[10, 200]] = 0.5, 0.7
    sweep = event_curve(y, proba, timeline.recording, timeline.start_s, 10.0)
    assert sweep.hours == 1.0
    assert sweep.fa_per_hour.tolist() == [0.0] * 20 + [2.0] * 120 + [0.0] * 60
    assert sweep.sensitivity.tolist() == [1.0] * 100 + [0.0] * 100
    # descending branch from i = 20 (the first with 2 FA/h): (2, 1), (2, 0), (0, 0) -> best
    # sensitivity 0 at 0 FA/h, 1 at 2 FA/h; interpolated linearly: s(f) = f / 2 on [0, 2],
    # NaN above 2 FA/h (grid point k <= 45: -2 + 45 D = 0.278 < log10 2 = 0.301 < -2 + 46 D).
    # Without the cut, the everything-positive point (0 FA/h, sensitivity 1) would set s = 1.
    expected = np.where(np.arange(80) <= 45, FA_GRID_PER_HOUR / 2, np.nan)
    np.testing.assert_allclose(sweep.curve, expected)
    # the area: trapezoids over log10 f between k = 20 and 45, divided by 25 D (that width)
    s = [10 ** (-2 + k * D) / 2 for k in range(20, 46)]
    by_hand = sum((s[i] + s[i + 1]) / 2 * D for i in range(25)) / (25 * D)
    assert curve_auc(sweep.curve) == pytest.approx(by_hand)


def test_a_fold_with_no_false_alarm_to_trade_has_no_curve():
    # perfect (and constant) predictors never raise an alarm below "everything positive": the
    # branch is one point at 0 FA/h, no grid point lies in [0, 0] -> NaN, as the reference
    timeline, y = one_recording(seizures=[(100.0, 160.0), (2000.0, 2100.0)])
    for proba in (np.where(y == 1, 0.9, 0.1), np.full(360, 0.3)):
        sweep = event_curve(y, proba, timeline.recording, timeline.start_s, 10.0)
        assert np.isnan(sweep.curve).all() and math.isnan(curve_auc(sweep.curve))
    # no seizure window: no sensitivity, no curve
    sweep = event_curve(np.zeros(360, int), np.random.default_rng(0).random(360),
                        timeline.recording, timeline.start_s, 10.0)
    assert np.isnan(sweep.sensitivity).all() and np.isnan(sweep.curve).all()


def constant_where(value, finite_k):
    """A curve on FA_GRID_PER_HOUR: `value` on the grid points k in finite_k, NaN elsewhere."""
    curve = np.full(80, np.nan)
    curve[list(finite_k)] = value
    return curve


def test_the_area_is_divided_by_the_finite_part_of_the_range():
    # 0.9 on k = 40..79 only (a fold that cannot go below 10 ** (-2 + 40 D) = 1.05 FA/h): the
    # area over its finite part is 0.9 (not 0.9 x 39 / 59, the share of the full range)
    assert curve_auc(constant_where(0.9, range(40, 80))) == pytest.approx(0.9)
    # a line in log10 f: s = (x + 1) / 3 on every point -> the trapezoids are exact:
    # mean of its ends over [x20, 2], x20 = -2 + 20 D: ((x20 + 1) / 3 + 1) / 2
    x = np.log10(FA_GRID_PER_HOUR)
    x20 = -2 + 20 * D
    assert curve_auc((x + 1) / 3) == pytest.approx(((x20 + 1) / 3 + 1) / 2)
    assert math.isnan(curve_auc(constant_where(1.0, [50])))  # one finite point: no area
    assert math.isnan(curve_auc(constant_where(1.0, range(0, 20))))  # none in [0.1, 100]


def test_the_headline_over_folds_is_the_area_of_the_nan_median_curve():
    # three folds: 0.2 everywhere, 0.6 up to 10 FA/h (k <= 59: -2 + 59 D = 0.987 < 1) and NaN
    # above, 0.8 everywhere
    curves = [constant_where(0.2, range(80)), constant_where(0.6, range(60)),
              constant_where(0.8, range(80))]
    over = event_auc_over_folds(curves)
    # NaN-median: 0.6 where the three are finite (k <= 59), mean(0.2, 0.8) = 0.5 above
    np.testing.assert_allclose(median_curve(curves),
                               np.where(np.arange(80) <= 59, 0.6, 0.5))
    # in [0.1, 100] (k = 20..79, 59 intervals of D): 39 intervals at 0.6 (k = 20..59), the
    # interval 59-60 at (0.6 + 0.5) / 2 = 0.55, 19 intervals at 0.5 (k = 60..79)
    # -> (39 x 0.6 + 0.55 + 19 x 0.5) / 59 = (23.4 + 0.55 + 9.5) / 59 = 33.45 / 59
    assert over.headline == pytest.approx(33.45 / 59)
    # per fold: 0.2, 0.6 (its finite part only), 0.8; sample SD: mean 1.6 / 3, squared
    # deviations (0.2 - 0.5333)^2 + (0.6 - 0.5333)^2 + (0.8 - 0.5333)^2 = 0.18667, / 2 -> sqrt
    np.testing.assert_allclose(over.per_fold, [0.2, 0.6, 0.8])
    assert over.fold_mean == pytest.approx(1.6 / 3)
    assert over.sd == pytest.approx(math.sqrt((0.2 - 1.6 / 3) ** 2 + (0.6 - 1.6 / 3) ** 2
                                              + (0.8 - 1.6 / 3) ** 2) / math.sqrt(2))
    assert over.sd == pytest.approx(0.305505, abs=1e-6)


def test_nan_stretches_and_folds_without_an_area():
    # a fold with no curve at all (no seizure) is ignored by the median, not counted as 0;
    # the SD is over the finite per-fold areas only
    curves = [constant_where(0.4, range(80)), constant_where(np.nan, []),
              constant_where(0.8, range(80))]
    over = event_auc_over_folds(curves)
    assert over.headline == pytest.approx(0.6)  # median of (0.4, 0.8) everywhere
    assert over.sd == pytest.approx(np.std([0.4, 0.8], ddof=1))
    assert over.fold_mean == pytest.approx(0.6)
    # one finite fold among several: no SD (the reference's NaN); one fold only: SD 0
    alone = event_auc_over_folds([constant_where(0.4, range(80)), constant_where(np.nan, [])])
    assert alone.headline == pytest.approx(0.4) and math.isnan(alone.sd)
    assert event_auc_over_folds([constant_where(0.4, range(80))]).sd == 0.0
    # every fold NaN at high FA/h: those points stay NaN and the area is over the rest
    low = [constant_where(0.3, range(50)), constant_where(0.5, range(50))]
    assert np.isnan(median_curve(low)[50:]).all()
    assert event_auc_over_folds(low).headline == pytest.approx(0.4)
    # curves go to JSON with null for NaN and come back
    assert curve_to_json([0.5, np.nan]) == [0.5, None]
    np.testing.assert_array_equal(curve_from_json([0.5, None]), [0.5, np.nan])


# ----------------------------------------------------------------------------------------------
# One fold
# ----------------------------------------------------------------------------------------------
def test_a_perfect_predictor_scores_one_where_defined():
    timeline, y = one_recording(seizures=[(100.0, 160.0), (2000.0, 2100.0)])
    scores = score_fold(y, np.where(y == 1, 0.9, 0.1), 0.5, timeline)
    assert list(scores.metrics) == list(METRICS)
    event_auc = scores.metrics.pop("event_auc")
    assert math.isnan(event_auc)  # no false alarm to trade (see above)
    assert scores.metrics == {"auroc": 1.0, "auprc": 1.0, "ovlp_f1": 1.0,
                              "event_sensitivity": 1.0, "fa_per_24h": 0.0,
                              "sensitivity_at_fpr": 1.0, "balanced_accuracy": 1.0, "mcc": 1.0}
    assert {"roc_fpr", "roc_tpr", "pr_precision", "pr_recall", "event_fa_per_hour",
            "event_sensitivity", "event_threshold", "event_curve", "event_fa_grid"
            } <= set(scores.curves)


def test_a_constant_predictor_scores_chance():
    timeline, y = one_recording()
    scores = score_fold(y, np.full(360, 0.3), 0.5, timeline).metrics
    assert scores["auroc"] == 0.5
    assert scores["auprc"] == pytest.approx(6 / 360)  # the prevalence
    assert scores["mcc"] == 0.0 and scores["balanced_accuracy"] == 0.5
    assert scores["event_sensitivity"] == 0.0 and scores["fa_per_24h"] == 0.0  # below 0.5
    assert scores["ovlp_f1"] == 0.0


def test_the_fold_scores_hold_its_curve_and_area():
    # the hand-made curve above, through score_fold: event_auc is the fold curve's area
    timeline, y = one_recording(seizures=((1000.0, 1060.0),))
    proba = np.full(360, 0.1)
    proba[y == 1], proba[[10, 200]] = 0.5, 0.7
    scores = score_fold(y, proba, 0.6, timeline)
    assert scores.metrics["event_auc"] == pytest.approx(curve_auc(scores.curves["event_curve"]))
    # at 0.6 only the two background windows: 2 predicted events, both false alarms
    assert (scores.overlap.n_predicted, scores.overlap.n_false_alarms) == (2, 2)
    assert scores.metrics["ovlp_f1"] == 0.0


def test_a_random_predictor_scores_near_chance():
    rng = np.random.default_rng(1)
    names = [f"r{k}" for k in range(20)]
    truth = {n: RecordingTruth(3600.0, ((300.0 + 100 * k, 400.0 + 100 * k),))
             for k, n in enumerate(names)}
    timeline = WindowTimeline(np.repeat(names, 360), np.tile(HOUR, 20), 10.0, truth)
    y = np.concatenate([window_labels(HOUR, 10.0, truth[n].seizures) for n in names])
    scores = score_fold(y, rng.random(len(y)), 0.5, timeline).metrics
    assert abs(scores["auroc"] - 0.5) < 0.05
    assert scores["auprc"] < 2 * y.mean()
    assert abs(scores["mcc"]) < 0.05


def test_a_fold_without_seizures_has_no_sensitivity():
    timeline, y = one_recording(seizures=())
    scores = score_fold(y, flagged((500, 510)), 0.5, timeline)
    assert math.isnan(scores.metrics["event_auc"])
    assert math.isnan(scores.metrics["event_sensitivity"])
    assert math.isnan(scores.metrics["auroc"])
    assert scores.metrics["fa_per_24h"] == 24.0
    assert "roc_fpr" not in scores.curves


def test_bad_inputs_name_the_problem():
    timeline, y = one_recording()
    with pytest.raises(DataError, match="0 .background. and 1"):
        score_fold(np.r_[y[:-1], 2], np.zeros(360), 0.5, timeline)
    unknown = WindowTimeline(timeline.recording, timeline.start_s, 10.0, {})
    with pytest.raises(DataError, match="chb01_03: windows in the fold but no duration"):
        score_events(np.zeros(360), 0.5, unknown)
    late = WindowTimeline(timeline.recording, timeline.start_s, 10.0,
                          {"chb01_03": RecordingTruth(3600.0, ((3590.0, 3700.0),))})
    with pytest.raises(DataError, match="seizure 3590.0-3700.0 s is not inside"):
        score_events(np.zeros(360), 0.5, late)
    short = WindowTimeline(timeline.recording, timeline.start_s, 10.0,
                           {"chb01_03": RecordingTruth(1800.0)})
    with pytest.raises(DataError, match="fall outside the recording"):
        score_events(np.zeros(360), 0.5, short)
