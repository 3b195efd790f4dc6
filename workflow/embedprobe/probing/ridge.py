"""The brain-age probe: StandardScaler + Ridge on one mean embedding per subject.

Alpha from ALPHA_GRID by inner 4-fold CV (lowest mean MAE), outer 4-fold CV stratified on
AGE_BINS gives an out-of-fold prediction for every subject; the scaler is fitted inside every
training split.
"""

from __future__ import annotations

import numpy as np

from embedprobe.core.errors import DataError
from embedprobe.probing.logistic import FitCounter, Progress
from embedprobe.probing.metrics import mae, regression_scores

ALPHA_GRID = (0.1, 1, 5, 10, 20, 30, 50, 100)
AGE_BINS = (0, 35, 50, 65, 80, 200)


def age_bin_of(ages: np.ndarray, age_bins=AGE_BINS) -> np.ndarray:
    """Index of each age's bin [edge_i, edge_i+1); a DataError for ages outside the edges."""
    edges = np.asarray(age_bins, dtype=np.float64)
    outside = (ages < edges[0]) | (ages >= edges[-1]) | ~np.isfinite(ages)
    if outside.any():
        raise DataError(
            f"{int(outside.sum())} subject age(s) outside the age bins {list(age_bins)}: "
            f"{ages[outside][:5].tolist()}",
            fix="check the subjects table of the dataset (ages in years)",
        )
    return np.searchsorted(edges, ages, side="right") - 1


def stratified_folds(strata: np.ndarray, n_folds: int, seed: int) -> list[np.ndarray]:
    """Test indices of n_folds folds; every stratum is dealt round-robin after a shuffle, so each
    fold holds floor or ceil of its share of every stratum (also for strata smaller than n_folds).
    """
    rng = np.random.default_rng(seed)
    fold_of = np.empty(len(strata), dtype=np.int64)
    offset = 0
    for stratum in np.unique(strata):
        members = rng.permutation(np.flatnonzero(strata == stratum))
        # Continue the deal where the last stratum stopped, so fold sizes stay balanced too.
        fold_of[members] = (offset + np.arange(len(members))) % n_folds
        offset += len(members)
    return [np.flatnonzero(fold_of == k) for k in range(n_folds)]


def _ridge_predict(X_train, y_train, X_test, alpha: float) -> np.ndarray:
    from sklearn.linear_model import Ridge
    from sklearn.preprocessing import StandardScaler

    scaler = StandardScaler().fit(X_train)
    model = Ridge(alpha=alpha).fit(scaler.transform(X_train), y_train)
    return model.predict(scaler.transform(X_test))


def _choose_alpha(X, ages, strata, alpha_grid, n_folds, seed,
                  progress: Progress = None) -> tuple[float, dict]:
    """Alpha with the lowest mean MAE over an inner stratified n_folds CV; `progress` is told
    after each alpha's inner folds."""
    folds = stratified_folds(strata, n_folds, seed)
    splits = [(np.setdiff1d(np.arange(len(ages)), test), test) for test in folds]
    alphas = list(dict.fromkeys(float(a) for a in alpha_grid))
    fits = FitCounter(progress, len(alphas))
    mean_error = {}
    for alpha in alphas:
        mean_error[alpha] = float(np.mean([
            mae(ages[test], _ridge_predict(X[train], ages[train], X[test], alpha))
            for train, test in splits]))
        fits.step(f"alpha={alpha:g}: inner MAE {mean_error[alpha]:.2f} years")
    return min(mean_error, key=mean_error.get), mean_error


def fit_age_fold(
    X_train,
    ages_train,
    X_test,
    ages_test,
    alpha_grid=ALPHA_GRID,
    age_bins=AGE_BINS,
    n_inner: int = 4,
    seed: int = 42,
    progress: Progress = None,
) -> dict:
    """One outer fold of brain age: alpha by inner stratified CV on the training subjects
    (mean embeddings), refit on all of them, score the test subjects in years. `progress` is
    told after each alpha of the grid."""
    X_train = np.asarray(X_train, dtype=np.float64)
    ages_train = np.asarray(ages_train, dtype=np.float64)
    ages_test = np.asarray(ages_test, dtype=np.float64)
    if len(ages_train) < n_inner or len(ages_test) == 0:
        raise DataError(
            f"brain age needs at least {n_inner} training subjects and one test subject per "
            f"fold; got {len(ages_train)} and {len(ages_test)}",
            fix="use a dataset with more subjects with known ages, or fewer folds",
        )
    strata = age_bin_of(ages_train, age_bins)
    age_bin_of(ages_test, age_bins)  # a test age outside the bins is bad data too
    alpha, inner = _choose_alpha(X_train, ages_train, strata, alpha_grid, n_inner, seed,
                                 progress)
    predictions = _ridge_predict(X_train, ages_train, np.asarray(X_test, np.float64), alpha)
    scores = (
        regression_scores(ages_test, predictions)
        if len(ages_test) > 1
        else {"mae": mae(ages_test, predictions), "pearson_r": float("nan"), "r2": float("nan")}
    )
    return {
        "alpha": alpha,
        "inner_mae_by_alpha": inner,
        "predictions": predictions,
        "metrics": {k: float(v) for k, v in scores.items()},
        "baseline_mae": mae(ages_test, np.full_like(ages_test, ages_train.mean())),
    }
