"""The plan, as the Snakefiles build it: config checks at parse time, the targets and target
groups, the models that run on each dataset, the skips known before running (and their
warnings), and the lists of folds and tables the rules' input functions return.

Keeps the Snakefiles declarative: every decision lives here, where it is tested. Paths are
core/paths.py's patterns, spelled exactly as the rules' outputs so that Snakemake matches them.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from embedprobe.core.config import check_names, lookup, resolve_roots
from embedprobe.core.errors import EmbedprobeError
from embedprobe.core.paths import pattern


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


def index_inputs(config: dict, roots: dict, dataset: str) -> list[str]:
    """The generator's manifest for demo data, else the dataset's files (refusing gaps)."""
    from embedprobe.datasets.registry import require_data

    entry = lookup(config, "datasets", dataset)
    if "generator" in entry:  # the same input before and after generation: no spurious rerun
        return [pattern("data_manifest", roots, dataset_path=entry["path"])]
    return [str(p) for p in exit_on_error(require_data, config, roots, dataset)]


def quality_tables(config: dict, roots: dict, benchmark: str) -> list[str]:
    """The data-quality table of each of the benchmark's datasets (written by index)."""
    return [pattern("quality", roots, dataset=d)
            for d in config["benchmarks"][benchmark]["datasets"]]


def benchmark_tables(config: dict, roots: dict, benchmark: str) -> list[str]:
    bench = config["benchmarks"][benchmark]
    return [pattern("results", roots, benchmark=benchmark, dataset=d) for d in bench["datasets"]]


def benchmark_targets(config: dict, roots: dict, *benchmarks: str) -> list[str]:
    """Each benchmark's summary and figures (which pull in every fold of every pair)."""
    from embedprobe.tasks.registry import benchmark_task

    targets = []
    for benchmark in benchmarks:
        bench = config["benchmarks"][benchmark]
        task = exit_on_error(benchmark_task, config, benchmark)
        targets += [pattern(name, roots, benchmark=benchmark)
                    for name in ("summary", "scores_figure", "memory_figure")]
        targets += [pattern("pair_figure", roots, benchmark=benchmark, dataset=d, model=m,
                            figure=figure) for d in bench["datasets"]
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


def pair_figure_names(config: dict) -> set[str]:
    """Every figure name some benchmark's task draws per pair (the wildcard's constraint)."""
    from embedprobe.tasks.registry import benchmark_task

    return {figure for benchmark in config["benchmarks"]
            for figure in exit_on_error(benchmark_task, config, benchmark).pair_figures}


def fold_predictions(config: dict, roots: dict, benchmark: str, dataset: str, model: str):
    folds = config["benchmarks"][benchmark]["folds"]
    return [pattern("fold_predictions", roots, benchmark=benchmark, dataset=dataset, model=model,
                    fold=k) for k in range(folds)]


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


def fold_results(config: dict, roots: dict, benchmark: str, dataset: str) -> list[str]:
    bench = config["benchmarks"][benchmark]
    warn_known_skips(config, benchmark, dataset)
    return [
        pattern("fold_result", roots, benchmark=benchmark, dataset=dataset, model=model, fold=k)
        for model in runnable_models(config, benchmark, dataset)
        for k in range(bench["folds"])
    ]


def benchmark_fold_results(config: dict, roots: dict, benchmark: str) -> list[str]:
    """Every probe fold of a benchmark, over its datasets: what its memory panel waits for."""
    return [path for dataset in config["benchmarks"][benchmark]["datasets"]
            for path in fold_results(config, roots, benchmark, dataset)]
