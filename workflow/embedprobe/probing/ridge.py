"""The brain-age probe: StandardScaler + Ridge on one mean embedding per subject.

The reference's nested CV (`tasks/brain_age._run_ridge_nested_cv_subject` and
`_inner_stratified_splits`): the outer fold's training subjects, in the order the caller gives
(the reference's: its train subjects, then its validation subjects, each sorted), are split
by `StratifiedKFold(4, shuffle=True, random_state=43)` on their age bin
(`np.digitize(age, AGE_BINS) - 1`), or by `KFold(4, shuffle=True, random_state=43)` where
scikit-learn refuses the bins (it does only when every bin holds fewer subjects than splits);
alpha is the grid's lowest mean inner MAE (the first in grid order on a tie); the scaler and
Ridge are refitted on all the outer-train subjects. The seed is the same in every outer fold.
"""

from __future__ import annotations

import warnings

import numpy as np

from embedprobe.core.errors import DataError
from embedprobe.probing.logistic import FitCounter, Progress
from embedprobe.probing.metrics import mae, regression_scores
from embedprobe.probing.result import ProbeResult
from embedprobe.probing.selection import Selection, choose, grid_values
from embedprobe.probing.split import Split

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


INNER_FOLDS = 4
INNER_SEED = 43  # the reference task config's nested_cv_seed, the same for every outer fold


def inner_splits(ages: np.ndarray, n_splits: int = INNER_FOLDS, seed: int = INNER_SEED,
                 age_bins=AGE_BINS) -> list[tuple[np.ndarray, np.ndarray]]:
    """(train, validation) positions of the inner CV: StratifiedKFold on the age bins, KFold
    where scikit-learn raises ValueError for them (every bin smaller than n_splits)."""
    from sklearn.model_selection import KFold, StratifiedKFold

    bins = age_bin_of(np.asarray(ages, dtype=np.float64), age_bins)
    positions = np.arange(len(bins))
    try:
        with warnings.catch_warnings():  # "the least populated class has only 1 member"
            warnings.simplefilter("ignore", UserWarning)
            return list(StratifiedKFold(n_splits, shuffle=True, random_state=seed)
                        .split(positions, bins))
    except ValueError:
        return list(KFold(n_splits, shuffle=True, random_state=seed).split(positions))


def _ridge_predict(X_train, y_train, X_test, alpha: float) -> np.ndarray:
    from sklearn.linear_model import Ridge
    from sklearn.preprocessing import StandardScaler

    scaler = StandardScaler().fit(X_train)
    model = Ridge(alpha=max(alpha, 1e-10)).fit(scaler.transform(X_train), y_train)
    return model.predict(scaler.transform(X_test))


def _choose_alpha(X, ages, alpha_grid, n_folds, seed, progress: Progress = None,
                  age_bins=AGE_BINS) -> Selection:
    """Alpha with the lowest mean MAE over the inner CV (probing/selection.py: ties, the
    first in grid order); `progress` is told after each alpha's inner folds."""
    splits = inner_splits(ages, n_folds, seed, age_bins)
    alphas = grid_values(alpha_grid)
    fits = FitCounter(progress, len(alphas))
    mean_error = {}
    for alpha in alphas:
        mean_error[alpha] = float(np.mean([
            mae(ages[test], _ridge_predict(X[train], ages[train], X[test], alpha))
            for train, test in splits]))
        fits.step(f"alpha={alpha:g}: inner MAE {mean_error[alpha]:.2f} years")
    return choose(mean_error, alphas, "inner-CV MAE", lower_is_better=True)


def age_scores(ages: np.ndarray, predictions: np.ndarray) -> dict[str, float]:
    """MAE, Pearson r and R2 in years; r and R2 are NaN for a single test subject."""
    if len(ages) > 1:
        return {k: float(v) for k, v in regression_scores(ages, predictions).items()}
    return {"mae": mae(ages, predictions), "pearson_r": float("nan"), "r2": float("nan")}


def fit_age_fold(
    split: Split,
    alpha_grid=ALPHA_GRID,
    age_bins=AGE_BINS,
    n_inner: int = INNER_FOLDS,
    seed: int = INNER_SEED,
    progress: Progress = None,
) -> ProbeResult:
    """One outer fold of brain age: alpha by the inner CV on the training and validation
    subjects together (split.pooled(): mean embeddings, y their ages, in the rows' order, which
    fixes the inner draw), refit on all of them, score the test subjects in years. `progress`
    is told after each alpha of the grid."""
    training = split.pooled()
    X_train = np.asarray(training.X, dtype=np.float64)
    ages_train = np.asarray(training.y, dtype=np.float64)
    X_test = split.test.X
    ages_test = np.asarray(split.test.y, dtype=np.float64)
    if len(ages_train) < n_inner or len(ages_test) == 0:
        raise DataError(
            f"brain age needs at least {n_inner} training subjects and one test subject per "
            f"fold; got {len(ages_train)} and {len(ages_test)}",
            fix="use a dataset with more subjects with known ages, or fewer folds",
        )
    age_bin_of(ages_train, age_bins)
    age_bin_of(ages_test, age_bins)  # a test age outside the bins is bad data too
    selection = _choose_alpha(X_train, ages_train, alpha_grid, n_inner, seed, progress, age_bins)
    predictions = _ridge_predict(X_train, ages_train, np.asarray(X_test, np.float64),
                                 selection.chosen)
    return ProbeResult(
        selection=selection, test_metrics=age_scores(ages_test, predictions),
        test_pred=predictions,
        details={"baseline_mae": mae(ages_test, np.full_like(ages_test, ages_train.mean()))})
