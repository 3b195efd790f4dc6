"""The recording-level probe: one feature row per recording or subject, one logistic fit.

The rows are the mean embedding of each unit's windows, or the mean and the SD concatenated
(`mean_std`, the reference's `osa` preset). StandardScaler on the training units, then
scikit-learn's LogisticRegression (lbfgs, max_iter 10,000) per C of the grid: with one C (the
sleep-diagnosis protocol, C = 1) the validation units join the training ones; with several the
C with the best validation score (`select_on`: AUPRC or AUROC, the epilepsy protocol's AUPRC)
is refitted on the training units alone, as the seizure probe does (ties and the fallback where
validation scores no C: probing/selection.py).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from embedprobe.core.errors import DataError, UsageError
from embedprobe.probing.logistic import MAX_ITER
from embedprobe.probing.metrics import balanced_accuracy, macro_f1
from embedprobe.probing.result import ProbeResult
from embedprobe.probing.selection import choose
from embedprobe.probing.split import Split

AGGREGATIONS = ("mean", "mean_std")
SELECTIONS = ("auprc", "auroc")
CLASS_WEIGHTS = (None, "balanced")


@dataclass(frozen=True)
class ProbeSettings:
    """A recording-level probe as a benchmark's `probe:` (and a dataset's `aggregation`) set it."""

    aggregation: str
    C_grid: tuple[float, ...]
    class_weight: str | None
    select_on: str

    @classmethod
    def of(cls, defaults: dict, bench: dict, entry: dict | None = None) -> ProbeSettings:
        probe = {**defaults, **bench.get("probe", {})}
        if entry and entry.get("aggregation"):  # a dataset's own preset (DOD's `osa`)
            probe["aggregation"] = entry["aggregation"]
        settings = cls(probe["aggregation"], tuple(float(c) for c in probe["C_grid"]),
                       probe.get("class_weight"), probe.get("select_on", SELECTIONS[0]))
        for name, value, allowed in (("aggregation", settings.aggregation, AGGREGATIONS),
                                     ("class_weight", settings.class_weight, CLASS_WEIGHTS),
                                     ("select_on", settings.select_on, SELECTIONS)):
            if value not in allowed:
                raise UsageError(f"probe {name}: {value!r} is not one of "
                                 f"{', '.join(map(str, allowed))}",
                                 fix=f"set the benchmark's probe.{name} to one of them")
        return settings

    @property
    def fixed_C(self) -> bool:
        return len(self.C_grid) == 1


def unit_features(store, level: str, aggregation: str) -> tuple[np.ndarray, np.ndarray]:
    """(sorted unit ids, features: mean, or mean and SD side by side) from the store."""
    keys, means, sds = store.stats_by(level, with_std=aggregation == "mean_std")
    return keys, means if sds is None else np.hstack([means, sds])


def scores(y_true: np.ndarray, proba: np.ndarray, labels: np.ndarray) -> dict[str, float]:
    """AUROC (binary labels only: NaN for more classes, or one class in `y_true`), balanced
    accuracy and macro F1 of the most probable class. `labels`: proba's columns."""
    from sklearn.metrics import roc_auc_score

    predicted = labels[np.argmax(proba, axis=1)]
    binary = len(labels) == 2 and len(np.unique(y_true)) == 2
    auroc = float(roc_auc_score(y_true == labels[1], proba[:, 1])) if binary else float("nan")
    return {"auroc": auroc, "balanced_accuracy": balanced_accuracy(y_true, predicted),
            "macro_f1": macro_f1(y_true, predicted)}


def _selection_score(metric: str, y: np.ndarray, proba: np.ndarray, labels: np.ndarray) -> float:
    from sklearn.metrics import average_precision_score, roc_auc_score

    if len(labels) != 2 or len(np.unique(y)) < 2:
        return float("nan")
    positive = y == labels[1]
    score = average_precision_score if metric == "auprc" else roc_auc_score
    return float(score(positive, proba[:, 1]))


def _fit(X: np.ndarray, y: np.ndarray, C: float, class_weight: str | None):
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    scaler = StandardScaler().fit(X)
    model = LogisticRegression(C=C, class_weight=class_weight, max_iter=MAX_ITER)
    with warnings.catch_warnings():  # a few units separate perfectly: lbfgs may not settle
        warnings.simplefilter("ignore")
        model.fit(scaler.transform(X), y)
    return scaler, model


def fit_units(split: Split, settings: ProbeSettings, progress=None) -> ProbeResult:
    """Fit one fold over unit rows: C chosen on validation (probing/selection.py), the test
    units' probabilities (columns: the training labels, `classes`) and scores."""
    train = split.pooled() if settings.fixed_C else split.train
    val, test = split.val, split.test
    if len(np.unique(train.y)) < 2:
        raise DataError(f"the fold's training units hold one class only ({np.unique(train.y)})",
                        fix="use more recordings or subjects per class, or fewer folds")
    by_C = {}
    if not settings.fixed_C:
        for k, C in enumerate(settings.C_grid):
            scaler, model = _fit(train.X, train.y, C, settings.class_weight)
            proba = model.predict_proba(scaler.transform(val.X))
            by_C[C] = _selection_score(settings.select_on, val.y, proba, model.classes_)
            if progress:
                progress(k + 1, len(settings.C_grid),
                         f"C={C:g}: val {settings.select_on} {by_C[C]:.4f}")
    selection = choose(by_C, settings.C_grid, f"validation {settings.select_on}")
    scaler, model = _fit(train.X, train.y, selection.chosen, settings.class_weight)
    proba = model.predict_proba(scaler.transform(test.X))
    return ProbeResult(selection=selection, test_metrics=scores(test.y, proba, model.classes_),
                       test_pred=model.classes_[np.argmax(proba, axis=1)], test_proba=proba,
                       classes=model.classes_, details={"n_train": len(train)})
