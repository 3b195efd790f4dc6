"""A hard synthetic embedding set for probe benchmarks and tests.

It imitates what a frozen EEG encoder gives a sleep-staging probe: five imbalanced classes
(W, N1, N2, N3, REM shares), class information spread over a dozen latent factors that are mixed
into every feature, correlated noise with a power-law spectrum, a part of the class signal in the
weakest noise directions (the probe needs large weights there: an ill-conditioned fit), a per-row
gain and 8% label noise. A multinomial logistic regression on it reaches a validation kappa of
about 0.7 and scikit-learn's lbfgs needs hundreds of iterations for C >= 0.1, as on real embeddings.

Every split is drawn from one "world" (class means, mixing, spectrum) fixed by the seed, so
train, validation and test share a distribution. Rows are generated in chunks straight into a
float32 array (no float64 copy of the whole matrix).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

# Sleep-stage shares in Sleep-EDF: W, N1, N2, N3, REM.
CLASS_SHARES = (0.20, 0.08, 0.42, 0.13, 0.17)
# Tuned so that validation kappa is ~0.7 and lbfgs needs 300-500 iterations for C >= 0.1.
CLASS_SEPARATION = 1.05
SPECTRUM_POWER = 1.8  # noise covariance eigenvalues ~ rank ** -1.8
WEAK_DIRECTION_SIGNAL = 0.8
N_FACTORS = 12
_CHUNK_ROWS = 16384


@dataclass(frozen=True)
class _World:
    factor_means: np.ndarray  # (n_classes, N_FACTORS)
    factor_mixing: np.ndarray  # (N_FACTORS, dim)
    class_offsets: np.ndarray  # (n_classes, dim): signal along the weakest noise directions
    noise_basis: np.ndarray  # (dim, dim): rows scaled by sqrt of the power-law spectrum
    shares: np.ndarray
    label_noise: float
    column_mean: np.ndarray | None = None  # standardisation, fixed from a reference sample
    column_scale: np.ndarray | None = None


def _make_world(dim: int, n_classes: int, seed: int, label_noise: float) -> _World:
    rng = np.random.default_rng([seed, 1])
    # Ordinal-ish class means: neighbouring stages overlap more than distant ones.
    steps = rng.normal(size=(n_classes, N_FACTORS))
    damping = np.sqrt(np.arange(1, n_classes + 1))[:, None]
    factor_means = CLASS_SEPARATION * np.cumsum(steps, axis=0) / damping
    factor_means -= factor_means.mean(axis=0)
    factor_mixing = rng.normal(size=(N_FACTORS, dim)) / np.sqrt(N_FACTORS)
    rotation, _ = np.linalg.qr(rng.normal(size=(dim, dim)))
    spectrum = np.arange(1, dim + 1, dtype=np.float64) ** -SPECTRUM_POWER
    spectrum *= dim / spectrum.sum()
    noise_basis = np.sqrt(spectrum)[:, None] * rotation.T
    weakest = rotation[:, -N_FACTORS:].T * np.sqrt(spectrum[-N_FACTORS:])[:, None]
    class_offsets = factor_means @ (WEAK_DIRECTION_SIGNAL * weakest)
    shares = np.asarray(CLASS_SHARES if n_classes == len(CLASS_SHARES) else [1.0] * n_classes)
    world = _World(
        factor_means, factor_mixing, class_offsets, noise_basis, shares / shares.sum(), label_noise
    )
    reference, _ = _draw(world, 20000, np.random.default_rng([seed, 2]))
    return replace(
        world,
        column_mean=reference.mean(axis=0, dtype=np.float64),
        column_scale=reference.std(axis=0, dtype=np.float64),
    )


def _draw(world: _World, n_rows: int, rng: np.random.Generator):
    dim = world.factor_mixing.shape[1]
    n_classes = len(world.shares)
    features = np.empty((n_rows, dim), dtype=np.float32)
    labels = rng.choice(n_classes, size=n_rows, p=world.shares)
    for start in range(0, n_rows, _CHUNK_ROWS):
        stop = min(start + _CHUNK_ROWS, n_rows)
        rows, chunk_labels = stop - start, labels[start:stop]
        factors = world.factor_means[chunk_labels] + rng.normal(size=(rows, N_FACTORS))
        chunk = factors @ world.factor_mixing + rng.normal(size=(rows, dim)) @ world.noise_basis
        chunk += world.class_offsets[chunk_labels]
        # Heavy-ish tails: a per-row gain, as amplitude varies between recordings.
        chunk *= rng.gamma(8.0, 1.0 / 8.0, size=(rows, 1))
        if world.column_mean is not None:
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
    """(features float32 (n_rows, dim), standardised; labels int64) of one split.

    The same `seed` gives the same world; `split` picks independent rows from it.
    """
    world = _make_world(dim, n_classes, seed, label_noise)
    return _draw(world, n_rows, np.random.default_rng([seed, 100 + split]))


def hard_probe_splits(
    n_train: int, n_val: int, n_test: int, dim: int = 256, seed: int = 0, label_noise: float = 0.08
) -> dict[str, np.ndarray]:
    """Train, validation and test splits of one world: keys X_train, y_train, X_val, ... ."""
    world = _make_world(dim, len(CLASS_SHARES), seed, label_noise)
    out = {}
    for split, (name, rows) in enumerate((("train", n_train), ("val", n_val), ("test", n_test))):
        X, y = _draw(world, rows, np.random.default_rng([seed, 100 + split]))
        out[f"X_{name}"], out[f"y_{name}"] = X, y
    return out
