"""The seizure-detection probe of one fold (the reference's epilepsy protocol).

Standardise on the training windows (probing/standardize.py: StandardScaler's arithmetic in row
chunks, float32), then one binary LogisticRegression(lbfgs, class_weight="balanced",
max_iter=500, tol=1e-4) per C in C_GRID (the grid sleep staging uses), each fitted from zero on
every training window. C is chosen on validation AUPRC (average precision; the smallest C among
ties), the decision threshold on validation F1 of the seizure class over 0.01 ... 0.99
(scoring.tune_threshold), and the chosen model scores the test windows
(scoring.score_fold: window metrics, the reference's event curve and its area, any-overlap
F1, SzCORE event counts).

Balanced weights give each class half the total weight (n / (2 n_class) per window): seizure
windows are ~1% of EEG, and unweighted a probe learns to say "no seizure". max_iter 500 is the
reference's: a fit that stops there is reported as not converged, not refitted.

Memory (beyond the caller's arrays): one standardised float32 copy of X_train, scikit-learn's
lbfgs buffers (a few float64 vectors of n_train and of p; float32 input stays float32), and
8,192-row blocks while standardising validation and test. n_jobs > 1 fits that many C values at
once in threads (shared matrix, more buffers).
"""

from __future__ import annotations

import sys
import time
import warnings
from dataclasses import dataclass, field

import numpy as np

from embedprobe.core.errors import DataError
from embedprobe.probing.logistic import (
    C_GRID,
    FitCounter,
    Progress,
    checked_parts,
    map_in_threads,
    sorted_C_grid,
)
from embedprobe.probing.result import ProbeResult
from embedprobe.probing.selection import by_value_json, choose
from embedprobe.probing.softmax import decision
from embedprobe.probing.split import Split
from embedprobe.probing.standardize import Standardizer
from embedprobe.tasks.seizure.scoring import (
    AUC_RANGE_PER_HOUR,
    CURVE_THRESHOLDS,
    FA_GRID_PER_HOUR,
    MAX_FP_PER_HOUR,
    SZCORE_RULES,
    THRESHOLD_GRID,
    EventRules,
    WindowTimeline,
    score_fold,
    tune_threshold,
)

MAX_ITER = 500  # the reference's epilepsy probe
TOL = 1e-4


@dataclass(kw_only=True)
class SeizureProbeResult(ProbeResult):
    """`selection`: C on validation AUPRC; test_pred is 1 where test_proba (the seizure
    probability per test window, float64) reaches the threshold tuned on validation F1."""

    threshold: float
    val_f1: float  # at the threshold, of the chosen C
    curves: dict[str, np.ndarray]  # for the figures; save beside the predictions
    events: dict  # pooled SzCORE event counts at the threshold
    overlap: dict = field(default_factory=dict)  # pooled any-overlap counts at the threshold
    iterations_by_C: dict[float, int] = field(default_factory=dict)
    converged_by_C: dict[float, bool] = field(default_factory=dict)
    settings: dict = field(default_factory=dict)

    def summary(self) -> dict:
        """JSON-ready (no per-window arrays)."""
        return {
            "chosen": self.chosen,
            "selection": self.selection.record(),
            "threshold": self.threshold,
            "val_f1": self.val_f1,
            "test_metrics": self.test_metrics,
            "events": self.events,
            "overlap_events": self.overlap,
            "iterations_by_C": by_value_json(self.iterations_by_C),
            "converged_by_C": by_value_json(self.converged_by_C),
            "settings": self.settings,
            "seconds": self.seconds,
        }


def _binary(name: str, y: np.ndarray) -> None:
    if not np.isin(y, (0, 1)).all():
        raise DataError(
            f"{name}: seizure labels must be 0 or 1, got {np.unique(y)[:5].tolist()}",
            fix="label each window 1 when it overlaps a seizure, else 0",
        )


def _both_classes(name: str, y: np.ndarray) -> None:
    _binary(name, y)
    if y.min() == y.max():
        raise DataError(
            f"{name}: every window is {'seizure' if y[0] else 'background'}; the probe needs "
            "both classes here",
            fix="check the dataset's seizure lists and the fold assignment (every training and "
            "validation group needs a patient with a seizure)",
        )


def _sigmoid(raw: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * raw.astype(np.float64)))  # overflow-free logistic


def fit_seizure_probe(
    split: Split,
    test_timeline: WindowTimeline,
    *,
    C_grid=C_GRID,
    max_iter: int = MAX_ITER,
    tol: float = TOL,
    threshold_grid=THRESHOLD_GRID,
    max_fp_per_hour: float = MAX_FP_PER_HOUR,
    rules: EventRules = SZCORE_RULES,
    n_jobs: int = 1,
    progress: Progress = None,
) -> SeizureProbeResult:
    """One fold: C on validation AUPRC, threshold on validation F1, test scored (module
    docstring). Labels (the split's y) are 0/1 per window; `test_timeline` places each test
    window in its recording for the event scoring."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import average_precision_score

    started = time.perf_counter()
    grid = sorted_C_grid(C_grid)
    X_train, y_train, X_val, y_val, X_test, y_test = checked_parts(split)
    _both_classes("train", y_train)
    _binary("validation", y_val)
    # A validation part of one class (a small corpus's subject fold) scores every C alike
    # (AUPRC 0 without a positive window, 1 with only positives): the smallest C is chosen,
    # as the reference's fit_lr_c_grid does (its first C of the grid), and the fold says so.
    one_class = ("" if y_val.min() != y_val.max() else
                 f"validation holds one class only ({'positive' if y_val[0] else 'negative'} "
                 "windows): every C scores the same, the smallest is chosen (as the reference)")
    if one_class:
        print(f"warning: {one_class}", file=sys.stderr)

    scaler = Standardizer.fit(X_train)
    Z_train = scaler.transform(X_train)
    fits = FitCounter(progress, len(grid))

    def fit(C: float):
        model = LogisticRegression(C=C, class_weight="balanced", max_iter=max_iter, tol=tol)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model.fit(Z_train, y_train)
        val_proba = _sigmoid(decision(X_val, scaler, model.coef_, model.intercept_)[:, 0])
        # one class: scikit-learn's value (0 or 1) without its undefined-recall warning
        auprc = float(y_val[0]) if one_class else float(average_precision_score(y_val, val_proba))
        fits.step(f"C={C:g}: val AUPRC {auprc:.4f} ({int(model.n_iter_[0])} iterations)")
        return model, val_proba, auprc

    fitted = dict(zip(grid, map_in_threads(fit, grid, n_jobs), strict=True))
    auprc_by_C = {C: a for C, (_, _, a) in fitted.items()}
    selection = choose(auprc_by_C, grid, "validation AUPRC")
    model, val_proba, _ = fitted[selection.chosen]
    threshold, val_f1 = tune_threshold(y_val, val_proba, threshold_grid)
    test_proba = _sigmoid(decision(X_test, scaler, model.coef_, model.intercept_)[:, 0])
    scores = score_fold(y_test, test_proba, threshold, test_timeline,
                        max_fp_per_hour=max_fp_per_hour, rules=rules)
    iterations = {C: int(m.n_iter_[0]) for C, (m, _, _) in fitted.items()}
    return SeizureProbeResult(
        selection=selection,
        threshold=threshold,
        val_f1=val_f1,
        test_proba=test_proba,
        test_pred=(test_proba >= threshold).astype(np.int64),
        test_metrics=scores.metrics,
        curves=scores.curves,
        events=scores.events.as_dict(),
        overlap=scores.overlap.as_dict(),
        iterations_by_C=iterations,
        converged_by_C={C: i < max_iter for C, i in iterations.items()},
        settings={
            "class_weight": "balanced",
            "max_iter": max_iter,
            "tol": tol,
            "C_grid": list(grid),
            "selection": "validation AUPRC",
            "threshold": "validation F1 over "
            f"{len(threshold_grid)} thresholds {min(threshold_grid):g}-{max(threshold_grid):g}",
            "max_fp_per_hour": max_fp_per_hour,
            "validation_one_class": one_class,
            "event_rules": rules.as_dict(),
            "event_curve": {"thresholds": len(CURVE_THRESHOLDS),
                            "fa_grid_per_hour": [float(FA_GRID_PER_HOUR[0]),
                                                 float(FA_GRID_PER_HOUR[-1]),
                                                 len(FA_GRID_PER_HOUR)],
                            "auc_range_per_hour": [float(v) for v in AUC_RANGE_PER_HOUR],
                            "scoring": "any overlap, no tolerance, merge or split"},
        },
        seconds=time.perf_counter() - started,
    )
