"""What the Snakefiles call: config checks, target lists, input functions, per-job config.

Keeps the Snakefiles declarative: every decision lives here, where it is tested.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
import time
from pathlib import Path

from embedprobe.core.config import check_names, lookup, resolve_roots
from embedprobe.core.errors import EmbedprobeError
from embedprobe.pipeline.device import embed_device


def exit_on_error(func, *args, **kwargs):
    """Run a parse-time check; print the error and its fix, exit 2 (usage) before any job."""
    try:
        return func(*args, **kwargs)
    except EmbedprobeError as exc:
        print(exc.render(), file=sys.stderr)
        sys.exit(exc.exit_code)


def expose_cli(basedir: str) -> None:
    """Jobs call `embedprobe`: the one installed beside the Python running Snakemake, else the
    checkout's wrapper (workflow/bin), which runs it with whatever `python` the job's env has."""
    parts = [str(Path(sys.executable).parent), str(Path(basedir) / "workflow" / "bin")]
    os.environ["PATH"] = os.pathsep.join([*parts, os.environ.get("PATH", "")])


def checked_roots(config: dict) -> dict:
    from embedprobe.core import overrides

    # A `fix:` printed while the plan is built may repeat snakemake's command with a setting.
    overrides.INVOCATION = overrides.invocation_from(sys.argv)
    from embedprobe.tasks.registry import check_benchmark_tasks

    exit_on_error(check_names, config)
    exit_on_error(check_benchmark_tasks, config)
    return resolve_roots(config)


def names_pattern(names) -> str:
    """A wildcard constraint that admits exactly these names."""
    return "|".join(re.escape(n) for n in sorted(names))


def generated_datasets(config: dict) -> dict[str, str]:
    """Dataset path -> dataset id for the datasets the demo generator writes."""
    return {e["path"]: d for d, e in config["datasets"].items() if "generator" in e}


def manifest_path(roots: dict, dataset_path: str) -> str:
    return f"{roots['data_root']}/{dataset_path}/MANIFEST.tsv"


def index_inputs(config: dict, roots: dict, dataset: str) -> list[str]:
    """The generator's manifest for demo data, else the dataset's files (refusing gaps)."""
    from embedprobe.datasets.registry import require_data

    entry = lookup(config, "datasets", dataset)
    if "generator" in entry:  # the same input before and after generation: no spurious rerun
        return [manifest_path(roots, entry["path"])]
    return [str(p) for p in exit_on_error(require_data, config, roots, dataset)]


def job_config_json(config: dict, benchmark=None, dataset=None, model=None) -> str:
    """The slice of the config one job needs, so a change elsewhere does not rerun it."""
    # memory_* settings are read by preflight and the resources callables only: leaving them
    # out keeps a change of, say, memory_retry_factor from rerunning every job.
    sliced = {k: v for k, v in config.items()
              if k not in ("benchmarks", "datasets", "models") and not k.startswith("memory_")}
    for kind, name in (("benchmarks", benchmark), ("datasets", dataset), ("models", model)):
        sliced[kind] = {name: config[kind][name]} if name else {}
    sliced.update(resolve_roots(config))
    return json.dumps(sliced, sort_keys=True)


def job_config_file(config: dict, text: str) -> str:
    """`<results>/.jobconfig/<hash>.json` holding a job's config slice: the rule's compared
    param is this short path (sha256[:12] of the slice), so a changed slice reruns the job
    with a one-line reason; the job reads the file (`--job-config PATH`). Written while the
    plan is built, once per distinct slice (content-addressed, so never rewritten)."""
    import hashlib

    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    path = Path(resolve_roots(config)["results_root"]) / ".jobconfig" / f"{digest}.json"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        tmp.write_text(text + "\n")
        tmp.replace(path)
    return str(path)


def weights_job_config(config: dict) -> str:
    """The weights rule's config slice: the roots and the hub checkpoints (repo, revision), so
    that a new or re-pinned checkpoint reruns it."""
    from embedprobe.models.hub import hub_repo

    sliced = json.loads(job_config_json(config))
    sliced["models"] = {m: e for m, e in config["models"].items() if hub_repo(e["weights"])}
    return job_config_file(config, json.dumps(sliced, sort_keys=True))


def job_config(config: dict, benchmark=None, dataset=None, model=None) -> str:
    """The job's config slice as a file (see job_config_file); what rules pass as params.job."""
    return job_config_file(config, job_config_json(config, benchmark, dataset, model))


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


def quality_tables(config: dict, roots: dict, benchmark: str) -> list[str]:
    """The data-quality table of each of the benchmark's datasets (written by index)."""
    return [f"{roots['results_root']}/index/{d}.quality.tsv"
            for d in config["benchmarks"][benchmark]["datasets"]]


def benchmark_tables(config: dict, roots: dict, benchmark: str) -> list[str]:
    bench = config["benchmarks"][benchmark]
    return [f"{roots['results_root']}/{benchmark}/{d}/results.tsv" for d in bench["datasets"]]


def benchmark_targets(config: dict, roots: dict, *benchmarks: str) -> list[str]:
    """Each benchmark's summary and figures (which pull in every fold of every pair)."""
    from embedprobe.tasks.registry import benchmark_task

    targets = []
    for benchmark in benchmarks:
        bench = config["benchmarks"][benchmark]
        task = exit_on_error(benchmark_task, config, benchmark)
        results = roots["results_root"]
        targets += [f"{results}/{benchmark}/summary.md",
                    f"{results}/{benchmark}/figures/scores.png",
                    f"{results}/memory/{benchmark}/memory.png"]
        targets += [f"{results}/{benchmark}/{d}/{m}/{figure}.png" for d in bench["datasets"]
                    for m in runnable_models(config, benchmark, d) for figure in task.pair_figures]
    return targets


def target_groups(config: dict) -> dict[str, list[str]]:
    """Target name -> the benchmarks it runs: every configured benchmark under its own name,
    the `target_groups:` of the config (e.g. demo: [demo, demo_brain_age]), and `all`."""
    groups = {name: [name] for name in config["benchmarks"]}
    groups.update({name: list(members) for name, members in
                   (config.get("target_groups") or {}).items()})
    groups["all"] = list(config["benchmarks"])
    return groups


def leaderboard_tables(config: dict, roots: dict, target: str) -> list[str]:
    """The results tables of every benchmark of a target (what its leaderboard reads)."""
    return [path for benchmark in target_groups(config)[target]
            for path in benchmark_tables(config, roots, benchmark)]


def leaderboard_job_config(config: dict, target: str) -> str:
    """The leaderboard's slice: the roots and its benchmarks' entries (their tasks)."""
    sliced = json.loads(job_config_json(config))
    sliced["benchmarks"] = {b: config["benchmarks"][b] for b in target_groups(config)[target]}
    return job_config_file(config, json.dumps(sliced, sort_keys=True))


def pair_figure_names(config: dict) -> set[str]:
    """Every figure name some benchmark's task draws per pair (the wildcard's constraint)."""
    from embedprobe.tasks.registry import benchmark_task

    return {figure for benchmark in config["benchmarks"]
            for figure in exit_on_error(benchmark_task, config, benchmark).pair_figures}


def fold_predictions(config: dict, roots: dict, benchmark: str, dataset: str, model: str):
    folds = config["benchmarks"][benchmark]["folds"]
    return [f"{roots['results_root']}/{benchmark}/{dataset}/{model}/fold{k}.npz"
            for k in range(folds)]


def runnable_models(config: dict, benchmark: str, dataset: str) -> list[str]:
    """The benchmark's models for this dataset, less those its channel map rules out and those
    known to be skipped before anything runs (see known_skips)."""
    from embedprobe.pipeline.channel_maps import channel_plan

    models = config["benchmarks"][benchmark]["models"]
    skipped = known_skips(config, benchmark)
    runnable = []
    for m in models:
        plan = exit_on_error(channel_plan, config, dataset, config["models"][m]["family"])
        if m not in skipped and not plan.ruled_out and not checkpoint_rules_out(
                config, dataset, m, plan):
            runnable.append(m)
    return runnable


def checkpoint_rules_out(config: dict, dataset: str, model: str, plan) -> str:
    """A fetched hub checkpoint whose config.json cannot serve the pair (its reason, printed
    once in the plan); such a pair gets no jobs, like one its channel map rules out."""
    from embedprobe.models.registry import checkpoint_against_pair, model_spec

    spec = exit_on_error(model_spec, config, model)
    checkpoint, reason = exit_on_error(checkpoint_against_pair, spec, resolve_roots(config),
                                       plan.model_names)
    if reason and (dataset, model, "checkpoint") not in _WARNED:
        _WARNED.add((dataset, model, "checkpoint"))
        print(f"warning: {dataset}/{model} is ruled out: checkpoint {checkpoint.repo} cannot "
              f"serve it: {reason}", file=sys.stderr)
    return reason


def known_skips(config: dict, benchmark: str) -> dict[str, dict]:
    """Models of the benchmark whose check would be skipped for a reason known before running:
    a pretrained checkpoint whose weights file is absent. They get no jobs; the plan warns, and
    results.tsv and summary.md list them as skipped (the run itself exits 0 for them)."""
    from embedprobe.models.registry import missing_weights, model_spec

    roots = resolve_roots(config)
    skips = {}
    for model in config["benchmarks"][benchmark]["models"]:
        spec = exit_on_error(model_spec, config, model)
        missing = missing_weights(spec, roots)
        if missing:
            reason, fix = missing
            # a fix that is a command stays one as printed: the rest is a shell comment
            then = "   # then run again" if fix.startswith("embedprobe ") else ", then run again"
            skips[model] = {"status": "skipped", "reason": reason, "fix": fix + then}
    return skips


_WARNED: set = set()


def warn_known_skips(config: dict, benchmark: str, dataset: str) -> None:
    """The plan's `warning:` line per pair skipped before running (once per pair)."""
    for model, skip in known_skips(config, benchmark).items():
        if (dataset, model) in _WARNED:
            continue
        _WARNED.add((dataset, model))
        print(f"warning: {dataset}/{model} will be skipped: {skip['reason']}; the other pairs "
              f"run, and results.tsv and summary.md list it as skipped (0/"
              f"{config['benchmarks'][benchmark]['folds']} folds)\nfix: {skip['fix']}",
              file=sys.stderr)


def not_run_file(config: dict, benchmark: str, dataset: str) -> str:
    """The aggregate job's list of pairs skipped before running, as a small JSON file (a
    short param: a change of the list reruns aggregate)."""
    skips = known_skips(config, benchmark)
    return job_config_file(config, json.dumps({"dataset": dataset, "pairs": skips},
                                              sort_keys=True))


def fold_results(config: dict, roots: dict, benchmark: str, dataset: str) -> list[str]:
    bench = config["benchmarks"][benchmark]
    warn_known_skips(config, benchmark, dataset)
    return [
        f"{roots['results_root']}/{benchmark}/{dataset}/{model}/fold{k}.json"
        for model in runnable_models(config, benchmark, dataset)
        for k in range(bench["folds"])
    ]


def benchmark_fold_results(config: dict, roots: dict, benchmark: str) -> list[str]:
    """Every probe fold of a benchmark, over its datasets: what its memory panel waits for."""
    return [path for dataset in config["benchmarks"][benchmark]["datasets"]
            for path in fold_results(config, roots, benchmark, dataset)]


def preflight_job_config_json(config: dict, dataset: str, model: str, benchmark=None) -> str:
    """The job config of a preflight: the pair's job slice (no benchmark: the embed estimate;
    a benchmark: its probe folds' estimates) and the memory_* settings it sizes with. No other
    benchmark enters it, so adding one reruns neither the pair's embed nor its other probes."""
    sliced = json.loads(job_config_json(config, benchmark, dataset, model))
    sliced.update({k: v for k, v in config.items() if k.startswith("memory_")})
    return json.dumps(sliced, sort_keys=True)


def _estimate(estimate_path, key: str) -> dict:
    from embedprobe.memory.records import job_estimate

    return job_estimate(estimate_path, key)


def memory_request_mb(config: dict, estimate_path, job_key: str, attempt: int) -> int:
    """The preflight request, scaled on retries (x memory_retry_factor per attempt) and capped
    at the limit; `memory_first_request_factor` < 1 shrinks the first attempt on purpose."""
    estimate = _estimate(estimate_path, job_key)
    if attempt == 1:
        factor = float(config["memory_first_request_factor"])
    else:
        factor = float(config["memory_retry_factor"]) ** (attempt - 1)
    request = int(estimate["request_mb"] * factor)
    limit = estimate.get("limit_mb")
    return max(1, min(request, limit) if limit else request)


def check_memory_mb(config: dict) -> int:
    """The check job's request: a small job's, plus on a GPU the host memory CUDA's libraries
    take (the calibration's embed_gpu baseline), since check then runs the model there."""
    small = int(config["memory_small_job_mb"])
    if embed_device(config) != "cuda":
        return small
    from embedprobe.memory.estimate import MiB, calibration_path, load_calibration

    baseline = load_calibration(calibration_path(config))["jobs"]["embed_gpu"]["baseline_bytes"]
    return small + math.ceil(baseline / MiB)


def gpu_resources(config: dict, job_key: str | None = None) -> dict:
    """What a check or embed job asks the scheduler for when the config says embed.device cuda:
    one GPU (SLURM `gpu` -> --gpus, HTCondor request_gpus) and, for a job with a preflight
    estimate, the GPU memory it predicted (HTCondor gpus_minimum_memory). Nothing on the CPU:
    HTCondor would otherwise be sent request_gpus = 0."""
    if embed_device(config) != "cuda":
        return {}
    resources = {"gpu": 1, "request_gpus": 1}
    if job_key is not None:
        # 0 (the plugin then sets nothing) for an estimate made before the device was cuda
        resources["htcondor_gpus_min_mem_mb"] = lambda wildcards, input: (_estimate(
            input.estimate, job_key).get("device") or {}).get("request_mb", 0)
    return resources


def runtime_minutes(estimate_path, job_key: str, attempt: int) -> int:
    """The preflight runtime, doubled on each retry (a timeout is a failure too)."""
    return int(_estimate(estimate_path, job_key)["runtime_min"] * 2 ** (attempt - 1))


def probe_key(wildcards) -> str:
    from embedprobe.memory.records import job_key

    return job_key(wildcards.benchmark, wildcards.fold)


RUN_STARTED = time.time()


def print_fresh_summaries(config: dict, roots: dict) -> None:
    """After a successful run: the summary of every benchmark this run (re)wrote, and a closing
    `warning:` for each pair it skipped (a skip known before running leaves the exit status 0)."""
    for benchmark in config["benchmarks"]:
        path = Path(roots["results_root"]) / benchmark / "summary.md"
        if path.is_file() and path.stat().st_mtime >= RUN_STARTED:
            print(f"\n{path}:\n{path.read_text()}")
            for model, skip in known_skips(config, benchmark).items():
                print(f"warning: {benchmark}: {model} was skipped ({skip['reason']}): the run "
                      f"finished without it\nfix: {skip['fix']}", file=sys.stderr)
    for path in sorted((Path(roots["results_root"]) / "leaderboard").glob("*.md")):
        if path.stat().st_mtime >= RUN_STARTED:  # the view across the target's benchmarks
            print(f"\n{path}:\n{path.read_text()}")


def write_partial_results(config: dict, roots: dict) -> None:
    """After a failed run (`onerror`): for every benchmark a failure of this run touched,
    results.tsv and summary.md from the pairs that finished, each pair that did not listed with
    its status, reason and folds done/expected. Snakemake's exit status stays non-zero, and
    the next run redoes the failed jobs and rewrites both files through the rules."""
    from embedprobe.smk.partial import partial_results

    for line in partial_results(config, roots, RUN_STARTED):
        print(line, file=sys.stderr)
