"""Metrics against values computed by hand (the arithmetic is in the comments)."""

import numpy as np
import pytest
from sklearn import metrics as skm

from embedprobe.probing.metrics import (
    accuracy,
    balanced_accuracy,
    classification_scores,
    cohen_kappa,
    confusion,
    macro_f1,
    mae,
    pearson_r,
    r2,
    regression_scores,
)

# Three classes, six windows.
Y_TRUE = [0, 0, 1, 1, 2, 2]
Y_PRED = [0, 1, 1, 1, 2, 0]
# confusion (rows true, columns predicted):
#   [[1, 1, 0],
#    [0, 2, 0],
#    [1, 0, 1]]


def test_confusion_counts_true_rows_predicted_columns():
    assert confusion(Y_TRUE, Y_PRED, 3).tolist() == [[1, 1, 0], [0, 2, 0], [1, 0, 1]]
    # A class absent from both still gets its (empty) row and column.
    assert confusion(Y_TRUE, Y_PRED, 4)[3].tolist() == [0, 0, 0, 0]


def test_kappa_by_hand():
    # observed = 4/6; chance = (pred sums . true sums) / 36 = (2*2 + 3*2 + 1*2) / 36 = 1/3
    # kappa = (2/3 - 1/3) / (1 - 1/3) = 0.5
    assert cohen_kappa(Y_TRUE, Y_PRED) == pytest.approx(0.5)
    assert cohen_kappa(Y_TRUE, Y_PRED, n_classes=5) == pytest.approx(0.5)
    assert cohen_kappa(Y_TRUE, Y_TRUE) == 1.0


def test_kappa_ignores_a_class_absent_from_both_arrays():
    # classes {0, 2}: confusion [[1, 1], [0, 2]]; observed 3/4;
    # chance = (true sums [2, 2] . pred sums [1, 3]) / 16 = 8/16; kappa = 0.25 / 0.5 = 0.5
    assert cohen_kappa([0, 0, 2, 2], [0, 2, 2, 2], n_classes=5) == pytest.approx(0.5)


def test_kappa_is_zero_when_chance_agreement_is_total():
    # one class everywhere: chance = 1, kappa undefined -> 0.0 (sklearn says nan)
    assert cohen_kappa([1, 1, 1], [1, 1, 1]) == 0.0


def test_kappa_below_zero_for_systematic_disagreement():
    # [[0, 2], [2, 0]]: observed 0, chance 0.5 -> kappa = -1
    assert cohen_kappa([0, 0, 1, 1], [1, 1, 0, 0]) == pytest.approx(-1.0)


def test_balanced_accuracy_by_hand():
    # recalls 1/2, 2/2, 1/2 -> mean 2/3
    assert balanced_accuracy(Y_TRUE, Y_PRED) == pytest.approx(2 / 3)
    # class 2 only predicted, never true: it does not count; recalls 1/2, 1/1 -> 0.75
    assert balanced_accuracy([0, 0, 1], [0, 2, 1]) == pytest.approx(0.75)


def test_macro_f1_by_hand():
    # F1 = 2TP / (2TP + FP + FN): class 0: 2/(2+1+1) = 0.5; class 1: 4/(4+1+0) = 0.8;
    # class 2: 2/(2+0+1) = 2/3; mean = (0.5 + 0.8 + 0.6667) / 3 = 0.65556
    assert macro_f1(Y_TRUE, Y_PRED) == pytest.approx((0.5 + 0.8 + 2 / 3) / 3)


def test_accuracy_and_the_score_dict():
    scores = classification_scores(Y_TRUE, Y_PRED)
    assert scores == pytest.approx(
        {"kappa": 0.5, "balanced_accuracy": 2 / 3, "macro_f1": 0.655556, "accuracy": 4 / 6},
        abs=1e-6,
    )
    assert accuracy([0, 1], [1, 1]) == 0.5


def test_classification_metrics_agree_with_sklearn_on_random_labels():
    rng = np.random.default_rng(3)
    y_true = rng.integers(0, 5, 500)
    y_pred = np.where(rng.random(500) < 0.6, y_true, rng.integers(0, 5, 500))
    assert cohen_kappa(y_true, y_pred) == pytest.approx(skm.cohen_kappa_score(y_true, y_pred))
    assert balanced_accuracy(y_true, y_pred) == pytest.approx(
        skm.balanced_accuracy_score(y_true, y_pred)
    )
    assert macro_f1(y_true, y_pred) == pytest.approx(skm.f1_score(y_true, y_pred, average="macro"))


def test_label_errors_are_refused():
    with pytest.raises(ValueError, match="non-negative integers"):
        cohen_kappa([0.5, 1.0], [0, 1])
    with pytest.raises(ValueError, match="y_true has 2 labels, y_pred 3"):
        confusion([0, 1], [0, 1, 1], 2)
    with pytest.raises(ValueError, match="n_classes=2"):
        confusion([0, 2], [0, 1], 2)


def test_regression_metrics_by_hand():
    y, p = [1, 2, 3, 4], [2, 2, 2, 6]
    # |errors| = 1, 0, 1, 2 -> MAE 1.0
    assert mae(y, p) == 1.0
    # deviations a: -1.5 -0.5 0.5 1.5 (sum sq 5); b: -1 -1 -1 3 (sum sq 12); cross 6
    # r = 6 / sqrt(60) = 0.7745967
    assert pearson_r(y, p) == pytest.approx(6 / np.sqrt(60))
    # SS_res = 1 + 0 + 1 + 4 = 6; SS_tot = 5; R2 = 1 - 6/5 = -0.2
    assert r2(y, p) == pytest.approx(-0.2)
    assert regression_scores(y, p) == pytest.approx(
        {"mae": 1.0, "pearson_r": 0.7745967, "r2": -0.2}, abs=1e-7
    )


def test_regression_edge_cases():
    assert pearson_r([1, 2, 3], [5, 5, 5]) == 0.0  # constant side: no correlation
    assert r2([3, 3], [3, 3]) == 1.0
    assert r2([3, 3], [3, 4]) == 0.0
    with pytest.raises(ValueError, match="one length"):
        mae([1, 2], [1])
