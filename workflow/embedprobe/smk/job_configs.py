"""Each job's config: the slice of the config it needs, as a small content-addressed JSON
file whose path is the rule's `job` param (a changed slice reruns the job, nothing else does).
"""

from __future__ import annotations

import json
import os

from embedprobe.core.config import resolve_roots
from embedprobe.core.paths import output_path
from embedprobe.core.selection import fold_selection, in_job_config, with_fold_count
from embedprobe.core.variants import embedding_id, listed_models
from embedprobe.smk.plan import not_run_pairs, target_groups


def job_config_json(config: dict, benchmark=None, dataset=None, model=None) -> str:
    """The slice of the config one job needs, so a change elsewhere does not rerun it."""
    # the memory settings are read by preflight and the resources callables only: leaving them
    # out keeps a change of, say, memory.retry_factor from rerunning every job; a selection
    # (only_models, folds, ...) chooses jobs and reruns none; target groups only name targets
    # (a group edited or added must not re-index and re-embed its datasets); where a dataset
    # is downloaded from (`download:`, a dataset's `source:`) changes none of its files; the
    # reference's catalogue (`reference_models:`) only names models and chooses what runs.
    sliced = {k: v for k, v in config.items()
              if k not in ("benchmarks", "datasets", "models", "target_groups", "download",
                           "memory", "reference_models") and in_job_config(k, v)}
    for kind, name in (("benchmarks", benchmark), ("models", model)):
        sliced[kind] = {name: config[kind][name]} if name else {}
    sliced["datasets"] = {dataset: {k: v for k, v in config["datasets"][dataset].items()
                                    if k != "source"}} if dataset else {}
    if benchmark and dataset:  # `folds: loso` as the dataset's count (core/selection.py)
        sliced["benchmarks"][benchmark] = with_fold_count(config, benchmark, dataset)
    if benchmark and not model and config["benchmarks"][benchmark].get("variants"):
        # its variant ids and the stores they read (core/variants.embedding_id): whose embed
        # jobs the benchmark's memory panel shows
        listed = config["benchmarks"][benchmark]["models"]
        names = set(listed) | {embedding_id(config["models"], m) for m in listed}
        sliced["models"] = {m: e for m, e in config["models"].items() if m in names}
    if "embed" in sliced:  # how many jobs embed a store changes none of its bytes
        sliced["embed"] = {k: v for k, v in sliced["embed"].items() if k != "shards"}
    sliced.update(resolve_roots(config))
    return json.dumps(sliced, sort_keys=True)


def job_config_file(config: dict, text: str) -> str:
    """`<results>/.jobconfig/<hash>.json` holding a job's config slice: the rule's compared
    param is this short path (sha256[:12] of the slice), so a changed slice reruns the job
    with a one-line reason; the job reads the file (`--job-config PATH`). Written while the
    plan is built, once per distinct slice (content-addressed, so never rewritten)."""
    import hashlib

    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    path = output_path("job_config", resolve_roots(config), digest=digest)
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        tmp.write_text(text + "\n")
        tmp.replace(path)
    return str(path)


def job_config(config: dict, benchmark=None, dataset=None, model=None) -> str:
    """The job's config slice as a file (see job_config_file); what rules pass as params.job."""
    return job_config_file(config, job_config_json(config, benchmark, dataset, model))


def weights_job_config(config: dict) -> str:
    """The weights rule's config slice: the roots and the hub checkpoints (repo, revision), so
    that a new or re-pinned checkpoint reruns it."""
    from embedprobe.models.hub import hub_repo

    sliced = json.loads(job_config_json(config))
    sliced["models"] = {m: e for m, e in listed_models(config["models"]).items()
                        if hub_repo(e["weights"])}
    return job_config_file(config, json.dumps(sliced, sort_keys=True))


def generator_job_config(config: dict, dataset: str) -> str:
    """The demo generator's slice: the dataset's format, path and generator settings and the
    roots, so a change of, say, trim_wake_minutes re-indexes without regenerating the data."""
    entry = config["datasets"][dataset]
    sliced = {"datasets": {dataset: {k: entry[k] for k in ("format", "path", "generator")
                                     if k in entry}}} | resolve_roots(config)
    return job_config_file(config, json.dumps(sliced, sort_keys=True))


def preflight_job_config(config: dict, dataset: str, model: str, benchmark=None) -> str:
    """A preflight's config slice as a file (see preflight_job_config_json)."""
    return job_config_file(config, preflight_job_config_json(config, dataset, model, benchmark))


def preflight_job_config_json(config: dict, dataset: str, model: str, benchmark=None) -> str:
    """The job config of a preflight: the pair's job slice (no benchmark: the embed estimate;
    a benchmark: its probe folds' estimates) and the memory settings it sizes with. No other
    benchmark enters it, so adding one reruns neither the pair's embed nor its other probes."""
    sliced = json.loads(job_config_json(config, benchmark, dataset, model))
    sliced["memory"] = config["memory"]
    return json.dumps(sliced, sort_keys=True)


def leaderboard_job_config(config: dict, target: str) -> str:
    """The leaderboard's slice: the roots and its benchmarks' entries (their tasks)."""
    sliced = json.loads(job_config_json(config))
    sliced["benchmarks"] = {b: config["benchmarks"][b] for b in target_groups(config)[target]}
    return job_config_file(config, json.dumps(sliced, sort_keys=True))


def not_run_file(config: dict, benchmark: str, dataset: str) -> str:
    """The aggregate job's list of pairs skipped before running (weights or data missing), as
    a small JSON file (a short param: a change of the list reruns aggregate); with a fold
    selection, its folds too (a pair that ran them all is `partial`, not failed)."""
    listed = {"dataset": dataset, "pairs": not_run_pairs(config, benchmark, dataset)}
    folds = fold_selection(config, benchmark, dataset)
    if folds is not None:
        listed["folds"] = folds
    return job_config_file(config, json.dumps(listed, sort_keys=True))
