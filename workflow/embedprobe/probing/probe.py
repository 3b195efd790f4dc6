"""Linear probes on cached embeddings: sleep staging (logistic) and brain age (ridge).

Sleep staging: the reference protocol
-------------------------------------
StandardScaler fitted on the training split, then one multinomial LogisticRegression(lbfgs,
max_iter=1000, tol=1e-4) per C in C_GRID, C chosen on validation Cohen's kappa, the chosen model
scored on test. `method="reference"` runs exactly that with scikit-learn, one independent fit per C.

`method="fast"` (default): the same fits, far fewer passes over the data
--------------------------------------------------------------------------
Every C of the grid is fitted from zero on ALL training rows, to this criterion:
    objective  mean cross-entropy of softmax(W z + b) + ||W||^2 / (2 C n)   (scikit-learn's)
    stop when  max |gradient of the objective w.r.t. (W, b)| <= tol = 1e-4 (scikit-learn's gtol),
               checked after every iteration; at most 1000 iterations.
C is chosen on validation kappa (first best), as the reference does. What changes is only the path
to the optimum: L-BFGS on a preconditioned parameterisation W = M V S, where
  * S = diag((k lambda + 1/(C n))^-1/2) Q^T whitens the curvature: Q, lambda are the eigenvectors
    and eigenvalues of the standardised training covariance (estimated on 20,000 stratified rows;
    it only steers the path, not the optimum), k = 0.2 approximates the softmax curvature. Plain
    lbfgs on correlated embeddings crawls along the weak directions (hundreds of iterations); here
    a fit takes 10-20 iterations.
  * M is an orthonormal basis of the class contrasts (sum-to-zero over classes): the optimum has
    zero-sum class weights, and the common direction, which only has the tiny penalty curvature
    1/(C n), would stall L-BFGS.
The objective and the gradient the criterion tests are those of the original (W, b), so the fits
reach scikit-learn's own stopping rule (tests check they end at an objective no higher than
scikit-learn's). `search_rows=N` adds a cheaper variant: every C fitted to the criterion on N
stratified training rows, then the best C and its larger neighbour (smaller for the largest C)
refitted on all rows from their subsample solutions; the better full-data validation kappa wins.
"Same answer" (tests/test_probe.py, scripts/bench_probe.py): test kappa within 0.005 of the
reference's, and the chosen C's reference validation kappa within 0.002 of the best reference
validation kappa over the grid.

Memory (beyond the caller's X_train/X_val/X_test, at the peak of `fit_logistic_probe`):
  fast: one standardised float32 copy of X_train (none with overwrite=True and float32
  C-contiguous input), plus transients: about 50 bytes x n_train of loss buffers per fit running
  (x n_jobs), or one 8,192-row float32 block while standardising or scoring (2,048-row float64
  blocks while fitting the scaler), and a few p x p float64 matrices. Validation and test are
  never copied whole. search_rows=N adds one N x p float32 subsample. No float64 n x p array.
  reference: float32 standardised copies of all three splits, plus StandardScaler.fit's transient
  float64 n_train x p temporary (scikit-learn computes the variance of float32 input in float64).

Brain age: StandardScaler + Ridge, alpha from ALPHA_GRID by inner 4-fold CV (lowest mean MAE),
outer 4-fold CV stratified on AGE_BINS gives an out-of-fold prediction for every subject; the
scaler is fitted inside every training split.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import minimize

from embedprobe.core.errors import DataError, UsageError
from embedprobe.probing.metrics import classification_scores, cohen_kappa, mae, regression_scores

C_GRID = (0.001, 0.01, 0.1, 1.0, 10.0, 100.0)
ALPHA_GRID = (0.1, 1, 5, 10, 20, 30, 50, 100)
AGE_BINS = (0, 35, 50, 65, 80, 200)
MAX_ITER = 1000
TOL = 1e-4
PRECONDITIONER_ROWS = 20_000
CHUNK_ROWS = 8192  # rows standardised at a time (validation/test scoring, copies)
FIT_CHUNK_ROWS = 2048  # rows per block while fitting the scaler (float64) or the covariance
SOFTMAX_CURVATURE = 0.2

Progress = Callable[[int, int, str], None] | None


# ----------------------------------------------------------------------------------------------
# Standardisation without whole-matrix float64 copies
# ----------------------------------------------------------------------------------------------
@dataclass
class Standardizer:
    """StandardScaler's arithmetic (population std, zero variance -> scale 1) in row chunks."""

    mean: np.ndarray
    scale: np.ndarray

    @classmethod
    def fit(cls, X: np.ndarray, chunk_rows: int = FIT_CHUNK_ROWS) -> Standardizer:
        n = X.shape[0]
        total = np.zeros(X.shape[1])
        for start in range(0, n, chunk_rows):
            total += X[start : start + chunk_rows].sum(axis=0, dtype=np.float64)
        mean = total / n
        squares = np.zeros(X.shape[1])
        for start in range(0, n, chunk_rows):
            centred = X[start : start + chunk_rows] - mean  # float64, one small chunk
            squares += np.einsum("ij,ij->j", centred, centred)
        scale = np.sqrt(squares / n)
        # StandardScaler treats a (near-)constant column as scale 1.
        scale[scale < 10 * np.finfo(np.float64).eps] = 1.0
        return cls(mean, scale)

    def _standardise(self, block: np.ndarray) -> None:
        # In place on float32; numpy computes each element in float64 (as StandardScaler does)
        # through small internal buffers, so no float64 block is allocated.
        block -= self.mean
        block /= self.scale

    def transform_chunk(self, chunk: np.ndarray) -> np.ndarray:
        block = chunk.astype(np.float32, copy=True)
        self._standardise(block)
        return block

    def transform(self, X: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """Standardised float32 copy of X (or written into `out`, which may be X itself)."""
        if out is None:
            out = np.empty(X.shape, dtype=np.float32)
        for start in range(0, X.shape[0], CHUNK_ROWS):
            block = out[start : start + CHUNK_ROWS]
            if out is not X:
                block[...] = X[start : start + CHUNK_ROWS]
            self._standardise(block)
        return out


# ----------------------------------------------------------------------------------------------
# Multinomial logistic regression: scikit-learn's objective, preconditioned L-BFGS
# ----------------------------------------------------------------------------------------------
def _contrast_basis(n_classes: int) -> np.ndarray:
    """Orthonormal (n_classes, n_classes - 1) basis of vectors that sum to zero."""
    q, _ = np.linalg.qr(np.eye(n_classes) - 1.0 / n_classes)
    return q[:, : n_classes - 1]


@dataclass
class _Fit:
    coef: np.ndarray  # (n_classes, p) float64, on standardised features
    intercept: np.ndarray  # (n_classes,)
    n_iter: int
    converged: bool
    grad_max: float


class _Objective:
    """Mean cross-entropy + ||W||^2 / (2 C n), evaluated on float32 standardised rows."""

    def __init__(self, Z: np.ndarray, y: np.ndarray, n_classes: int, C: float, eigen):
        self.Z, self.y, self.n_classes = Z, y, n_classes
        self.n = Z.shape[0]
        # With two classes scikit-learn fits one weight vector w = W[1] - W[0] and penalises
        # ||w||^2 = 2 ||W||^2 (W zero-sum): the same objective needs twice the penalty here.
        self.l2 = (2.0 if n_classes == 2 else 1.0) / (C * self.n)
        eigval, eigvec = eigen
        self.s = 1.0 / np.sqrt(SOFTMAX_CURVATURE * np.maximum(eigval, 0.0) + self.l2)
        self.S = self.s[:, None] * eigvec.T  # (p, p): W = M V S
        self.s_b = 1.0 / np.sqrt(SOFTMAX_CURVATURE)
        self.M = _contrast_basis(n_classes)
        self.rows = np.arange(self.n)
        self.last = None  # (x, grad_max) of the latest evaluation, for the stopping rule

    def to_original(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        p = self.Z.shape[1]
        V = x[: (self.n_classes - 1) * p].reshape(self.n_classes - 1, p)
        c = x[(self.n_classes - 1) * p :]
        return self.M @ V @ self.S, self.M @ c * self.s_b

    def from_original(self, coef: np.ndarray, intercept: np.ndarray) -> np.ndarray:
        eigvec_scaled = self.S.T / self.s**2  # S^-1 = Q diag(1/s) = S^T diag(1/s^2)
        V = self.M.T @ coef @ eigvec_scaled
        c = self.M.T @ intercept / self.s_b
        return np.concatenate([V.ravel(), c])

    def __call__(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        coef, intercept = self.to_original(x)
        raw = self.Z @ coef.astype(np.float32).T
        raw += intercept.astype(np.float32)
        picked = raw[self.rows, self.y].astype(np.float64)
        top = raw.max(axis=1, keepdims=True)
        raw -= top
        np.exp(raw, out=raw)
        norm = raw.sum(axis=1, keepdims=True)
        loss = float(np.sum(np.log(norm[:, 0], dtype=np.float64) + top[:, 0] - picked)) / self.n
        loss += 0.5 * self.l2 * float(np.sum(coef * coef))
        raw /= norm  # softmax probabilities
        raw[self.rows, self.y] -= 1.0
        raw /= np.float32(self.n)
        grad_coef = (raw.T @ self.Z).astype(np.float64) + self.l2 * coef
        grad_intercept = raw.sum(axis=0, dtype=np.float64)
        grad_max = max(np.abs(grad_coef).max(), np.abs(grad_intercept).max())
        self.last = (x.copy(), float(grad_max))
        grad_V = self.M.T @ grad_coef @ self.S.T
        grad_c = self.M.T @ grad_intercept * self.s_b
        return loss, np.concatenate([grad_V.ravel(), grad_c])

    def grad_max_at(self, x: np.ndarray) -> float:
        if self.last is None or not np.array_equal(self.last[0], x):
            self(x)
        return self.last[1]


def _fit_softmax(Z, y, n_classes, C, eigen, plan, init=None) -> _Fit:
    """Fit until max|grad (W, b)| <= plan.tol; `init` = (coef, intercept) to start from."""
    tol, max_iter = plan.tol, plan.max_iter
    objective = _Objective(Z, y, n_classes, C, eigen)
    p = Z.shape[1]
    if init is None:
        x0 = np.zeros((n_classes - 1) * (p + 1))
    else:
        x0 = objective.from_original(*init)

    def stop_when_converged(intermediate_result):
        if objective.grad_max_at(intermediate_result.x) <= tol:
            raise StopIteration

    if objective.grad_max_at(x0) <= tol:
        coef, intercept = objective.to_original(x0)
        return _Fit(coef, intercept, 0, True, objective.last[1])
    result = minimize(
        objective,
        x0,
        method="L-BFGS-B",
        jac=True,
        callback=stop_when_converged,
        # gtol 0: our own criterion decides (it reads the gradient of W, not of V); ftol as sklearn
        options={"maxiter": max_iter, "maxls": 50, "gtol": 0.0, "ftol": 64 * np.finfo(float).eps},
    )
    grad_max = objective.grad_max_at(result.x)
    coef, intercept = objective.to_original(result.x)
    return _Fit(coef, intercept, int(result.nit), grad_max <= tol, grad_max)


def _covariance_eigen(Z: np.ndarray, rows: np.ndarray | None = None):
    """Eigen-decomposition (values, vectors) of the standardised rows' covariance, for the
    preconditioner; `rows` picks the rows to use, gathered a small block at a time (no copy)."""
    rows = np.arange(len(Z)) if rows is None else rows
    cov = np.zeros((Z.shape[1], Z.shape[1]))
    for start in range(0, len(rows), FIT_CHUNK_ROWS):
        block = Z[rows[start : start + FIT_CHUNK_ROWS]]
        cov += block.T @ block
    return np.linalg.eigh(cov / len(rows))


# ----------------------------------------------------------------------------------------------
# Scoring in chunks: no standardised copy of validation or test
# ----------------------------------------------------------------------------------------------
def _decision(X, scaler, coef, intercept) -> np.ndarray:
    out = np.empty((X.shape[0], coef.shape[0]), dtype=np.float32)
    W, b = coef.astype(np.float32).T, intercept.astype(np.float32)
    for start in range(0, X.shape[0], CHUNK_ROWS):
        stop = start + CHUNK_ROWS
        out[start:stop] = scaler.transform_chunk(X[start:stop]) @ W
    out += b
    return out


def _softmax(raw: np.ndarray) -> np.ndarray:
    e = np.exp(raw - raw.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


# ----------------------------------------------------------------------------------------------
# The sleep-staging probe
# ----------------------------------------------------------------------------------------------
@dataclass
class LogisticProbeResult:
    chosen_C: float
    val_kappa_by_C: dict[float, float]  # of the fit per C on the search rows (all rows by default)
    iterations_by_C: dict[float, int]
    test_pred: np.ndarray
    test_proba: np.ndarray
    val_kappa: float  # of the final model
    test_metrics: dict[str, float]  # kappa, balanced_accuracy, macro_f1, accuracy
    method: str
    seconds: float
    classes: np.ndarray = field(default_factory=lambda: np.arange(0))
    refit_val_kappa_by_C: dict[float, float] = field(default_factory=dict)
    refit_iterations_by_C: dict[float, int] = field(default_factory=dict)
    converged_by_C: dict[float, bool] = field(default_factory=dict)
    search_rows: int = 0  # training rows the C search fitted (n_train for the reference)
    criterion: str = ""

    def summary(self) -> dict:
        """JSON-ready summary (no per-row arrays)."""
        return {
            "method": self.method,
            "classes": self.classes.tolist(),
            "chosen_C": self.chosen_C,
            "val_kappa": self.val_kappa,
            "test_metrics": self.test_metrics,
            "val_kappa_by_C": by_C_json(self.val_kappa_by_C),
            "iterations_by_C": by_C_json(self.iterations_by_C),
            "refit_val_kappa_by_C": by_C_json(self.refit_val_kappa_by_C),
            "refit_iterations_by_C": by_C_json(self.refit_iterations_by_C),
            "converged_by_C": by_C_json(self.converged_by_C),
            "search_rows": self.search_rows,
            "criterion": self.criterion,
            "seconds": self.seconds,
        }


def by_C_json(values: dict) -> dict:
    """A dict keyed by C with string keys, as JSON needs (0.01 -> "0.01")."""
    return {str(c): v for c, v in values.items()}


def _check_split(name: str, X, y, n_features: int | None) -> tuple[np.ndarray, np.ndarray]:
    X = np.asarray(X)
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


def _map(fn, items, n_jobs: int):
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
    progress: Progress
    seed: int
    search_rows: int | None
    tol: float
    max_iter: int
    overwrite: bool
    done: int = 0

    def step(self, total: int, message: str) -> None:
        self.done += 1
        if self.progress is not None:
            self.progress(self.done, total, message)


def fit_logistic_probe(
    X_train,
    y_train,
    X_val,
    y_val,
    X_test,
    y_test,
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
    lets the fast method standardise X_train in place (saves one n_train x p float32 copy; the
    caller's array then holds standardised values).
    """
    started = time.perf_counter()
    if method not in ("fast", "reference"):
        raise UsageError(f"unknown probe method {method!r}", fix="use method 'fast' or 'reference'")
    grid = tuple(sorted(float(c) for c in C_grid))
    if not grid or min(grid) <= 0:
        raise UsageError(
            f"the C grid must hold positive values, got {C_grid!r}",
            fix=f"use the reference grid {list(C_GRID)}",
        )
    X_train, y_train = _check_split("train", X_train, y_train, None)
    X_val, y_val = _check_split("validation", X_val, y_val, X_train.shape[1])
    X_test, y_test = _check_split("test", X_test, y_test, X_train.shape[1])
    classes, y_index = np.unique(y_train, return_inverse=True)
    if len(classes) < 2:
        raise DataError(
            f"the training split holds one class only ({classes.tolist()})",
            fix="check the labels of this dataset and the fold assignment",
        )
    fold = _Fold(X_train, y_index, classes, X_val, y_val, X_test)
    plan = _Plan(grid, n_jobs, progress, seed, search_rows, tol, max_iter, overwrite)
    result = (_reference if method == "reference" else _fast)(fold, plan)
    raw_test = result.pop("raw_test")
    test_pred = classes[raw_test.argmax(axis=1)]
    return LogisticProbeResult(
        test_pred=test_pred,
        test_proba=_softmax(raw_test),
        test_metrics=classification_scores(y_test, test_pred),
        method=method,
        seconds=time.perf_counter() - started,
        classes=classes,
        **result,
    )


def _best_C(kappa_by_C: dict[float, float]) -> float:
    """Highest validation kappa; the smallest C among exact ties (as an argmax over the grid)."""
    return max(kappa_by_C, key=lambda C: (kappa_by_C[C], -C))


def _refit_candidates(grid: tuple[float, ...], best: float) -> list[float]:
    """The subsample's best C and its larger neighbour (smaller one for the largest C): a
    subsample's noisier fits favour a little more regularisation than all rows do."""
    i = grid.index(best)
    return list(grid[i : i + 2]) if i + 1 < len(grid) else list(grid[max(0, i - 1) :])


def _fast(fold: _Fold, plan: _Plan) -> dict:
    n_rows, n_classes = len(fold.y), len(fold.classes)
    scaler = Standardizer.fit(fold.X_train)
    X = fold.X_train
    in_place = (
        plan.overwrite and X.dtype == np.float32 and X.flags.c_contiguous and X.flags.writeable
    )
    Z = scaler.transform(X, out=X if in_place else None)
    subsample = plan.search_rows is not None and n_rows > plan.search_rows
    if subsample:
        rows = _stratified_subsample(fold.y, plan.search_rows, plan.seed)
        Z_search, y_search = Z[rows], fold.y[rows]
        eigen = _covariance_eigen(Z_search)
    else:
        Z_search, y_search = Z, fold.y
        # The preconditioner only needs the covariance roughly: 20,000 rows are plenty.
        few = n_rows > PRECONDITIONER_ROWS
        rows = _stratified_subsample(fold.y, PRECONDITIONER_ROWS, plan.seed) if few else None
        eigen = _covariance_eigen(Z, rows)
    total = len(plan.grid) + (len(_refit_candidates(plan.grid, plan.grid[0])) if subsample else 0)

    def scored(fit: _Fit) -> tuple[_Fit, float]:
        raw = _decision(fold.X_val, scaler, fit.coef, fit.intercept)
        return fit, cohen_kappa(fold.y_val, fold.classes[raw.argmax(axis=1)])

    def search(C: float) -> tuple[_Fit, float]:
        fit, kappa = scored(_fit_softmax(Z_search, y_search, n_classes, C, eigen, plan))
        plan.step(total, f"C={C:g}: val kappa {kappa:.4f} ({fit.n_iter} iterations)")
        return fit, kappa

    searched = dict(zip(plan.grid, _map(search, plan.grid, plan.n_jobs), strict=True))
    kappas = {C: k for C, (_, k) in searched.items()}
    refits: dict[float, tuple[_Fit, float]] = {}
    if subsample:
        for C in _refit_candidates(plan.grid, _best_C(kappas)):
            start = (searched[C][0].coef, searched[C][0].intercept)
            refits[C] = scored(_fit_softmax(Z, fold.y, n_classes, C, eigen, plan, start))
            fit, kappa = refits[C]
            plan.step(total, f"C={C:g} on all {n_rows} rows: val kappa {kappa:.4f} "
                      f"({fit.n_iter} iterations)")  # fmt: skip
    finalists = refits or searched
    chosen = _best_C({C: k for C, (_, k) in finalists.items()})
    final, final_kappa = finalists[chosen]
    converged = {C: f.converged for C, (f, _) in searched.items()}
    converged.update({C: f.converged for C, (f, _) in refits.items()})
    where = (
        f"C search on {len(y_search)} stratified training rows, refit of "
        f"{len(refits)} C values on all {n_rows}"
        if subsample
        else f"every C on all {n_rows} training rows"
    )
    return {
        "chosen_C": chosen,
        "val_kappa_by_C": kappas,
        "iterations_by_C": {C: f.n_iter for C, (f, _) in searched.items()},
        "val_kappa": final_kappa,
        "refit_val_kappa_by_C": {C: k for C, (_, k) in refits.items()},
        "refit_iterations_by_C": {C: f.n_iter for C, (f, _) in refits.items()},
        "converged_by_C": converged,
        "search_rows": int(len(y_search)),
        "criterion": f"preconditioned L-BFGS until max|grad(W,b)| <= {plan.tol:g} of mean "
        f"cross-entropy + ||W||^2/(2 C n), from zero, max_iter {plan.max_iter}; {where}",
        "raw_test": _decision(fold.X_test, scaler, final.coef, final.intercept),
    }


def _reference(fold: _Fold, plan: _Plan) -> dict:
    """The straightforward protocol: StandardScaler, one independent sklearn lbfgs fit per C."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    scaler = StandardScaler().fit(fold.X_train)
    Z_train, Z_val = scaler.transform(fold.X_train), scaler.transform(fold.X_val)

    def fit(C: float):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model = LogisticRegression(C=C, max_iter=plan.max_iter, tol=plan.tol)
            model.fit(Z_train, fold.y)
        kappa = cohen_kappa(fold.y_val, fold.classes[model.predict(Z_val)])
        plan.step(len(plan.grid), f"C={C:g}: val kappa {kappa:.4f} ({model.n_iter_[0]} iterations)")
        return model, kappa

    fitted = dict(zip(plan.grid, _map(fit, plan.grid, plan.n_jobs), strict=True))
    kappas = {C: k for C, (_, k) in fitted.items()}
    chosen = _best_C(kappas)
    iterations = {C: int(m.n_iter_[0]) for C, (m, _) in fitted.items()}
    raw_test = fitted[chosen][0].decision_function(scaler.transform(fold.X_test))
    if raw_test.ndim == 1:  # two classes: logit difference d; softmax([-d/2, d/2]) = sigmoid(d)
        raw_test = np.column_stack([-raw_test / 2, raw_test / 2])
    return {
        "chosen_C": chosen,
        "val_kappa_by_C": kappas,
        "iterations_by_C": iterations,
        "val_kappa": kappas[chosen],
        "converged_by_C": {C: i < plan.max_iter for C, i in iterations.items()},
        "search_rows": int(len(fold.y)),
        "criterion": f"sklearn lbfgs tol {plan.tol:g}, max_iter {plan.max_iter}, from zero, "
        f"every C on all {len(fold.y)} training rows",
        "raw_test": raw_test.astype(np.float32),
    }


# ----------------------------------------------------------------------------------------------
# The brain-age probe
# ----------------------------------------------------------------------------------------------
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


def _choose_alpha(X, ages, strata, alpha_grid, n_folds, seed) -> tuple[float, dict]:
    """Alpha with the lowest mean MAE over an inner stratified n_folds CV."""
    folds = stratified_folds(strata, n_folds, seed)
    errors = {float(a): [] for a in alpha_grid}
    for test in folds:
        train = np.setdiff1d(np.arange(len(ages)), test)
        for alpha in errors:
            predicted = _ridge_predict(X[train], ages[train], X[test], alpha)
            errors[alpha].append(mae(ages[test], predicted))
    mean_error = {alpha: float(np.mean(e)) for alpha, e in errors.items()}
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
) -> dict:
    """One outer fold of brain age: alpha by inner stratified CV on the training subjects
    (mean embeddings), refit on all of them, score the test subjects in years."""
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
    alpha, inner = _choose_alpha(X_train, ages_train, strata, alpha_grid, n_inner, seed)
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
