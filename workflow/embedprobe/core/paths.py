"""Every output path of the workflow, in one table of named patterns over the roots.

A pattern's fields are the roots (`data_root`, `cache_root`, `results_root`, `weights_root`),
a `*_dir` entry of the table itself (filled from its own pattern unless given), or a job's
wildcards (`dataset`, `model`, `benchmark`, `fold`, ...). Two ways to fill one:

- `pattern(name, roots)`: the roots filled, every other field left as a Snakemake wildcard
  (what a rule's output, log and benchmark are); with values given, those are filled too
  (an input function's path, spelled exactly as the rule's output, so Snakemake matches it);
- `output_path(name, roots, **values)`: every field filled, as a Path (what Python code reads
  and writes); a field left unfilled is an error.

Every rule's log and benchmark sit under `<results_root>/logs/` and `<results_root>/benchmarks/`
at the rule's entry of JOB_NAMES. Only the standard library here: jobs import it, and what a job
imports is part of its measured memory baseline.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOTS = ("data_root", "cache_root", "results_root", "weights_root")
# A capped run (config limit_batches) writes these roots' siblings `<root>_limited`.
LIMITED_ROOTS = ("cache_root", "results_root")
LIMITED_SUFFIX = "_limited"

PATTERNS = {
    # demo_data: the generator's manifest, written last (its presence marks a complete dataset)
    "data_manifest": "{data_root}/{dataset_path}/MANIFEST.tsv",
    # index: the windows and the data-quality table
    "index": "{results_root}/index/{dataset}.tsv",
    "quality": "{results_root}/index/{dataset}.quality.tsv",
    # index: the EDF headers it read, for the later jobs (datasets/header_cache.py)
    "edf_headers": "{cache_root}/headers/{dataset}.json",
    # check: one real batch through the pair
    "check": "{results_root}/check/{dataset}/{model}.json",
    # preflight: the pair's embed estimate, and a benchmark's probe-fold estimates
    "preflight_dir": "{results_root}/preflight",
    "preflight": "{preflight_dir}/{dataset}/{model}.json",
    "preflight_probe": "{preflight_dir}/{dataset}/{model}/{benchmark}.json",
    # embed: every window's embedding, once per pair
    "embeddings": "{cache_root}/embeddings/{dataset}/{model}.h5",
    # embed_shard: one shard of a store embedded in several jobs (embed.shards), which
    # embed_join joins into the store above (pipeline/store_shards.py)
    "embedding_shard": "{cache_root}/embeddings/{dataset}/{model}.shards/{shard}-of-{shards}.h5",
    # probe: one fold's result and predictions
    "fold_result": "{results_root}/{benchmark}/{dataset}/{model}/fold{fold}.json",
    "fold_predictions": "{results_root}/{benchmark}/{dataset}/{model}/fold{fold}.npz",
    # aggregate: the folds of every pair of a dataset as one table
    "results": "{results_root}/{benchmark}/{dataset}/results.tsv",
    # pair_figure: a figure the benchmark's task draws per pair
    "pair_figure": "{results_root}/{benchmark}/{dataset}/{model}/{figure}.png",
    # summary: the benchmark's summary and its scores figure
    "summary": "{results_root}/{benchmark}/summary.md",
    "scores_figure": "{results_root}/{benchmark}/figures/scores.png",
    # memory_panel: the benchmark's memory figure and table
    "memory_figure": "{results_root}/memory/{benchmark}/memory.png",
    "memory_summary": "{results_root}/memory/{benchmark}/summary.md",
    # leaderboard: one per target
    "leaderboard": "{results_root}/leaderboard/{target}.md",
    # weights: the hub checkpoints fetched, their cache and manifest
    "weights_fetched": "{results_root}/weights/fetched.txt",
    "hub_dir": "{weights_root}/hub",
    "hub_manifest": "{hub_dir}/manifest.json",
    # every embed and probe attempt's measured peak (appended by the jobs, read by `memory`)
    "runs": "{results_root}/memory/runs.tsv",
    # each node's interpreter-and-libraries baseline per step (memory/baselines.py)
    "step_baselines": "{results_root}/memory/baselines",
    # `embedprobe calibrate`'s refitted calibration, unless --out names another file
    "calibration_refit": "{results_root}/memory/calibration.yaml",
    # a job's config slice, content-addressed (smk/job_configs.py)
    "job_config": "{results_root}/.jobconfig/{digest}.json",
    # every rule's log and benchmark; `job` is the rule's entry of JOB_NAMES
    "job_log": "{results_root}/logs/{job}.log",
    "job_benchmark": "{results_root}/benchmarks/{job}.tsv",
}

# Each rule's job under logs/ and benchmarks/ (preflight_probe's beside preflight's).
JOB_NAMES = {
    "weights": "weights",
    "demo_data": "demo_data/{dataset_path}",
    "index": "index/{dataset}",
    "check": "check/{dataset}/{model}",
    "preflight": "preflight/{dataset}/{model}",
    "preflight_probe": "preflight/{dataset}/{model}/{benchmark}",
    "embed": "embed/{dataset}/{model}",
    "embed_shard": "embed/{dataset}/{model}/{shard}-of-{shards}",
    "embed_join": "embed_join/{dataset}/{model}",
    "probe": "probe/{benchmark}/{dataset}/{model}/fold{fold}",
    "aggregate": "aggregate/{benchmark}/{dataset}",
    "pair_figure": "pair_figure/{benchmark}/{dataset}/{model}/{figure}",
    "summary": "summary/{benchmark}",
    "memory_panel": "memory_panel/{benchmark}",
    "leaderboard": "leaderboard/{target}",
}

FAILURE_SUFFIX = ".failure.json"

_FIELD = re.compile(r"\{(\w+)\}")


def _fill(name: str, known: dict, strict: bool) -> str:
    def field(match: re.Match) -> str:
        key = match.group(1)
        if key in known:
            return str(known[key])
        if key.endswith("_dir") and key in PATTERNS:
            return _fill(key, known, strict)
        if strict:
            raise KeyError(f"path '{name}' needs a value for '{key}'")
        return match.group(0)

    return _FIELD.sub(field, PATTERNS[name])


def pattern(name: str, roots: dict, **values) -> str:
    """The pattern with the roots and the given values filled, other fields left as wildcards."""
    return _fill(name, {**roots, **values}, strict=False)


def output_path(name: str, roots: dict, **values) -> Path:
    """The path with every field filled (KeyError naming the field left unfilled)."""
    return Path(_fill(name, {**roots, **values}, strict=True))


def limited_roots(config: dict, roots: dict) -> dict:
    """With limit_batches set (a capped smoke run), the roots it writes become siblings
    `<root>_limited`, so the real cache and results are never touched; a root already ending
    so stays (a job's config slice holds the roots the plan resolved)."""
    if not config.get("limit_batches"):
        return roots
    return {key: (value + LIMITED_SUFFIX
                  if key in LIMITED_ROOTS and not value.endswith(LIMITED_SUFFIX) else value)
            for key, value in roots.items()}


def job_pattern(kind: str, rule: str, roots: dict) -> str:
    """A rule's log (kind "job_log") or benchmark (kind "job_benchmark") pattern."""
    return pattern(kind, roots, job=JOB_NAMES[rule])


def failure_record(output) -> Path:
    """`<output>.failure.json`: the record a job that failed leaves beside its output."""
    output = Path(output)
    return output.with_name(output.name + FAILURE_SUFFIX)
