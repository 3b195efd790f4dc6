"""The preflight JSONs' job keys, their paths and their one reader (jobs, the resources
callables, tools).

A job key names one downstream job of a (dataset, model) pair: "embed", or
"probe/<benchmark>/fold<k>". The embed job's estimate is in the pair's JSON
(<preflight>/<dataset>/<model>.json), a probe fold's in its benchmark's
(<preflight>/<dataset>/<model>/<benchmark>.json). Light on purpose: the Snakefile's resources
callables import it.
"""

from __future__ import annotations

import json
from pathlib import Path

from embedprobe.core.paths import output_path

# What a probe job of a benchmark preflight could not size (its `not_sized`, e.g. too few
# subjects for its folds) is given: it runs into the same error with its message and fix.
UNSIZED_PROBE = {"request_mb": 2000, "runtime_min": 10, "limit_mb": None}


def job_key(benchmark: str | None = None, fold: int | str | None = None) -> str:
    return "embed" if benchmark is None else f"probe/{benchmark}/fold{fold}"


def shard_job_key(shard: int, shards: int) -> str:
    """An embed shard's key in the runs table: its own, so that shards running at once keep
    their own attempt records (on one key each took the others' for killed attempts). Its
    estimate is the pair's `embed` entry."""
    return f"embed/{shard}-of-{shards}"


def is_shard_key(key: str) -> bool:
    return key.startswith("embed/")


def key_benchmark(key: str) -> str | None:
    """The benchmark a job key names (None for embed)."""
    return key.split("/")[1] if key.startswith("probe/") else None


def estimate_path(preflight_root, dataset: str, model: str, key: str = "embed") -> Path:
    """The preflight JSON that holds the job's estimate, under `preflight_root`."""
    benchmark = key_benchmark(key)
    where = {"preflight_dir": preflight_root, "dataset": dataset, "model": model}
    if benchmark is None:
        return output_path("preflight", where)
    return output_path("preflight_probe", where, benchmark=benchmark)


def job_estimate(path, key: str) -> dict:
    """The job's entry of the preflight JSON at `path` (the pair's for embed, the benchmark's
    for a probe fold)."""
    record = json.loads(Path(str(path)).read_text())
    if key not in record["jobs"] and key.startswith("probe/"):
        return dict(UNSIZED_PROBE)
    return record["jobs"][key]
