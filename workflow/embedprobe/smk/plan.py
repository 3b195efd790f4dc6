"""The plan, as the Snakefiles build it: config checks at parse time, the targets and target
groups, the models that run on each dataset, the skips known before running (and their
warnings), and the lists of folds and tables the rules' input functions return. What a run
selects (only_models, only_datasets, variants, folds, limit_batches: core/selection.py) is
applied here, and the plan says which datasets and variants each benchmark runs.

Keeps the Snakefiles declarative: every decision lives here, where it is tested. Paths are
core/paths.py's patterns, spelled exactly as the rules' outputs so that Snakemake matches them.
"""

from __future__ import annotations

import functools
import os
import re
import sys
from pathlib import Path

from embedprobe.core.config import check_names, lookup, resolve_roots
from embedprobe.core.errors import EmbedprobeError
from embedprobe.core.paths import pattern
from embedprobe.core.selection import (
    benchmark_folds,
    benchmark_variants,
    fold_count,
    has_work,
    selected,
)
from embedprobe.core.variants import embedding_id


def exit_on_error(func, *args, **kwargs):
    """Run a parse-time check; print the error and its fix, exit 2 (usage) before any job."""
    try:
        return func(*args, **kwargs)
    except EmbedprobeError as exc:
        stop(exc)


def stop(error: EmbedprobeError):
    """Print the error and its fix; exit with its code (2 for usage) before any job."""
    print(error.render(), file=sys.stderr)
    sys.exit(error.exit_code)


def expose_cli(basedir: str) -> None:
    """Jobs call `embedprobe`: the one installed beside the Python running Snakemake, else the
    checkout's wrapper (workflow/bin), which runs it with whatever `python` the job's env has."""
    parts = [str(Path(sys.executable).parent), str(Path(basedir) / "workflow" / "bin")]
    os.environ["PATH"] = os.pathsep.join([*parts, os.environ.get("PATH", "")])


@functools.cache  # its PATH scans once per plan, not once per dataset (index_inputs)
def typed_command() -> list[str]:
    """Snakemake's command line, as the user can type it again: a `fix:` printed while the
    plan is built may repeat it with a setting. Callers only read the list."""
    from embedprobe.core.overrides import invocation_from

    return invocation_from(sys.argv)


def checked_roots(config: dict) -> dict:
    from embedprobe.core.selection import check_misplaced, check_selection
    from embedprobe.tasks.registry import check_benchmark_tasks

    exit_on_error(check_misplaced, config)
    exit_on_error(check_names, config)
    exit_on_error(check_selection, config)
    exit_on_error(check_benchmark_tasks, config)
    roots = exit_on_error(resolve_roots, config)
    if config["limit_batches"]:
        from embedprobe.core.paths import LIMITED_SUFFIX

        capped = " and ".join(v for v in roots.values() if v.endswith(LIMITED_SUFFIX))
        print(f"note: limit_batches={config['limit_batches']}: a capped smoke run: each embed "
              f"stops after {config['limit_batches']} batches of windows spread over the "
              f"subjects, and the probes fit on them, into {capped} (the real cache and "
              "results are not touched; the scores test the chain, not the models)",
              file=sys.stderr)
    return roots


def names_pattern(names) -> str:
    """A wildcard constraint that admits exactly these names."""
    return "|".join(re.escape(n) for n in sorted(names))


def generated_datasets(config: dict) -> dict[str, str]:
    """Dataset path -> dataset id for the datasets the demo generator writes."""
    return {e["path"]: d for d, e in config["datasets"].items() if "generator" in e}


def index_inputs(config: dict, roots: dict, dataset: str) -> list[str]:
    """The generator's manifest for demo data, else the dataset's files (refusing gaps)."""
    from embedprobe.datasets.registry import require_entry_data

    entry = lookup(config, "datasets", dataset)
    if "generator" in entry:  # the same input before and after generation: no spurious rerun
        manifest = pattern("data_manifest", roots, dataset_path=entry["path"])
        # A capped run reads generated data that is there as it is: its demo_data job config
        # lives under the capped results root, so planning demo_data would regenerate the data
        # (params changed) and with it every real result on the next uncapped run.
        if not (config["limit_batches"] and Path(manifest).is_file()):
            return [manifest]
    status = dataset_status(config, roots, dataset)
    files = [str(p) for p in exit_on_error(require_entry_data, config, dataset, entry,
                                           status.root, typed_command(), status.recordings)]
    warn_partial(config, roots, dataset)
    return files


_STATUSES: dict = {}


def dataset_status(config: dict, roots: dict, dataset: str):
    """The dataset's registry.entry_status, its folder listed once per plan: index_inputs (of
    index and check), warn_partial and data_skip all ask, and a listing stats every file of
    the dataset (thousands for an NSRR cohort: docs/measurements/2026-12-07-plan-scale.md)."""
    import json

    from embedprobe.datasets.registry import entry_root, entry_status

    entry = lookup(config, "datasets", dataset)
    root = entry_root(roots, entry)
    key = (dataset, str(root), json.dumps(entry, sort_keys=True, default=str))
    if key not in _STATUSES:
        _STATUSES[key] = exit_on_error(entry_status, dataset, entry, root)
    return _STATUSES[key]


def warn_partial(config: dict, roots: dict, dataset: str) -> None:
    """The plan's `warning:` (once per dataset) for a dataset that runs on its complete
    recordings only, naming what the others lack (registry.partial_allowed)."""
    if (dataset, "partial") in _WARNED:
        return
    _WARNED.add((dataset, "partial"))
    status = dataset_status(config, roots, dataset)
    if status.state == "partial":
        total = "?" if status.expected is None else status.expected
        print(f"warning: {dataset} runs on {status.found} of its {total} recordings: "
              f"{'; '.join(status.problems[:5])}"
              f"{' ...' if len(status.problems) > 5 else ''} (strict=true refuses it instead)",
              file=sys.stderr)


def quality_tables(config: dict, roots: dict, benchmark: str) -> list[str]:
    """The data-quality table of each of the benchmark's datasets index runs on (written by
    index; a dataset skipped for missing data has none)."""
    return [pattern("quality", roots, dataset=d) for d in present_datasets(config, benchmark)]


def benchmark_tables(config: dict, roots: dict, benchmark: str) -> list[str]:
    """The results table of each selected dataset (a skipped one's lists its pairs as such)."""
    return [pattern("results", roots, benchmark=benchmark, dataset=d)
            for d in selected(config, benchmark, "datasets")]


def present_datasets(config: dict, benchmark: str) -> list[str]:
    """The benchmark's selected datasets, less those skipped for missing data (data_skip)."""
    return [d for d in selected(config, benchmark, "datasets") if not data_skip(config, d)]


def benchmark_targets(config: dict, roots: dict, *benchmarks: str) -> list[str]:
    """Each benchmark's summary and figures (which pull in every fold of every pair); a
    benchmark the selection leaves nothing has none."""
    from embedprobe.tasks.registry import benchmark_task

    targets = []
    for benchmark in filter(lambda b: has_work(config, b), benchmarks):
        task = exit_on_error(benchmark_task, config, benchmark)
        targets += [pattern(name, roots, benchmark=benchmark)
                    for name in ("summary", "scores_figure", "memory_figure")]
        targets += [pattern("pair_figure", roots, benchmark=benchmark, dataset=d, model=m,
                            figure=figure) for d in present_datasets(config, benchmark)
                    for m in runnable_models(config, benchmark, d) for figure in task.pair_figures]
    return targets


def target_inputs(config: dict, roots: dict, target: str):
    """The input function of a target's rule (evaluated only for the targets a run asks for):
    its benchmarks' summaries and figures and its leaderboard (a capped run's in its own
    roots); a selection that leaves the target nothing is a usage error. The plan says which
    datasets and variants each benchmark runs (note_selection)."""

    def inputs(wildcards) -> list[str]:
        members = target_groups(config)[target]
        if not any(has_work(config, b) for b in members):
            stop(nothing_to_run(config, target, members))
        for benchmark in members:
            note_selection(config, benchmark)
        return [*benchmark_targets(config, roots, *members),
                pattern("leaderboard", roots, target=target)]

    return inputs


def nothing_to_run(config: dict, target: str, members: list[str]):
    """The usage error of a selection that leaves the target nothing: the setting that did it
    where one alone did (only_datasets naming none of its datasets, variants none of its
    variants), with the values it takes; else the whole selection."""
    from embedprobe.core.errors import UsageError
    from embedprobe.core.selection import (
        ALL_VARIANTS,
        FULL,
        QUICK,
        dataset_choice,
        describe,
        setting_value,
        variant_choice,
    )

    def listed(kind: str) -> list[str]:
        return list(dict.fromkeys(n for b in members
                                  for n in config["benchmarks"][b].get(kind) or []))

    datasets, variants = listed("datasets"), listed("variants")
    choice = dataset_choice(config)
    if isinstance(choice, list) and not set(choice) & set(datasets):
        return UsageError(
            f"config only_datasets={setting_value(choice)} names no dataset of target "
            f"'{target}' (its datasets: {', '.join(datasets)})",
            fix=f"use only_datasets={QUICK}, {FULL}, or some of: {', '.join(datasets)}")
    # a benchmark without variants runs as it is: only variant benchmarks can be emptied so
    if all(config["benchmarks"][b].get("variants") and not benchmark_variants(config, b)
           for b in members):
        return UsageError(
            f"config variants={setting_value(variant_choice(config))} names no variant of "
            f"target '{target}' (its variants: {', '.join(variants)})",
            fix=f"use variants=default, {ALL_VARIANTS}, or some of: {', '.join(variants)}")
    models = sorted({n for b in members for n in config["benchmarks"][b]["models"]})
    return UsageError(
        f"{describe(config)} leaves target '{target}' nothing to run: its benchmarks run "
        f"models {', '.join(models)} on datasets {', '.join(sorted(datasets))}",
        fix="choose among those, or another target")


def note_selection(config: dict, benchmark: str) -> None:
    """The plan's lines for a benchmark of the target, once: the datasets it runs and, for a
    benchmark with variants, the variants (core/selection.selection_lines)."""
    from embedprobe.core.selection import selection_lines

    if (benchmark, "selection") in _WARNED:
        return
    _WARNED.add((benchmark, "selection"))
    for line in exit_on_error(selection_lines, config, benchmark):
        print(f"plan: {benchmark}: {line}", file=sys.stderr)


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
    return [path for benchmark in target_groups(config)[target] if has_work(config, benchmark)
            for path in benchmark_tables(config, roots, benchmark)]


def pair_figure_names(config: dict) -> set[str]:
    """Every figure name some benchmark's task draws per pair (the wildcard's constraint)."""
    from embedprobe.tasks.registry import benchmark_task

    return {figure for benchmark in config["benchmarks"]
            for figure in exit_on_error(benchmark_task, config, benchmark).pair_figures}


def fold_predictions(config: dict, roots: dict, benchmark: str, dataset: str, model: str):
    """The predictions of the pair's folds the run plans (folds: every fold, or the selected)."""
    return [pattern("fold_predictions", roots, benchmark=benchmark, dataset=dataset, model=model,
                    fold=k) for k in exit_on_error(benchmark_folds, config, benchmark, dataset)]


def source_fold_predictions(config: dict, roots: dict, benchmark: str, dataset: str, model: str,
                            fold: str) -> list[str]:
    """The same fold of the same pair in the benchmark's `source` (sleep_hypnogram reads the
    staging predictions), so the fold job waits for it; none for a benchmark without one."""
    source = config["benchmarks"][benchmark].get("source")
    if not source:
        return []
    return [pattern("fold_predictions", roots, benchmark=source, dataset=dataset, model=model,
                    fold=fold)]


def runnable_models(config: dict, benchmark: str, dataset: str) -> list[str]:
    """The benchmark's (selected) models for this dataset, less those its task rules out
    (task_rule_outs), those its channel map rules out and those known to be skipped before
    anything runs (see known_skips)."""
    from embedprobe.pipeline.channel_maps import channel_plan

    models = selected(config, benchmark, "models")
    skipped = (task_rule_outs(config, benchmark) | known_skips(config, benchmark)
               | variant_skips(config, benchmark))
    runnable = []
    for m in models:
        if m in skipped:
            continue
        plan = exit_on_error(channel_plan, config, dataset, config["models"][m]["family"])
        if not plan.ruled_out and not checkpoint_rules_out(
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


def task_rule_outs(config: dict, benchmark: str) -> dict[str, dict]:
    """Models of the benchmark whose family the reference leaves out of its task (a sleep
    stager on a seizure benchmark: config/models.yaml `reference_models:`, a family's
    `rule_out:`): they get no jobs, the plan says so once, and the results list them as
    skipped with the reason, as the reference's run lines remove them by name."""
    from embedprobe.core.reference_models import rule_out_reason

    task = config["benchmarks"][benchmark]["task"]
    skips = {}
    for model in selected(config, benchmark, "models"):
        family = config["models"][model]["family"]
        reason = rule_out_reason(config["reference_models"], family, task)
        if reason:
            skips[model] = {"status": "skipped",
                            "reason": f"ruled out of {task} as the reference rules out "
                                      f"{family}: {reason}",
                            "fix": f"run {model} on a benchmark of another task; "
                                   f"config/models.yaml reference_models.{family}.rule_out "
                                   "lists the tasks"}
    return skips


def known_skips(config: dict, benchmark: str) -> dict[str, dict]:
    """Models of the benchmark whose check would be skipped for a reason known before running:
    a pretrained checkpoint whose weights file is absent. They get no jobs; the plan warns, and
    results.tsv and summary.md list them as skipped (the run itself exits 0 for them). With
    `strict: true` such a model stops the plan instead (exit 2)."""
    from embedprobe.core.errors import UsageError
    from embedprobe.models.registry import missing_weights, model_spec

    roots = resolve_roots(config)
    skips = {}
    not_asked = variant_skips(config, benchmark) | task_rule_outs(config, benchmark)
    for model in selected(config, benchmark, "models"):
        if model in not_asked:  # ruled out before its weights matter
            continue
        spec = exit_on_error(model_spec, config, model)
        missing = missing_weights(spec, roots)
        if missing:
            reason, fix = missing
            if config["strict"]:
                stop(UsageError(
                    f"benchmark '{benchmark}': {model}: {reason} (strict: true stops here "
                    "instead of skipping it)", fix=fix))
            # a fix that is a command stays one as printed: the rest is a shell comment
            then = "   # then run again" if fix.startswith("embedprobe ") else ", then run again"
            skips[model] = {"status": "skipped", "reason": reason, "fix": fix + then}
    return skips


def variant_skips(config: dict, benchmark: str) -> dict[str, dict]:
    """A benchmark's token-flattening variant ids (core/variants.py) whose model has no
    per-patch tokens to flatten (BIOT pools inside its encoder, BENDR keeps one token): they
    get no jobs, and the results list them as skipped with the reason."""
    from embedprobe.core.errors import UsageError
    from embedprobe.core.variants import split_variant
    from embedprobe.models.registry import check_pooling

    skips = {}
    for model in selected(config, benchmark, "models"):
        variant, base = split_variant(model)
        if variant is None:
            continue
        try:
            check_pooling(model, config["models"][model])
        except UsageError as exc:
            skips[model] = {"status": "skipped",
                            "reason": f"variant {variant} flattens tokens: {exc.message}",
                            "fix": f"read its results under the pooled variants (default, "
                                   f"no_filtering); {base} has no tokens to flatten"}
    return skips


def benchmark_stores(config: dict, benchmark: str, models: list[str]) -> list[str]:
    """The stores `models` of the benchmark read, each once, in order: a variant id's is its
    store's (core/variants.embedding_id); a variant its family cannot run has none."""
    skipped = variant_skips(config, benchmark)
    return list(dict.fromkeys(embedding_id(config["models"], m) for m in models
                              if m not in skipped))


_WARNED: set = set()
_DATA_SKIPS: dict = {}


def data_skip(config: dict, dataset: str) -> dict | None:
    """{status, reason, fix} when the dataset's files are missing (none found; no generator
    writes them) and the run is not strict: its pairs get no jobs, results.tsv and summary.md
    list them as skipped, and the other datasets run. Else None (a partial dataset runs on its
    complete recordings, or under strict is refused where its index job is planned:
    registry.partial_allowed)."""
    from embedprobe.datasets.registry import dataset_root, fix_for

    entry = lookup(config, "datasets", dataset)
    if "generator" in entry or config["strict"]:
        return None
    roots = resolve_roots(config)
    root = dataset_root(config, roots, dataset)
    key = (dataset, str(root), entry.get("format"), entry["path"])
    if key not in _DATA_SKIPS:
        status = dataset_status(config, roots, dataset)
        _DATA_SKIPS[key] = None if status.state != "missing" else {
            "status": "skipped", "reason": f"data not found in {status.root} "
                                           f"({status.counted} recordings)",
            "fix": exit_on_error(fix_for, config, dataset, status, typed_command())
                   + ", then run again"}
    return _DATA_SKIPS[key]


def not_run_pairs(config: dict, benchmark: str, dataset: str) -> dict[str, dict]:
    """Model -> {status, reason, fix} for the pairs of this dataset skipped before running:
    those whose weights are absent (known_skips) and, when the dataset's data is missing,
    every other model that would run. What aggregate lists as skipped rows."""
    skips = (known_skips(config, benchmark) | variant_skips(config, benchmark)
             | channel_map_skips(config, benchmark, dataset) | task_rule_outs(config, benchmark))
    missing = data_skip(config, dataset)
    if missing:
        return {m: missing for m in runnable_models(config, benchmark, dataset)} | skips
    return skips


def channel_map_skips(config: dict, benchmark: str, dataset: str) -> dict[str, dict]:
    """Model -> {status, reason, fix} for the models the dataset's channel map rules out (a
    `skip:` entry): they get no jobs, and the results list them with the map's reason (a
    dataset no model can read, Bonn for BIOT, still gets its results table)."""
    from embedprobe.pipeline.channel_maps import channel_map_path, channel_plan

    skips = {}
    ruled_out = task_rule_outs(config, benchmark)
    for model in selected(config, benchmark, "models"):
        if model in ruled_out:  # its task's reason stands; the map need not name its family
            continue
        plan = exit_on_error(channel_plan, config, dataset, config["models"][model]["family"])
        if plan.ruled_out:
            skips[model] = {"status": "skipped",
                            "reason": f"ruled out by the channel map: {plan.reason}",
                            "fix": f"choose a model whose family "
                                   f"{channel_map_path(config, dataset)} does not skip"}
    return skips


def warn_known_skips(config: dict, benchmark: str, dataset: str) -> None:
    """The plan's `warning:` line per pair skipped before running (once per pair), and per
    dataset skipped for missing data (once per dataset)."""
    listed = ", and results.tsv and summary.md list"  # a capped run's too (limited roots)
    missing = data_skip(config, dataset)
    if missing and (dataset, "data") not in _WARNED:  # all its pairs are skipped
        _WARNED.add((dataset, "data"))
        print(f"warning: {dataset} will be skipped: {missing['reason']}; the other datasets "
              f"run{listed} its pairs as skipped\nfix: {missing['fix']}",
              file=sys.stderr)
    for model, skip in task_rule_outs(config, benchmark).items():
        if (benchmark, model, "task") not in _WARNED:
            _WARNED.add((benchmark, model, "task"))
            print(f"note: {benchmark}: {model} is {skip['reason']}; results.tsv and "
                  "summary.md list it as skipped", file=sys.stderr)
    folds = exit_on_error(fold_count, config, benchmark, dataset)
    for model, skip in (known_skips(config, benchmark) | variant_skips(config, benchmark)).items():
        if (dataset, model) in _WARNED:
            continue
        _WARNED.add((dataset, model))
        print(f"warning: {dataset}/{model} will be skipped: {skip['reason']}; the other pairs "
              f"run{listed} it as skipped (0/{folds} folds)\n"
              f"fix: {skip['fix']}", file=sys.stderr)


def fold_results(config: dict, roots: dict, benchmark: str, dataset: str) -> list[str]:
    """The probe folds of the dataset's pairs the run plans (none for a dataset skipped for
    missing data; the selected folds, or every fold)."""
    warn_known_skips(config, benchmark, dataset)
    if data_skip(config, dataset):
        return []
    folds = exit_on_error(benchmark_folds, config, benchmark, dataset)
    note_loso(config, benchmark, dataset)
    return [
        pattern("fold_result", roots, benchmark=benchmark, dataset=dataset, model=model, fold=k)
        for model in runnable_models(config, benchmark, dataset)
        for k in folds
    ]


def note_loso(config: dict, benchmark: str, dataset: str) -> None:
    """The plan's line for a `folds: loso` benchmark's dataset, once: how many folds it is."""
    from embedprobe.core.selection import LOSO

    if config["benchmarks"][benchmark]["folds"] == LOSO and (benchmark, dataset) not in _WARNED:
        _WARNED.add((benchmark, dataset))
        count = exit_on_error(fold_count, config, benchmark, dataset)
        print(f"plan: {benchmark}: {dataset} LOSO ({count}): one fold per subject",
              file=sys.stderr)


def benchmark_fold_results(config: dict, roots: dict, benchmark: str) -> list[str]:
    """Every probe fold of a benchmark, over its datasets: what its memory panel waits for."""
    return [path for dataset in selected(config, benchmark, "datasets")
            for path in fold_results(config, roots, benchmark, dataset)]
