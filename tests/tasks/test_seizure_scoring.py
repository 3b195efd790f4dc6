"""Seizure scores against values worked out by hand (the arithmetic is in the comments)."""

import math

import numpy as np
import pytest

from embedprobe.core.errors import DataError
from embedprobe.tasks.seizure.scoring import (
    METRICS,
    RecordingTruth,
    WindowTimeline,
    event_auc,
    event_sweep,
    mcc,
    merge_intervals,
    merge_windows,
    score_events,
    score_fold,
    sensitivity_at_fpr,
    sensitivity_envelope,
    sweep_thresholds,
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
# The sensitivity vs FA/24h curve and its area
# ----------------------------------------------------------------------------------------------
def test_the_curve_and_its_area_by_hand():
    # seizure windows 120-150 at 0.9, a background window 500 at 0.95, the rest 0.1
    timeline, _ = one_recording()
    proba = flagged((120, 150))
    proba[50] = 0.95
    sweep = event_sweep(proba, timeline)
    # >= 0.95: only the false alarm (24/24h, sens 0); >= 0.9: + the seizure (24, 1);
    # >= 0.1: everything, 11 five-minute alarms (264, 1)
    assert sweep.thresholds.tolist() == [0.95, 0.9, 0.1]
    assert sweep.fa_per_24h.tolist() == [24.0, 24.0, 264.0]
    assert sweep.sensitivity.tolist() == [0.0, 1.0, 1.0]
    # S(f) = 0 below 24, 1 from 24 on; over log10 [2.4, 2400]: (log10 2400 - log10 24) / 3 = 2/3
    assert event_auc(sweep.fa_per_24h, sweep.sensitivity) == pytest.approx(2 / 3)


def test_area_of_a_step_curve_with_points_out_of_order():
    # points (FA, sens): (10, 1.0), (0, 0.5), (5, 0.8), (3, 0.9) -> S = 0.5 below 3, 0.9 from 3,
    # 1.0 from 10. Over [1, 100]: (0.5 log10 3 + 0.9 (1 - log10 3) + 1.0 * 1) / 2
    fa, sens = [10.0, 0.0, 5.0, 3.0], [1.0, 0.5, 0.8, 0.9]
    steps, best = sensitivity_envelope(fa, sens)
    assert steps.tolist() == [0.0, 3.0, 5.0, 10.0]
    assert best.tolist() == [0.5, 0.9, 0.9, 1.0]
    expected = (0.5 * math.log10(3) + 0.9 * (1 - math.log10(3)) + 1.0) / 2
    assert event_auc(fa, sens, fa_range=(1, 100)) == pytest.approx(expected)
    # one point at 50 FA/24h: 0 below, 1 above -> log10(100 / 50) / 2
    assert event_auc([50.0], [1.0], fa_range=(1, 100)) == pytest.approx(math.log10(2) / 2)
    assert math.isnan(event_auc([1.0], [np.nan]))  # no true event


def test_sweep_points_are_what_scoring_each_threshold_alone_gives():
    rng = np.random.default_rng(3)
    timeline, y = one_recording(seizures=[(100.0, 160.0), (2000.0, 2100.0)])
    proba = np.clip(0.3 * y + rng.random(360) * 0.8, 0, 1)
    sweep = event_sweep(proba, timeline, max_thresholds=40)
    assert len(sweep.thresholds) <= 40
    for t, fa, sens in zip(sweep.thresholds, sweep.fa_per_24h, sweep.sensitivity, strict=True):
        alone = score_events(proba, t, timeline)
        assert (alone.fa_per_24h, alone.sensitivity) == (fa, sens)


def test_thresholds_are_every_distinct_probability_or_a_rank_grid():
    assert sweep_thresholds([0.2, 0.9, 0.2, 0.5]).tolist() == [0.9, 0.5, 0.2]
    proba = np.random.default_rng(0).random(10_000)
    grid = sweep_thresholds(proba, max_thresholds=50)
    assert len(grid) <= 50 and np.all(np.diff(grid) < 0)
    assert grid[0] == proba.max() and grid[-1] == proba.min()  # 1st and n-th ranked window
    # geometric in rank: the 2nd ... 5th most probable windows are all thresholds
    assert set(np.sort(proba)[::-1][:5]) <= set(grid)


# ----------------------------------------------------------------------------------------------
# One fold
# ----------------------------------------------------------------------------------------------
def test_a_perfect_predictor_scores_one_everywhere():
    timeline, y = one_recording(seizures=[(100.0, 160.0), (2000.0, 2100.0)])
    scores = score_fold(y, np.where(y == 1, 0.9, 0.1), 0.5, timeline)
    assert list(scores.metrics) == list(METRICS)
    assert scores.metrics == {"event_auc": 1.0, "auroc": 1.0, "auprc": 1.0,
                              "event_sensitivity": 1.0, "fa_per_24h": 0.0,
                              "sensitivity_at_fpr": 1.0, "balanced_accuracy": 1.0, "mcc": 1.0}
    assert {"roc_fpr", "roc_tpr", "pr_precision", "pr_recall", "event_fa_per_24h",
            "event_sensitivity", "event_threshold"} <= set(scores.curves)


def test_a_constant_predictor_scores_chance():
    timeline, y = one_recording()
    scores = score_fold(y, np.full(360, 0.3), 0.5, timeline).metrics
    assert scores["auroc"] == 0.5
    assert scores["auprc"] == pytest.approx(6 / 360)  # the prevalence
    assert scores["mcc"] == 0.0 and scores["balanced_accuracy"] == 0.5
    # one operating point, everything positive: (264/24h, 1) -> (log10 2400 - log10 264) / 3
    assert scores["event_auc"] == pytest.approx((math.log10(2400) - math.log10(264)) / 3)
    assert scores["event_sensitivity"] == 0.0 and scores["fa_per_24h"] == 0.0  # below 0.5


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
