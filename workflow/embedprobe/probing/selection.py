"""Choosing a probe's hyper-parameter (C, or ridge's alpha) on validation: one rule, every task.

The best score wins: the highest (kappa, AUPRC, AUROC) or, for an error, the lowest (brain
age's inner-CV MAE). Ties: among exactly equal scores the first value of the grid in the order
given; the C grids are sorted, so that is the smallest C, as the reference's argmax over its
grid. A score that is not finite (NaN: the validation part held one class, so the metric is
undefined) does not compete. Fallback, where no value of the grid scored: the grid's only value;
else C = 1 (scikit-learn's default) where the grid holds it; else the grid's first value. A
selection that fell back says why in its record.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from embedprobe.core.errors import UsageError

TIES = "the first of the grid among equal scores"
FALLBACK = "no value scored: the grid's only value, else 1 where the grid holds it, else its first"


def by_value_json(values: dict) -> dict:
    """A dict keyed by a grid value with string keys, as JSON needs (0.01 -> "0.01")."""
    return {str(value): score for value, score in values.items()}


@dataclass(frozen=True)
class Selection:
    """The chosen value, the validation score of every value tried, and what scored them."""

    chosen: float
    scores: dict[float, float]
    on: str  # what the scores are: "validation kappa", "inner-CV MAE", ...
    lower_is_better: bool = False
    fell_back: bool = False

    def record(self) -> dict:
        """JSON-ready, for a fold record (which writes `chosen` itself, once)."""
        best = "lowest" if self.lower_is_better else "highest"
        return {"on": self.on, "scores": by_value_json(self.scores),
                "rule": f"{best} {self.on}; ties: {TIES}",
                "fallback": FALLBACK if self.fell_back else ""}


def grid_values(grid) -> tuple[float, ...]:
    """The grid as floats in its order, a repeated value kept once; a UsageError when empty."""
    values = tuple(dict.fromkeys(float(v) for v in grid))
    if not values:
        raise UsageError("a probe's grid of C or alpha values is empty",
                         fix="give the benchmark's probe grid at least one value")
    return values


def choose(scores: dict[float, float], grid, on: str, *,
           lower_is_better: bool = False) -> Selection:
    """The grid's best value by `scores` (module docstring: ties, non-finite scores, fallback).
    `scores` may lack values of the grid (not fitted: a grid of one value needs no scoring)."""
    values = grid_values(grid)
    scored = [v for v in values if v in scores and np.isfinite(scores[v])]
    if scored:
        sign = 1.0 if lower_is_better else -1.0
        # min keeps the first of equal keys: the first of the grid among ties
        chosen = min(scored, key=lambda v: sign * scores[v])
        return Selection(chosen, dict(scores), on, lower_is_better)
    fallback = values[0] if len(values) == 1 or 1.0 not in values else 1.0
    return Selection(fallback, dict(scores), on, lower_is_better, fell_back=len(values) > 1)
