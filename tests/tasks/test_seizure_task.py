"""The seizure task over folds: the results row's headline is the reference's (the area of the
folds' NaN-median curve, +- the sample SD of the per-fold areas), through the real aggregate."""

import json
import math

import numpy as np
import pytest

from embedprobe.reporting.aggregate import aggregate_folds
from embedprobe.tasks.registry import task_for
from embedprobe.tasks.seizure.scoring import METRICS, curve_to_json

TASK = task_for("seizure_detection")


def constant_where(value, finite_k):
    curve = np.full(80, np.nan)
    curve[list(finite_k)] = value
    return curve


def write_folds(tmp_path, curves, with_curve=True):
    """Fold records as the probe job writes them, each with its per-fold area as event_auc."""
    paths = []
    for fold, (curve, own_area) in enumerate(curves):
        metrics = dict.fromkeys(METRICS, 0.5) | {"event_auc": own_area}
        record = {"benchmark": "epilepsy_demo", "dataset": "chbmit_demo", "model": "m",
                  "fold": fold, "n_folds": len(curves), "status": "ok", "chosen": 0.1,
                  "metrics": metrics}
        if with_curve:
            record["event_curve"] = curve_to_json(curve)
        path = tmp_path / f"fold{fold}.json"
        path.write_text(json.dumps(record))
        paths.append(path)
    return paths


def test_the_task_reports_the_reference_metrics_and_sample_sd():
    assert TASK.metrics == METRICS and TASK.metrics[0] == "event_auc"
    assert "ovlp_f1" in TASK.metrics
    assert TASK.sd_ddof == 1  # the reference's epilepsy +- is the sample SD


def test_the_results_row_holds_the_median_curve_area_and_the_fold_mean(tmp_path):
    # the three folds of test_seizure_scoring's hand-made case: 0.2 everywhere, 0.6 up to
    # 10 FA/h, 0.8 everywhere -> headline 33.45 / 59; per-fold areas 0.2, 0.6, 0.8
    curves = [(constant_where(0.2, range(80)), 0.2), (constant_where(0.6, range(60)), 0.6),
              (constant_where(0.8, range(80)), 0.8)]
    row = aggregate_folds(write_folds(tmp_path, curves), TASK, 3).iloc[0]
    assert row["event_auc_mean"] == pytest.approx(33.45 / 59, abs=1e-4)
    assert row["event_auc_fold_mean"] == pytest.approx(1.6 / 3, abs=1e-4)
    assert row["event_auc_sd"] == pytest.approx(np.std([0.2, 0.6, 0.8], ddof=1), abs=1e-4)
    assert row["ovlp_f1_mean"] == 0.5 and row["ovlp_f1_sd"] == 0.0  # mean +- SD, as others


def test_a_fold_without_a_curve_area_leaves_the_sd_to_the_finite_ones(tmp_path):
    curves = [(constant_where(0.4, range(80)), 0.4), (constant_where(np.nan, []), math.nan),
              (constant_where(0.8, range(80)), 0.8)]
    row = aggregate_folds(write_folds(tmp_path, curves), TASK, 3).iloc[0]
    assert row["event_auc_mean"] == pytest.approx(0.6)
    assert row["event_auc_sd"] == pytest.approx(np.std([0.4, 0.8], ddof=1), abs=1e-4)


def test_records_without_curves_keep_the_plain_mean(tmp_path):
    curves = [(None, 0.4), (None, 0.8)]
    row = aggregate_folds(write_folds(tmp_path, curves, with_curve=False), TASK, 2).iloc[0]
    assert row["event_auc_mean"] == pytest.approx(0.6)
    assert "event_auc_fold_mean" not in row
