"""Probe scores: classification (kappa, balanced accuracy, macro F1), regression (MAE, r, R2).

Plain numpy, with scikit-learn's definitions (the tests check both against hand-computed values):
labels are non-negative integers; a class absent from both arrays does not count.
"""

from __future__ import annotations

import numpy as np


def _labels(y) -> np.ndarray:
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"labels must be one-dimensional, got shape {y.shape}")
    if y.size and (not np.issubdtype(y.dtype, np.integer) or y.min() < 0):
        raise ValueError("labels must be non-negative integers (class indices)")
    return y.astype(np.int64, copy=False)


def confusion(y_true, y_pred, n_classes) -> np.ndarray:
    """Counts (n_classes, n_classes): row = true class, column = predicted class."""
    t, p = _labels(y_true), _labels(y_pred)
    if t.shape != p.shape:
        raise ValueError(f"y_true has {t.size} labels, y_pred {p.size}")
    if t.size and max(t.max(), p.max()) >= n_classes:
        raise ValueError(f"a label is >= n_classes={n_classes}")
    return np.bincount(t * n_classes + p, minlength=n_classes * n_classes).reshape(
        n_classes, n_classes
    )


def _present_confusion(y_true, y_pred, n_classes=None) -> np.ndarray:
    """Confusion over the classes that occur in y_true or y_pred (sklearn's label set)."""
    t, p = _labels(y_true), _labels(y_pred)
    size = n_classes or (int(max(t.max(initial=-1), p.max(initial=-1))) + 1)
    cm = confusion(t, p, size)
    present = (cm.sum(axis=0) + cm.sum(axis=1)) > 0
    return cm[np.ix_(present, present)]


def cohen_kappa(y_true, y_pred, n_classes=None) -> float:
    """Cohen's kappa: (observed - chance agreement) / (1 - chance agreement); 0.0 if undefined."""
    cm = _present_confusion(y_true, y_pred, n_classes).astype(np.float64)
    total = cm.sum()
    if total == 0:
        return 0.0
    observed = np.trace(cm) / total
    chance = float(cm.sum(axis=0) @ cm.sum(axis=1)) / total**2
    # sklearn returns nan when chance == 1 (one class everywhere); 0 is what a report can show.
    return 0.0 if chance >= 1.0 else float((observed - chance) / (1.0 - chance))


def balanced_accuracy(y_true, y_pred) -> float:
    """Mean recall over the classes present in y_true."""
    cm = _present_confusion(y_true, y_pred)
    support = cm.sum(axis=1)
    seen = support > 0
    if not seen.any():
        return 0.0
    return float(np.mean(np.diag(cm)[seen] / support[seen]))


def macro_f1(y_true, y_pred) -> float:
    """Unweighted mean F1 over the classes present in y_true or y_pred (0 where undefined)."""
    cm = _present_confusion(y_true, y_pred)
    if cm.size == 0:
        return 0.0
    hits = np.diag(cm).astype(np.float64)
    denominator = cm.sum(axis=0) + cm.sum(axis=1)  # 2 TP + FP + FN
    f1 = np.divide(2 * hits, denominator, out=np.zeros_like(hits), where=denominator > 0)
    return float(f1.mean())


def accuracy(y_true, y_pred) -> float:
    """Share of exact matches."""
    t, p = _labels(y_true), _labels(y_pred)
    return float(np.mean(t == p)) if t.size else 0.0


def classification_scores(y_true, y_pred, n_classes=None) -> dict[str, float]:
    """The sleep-staging headline and its companions in one dict."""
    return {
        "kappa": cohen_kappa(y_true, y_pred, n_classes),
        "balanced_accuracy": balanced_accuracy(y_true, y_pred),
        "macro_f1": macro_f1(y_true, y_pred),
        "accuracy": accuracy(y_true, y_pred),
    }


def _values(a, b) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.asarray(a, dtype=np.float64).ravel(), np.asarray(b, dtype=np.float64).ravel()
    if a.shape != b.shape or a.size == 0:
        raise ValueError(f"need two non-empty arrays of one length, got {a.size} and {b.size}")
    return a, b


def mae(y_true, y_pred) -> float:
    """Mean absolute error (brain age: years)."""
    t, p = _values(y_true, y_pred)
    return float(np.mean(np.abs(t - p)))


def pearson_r(a, b) -> float:
    """Pearson correlation; 0.0 when either side is constant."""
    a, b = _values(a, b)
    da, db = a - a.mean(), b - b.mean()
    denominator = np.sqrt((da @ da) * (db @ db))
    return float(da @ db / denominator) if denominator > 0 else 0.0


def r2(y_true, y_pred) -> float:
    """1 - SS_res / SS_tot (for a constant y_true: 1.0 if exact, else 0.0, as sklearn)."""
    t, p = _values(y_true, y_pred)
    ss_tot = float(np.sum((t - t.mean()) ** 2))
    ss_res = float(np.sum((t - p) ** 2))
    if ss_tot == 0:
        return 1.0 if ss_res == 0 else 0.0
    return 1.0 - ss_res / ss_tot


def regression_scores(y_true, y_pred) -> dict[str, float]:
    """Brain-age headline (MAE) and its companions."""
    return {
        "mae": mae(y_true, y_pred),
        "pearson_r": pearson_r(y_true, y_pred),
        "r2": r2(y_true, y_pred),
    }
