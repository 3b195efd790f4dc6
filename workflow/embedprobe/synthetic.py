"""A hard synthetic embedding set for probe benchmarks and tests.

It imitates what a frozen EEG encoder gives a sleep-staging probe: five imbalanced classes
(W, N1, N2, N3, REM proportions), class information spread over a handful of latent factors that
are mixed into every feature, correlated noise with a power-law spectrum (a few directions carry
most of the variance, the class signal also sits in weak ones), and label noise. A multinomial
logistic regression on it reaches a validation kappa of about 0.7 and lbfgs needs hundreds of
iterations for C >= 0.1, like real embeddings.

Every split is drawn from one "world" (class means, mixing, spectrum) fixed by the seed, so
train, validation and test share a distribution; rows are generated in chunks straight into a
float32 array (no float64 copy of the whole matrix).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Sleep-stage shares in Sleep-EDF: W, N1, N2, N3, REM.
CLASS_SHARES = (0.20, 0.08, 0.42, 0.13, 0.17)
_CHUNK_ROWS = 16384
import os

SEP=float(os.environ.get('SEP','0.55'))
EXP=float(os.environ.get("EXP","1.6"))
WEAK=float(os.environ.get('WEAK','0'))


@dataclass(frozen=True)
class _World:
    class_means: np.ndarray  # (n_classes, n_factors)
    factor_mixing: np.ndarray  # (n_factors, dim)
    class_offsets: np.ndarray  # (n_classes, dim)
    noise_basis: np.ndarray  # (dim, dim): rows scaled by sqrt of the power-law spectrum
    column_mean: np.ndarray  # (dim,) standardisation, fixed from a reference sample
    column_scale: np.ndarray
    shares: np.ndarray
    label_noise: float


def _make_world(dim: int, n_classes: int, seed: int, label_noise: float) -> _World:
    rng = np.random.default_rng([seed, 1])
    n_factors = 12
    # Ordinal-ish class means: neighbouring stages overlap more than distant ones.
    steps = rng.normal(size=(n_classes, n_factors))
    class_means = CLASS_SEPARATION * np.cumsum(steps, axis=0) / np.sqrt(np.arange(1, n_classes + 1))[:, None]
    class_means -= class_means.mean(axis=0)
    factor_mixing = rng.normal(size=(n_factors, dim)) / np.sqrt(n_factors)
    # Correlated noise: a random rotation of a power-law spectrum.
    rotation, _ = np.linalg.qr(rng.normal(size=(dim, dim)))
    spectrum = np.arange(1, dim + 1, dtype=np.float64) ** -SPECTRUM_POWER
    spectrum *= dim / spectrum.sum()
    noise_basis = np.sqrt(spectrum)[:, None] * rotation.T
    # Part of the class signal lives in the weakest noise directions: the probe needs large
    # weights there, which makes the problem ill-conditioned for lbfgs.
    weak = rotation[:, -n_factors:].T * np.sqrt(spectrum[-n_factors:])[:, None] * WEAK_DIRECTION_SIGNAL
    class_offsets = class_means @ weak
    shares = np.asarray(CLASS_SHARES if n_classes == len(CLASS_SHARES) else [1.0] * n_classes)
    shares = shares / shares.sum()
    world = _World(
        class_means,
        factor_mixing,
        class_offsets,
        noise_basis,
        np.zeros(dim),
        np.ones(dim),
        shares,
        label_noise,
    )
    reference, _ = _draw(world, 20000, np.random.default_rng([seed, 2]), standardise=False)
    return _World(
        class_means,
        factor_mixing,
        class_offsets,
        noise_basis,
        reference.mean(axis=0, dtype=np.float64),
        reference.std(axis=0, dtype=np.float64),
        shares,
        label_noise,
    )


def _draw(world: _World, n_rows: int, rng: np.random.Generator, standardise: bool = True):
    dim = world.factor_mixing.shape[1]
    n_classes, n_factors = world.class_means.shape
    features = np.empty((n_rows, dim), dtype=np.float32)
    labels = rng.choice(n_classes, size=n_rows, p=world.shares)
    for start in range(0, n_rows, _CHUNK_ROWS):
        stop = min(start + _CHUNK_ROWS, n_rows)
        rows = stop - start
        factors = world.class_means[labels[start:stop]] + rng.normal(size=(rows, n_factors))
        chunk = factors @ world.factor_mixing + rng.normal(size=(rows, dim)) @ world.noise_basis
        chunk += world.class_offsets[labels[start:stop]]
        # Heavy-ish tails: a per-row gain, as amplitude varies between recordings.
        chunk *= rng.gamma(8.0, 1.0 / 8.0, size=(rows, 1))
        if standardise:
            chunk = (chunk - world.column_mean) / world.column_scale
        features[start:stop] = chunk
    noisy = rng.random(n_rows) < world.label_noise
    labels[noisy] = rng.choice(n_classes, size=int(noisy.sum()), p=world.shares)
    return features, labels.astype(np.int64)


def hard_embeddings(
    n_rows: int,
    dim: int = 256,
    n_classes: int = 5,
    seed: int = 0,
    split: int = 0,
    label_noise: float = 0.08,
) -> tuple[np.ndarray, np.ndarray]:
    """Return (features float32 (n_rows, dim) standardised, labels int64) of one split.

    The same `seed` gives the same world; `split` picks independent rows from it.
    """
    world = _make_world(dim, n_classes, seed, label_noise)
    return _draw(world, n_rows, np.random.default_rng([seed, 100 + split]))


def hard_probe_splits(
    n_train: int, n_val: int, n_test: int, dim: int = 256, seed: int = 0, label_noise: float = 0.08
) -> dict[str, np.ndarray]:
    """Train, validation and test splits of one world: keys X_train, y_train, X_val, ..."""
    world = _make_world(dim, 5, seed, label_noise)
    out = {}
    for split, (name, rows) in enumerate((("train", n_train), ("val", n_val), ("test", n_test))):
        X, y = _draw(world, rows, np.random.default_rng([seed, 100 + split]))
        out[f"X_{name}"], out[f"y_{name}"] = X, y
    return out
