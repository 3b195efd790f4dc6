"""The preflight JSON's job keys and its one reader (jobs, the resources callables, tools).

A job key names one downstream job of a (dataset, model) pair: "embed", or
"probe/<benchmark>/fold<k>". Light on purpose: the Snakefile's resources callables import it.
"""

from __future__ import annotations

import json
from pathlib import Path

# What a probe job of a benchmark preflight could not size (its `not_sized`, e.g. too few
# subjects for its folds) is given: it runs into the same error with its message and fix.
UNSIZED_PROBE = {"request_mb": 2000, "runtime_min": 10, "limit_mb": None}


def job_key(benchmark: str | None = None, fold: int | str | None = None) -> str:
    return "embed" if benchmark is None else f"probe/{benchmark}/fold{fold}"


def job_estimate(path, key: str) -> dict:
    """The job's entry of the pair's preflight JSON at `path`."""
    record = json.loads(Path(str(path)).read_text())
    if key not in record["jobs"] and key.startswith("probe/"):
        return dict(UNSIZED_PROBE)
    return record["jobs"][key]
