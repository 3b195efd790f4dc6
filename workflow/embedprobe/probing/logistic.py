"""The sleep-staging probe: a multinomial logistic regression, C chosen on validation kappa.

The reference protocol
----------------------
StandardScaler fitted on the training split, then one multinomial LogisticRegression(lbfgs,
max_iter=MAX_ITER, tol=1e-4) per C in C_GRID, C chosen on validation Cohen's kappa, the chosen model
scored on test. `method="reference"` runs exactly that with scikit-learn, one independent fit per C.

`method="fast"` (default): the same fits, far fewer passes over the data
--------------------------------------------------------------------------
Every C of the grid is fitted from zero on ALL training rows, to this criterion:
    objective  mean cross-entropy of softmax(W z + b) + ||W||^2 / (2 C n)   (scikit-learn's)
    stop when  max |gradient of the objective w.r.t. (W, b)| <= tol = 1e-4 (scikit-learn's gtol),
               checked after every iteration; at most max_iter iterations (10,000; BCI 1,000).
C is chosen on validation kappa (first best), as the reference does. What changes is only the path
to the optimum: preconditioned L-BFGS (probing/softmax.py), its preconditioner estimated on
20,000 stratified training rows; a fit takes 10-20 iterations where plain lbfgs takes hundreds.
`search_rows=N` adds a cheaper variant: every C fitted to the criterion on N stratified training
rows, then the best C and its larger neighbour (smaller for the largest C) refitted on all rows
from their subsample solutions; the better full-data validation kappa wins.
"Same answer" (tests/probing/test_probe.py, scripts/bench_probe.py): test kappa within 0.005 of the
reference's, and the chosen C's reference validation kappa within 0.002 of the best reference
validation kappa over the grid.

Memory (beyond the caller's split: its parts' X, at the peak of `fit_logistic_probe`):
  fast: one standardised float32 copy of X_train (none with overwrite=True and float32
  C-contiguous input), plus transients: about 50 bytes x n_train of loss buffers per fit running
  (x n_jobs), or one 8,192-row float32 block while standardising or scoring (2,048-row float64
  blocks while fitting the scaler), and a few p x p float64 matrices (none above
  probing/probe_forms.EIGEN_MAX_FEATURES: the diagonal preconditioner). Validation and test are
  never copied whole. search_rows=N adds one N x p float32 subsample. No float64 n x p array.
  Streamed (the parts' X are rows left in the store, pipeline/store.StoreRows: a fold too large
  to hold): no n x p array at all; the fits read and standardise blocks of rows per evaluation
  (probing/softmax.py), the preconditioner's 20,000 rows gathered once.
  reference: float32 standardised copies of all three splits, plus StandardScaler.fit's transient
  float64 n_train x p temporary (scikit-learn computes the variance of float32 input in float64).
"""

from __future__ import annotations

import threading
import time
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from embedprobe.core.errors import DataError, UsageError
from embedprobe.probing.metrics import classification_scores, cohen_kappa
from embedprobe.probing.probe_forms import CHUNK_ROWS
from embedprobe.probing.result import ProbeResult
from embedprobe.probing.selection import choose
from embedprobe.probing.softmax import (
    SoftmaxFit,
    covariance_eigen,
    decision,
    fit_softmax,
    softmax,
)
from embedprobe.probing.split import Split
from embedprobe.probing.standardize import Standardizer

C_GRID = (0.001, 0.01, 0.1, 1.0, 10.0, 100.0)
# lbfgs's iteration cap: the reference probe's default (train_probe, `--max-iter`), which its
# staging, event and diagnosis run lines keep; its BCI lines pass 1,000
MAX_ITER = 10_000
BCI_MAX_ITER = 1000
TOL = 1e-4
PRECONDITIONER_ROWS = 20_000

# Told after every fit of a grid value: progress(done, total, message), the message
# "<name>=<value>: <what the fit scored>" (pipeline/fold_job.py shows it on a terminal).
Progress = Callable[[int, int, str], None] | None


class FitCounter:
    """Counts a probe's finished fits for `progress`; fits running in threads may finish at
    once, each is counted once and told in the order counted."""

    def __init__(self, progress: Progress, total: int = 0):
        self.progress, self.total, self.done = progress, total, 0
        self._lock = threading.Lock()

    def step(self, message: str) -> None:
        if self.progress is None:
            return
        with self._lock:
            self.done += 1
            self.progress(self.done, self.total, message)


@dataclass(kw_only=True)
class LogisticProbeResult(ProbeResult):
    """The staging probe's result: `selection` over the finalists (every C, or the refitted
    ones after a subsample search), and how the fits went."""

    val_kappa_by_C: dict[float, float]  # of the fit per C on the search rows (all by default)
    iterations_by_C: dict[float, int]
    val_kappa: float  # of the final model
    method: str
    refit_val_kappa_by_C: dict[float, float] = field(default_factory=dict)
    refit_iterations_by_C: dict[float, int] = field(default_factory=dict)
    converged_by_C: dict[float, bool] = field(default_factory=dict)
    search_rows: int = 0  # training rows the C search fitted (n_train for the reference)
    criterion: str = ""


def sorted_C_grid(C_grid) -> tuple[float, ...]:
    """The C grid as sorted floats; a UsageError for an empty grid or a C that is not > 0."""
    grid = tuple(sorted(float(c) for c in C_grid))
    if not grid or min(grid) <= 0:
        raise UsageError(f"the C grid must hold positive values, got {C_grid!r}",
                         fix=f"use the reference grid {list(C_GRID)}")
    return grid


def check_split(name: str, X, y, n_features: int | None) -> tuple[np.ndarray, np.ndarray]:
    """X (an array, or rows left in a file: `streamed`) and y, checked."""
    X = X if streamed(X) else np.asarray(X)
    y = np.asarray(y)
    if X.ndim != 2 or X.shape[0] == 0:
        raise DataError(
            f"{name}: embeddings must be a non-empty 2-D array, got shape {X.shape}",
            fix="check the fold's split in the embedding cache (rows per split > 0)",
        )
    if y.shape != (X.shape[0],):
        raise DataError(
            f"{name}: {X.shape[0]} embedding rows but labels of shape {y.shape}",
            fix="rebuild the embedding cache; its window table and features disagree",
        )
    if n_features is not None and X.shape[1] != n_features:
        raise DataError(
            f"{name}: {X.shape[1]} features, the training split has {n_features}",
            fix="all splits must come from one embedding cache",
        )
    if not np.issubdtype(y.dtype, np.integer):
        raise DataError(
            f"{name}: labels must be integer class indices, got {y.dtype}",
            fix="map the dataset's stage names to class indices before probing",
        )
    if not all(np.isfinite(X[i : i + CHUNK_ROWS]).all() for i in range(0, len(X), CHUNK_ROWS)):
        raise DataError(
            f"{name}: embeddings contain NaN or infinity",
            fix="the embedding cache of this dataset and model is damaged: embed it again",
        )
    return X, y


def streamed(X) -> bool:
    """Whether X is rows left in a file (a 2-D, sliceable stand-in for an array)."""
    return not isinstance(X, np.ndarray) and hasattr(X, "shape")


def checked_parts(split: Split) -> tuple[np.ndarray, ...]:
    """X and y of the train, validation and test parts, each checked (check_split)."""
    X_train, y_train = check_split("train", split.train.X, split.train.y, None)
    X_val, y_val = check_split("validation", split.val.X, split.val.y, X_train.shape[1])
    X_test, y_test = check_split("test", split.test.X, split.test.y, X_train.shape[1])
    return X_train, y_train, X_val, y_val, X_test, y_test


def map_in_threads(fn, items, n_jobs: int):
    """fn over items, in threads when n_jobs > 1 (threads share X: no per-worker copies)."""
    if n_jobs <= 1:
        return [fn(item) for item in items]
    with ThreadPoolExecutor(max_workers=n_jobs) as pool:
        return list(pool.map(fn, items))


def _stratified_subsample(y: np.ndarray, rows: int, seed: int) -> np.ndarray:
    """Sorted row indices, `rows` in total, each class keeping its share (at least one row)."""
    rng = np.random.default_rng(seed)
    classes, counts = np.unique(y, return_counts=True)
    take = np.maximum(1, np.floor(counts * rows / len(y)).astype(int))
    take[np.argmax(counts)] += rows - take.sum()
    picked = [
        rng.choice(np.flatnonzero(y == c), size=min(t, n), replace=False)
        for c, t, n in zip(classes, take, counts, strict=True)
    ]
    return np.sort(np.concatenate(picked))


@dataclass
class _Fold:
    """One fold's validated splits; y is the class index (into `classes`) of every training row."""

    X_train: np.ndarray
    y: np.ndarray
    classes: np.ndarray
    X_val: np.ndarray
    y_val: np.ndarray
    X_test: np.ndarray


@dataclass
class _Plan:
    grid: tuple[float, ...]
    n_jobs: int
    fits: FitCounter
    seed: int
    search_rows: int | None
    tol: float
    max_iter: int
    overwrite: bool


def fit_logistic_probe(
    split: Split,
    C_grid=C_GRID,
    method: str = "fast",
    n_jobs: int = 1,
    progress: Progress = None,
    seed: int = 0,
    search_rows: int | None = None,
    tol: float = TOL,
    max_iter: int = MAX_ITER,
    overwrite: bool = False,
) -> LogisticProbeResult:
    """Sleep-staging probe of one fold: C chosen on validation kappa, scored on test.

    method "fast" (default) or "reference" (module docstring). n_jobs > 1 fits that many C values
    at once in threads. search_rows (fast only): None fits every C on all training rows; a number
    searches C on that many stratified rows and refits two C values on all rows. overwrite=True
    lets the fast method standardise the training part's X in place (saves one n_train x p
    float32 copy; the split's training part then holds standardised values).
    """
    started = time.perf_counter()
    if method not in ("fast", "reference"):
        raise UsageError(f"unknown probe method {method!r}", fix="use method 'fast' or 'reference'")
    grid = sorted_C_grid(C_grid)
    X_train, y_train, X_val, y_val, X_test, y_test = checked_parts(split)
    if method == "reference" and streamed(X_train):
        raise UsageError("the reference method fits rows in memory, these are streamed",
                         fix="use method 'fast' for a fold whose rows stay in the store")
    classes, y_index = np.unique(y_train, return_inverse=True)
    if len(classes) < 2:
        raise DataError(
            f"the training split holds one class only ({classes.tolist()})",
            fix="check the labels of this dataset and the fold assignment",
        )
    fold = _Fold(X_train, y_index, classes, X_val, y_val, X_test)
    plan = _Plan(grid, n_jobs, FitCounter(progress), seed, search_rows, tol, max_iter, overwrite)
    result = (_reference if method == "reference" else _fast)(fold, plan)
    raw_test = result.pop("raw_test")
    test_pred = classes[raw_test.argmax(axis=1)]
    return LogisticProbeResult(
        test_pred=test_pred,
        test_proba=softmax(raw_test),
        test_metrics=classification_scores(y_test, test_pred),
        method=method,
        seconds=time.perf_counter() - started,
        classes=classes,
        **result,
    )


ON = "validation kappa"


def _refit_candidates(grid: tuple[float, ...], best: float) -> list[float]:
    """The subsample's best C and its larger neighbour (smaller one for the largest C): a
    subsample's noisier fits favour a little more regularisation than all rows do."""
    i = grid.index(best)
    return list(grid[i : i + 2]) if i + 1 < len(grid) else list(grid[max(0, i - 1) :])


def _fast(fold: _Fold, plan: _Plan) -> dict:
    n_rows, n_classes = len(fold.y), len(fold.classes)
    scaler = Standardizer.fit(fold.X_train)
    X = fold.X_train
    if streamed(X):  # standardised block by block as the fits read them
        Z = scaler.rows(X)
    else:
        in_place = (plan.overwrite and X.dtype == np.float32 and X.flags.c_contiguous
                    and X.flags.writeable)
        Z = scaler.transform(X, out=X if in_place else None)
    subsample = plan.search_rows is not None and n_rows > plan.search_rows
    if subsample:
        rows = _stratified_subsample(fold.y, plan.search_rows, plan.seed)
        Z_search, y_search = Z[rows], fold.y[rows]
        eigen = covariance_eigen(Z_search)
    else:
        Z_search, y_search = Z, fold.y
        # The preconditioner only needs the covariance roughly: 20,000 rows are plenty.
        few = n_rows > PRECONDITIONER_ROWS
        rows = _stratified_subsample(fold.y, PRECONDITIONER_ROWS, plan.seed) if few else None
        # streamed: its rows gathered once (the same covariance as gathering them in blocks)
        eigen = (covariance_eigen(Z[rows if few else slice(None)]) if streamed(X)
                 else covariance_eigen(Z, rows))
    plan.fits.total = len(plan.grid) + (
        len(_refit_candidates(plan.grid, plan.grid[0])) if subsample else 0)

    def scored(fit: SoftmaxFit) -> tuple[SoftmaxFit, float]:
        raw = decision(fold.X_val, scaler, fit.coef, fit.intercept)
        return fit, cohen_kappa(fold.y_val, fold.classes[raw.argmax(axis=1)])

    def search(C: float) -> tuple[SoftmaxFit, float]:
        fit, kappa = scored(fit_softmax(Z_search, y_search, n_classes, C, eigen, tol=plan.tol,
                                         max_iter=plan.max_iter))
        plan.fits.step(f"C={C:g}: val kappa {kappa:.4f} ({fit.n_iter} iterations)")
        return fit, kappa

    searched = dict(zip(plan.grid, map_in_threads(search, plan.grid, plan.n_jobs), strict=True))
    kappas = {C: k for C, (_, k) in searched.items()}
    refits: dict[float, tuple[SoftmaxFit, float]] = {}
    if subsample:
        for C in _refit_candidates(plan.grid, choose(kappas, plan.grid, ON).chosen):
            start = (searched[C][0].coef, searched[C][0].intercept)
            refits[C] = scored(fit_softmax(Z, fold.y, n_classes, C, eigen, tol=plan.tol,
                                            max_iter=plan.max_iter, init=start))
            fit, kappa = refits[C]
            plan.fits.step(f"C={C:g} on all {n_rows} rows: val kappa {kappa:.4f} "
                           f"({fit.n_iter} iterations)")  # fmt: skip
    finalists = refits or searched
    selection = choose({C: k for C, (_, k) in finalists.items()}, plan.grid, ON)
    final, final_kappa = finalists[selection.chosen]
    converged = {C: f.converged for C, (f, _) in searched.items()}
    converged.update({C: f.converged for C, (f, _) in refits.items()})
    where = (
        f"C search on {len(y_search)} stratified training rows, refit of "
        f"{len(refits)} C values on all {n_rows}"
        if subsample
        else f"every C on all {n_rows} training rows"
    )
    return {
        "selection": selection,
        "val_kappa_by_C": kappas,
        "iterations_by_C": {C: f.n_iter for C, (f, _) in searched.items()},
        "val_kappa": final_kappa,
        "refit_val_kappa_by_C": {C: k for C, (_, k) in refits.items()},
        "refit_iterations_by_C": {C: f.n_iter for C, (f, _) in refits.items()},
        "converged_by_C": converged,
        "search_rows": int(len(y_search)),
        "criterion": f"preconditioned L-BFGS until max|grad(W,b)| <= {plan.tol:g} of mean "
        f"cross-entropy + ||W||^2/(2 C n), from zero, max_iter {plan.max_iter}; {where}",
        "raw_test": decision(fold.X_test, scaler, final.coef, final.intercept),
    }


def _reference(fold: _Fold, plan: _Plan) -> dict:
    """The straightforward protocol: StandardScaler, one independent sklearn lbfgs fit per C."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    scaler = StandardScaler().fit(fold.X_train)
    Z_train, Z_val = scaler.transform(fold.X_train), scaler.transform(fold.X_val)
    plan.fits.total = len(plan.grid)

    def fit(C: float):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model = LogisticRegression(C=C, max_iter=plan.max_iter, tol=plan.tol)
            model.fit(Z_train, fold.y)
        kappa = cohen_kappa(fold.y_val, fold.classes[model.predict(Z_val)])
        plan.fits.step(f"C={C:g}: val kappa {kappa:.4f} ({model.n_iter_[0]} iterations)")
        return model, kappa

    fitted = dict(zip(plan.grid, map_in_threads(fit, plan.grid, plan.n_jobs), strict=True))
    kappas = {C: k for C, (_, k) in fitted.items()}
    selection = choose(kappas, plan.grid, ON)
    chosen = selection.chosen
    iterations = {C: int(m.n_iter_[0]) for C, (m, _) in fitted.items()}
    raw_test = fitted[chosen][0].decision_function(scaler.transform(fold.X_test))
    if raw_test.ndim == 1:  # two classes: logit difference d; softmax([-d/2, d/2]) = sigmoid(d)
        raw_test = np.column_stack([-raw_test / 2, raw_test / 2])
    return {
        "selection": selection,
        "val_kappa_by_C": kappas,
        "iterations_by_C": iterations,
        "val_kappa": kappas[chosen],
        "converged_by_C": {C: i < plan.max_iter for C, i in iterations.items()},
        "search_rows": int(len(fold.y)),
        "criterion": f"sklearn lbfgs tol {plan.tol:g}, max_iter {plan.max_iter}, from zero, "
        f"every C on all {len(fold.y)} training rows",
        "raw_test": raw_test.astype(np.float32),
    }
