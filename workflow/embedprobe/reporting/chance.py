"""A headline's chance level and normalised score, as the reference suite (NeuroAtlas) reports
them.

Chance: what a guess scores on the headline. Balanced accuracy 1/C, C the number of classes
present in the dataset's labels (`n_classes`): it differs by dataset, so it is a column of its
own (a task with `draws_chance`). AUPRC: the share of positive test windows
(`positive_share`, the sleep event tasks'), which differs by dataset too. Kappa and MCC 0,
AUROC 0.5. None where the reference gives none: MAE (a dummy predicting the training mean
depends on the split) and the seizure event AUC.

Normalised: (mean - dummy) / (1 - dummy), 0 at the dummy and 1 at a perfect score, only for a
task that sets a fixed dummy score (Task.dummy) on a higher-is-better headline, as the
reference's `results` does for a benchmark whose catalog entry sets `metrics.dummy`: abnormal
EEG's 0.5 (BCI's 1/C and the events' positive share are chance columns instead).
"""

from __future__ import annotations

import math

FIXED_CHANCE = {"kappa": 0.0, "mcc": 0.0, "auroc": 0.5}
# What the chance of a headline that differs by dataset is, in words (the tables' notes)
CHANCE_MEANING = {"balanced_accuracy": "1 / number of classes",
                  "auprc": "the share of positive windows"}


def chance_level(metric: str, values) -> float | None:
    """The chance level of `metric`, or None. `values`: a results.tsv row or a fold record
    (flattened), which carries `n_classes` for balanced accuracy."""
    if metric == "balanced_accuracy":
        n_classes = _number(values.get("n_classes"))
        return 1.0 / n_classes if n_classes else None
    if metric == "auprc":  # a guess's AUPRC is the share of positives (the sleep events')
        return _number(values.get("positive_share"))
    return FIXED_CHANCE.get(metric)


def normalised_score(score, dummy, higher_is_better: bool = True) -> float | None:
    """(score - dummy) / (1 - dummy), or None: no score, no dummy, an error metric (lower is
    better) or a dummy of 1 or more."""
    score, dummy = _number(score), _number(dummy)
    if score is None or dummy is None or not higher_is_better or dummy >= 1:
        return None
    return round((score - dummy) / (1 - dummy), 4)


def headline_chance(task, values) -> float | None:
    """The chance level of the task's headline (rounded as results.tsv keeps numbers)."""
    chance = chance_level(task.metrics[0], values)
    return None if chance is None else round(chance, 4)


def headline_normalised(task, mean) -> float | None:
    """The task's headline mean normalised against its dummy (None without one)."""
    return normalised_score(mean, task.dummy, not task.lower_is_better)


def _number(value) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None
