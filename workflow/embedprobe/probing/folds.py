"""Subject-level folds: fold k tests group k, validates on group k+1, trains on the rest."""

from __future__ import annotations

import numpy as np

from embedprobe.core.errors import UsageError


def subject_groups(subjects, n_folds: int = 5, seed: int = 42) -> dict[str, int]:
    """Assign each subject (all of its nights) to one of n_folds groups, deterministically."""
    unique = np.array(sorted(set(subjects)))
    if len(unique) < n_folds:
        raise UsageError(f"{len(unique)} subjects cannot fill {n_folds} folds",
                         fix="use a dataset with more subjects or set the benchmark's `folds`")
    order = np.random.default_rng(seed).permutation(len(unique))
    return {str(unique[i]): int(rank % n_folds) for rank, i in enumerate(order)}


def fold_split(groups: np.ndarray, fold: int, n_folds: int) -> dict[str, np.ndarray]:
    """Boolean masks over windows for the train, validation and test parts of one fold."""
    test = groups == fold
    val = groups == (fold + 1) % n_folds
    return {"train": ~(test | val), "val": val, "test": test}
