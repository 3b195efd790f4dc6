"""Multinomial logistic regression on standardised rows: scikit-learn's objective, reached by
preconditioned L-BFGS (the fast path of probing/logistic.py).

A fit runs from zero (or from a given start) to this criterion:
    objective  mean cross-entropy of softmax(W z + b) + ||W||^2 / (2 C n)   (scikit-learn's)
    stop when  max |gradient of the objective w.r.t. (W, b)| <= tol (scikit-learn's gtol),
               checked after every iteration; at most max_iter iterations.
What changes against scikit-learn's lbfgs is only the path to the optimum: L-BFGS on a
preconditioned parameterisation W = M V S, where
  * S = diag((k lambda + 1/(C n))^-1/2) Q^T whitens the curvature: Q, lambda are the eigenvectors
    and eigenvalues of the standardised training covariance (`covariance_eigen`; it only steers
    the path, not the optimum), k = 0.2 approximates the softmax curvature. Plain lbfgs on
    correlated embeddings crawls along the weak directions (hundreds of iterations); here a fit
    takes 10-20 iterations.
  * M is an orthonormal basis of the class contrasts (sum-to-zero over classes): the optimum has
    zero-sum class weights, and the common direction, which only has the tiny penalty curvature
    1/(C n), would stall L-BFGS.
Wide rows (more than probing/probe_forms.EIGEN_MAX_FEATURES features: flattened token stores, where
the p x p matrices would outgrow the rows) take the diagonal
form instead, S = diag((k + 1/(C n))^-1/2): a standardised feature has unit variance, and the
p x p eigenvectors (p^2 float64, several times) would cost more memory than the rows themselves;
the fits take more iterations, to the same criterion.
The objective and the gradient the criterion tests are those of the original (W, b), so the fits
reach scikit-learn's own stopping rule (tests check they end at an objective no higher than
scikit-learn's).

Scoring (`decision`, then `softmax`) standardises validation and test rows a chunk at a time: no
standardised copy of either.

Streamed (Z not an array but rows standardised as they are read, standardize.StandardizedRows:
the training rows left in the store): every evaluation of the objective runs over blocks of
probe_forms.stream_block_rows, summing the loss and the gradient in float64. The same objective
and criterion; only the float32 sums' order differs from the in-memory fit's (one product over
all rows), so the fits agree to rounding, not bit for bit (tests/pipeline/
test_fold_rows.py; docs/measurements/2026-12-07-probe-scale.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize

from embedprobe.probing.probe_forms import (
    CHUNK_ROWS,
    FIT_CHUNK_ROWS,
    eigen_preconditioner,
    stream_block_rows,
)

SOFTMAX_CURVATURE = 0.2


def _contrast_basis(n_classes: int) -> np.ndarray:
    """Orthonormal (n_classes, n_classes - 1) basis of vectors that sum to zero."""
    q, _ = np.linalg.qr(np.eye(n_classes) - 1.0 / n_classes)
    return q[:, : n_classes - 1]


@dataclass
class SoftmaxFit:
    coef: np.ndarray  # (n_classes, p) float64, on standardised features
    intercept: np.ndarray  # (n_classes,)
    n_iter: int
    converged: bool
    grad_max: float


class SoftmaxObjective:
    """Mean cross-entropy + ||W||^2 / (2 C n), evaluated on float32 standardised rows."""

    def __init__(self, Z: np.ndarray, y: np.ndarray, n_classes: int, C: float, eigen):
        self.Z, self.y, self.n_classes = Z, y, n_classes
        self.n = Z.shape[0]
        # With two classes scikit-learn fits one weight vector w = W[1] - W[0] and penalises
        # ||w||^2 = 2 ||W||^2 (W zero-sum): the same objective needs twice the penalty here.
        self.l2 = (2.0 if n_classes == 2 else 1.0) / (C * self.n)
        if eigen is None:  # the diagonal form: unit variances, S = s I
            self.s = np.full(1, 1.0 / np.sqrt(SOFTMAX_CURVATURE + self.l2))
            self.S = None
        else:
            eigval, eigvec = eigen
            self.s = 1.0 / np.sqrt(SOFTMAX_CURVATURE * np.maximum(eigval, 0.0) + self.l2)
            self.S = self.s[:, None] * eigvec.T  # (p, p): W = M V S
        self.s_b = 1.0 / np.sqrt(SOFTMAX_CURVATURE)
        self.M = _contrast_basis(n_classes)
        # in memory: one block of every row; streamed: blocks read and standardised in turn
        self.block = self.n if isinstance(Z, np.ndarray) else stream_block_rows(Z.shape[1])
        self.rows = np.arange(min(self.n, self.block))
        self.last = None  # (x, grad_max) of the latest evaluation, for the stopping rule

    def to_original(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        p = self.Z.shape[1]
        V = x[: (self.n_classes - 1) * p].reshape(self.n_classes - 1, p)
        c = x[(self.n_classes - 1) * p :]
        return self._times_S(self.M @ V), self.M @ c * self.s_b

    def _times_S(self, A: np.ndarray) -> np.ndarray:
        return A * self.s[0] if self.S is None else A @ self.S

    def _times_S_transposed(self, A: np.ndarray) -> np.ndarray:
        return A * self.s[0] if self.S is None else A @ self.S.T

    def from_original(self, coef: np.ndarray, intercept: np.ndarray) -> np.ndarray:
        if self.S is None:
            V = self.M.T @ coef / self.s[0]
        else:
            eigvec_scaled = self.S.T / self.s**2  # S^-1 = Q diag(1/s) = S^T diag(1/s^2)
            V = self.M.T @ coef @ eigvec_scaled
        c = self.M.T @ intercept / self.s_b
        return np.concatenate([V.ravel(), c])

    def _block_terms(self, Z: np.ndarray, y: np.ndarray, W: np.ndarray, b: np.ndarray):
        """(summed cross-entropy, its gradient w.r.t. W and b, each / n) over one block."""
        rows = self.rows[:len(y)]
        raw = Z @ W
        raw += b
        picked = raw[rows, y].astype(np.float64)
        top = raw.max(axis=1, keepdims=True)
        raw -= top
        np.exp(raw, out=raw)
        norm = raw.sum(axis=1, keepdims=True)
        loss = float(np.sum(np.log(norm[:, 0], dtype=np.float64) + top[:, 0] - picked))
        raw /= norm  # softmax probabilities
        raw[rows, y] -= 1.0
        raw /= np.float32(self.n)
        return loss, (raw.T @ Z).astype(np.float64), raw.sum(axis=0, dtype=np.float64)

    def __call__(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        coef, intercept = self.to_original(x)
        W, b = coef.astype(np.float32).T, intercept.astype(np.float32)
        loss, grad_coef, grad_intercept = 0.0, 0.0, 0.0
        for start in range(0, self.n, self.block):
            block_loss, block_coef, block_intercept = self._block_terms(
                self.Z[start:start + self.block], self.y[start:start + self.block], W, b)
            loss += block_loss
            grad_coef = grad_coef + block_coef
            grad_intercept = grad_intercept + block_intercept
        loss = loss / self.n + 0.5 * self.l2 * float(np.sum(coef * coef))
        grad_coef = grad_coef + self.l2 * coef
        grad_max = max(np.abs(grad_coef).max(), np.abs(grad_intercept).max())
        self.last = (x.copy(), float(grad_max))
        grad_V = self._times_S_transposed(self.M.T @ grad_coef)
        grad_c = self.M.T @ grad_intercept * self.s_b
        return loss, np.concatenate([grad_V.ravel(), grad_c])

    def grad_max_at(self, x: np.ndarray) -> float:
        if self.last is None or not np.array_equal(self.last[0], x):
            self(x)
        return self.last[1]


def fit_softmax(Z, y, n_classes, C, eigen, *, tol: float, max_iter: int,
                init=None) -> SoftmaxFit:
    """Fit until max|grad (W, b)| <= tol; `init` = (coef, intercept) to start from."""
    objective = SoftmaxObjective(Z, y, n_classes, C, eigen)
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
        return SoftmaxFit(coef, intercept, 0, True, objective.last[1])
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
    return SoftmaxFit(coef, intercept, int(result.nit), grad_max <= tol, grad_max)


def covariance_eigen(Z: np.ndarray, rows: np.ndarray | None = None):
    """Eigen-decomposition (values, vectors) of the standardised rows' covariance, for the
    preconditioner; `rows` picks the rows to use, gathered a small block at a time (no copy).
    None above probing/probe_forms.EIGEN_MAX_FEATURES features: the diagonal form."""
    if not eigen_preconditioner(Z.shape[1]):
        return None
    rows = np.arange(len(Z)) if rows is None else rows
    cov = np.zeros((Z.shape[1], Z.shape[1]))
    for start in range(0, len(rows), FIT_CHUNK_ROWS):
        block = Z[rows[start : start + FIT_CHUNK_ROWS]]
        cov += block.T @ block
    return np.linalg.eigh(cov / len(rows))


def decision(X, scaler, coef, intercept) -> np.ndarray:
    """Raw class scores (float32) of X's rows: standardised by `scaler` a chunk at a time."""
    out = np.empty((X.shape[0], coef.shape[0]), dtype=np.float32)
    W, b = coef.astype(np.float32).T, intercept.astype(np.float32)
    for start in range(0, X.shape[0], CHUNK_ROWS):
        stop = start + CHUNK_ROWS
        out[start:stop] = scaler.transform_chunk(X[start:stop]) @ W
    out += b
    return out


def softmax(raw: np.ndarray) -> np.ndarray:
    e = np.exp(raw - raw.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)
