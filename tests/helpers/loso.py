"""Leave-one-subject-out scores of a probe, for the look-alikes' class-signature tests."""

from __future__ import annotations

import numpy as np


def loso_scores(model, x: np.ndarray, y: np.ndarray, groups: np.ndarray) -> list[float]:
    """Balanced accuracy on each subject (value of `groups`) of `model` fitted on the others."""
    from sklearn.metrics import balanced_accuracy_score

    scores = []
    for subject in np.unique(groups):
        held = groups == subject
        model.fit(x[~held], y[~held])
        scores.append(float(balanced_accuracy_score(y[held], model.predict(x[held]))))
    return scores
