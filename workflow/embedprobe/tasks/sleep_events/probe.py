"""The event probes of one fold: one binary logistic probe per (event field, threshold).

The reference's event benchmarks (NeuroAtlas sleep_arousal, sleep_respiratory, sleep_limb:
`--probe-type linear --class-weight balanced --tune-c 1.0`): standardise on the training
windows (probing/standardize.py), LogisticRegression(lbfgs, class_weight="balanced", C = 1,
max_iter 10,000: the reference probe's default) fitted on the training windows, scored on the
test windows: AUPRC (average precision), macro F1 and balanced accuracy at probability 0.5,
AUROC. A C grid of more than one value is chosen on validation AUPRC (probing/selection.py, as the
seizure probe).
A threshold whose training windows hold one class only is skipped with the reason, as the
reference skips it; the fold's headline probe cannot be skipped (the fold would have no
score): that is an error.

The standardised training rows are made once and shared by every probe of the fold: the
fold's peak is one fit's, however many fields and thresholds it runs.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from embedprobe.probing.logistic import MAX_ITER
from embedprobe.probing.metrics import balanced_accuracy, macro_f1
from embedprobe.probing.result import ProbeResult
from embedprobe.probing.selection import choose, grid_values
from embedprobe.probing.split import PARTS, Split
from embedprobe.probing.standardize import Standardizer


@dataclass(frozen=True)
class EventProbe:
    field: str
    threshold: float  # seconds of the field's events in the window, strictly exceeded

    @property
    def key(self) -> str:
        return f"{self.field}@{self.threshold:g}s"


def event_scores(y: np.ndarray, proba: np.ndarray) -> dict[str, float]:
    """The event benchmarks' metrics of positive-class probabilities; AUPRC and AUROC are NaN
    where the test windows hold one class only."""
    from sklearn.metrics import average_precision_score, roc_auc_score

    pred = (proba >= 0.5).astype(np.int64)
    both = 0 < y.sum() < len(y)
    return {"auprc": float(average_precision_score(y, proba)) if both else float("nan"),
            "macro_f1": float(macro_f1(y, pred)),
            "balanced_accuracy": float(balanced_accuracy(y, pred)),
            "auroc": float(roc_auc_score(y, proba)) if both else float("nan")}


def _fit(Z: np.ndarray, y: np.ndarray, C: float):
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(C=C, class_weight="balanced", max_iter=MAX_ITER)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        model.fit(Z, y)
    return model, not any(issubclass(w.category, ConvergenceWarning) for w in caught)


def fit_event_probes(split: Split, overlaps: dict[str, np.ndarray], probes: list[EventProbe],
                     C_grid: tuple[float, ...], progress=None) -> dict[str, ProbeResult | str]:
    """Each probe's result by key (its details: the positive share of its test windows, its
    positive training windows, whether lbfgs converged), or the reason it was skipped.
    `overlaps`: seconds of each field's events per window of the split's table (all windows):
    each probe labels the parts' rows from them (the split's own y is not read)."""
    from sklearn.metrics import average_precision_score

    grid = tuple(sorted(grid_values(C_grid)))
    scaler = Standardizer.fit(split.train.X)
    Z = {part: scaler.transform(split.part(part).X) for part in PARTS}
    results: dict[str, ProbeResult | str] = {}
    for k, probe in enumerate(probes):
        y = {part: (overlaps[probe.field][split.part(part).rows] > probe.threshold)
             .astype(np.int64) for part in PARTS}
        if len(np.unique(y["train"])) < 2:
            side = "positive" if y["train"].any() else "negative"
            results[probe.key] = f"the training windows hold one class only (all {side})"
            continue
        fits, scores = {}, {}
        for C in grid:
            model, converged = _fit(Z["train"], y["train"], C)
            val = y["val"]
            scores[C] = (float(average_precision_score(val, model.predict_proba(Z["val"])[:, 1]))
                         if len(grid) > 1 and 0 < val.sum() < len(val) else float("nan"))
            fits[C] = (model, converged)
        selection = choose(scores, grid, "validation AUPRC")
        model, converged = fits[selection.chosen]
        proba = model.predict_proba(Z["test"])[:, 1]
        result = ProbeResult(
            selection=selection, test_metrics=event_scores(y["test"], proba),
            test_pred=(proba >= 0.5).astype(np.int64), test_proba=proba,
            details={"positive_share": float(y["test"].mean()) if len(y["test"]) else np.nan,
                     "n_positive_train": int(y["train"].sum()), "converged": converged})
        results[probe.key] = result
        if progress:
            progress(k + 1, len(probes), f"{probe.key}: test AUPRC "
                                         f"{result.test_metrics['auprc']:.4f}")
    return results
