"""A probe's result on one fold: the one record every task's probe returns.

What every probe has: the selection of its hyper-parameter (probing/selection.py), the test
metrics, the test rows' predictions (and probabilities, for a classifier), the seconds it took.
A probe's own facts (iterations, a tuned threshold, a positive share) go in `details`, JSON-ready,
or in the fields of a subclass that needs more (the staging and seizure probes).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from embedprobe.probing.selection import Selection


@dataclass(kw_only=True)
class ProbeResult:
    selection: Selection
    test_metrics: dict[str, float]
    test_pred: np.ndarray  # per test row: the class, or the predicted value
    test_proba: np.ndarray | None = None  # per test row and class in `classes`
    classes: np.ndarray | None = None  # the columns of test_proba
    details: dict = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def chosen(self) -> float:
        return self.selection.chosen

    def record(self) -> dict:
        """JSON-ready fields of a fold record: `chosen` once, how it was chosen, the test
        metrics and the details."""
        return {"chosen": self.chosen, "selection": self.selection.record(),
                "metrics": {k: float(v) for k, v in self.test_metrics.items()}} | self.details
