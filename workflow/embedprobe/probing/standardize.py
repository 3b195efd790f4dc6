"""Standardisation without whole-matrix float64 copies: StandardScaler's arithmetic in row chunks.

Fitting reads the rows in FIT_CHUNK_ROWS blocks (float64 sums); transforming writes float32 in
CHUNK_ROWS blocks, into a copy or in place.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from embedprobe.probing.probe_forms import CHUNK_ROWS, FIT_CHUNK_ROWS


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

    def rows(self, X) -> StandardizedRows:
        """X's rows standardised as they are read (X: an array, or rows left in a file)."""
        return StandardizedRows(X, self)

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


class StandardizedRows:
    """Rows standardised as they are read: `[a:b]` or `[positions]` gives a float32 block of
    X's rows through the scaler (the same values `transform` writes); nothing n x p is kept.
    The streamed fit's training rows (probing/softmax.py)."""

    def __init__(self, X, scaler: Standardizer):
        self.X, self.scaler = X, scaler
        self.shape = X.shape

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, index) -> np.ndarray:
        return self.scaler.transform_chunk(self.X[index])
