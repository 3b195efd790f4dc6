"""`embedprobe <step> ...`: the commands the Snakemake rules run (and users may run by hand).

Each step gets its configuration as JSON (`--job-config`, written by the rules from the merged
Snakemake config) or, run by hand, from config/*.yaml with the roots from the environment.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from embedprobe.core.config import (
    check_moved_keys,
    check_names,
    fill_defaults,
    load_config,
    lookup,
    resolve_roots,
)
from embedprobe.core.errors import (
    EmbedprobeError,
    UsageError,
    remove_failure_record,
    startup_fields,
    write_failure_record,
)
from embedprobe.core.overrides import apply_overrides, for_snakemake, split_overrides
from embedprobe.core.paths import output_path
from embedprobe.core.selection import with_fold_count
from embedprobe.core.units import MIB
from embedprobe.measure.allocator import use_one_malloc_arena


def job_config(args) -> tuple[dict, dict]:
    """The rules' job config (`--job-config`: a JSON file, or JSON text); else config/*.yaml
    with --configfile and --config applied over it as Snakemake applies them, then checked."""
    if args.job_config:
        text = args.job_config
        if not text.lstrip().startswith("{"):
            text = Path(text).read_text()
        config = apply_overrides(json.loads(text), args.configfile, args.config)
        check_moved_keys(config)  # an old spelling would otherwise run on the defaults
        fill_defaults(config)
        return config, resolve_roots(config)
    config = apply_overrides(load_config(), args.configfile, args.config)
    check_names(config)
    benchmark, dataset = getattr(args, "benchmark", None), getattr(args, "dataset", None)
    if benchmark in config["benchmarks"] and dataset in config["datasets"]:
        # a step run by hand sees `folds: loso` as its dataset's count, as a job's slice does
        config["benchmarks"][benchmark] = with_fold_count(config, benchmark, dataset)
    return config, resolve_roots(config)


def cmd_demo_data(args, config, roots):
    from embedprobe.datasets.registry import dataset_root, generator_for

    entry = lookup(config, "datasets", args.dataset)
    generator_for(config, args.dataset).write_lookalike(
        dataset_root(config, roots, args.dataset), entry.get("generator", {}))


def cmd_index(args, config, roots):
    from embedprobe.pipeline.context import DatasetContext
    from embedprobe.pipeline.index import build_index, write_index, write_quality

    context = DatasetContext.build(config, roots, args.dataset)
    context.require_data(args.invocation)
    context.use_header_cache()  # a second index reads no unchanged header again
    quality: list = []
    table = build_index(context, quality, args.invocation)
    context.keep_headers()  # for check, preflight, embed and the next index
    write_index(table, Path(args.out))
    # beside the index: one row per flagged channel (the summary lists them)
    write_quality(quality, Path(args.quality or Path(args.out).with_suffix(".quality.tsv")))
    counts = table["label"].value_counts().sort_index().to_dict()
    print(f"{args.dataset}: {table['recording'].nunique()} recordings, "
          f"{table['subject'].nunique()} subjects, {len(table):,} windows, "
          f"labels {counts}", file=sys.stderr)


def estimate_for(args, job_key: str) -> dict:
    """This job's entry of the preflight JSON, or {} when run without one."""
    from embedprobe.memory.records import job_estimate

    return job_estimate(args.estimate, job_key) if getattr(args, "estimate", None) else {}


def recorded(args, roots, rule: str, job_key: str, dataset: str, model: str,
             estimate_key: str | None = None):
    """The runs-table record of this attempt (measured peak beside the estimate of
    `estimate_key`, by default the job's own)."""
    from embedprobe.memory.runs import JobRecord

    estimate = estimate_for(args, estimate_key or job_key)
    total = estimate.get("total")
    return JobRecord(roots["results_root"], rule, job_key, dataset, model, args.attempt,
                     round(total / MIB, 1) if total else None,
                     args.request_mb or estimate.get("request_mb"))


def cmd_preflight(args, config, roots):
    from embedprobe.memory.preflight import run_preflight, run_probe_preflight
    from embedprobe.pipeline.context import DatasetContext

    paths = Path(args.check), Path(args.index), Path(args.out)
    if args.benchmark:
        run_probe_preflight(config, roots, args.benchmark, args.dataset, args.model, *paths)
    else:
        context = DatasetContext.build(config, roots, args.dataset)
        context.use_header_cache()  # it sizes the job from every recording's header
        run_preflight(context, args.model, *paths)


def embed_knobs(args, config) -> dict:
    """The embed job's batch size and readers: what preflight decided for the pair (the embed
    job's `knobs` in its JSON, --estimate); `--batch-size` only as the user's explicit
    override. Without a preflight JSON (embed run by hand) the config's requested values
    (embed.batch_size, embed.reader_threads), which nothing has sized to the memory limit."""
    if getattr(args, "estimate", None):
        knobs = estimate_for(args, "embed")["knobs"]
        decided = {"batch_size": knobs["batch_size"], "n_workers": knobs["n_workers"]}
    else:
        requested = config["embed"]
        decided = {"batch_size": requested["batch_size"],
                   "n_workers": requested["reader_threads"]}
        print(f"note: no preflight JSON (--estimate): batch size {decided['batch_size']} and "
              f"{decided['n_workers']} readers as the config asks, not sized to the memory "
              "limit", file=sys.stderr)
    if args.batch_size:
        decided["batch_size"] = args.batch_size
    return decided


def cmd_embed(args, config, roots):
    from embedprobe.memory.records import shard_job_key

    # The record starts before torch is imported: a job killed while importing still has one.
    # A shard's estimate is the pair's (`embed`); its record is its own.
    key = shard_job_key(args.shard, args.shards) if args.shards else "embed"
    with recorded(args, roots, "embed", key, args.dataset, args.model, estimate_key="embed"):
        from embedprobe.pipeline.context import DatasetContext
        from embedprobe.pipeline.embed import EmbedSettings, run_embed

        knobs = embed_knobs(args, config)
        settings = EmbedSettings.from_environment(
            batch_size=knobs["batch_size"],
            reader_threads=knobs["n_workers"],
            # a capped run (config limit_batches) writes to its own roots
            limit_batches=args.limit_batches or config["limit_batches"],
            inject_oom_above=args.inject_oom_above,
            shard=(args.shard, args.shards) if args.shards else None,
        )
        if args.threads:
            import torch

            torch.set_num_threads(args.threads)
        run_embed(DatasetContext.build(config, roots, args.dataset), args.model,
                  Path(args.index), Path(args.out), settings)


def cmd_embed_join(args, config, roots):
    from embedprobe.pipeline.store_shards import join_shards

    join_shards([Path(p) for p in args.shards], Path(args.out))


def cmd_probe(args, config, roots):
    from embedprobe.memory.records import job_key as key_of

    job_key = key_of(args.benchmark, args.fold)
    with recorded(args, roots, "probe", job_key, args.dataset, args.model):
        from embedprobe.pipeline.fold_job import run_probe_fold

        knobs = estimate_for(args, job_key).get("knobs", {})
        run_probe_fold(config, roots, args.benchmark, args.dataset, args.model,
                       Path(args.embeddings), args.fold, Path(args.out), Path(args.predictions),
                       n_jobs=knobs.get("n_jobs"), streamed=bool(knobs.get("streamed")))


def cmd_aggregate(args, config, roots):
    from embedprobe.reporting.aggregate import aggregate_folds, format_table, write_results
    from embedprobe.tasks.registry import benchmark_task

    task = benchmark_task(config, args.benchmark)
    bench = lookup(config, "benchmarks", args.benchmark)
    not_run, listed = {}, {}
    if args.not_run:  # pairs skipped before running: {"dataset": d, "pairs": {model: ...}}
        listed = json.loads(Path(args.not_run).read_text())
        not_run = {(listed["dataset"], m): v for m, v in listed["pairs"].items()}
    table = aggregate_folds([Path(p) for p in args.folds], task, bench["folds"], not_run,
                            selected=listed.get("folds"))  # the run's folds (config folds)
    write_results(table, Path(args.out))
    print(format_table(table, task, args.benchmark))


def cmd_check(args, config, roots):
    """One pair (the workflow's check job) or every pair of a benchmark (the table).

    Results go to stdout (table, JSON or CSV; the summary line closes the table, else it goes to
    stderr) and each pair's JSON to results/check/; closing `note:`/`fix:` lines go to stderr.
    """
    import time

    from embedprobe.core.model_aliases import expand_models
    from embedprobe.memory.calibration import table_baseline_of_check
    from embedprobe.pipeline.check import (
        RULED_OUT,
        CheckResult,
        check_pair,
        closing_notes,
        exit_code,
        format_table,
        summary_line,
        to_csv,
        write_result,
    )
    from embedprobe.pipeline.context import DatasetContext
    from embedprobe.smk.plan import benchmark_stores, task_rule_outs

    started = time.monotonic()
    if args.benchmark:
        bench = lookup(config, "benchmarks", args.benchmark)
        datasets = [args.dataset] if args.dataset else bench["datasets"]
        models = (expand_models(args.model.split(","), config["models"], "--model",
                                config["reference_models"]) if args.model else bench["models"])
        models = benchmark_stores(config, args.benchmark, models)
        ruled_out = task_rule_outs(config, args.benchmark)  # by the reference, for its task
    else:
        ruled_out = {}
        datasets = [args.dataset]
        models = expand_models(args.model.split(","), config["models"], "--model",
                               config["reference_models"])
    if args.out and len(datasets) * len(models) != 1:
        raise UsageError("--out names one pair's JSON, but this check has "
                         f"{len(datasets) * len(models)} pairs",
                         fix="leave out --out: each pair's JSON goes to results/check/")
    results = []
    for dataset in datasets:
        context = DatasetContext.build(config, roots, dataset)  # one for all its models
        for model in models:
            if model in ruled_out:  # as the plan leaves it out: no batch to push
                result = CheckResult(dataset, model).stop(
                    RULED_OUT, "task", ruled_out[model]["reason"], ruled_out[model]["fix"])
            else:
                result = check_pair(context, model, args.batch_size, invocation=args.invocation)
            result.table_baseline_bytes = table_baseline_of_check(config, result)
            results.append(result)
            write_result(result, Path(args.out) if args.out else
                         output_path("check", roots, dataset=dataset, model=model))
            if args.out and result.status != "ok":  # the workflow's job: Snakemake removes
                # its JSON as it fails, the failure record stays (the results table reads it)
                failure = EmbedprobeError(result.reason, result.fix or None)
                failure.category = result.category or result.status
                write_failure_record(args.out, failure, "check")
    if args.format == "json":
        print(json.dumps([r.as_dict() for r in results], indent=2))
    elif args.format == "csv":
        print(to_csv(results), end="")
    else:
        print(format_table(results))
    print(summary_line(results, time.monotonic() - started),
          file=sys.stdout if args.format == "table" else sys.stderr)
    for line in closing_notes(results):
        print(line, file=sys.stderr)
    return exit_code(results, args.strict)


def cmd_summary(args, config, roots):

    from embedprobe.reporting.aggregate import read_results
    from embedprobe.reporting.figures import plot_scores
    from embedprobe.reporting.summary import read_quality, summary_markdown
    from embedprobe.tasks.registry import benchmark_task

    task = benchmark_task(config, args.benchmark)
    tables = {}
    for path in args.tables:
        table = read_results(path)
        tables[str(table["dataset"].iloc[0]) if len(table) else Path(path).parent.name] = table
    quality = read_quality(args.quality or ())  # the datasets' index *.quality.tsv
    markdown = summary_markdown(tables, task, args.benchmark, quality)
    if args.memory:  # the benchmark's memory table (memory_panel's summary.md)
        from embedprobe.memory.report import as_section

        markdown += as_section(Path(args.memory).read_text())
    Path(args.out).write_text(markdown)
    plot_scores(tables, task, args.benchmark, Path(args.figure))
    print(markdown)


def cmd_leaderboard(args, config, roots):
    from embedprobe.reporting.leaderboard import column_benchmark, leaderboard_markdown, read_tables
    from embedprobe.tasks.registry import benchmark_task

    tables = read_tables(args.tables)
    tasks = {key: benchmark_task(config, column_benchmark(key)) for key, _ in tables}
    markdown = leaderboard_markdown(args.target, tables, tasks)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(markdown)
    print(markdown)


def cmd_pair_figure(args, config, roots):
    from embedprobe.tasks.registry import benchmark_task

    benchmark_task(config, args.benchmark).plot_pair(
        args.figure, [Path(p) for p in args.predictions], args.title, Path(args.out))


def cmd_memory(args, config, roots):
    """Estimate, request and measured peak per rule and model, from the runs table."""
    from embedprobe.memory.report import memory_report

    bench = lookup(config, "benchmarks", args.benchmark) if args.benchmark else None
    text = memory_report(args.results_root or roots["results_root"], args.benchmark, bench,
                         Path(args.figure) if args.figure else None,
                         Path(args.markdown) if args.markdown else None,
                         models=config.get("models"))
    print(text, end="")


def cmd_calibrate(args, config, roots):
    """Refit the memory calibration from the runs table; the drift to stdout, notes to stderr."""
    import shlex

    from embedprobe.memory.calibration import calibration_path, load_calibration
    from embedprobe.memory.estimate import JOB_TYPES
    from embedprobe.memory.refit import calibrate_from_runs, drift_lines

    unknown = sorted(set(args.job or ()) - set(JOB_TYPES))
    if unknown:
        raise UsageError(f"unknown job type {', '.join(unknown)}",
                         fix=f"use one of: {', '.join(JOB_TYPES)}")
    base = Path(args.calibration or calibration_path(config))
    out = Path(args.out or output_path("calibration_refit", roots))
    outcomes, joined, lines = calibrate_from_runs(
        [Path(p) for p in args.from_runs], Path(args.preflight_root) if args.preflight_root
        else None, out, base, args.job)
    used = sum(len(runs) for runs in joined.runs.values())
    print(f"{used} finished runs joined with their preflight inputs"
          + "".join(f"; {n} left out: {why}" for why, n in joined.skipped.items()))
    print(f"\ndrift against {base}:")
    print("\n".join(drift_lines(load_calibration(base), outcomes)))
    print()
    print("\n".join(lines))
    print(f"\nwrote {out}")
    for outcome in outcomes:
        if not outcome.refitted:
            print(f"note: {outcome.job} keeps the constants of {base.name}: {outcome.reason}",
                  file=sys.stderr)
    setting = for_snakemake(f"memory.calibration={out}")  # memory={calibration: <out>}
    print(f"note: preflight uses it once the config names it: snakemake ... --config "
          f"{shlex.quote(setting)} (or memory: calibration: in "
          "config/config.yaml)", file=sys.stderr)


def cmd_fetch_weights(args, config, roots):
    """Download the named hub checkpoints (default: every one in models.yaml; aliases and the
    reference's names as everywhere models are named) into <weights_root>/hub; a checkpoint
    already fetched and intact is not downloaded again."""
    import os

    from embedprobe.core.model_aliases import expand_models
    from embedprobe.models.registry import fetch_models

    os.environ.pop("HF_HUB_OFFLINE", None)  # the one step that may reach the hub
    models = expand_models(args.models, config["models"], "fetch-weights",
                           config["reference_models"]) if args.models else None
    lines = fetch_models(config, roots, models)
    for line in lines:
        print(line)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text("\n".join(lines) + "\n")
    return 0


def cmd_results(args, config, roots):
    """A benchmark's results, one row per pair (or per fold): the table to stdout, notes to
    stderr."""
    from embedprobe.api.tables import result_records
    from embedprobe.reporting.results import format_rows

    rows, notes, task = result_records(config, roots, args.benchmark, args.per_fold,
                                       args.reference, args.configfile, args.config)
    print(format_rows(rows, task, args.format, args.per_fold))
    for note in notes:
        print(note, file=sys.stderr)


def cmd_rescore(args, config, roots):
    """Every fold's metrics from its saved predictions, the results tables rebuilt (exit 1
    when a fold could not be rescored: listed with the command that probes it again)."""
    from embedprobe.reporting.rescore import format_rescored, rescore_benchmark
    from embedprobe.tasks.registry import benchmark_task

    task = benchmark_task(config, args.benchmark)
    done = rescore_benchmark(args.benchmark, task, roots, args.datasets or (),
                             args.models or ())
    print(format_rescored(done, args.benchmark, task.metrics[0]))
    return 1 if done.not_rescored else 0


def cmd_status(args, config, roots):
    """Each job of a target's plan with its verdict (done, failed, running, ...)."""
    from embedprobe.api.tables import status_records
    from embedprobe.smk.status import format_status

    rows, notes = status_records(config, roots, args.target, not args.no_scheduler,
                                 args.configfile or (), args.config or ())
    print(json.dumps(rows, indent=2) if args.format == "json" else format_status(rows))
    for note in notes:
        print(note, file=sys.stderr)


def run_target(args, config) -> str:
    """resume's and submit's target: a benchmark, a target group, all, or an output path."""
    from embedprobe.api.tables import known_target

    return args.target if "/" in args.target else known_target(config, args.target)


def cmd_resume(args, config, roots):
    """Wait for what an earlier controller left on the scheduler, keep its finished outputs,
    then become Snakemake (smk/resume.py)."""
    import os

    from embedprobe.smk.resume import profile_folder, resume

    target = run_target(args, config)
    profile = profile_folder(args.profile, "resume", target)
    argv = resume(target, profile, Path.cwd(), args.configfile, args.config,
                  args.snakemake_args, args.unlock, args.poll)
    print(f"resume: starting {' '.join(argv)}", file=sys.stderr, flush=True)
    os.execv(argv[0], argv)


def cmd_submit(args, config, roots):
    """`resume` as a SLURM job of the profile's partition: the login session may close."""
    from embedprobe.smk.resume import profile_folder, submit

    target = run_target(args, config)
    profile = profile_folder(args.profile, "submit", target)
    job = submit(target, profile, Path.cwd(), args.mem_mb or config["memory"]["small_job_mb"],
                 args.time, args.configfile, args.config, args.snakemake_args, args.unlock)
    print(f"submitted controller job {job} for {target} (SLURM job name embedprobe_controller)"
          f"\nfollow: embedprobe status {target}   # or: tail -f "
          f".snakemake/slurm_logs/controller/{job}.log\nafter it ended early (time limit, "
          "lost node): the same command again waits for its jobs and keeps their results")
    return 0


def cmd_data(args, config, roots):
    """`data status`: each dataset's state, recordings, folder and fix (exit 1 unless every
    one is found). `data download`: the named datasets fetched from their publishers, checked
    (datasets/download.py has the exit codes)."""
    if args.data_action == "download":
        from embedprobe.datasets.download import download

        return download(config, roots, args.names, args.dry_run)
    from embedprobe.api.tables import availability_records
    from embedprobe.datasets.availability import exit_code, format_availability

    rows = availability_records(config, roots, args.names, args.invocation)
    print(json.dumps(rows, indent=2) if args.format == "json" else format_availability(rows))
    return exit_code(rows)


def cmd_list(args, config, roots):
    """The benchmarks, models, datasets or reference checkpoints of the config, a row
    each."""
    from embedprobe.api.listings import format_listing, listing

    rows = listing(config, roots, args.kind)
    print(json.dumps(rows, indent=2) if args.format == "json" else format_listing(args.kind, rows))
    return 0


COMMANDS = {
    "fetch-weights": cmd_fetch_weights,
    "demo-data": cmd_demo_data,
    "index": cmd_index,
    "embed": cmd_embed,
    "embed-join": cmd_embed_join,
    "probe": cmd_probe,
    "aggregate": cmd_aggregate,
    "check": cmd_check,
    "preflight": cmd_preflight,
    "summary": cmd_summary,
    "pair-figure": cmd_pair_figure,
    "leaderboard": cmd_leaderboard,
    "memory": cmd_memory,
    "calibrate": cmd_calibrate,
    "results": cmd_results,
    "rescore": cmd_rescore,
    "status": cmd_status,
    "resume": cmd_resume,
    "submit": cmd_submit,
    "data": cmd_data,
    "list": cmd_list,
}


def add_accounting(p: argparse.ArgumentParser) -> None:
    p.add_argument("--estimate", help="the job's preflight JSON (knobs and estimate): the "
                                      "pair's for embed, the benchmark's for a probe fold")
    p.add_argument("--attempt", type=int, default=1, help="the scheduler's attempt number")
    p.add_argument("--request-mb", type=int, help="the memory this attempt was given")


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="embedprobe", description=__doc__)
    top.add_argument("--job-config", help="the configuration: a JSON file (the rules pass "
                                          "one) or JSON text")
    top.add_argument("--configfile", action="append", metavar="FILE",
                     help="a YAML file merged over config/*.yaml (may be given again)")
    top.add_argument("--config", nargs="+", metavar="KEY=VALUE",
                     help="settings over config/*.yaml, as snakemake --config takes them; "
                          "values are YAML, dotted keys set nested values (embed.batch_size=16)")
    sub = top.add_subparsers(dest="command", required=True)

    p = sub.add_parser("fetch-weights", help="download hub checkpoints (hf:org/name) into "
                                             "weights_root/hub; run once on a node with internet")
    p.add_argument("models", nargs="*", metavar="MODEL", help="model ids (default: every hub "
                                                              "checkpoint in models.yaml)")
    p.add_argument("--out", help="also write the report lines here (the weights rule's output)")

    p = sub.add_parser("demo-data", help="write a dataset's look-alike in its "
                                        "publisher's layout (its `generator:` settings)")
    p.add_argument("--dataset", required=True)

    p = sub.add_parser("index", help="list every labelled window of a dataset")
    p.add_argument("--dataset", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--quality", help="the data-quality table (default: OUT with the suffix "
                                     ".quality.tsv)")

    p = sub.add_parser("embed", help="embed every window into the HDF5 store (resumable)")
    for name in ("--dataset", "--model", "--index", "--out"):
        p.add_argument(name, required=True)
    p.add_argument("--batch-size", type=int,
                   help="override the batch size preflight chose (the --estimate JSON's)")
    p.add_argument("--threads", type=int)
    p.add_argument("--limit-batches", type=int, help="smoke test: stop after N batches")
    p.add_argument("--inject-oom-above", type=int,
                   help="fault injection: batches larger than this raise torch.OutOfMemoryError")
    p.add_argument("--shards", type=int, help="embed one of this many shards of the windows "
                                              "(embed.shards; the store is then joined)")
    p.add_argument("--shard", type=int, default=0, help="which shard, from 0 (with --shards)")
    add_accounting(p)

    p = sub.add_parser("embed-join", help="the store the probes read, over its shard files "
                                          "(an HDF5 virtual dataset; no row is copied)")
    p.add_argument("shards", nargs="+", metavar="SHARD", help="the shard files, in order")
    p.add_argument("--out", required=True)

    p = sub.add_parser("preflight", help="predict the peak memory of a pair's embed job, or "
                                         "with --benchmark of that benchmark's probe folds")
    for name in ("--dataset", "--model", "--check", "--index", "--out"):
        p.add_argument(name, required=True)
    p.add_argument("--benchmark", help="size this benchmark's probe folds on the pair "
                                       "(default: the pair's embed job)")

    p = sub.add_parser("probe", help="fit and score the probe on one fold")
    for name in ("--benchmark", "--dataset", "--model", "--embeddings", "--out", "--predictions"):
        p.add_argument(name, required=True)
    p.add_argument("--fold", type=int, required=True)
    add_accounting(p)

    p = sub.add_parser("check", help="one real batch through each (dataset, model) pair")
    p.add_argument("benchmark_pos", nargs="?", metavar="BENCHMARK")
    p.add_argument("--benchmark")
    p.add_argument("--dataset")
    p.add_argument("--model", help="one model, or several separated by commas")
    p.add_argument("--out", help="the pair's JSON (default results/check/DATASET/MODEL.json)")
    p.add_argument("--batch-size", type=int,
                   help="check at this batch instead of the config's embed.batch_size")
    p.add_argument("--strict", action="store_true", help="a skipped pair counts as a failure")
    p.add_argument("--format", choices=("table", "json", "csv"), default="table")

    p = sub.add_parser("summary", help="a benchmark's results tables -> summary.md + figure")
    p.add_argument("--benchmark", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--figure", required=True)
    p.add_argument("--memory", help="the benchmark's memory summary.md, added as a section")
    p.add_argument("--quality", nargs="*", help="the datasets' data-quality tables (index's "
                                                ".quality.tsv)")
    p.add_argument("tables", nargs="+")

    p = sub.add_parser("leaderboard", help="one row per model, one column per benchmark "
                                           "headline, from the benchmarks' results tables")
    p.add_argument("--target", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("tables", nargs="+")

    p = sub.add_parser("pair-figure", help="a task's figure of one (dataset, model) over its "
                                           "test folds (the task's pair_figures)")
    p.add_argument("--benchmark", required=True)
    p.add_argument("--figure", required=True, help="one of the task's pair_figures")
    p.add_argument("--title", default="")
    p.add_argument("--out", required=True)
    p.add_argument("predictions", nargs="+")

    p = sub.add_parser("memory", help="estimate, request and measured peak per rule and "
                                      "model, from results/memory/runs.tsv")
    p.add_argument("--results-root", help="the results root holding memory/runs.tsv")
    p.add_argument("--benchmark", help="only the embed and probe jobs of this benchmark")
    p.add_argument("--figure", help="write the memory panel (PNG) here")
    p.add_argument("--markdown", help="write the table as markdown here")

    p = sub.add_parser("calibrate", help="refit the memory calibration from finished runs")
    p.add_argument("--from-runs", action="append", required=True, metavar="RUNS_TSV",
                   help="a runs table (results/memory/runs.tsv); may be given again")
    p.add_argument("--preflight-root", help="the preflight JSONs of the runs (default: "
                                            "preflight/ beside each runs table's memory/)")
    p.add_argument("--out", help="the calibration YAML to write (default: "
                                 "RESULTS/memory/calibration.yaml)")
    p.add_argument("--calibration", help="the table to start from and compare with "
                                         "(default: the config's memory.calibration, else "
                                         "config/memory_calibration.yaml)")
    p.add_argument("--job", action="append", help="refit only this job type (may be given "
                                                  "again); refused if it cannot be refitted")

    p = sub.add_parser("results", help="a benchmark's results per pair: headline mean +- SD, "
                                       "folds, status; chance level (1/C) and normalised "
                                       "score where the task has them")
    p.add_argument("benchmark")
    p.add_argument("--format", choices=("table", "csv", "md", "json"), default="table")
    p.add_argument("--per-fold", action="store_true", help="one row per fold")
    p.add_argument("--reference", metavar="FILE", help="published numbers to show beside ours: "
                   "a TSV (or .csv) with columns dataset, model, metric, value")

    p = sub.add_parser("rescore", help="every fold's metrics recomputed from its saved "
                                       "predictions (nothing fitted), the results tables "
                                       "rewritten, a before/after table printed")
    p.add_argument("benchmark")
    p.add_argument("--dataset", action="append", metavar="NAME", dest="datasets",
                   help="only this dataset's results (may be given again)")
    p.add_argument("--model", action="append", metavar="NAME", dest="models",
                   help="only this model's folds (may be given again)")

    p = sub.add_parser("status", help="each job of a target with its verdict: done, partial, "
                                      "failed, running, queued, exited N, stopped, removed, "
                                      "missing")
    p.add_argument("target", nargs="?", default="all",
                   help="a benchmark, a target group or all (default)")
    p.add_argument("--no-scheduler", action="store_true",
                   help="read the files only: do not ask squeue or condor_q")
    p.add_argument("--format", choices=("table", "json"), default="table")

    for name, text in (
            ("resume", "start or restart a target's run through a profile: first wait for the "
                       "jobs an earlier (killed) controller left on the scheduler and keep "
                       "their finished outputs, then run snakemake --profile P TARGET"),
            ("submit", "run `resume` as a small SLURM job (sbatch), so the login session can "
                       "close; again after that job ended, it picks up where it stopped")):
        p = sub.add_parser(name, help=text)
        p.add_argument("target", help="a benchmark, a target group, all, or an output path")
        p.add_argument("--profile", help="the Snakemake profile folder (profiles/slurm)")
        p.add_argument("--unlock", action="store_true",
                       help="no other Snakemake runs in this folder (on any host): take over "
                            "its stale lock")
        if name == "resume":
            p.add_argument("--poll", type=float, default=30.0, metavar="S",
                           help="seconds between queue checks while waiting (default 30)")
        else:
            p.add_argument("--time", help="the controller job's time limit, as sbatch takes "
                                          "it (default: the partition's); give it the run's")
            p.add_argument("--mem-mb", type=int,
                           help="the controller job's memory (default: memory.small_job_mb)")
        p.epilog = "after --: more snakemake options, passed on (e.g. -- --dry-run)"

    p = sub.add_parser("data", help="the datasets on disk: `data status` says which are where, "
                                    "`data download` fetches the open ones")
    actions = p.add_subparsers(dest="data_action", required=True)
    q = actions.add_parser("status", help="per dataset: found, partial, missing or error, its "
                                          "complete recordings against the expected count, "
                                          "the folder looked in and the fix")
    q.add_argument("names", nargs="*", metavar="NAME",
                   help="datasets, benchmarks or target groups (default: every dataset)")
    q.add_argument("--format", choices=("table", "json"), default="table")
    q = actions.add_parser("download", help="fetch datasets from their publishers (their "
                                            "`source:`), resumable and checked, into the "
                                            "folders their readers look in; on a login node, "
                                            "never inside a job")
    q.add_argument("names", nargs="+", metavar="NAME",
                   help="datasets, benchmarks or target groups")
    q.add_argument("--dry-run", action="store_true",
                   help="list what would be fetched and check the free space; fetch nothing")

    p = sub.add_parser("list", help="the config's benchmarks (task, datasets, models, folds, "
                                    "variants), models (family, weights and whether they are "
                                    "here, rate, window, aliases), datasets (format, state) or "
                                    "the reference suite's checkpoints (the model that runs "
                                    "each here, or why it cannot be had yet)")
    p.add_argument("kind", choices=("benchmarks", "models", "datasets", "reference"))
    p.add_argument("--format", choices=("table", "json"), default="table")

    p = sub.add_parser("aggregate", help="fold results -> results.tsv and a printed table")
    p.add_argument("--benchmark", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--not-run", help="JSON of the pairs skipped before running (the rule's)")
    p.add_argument("folds", nargs="*")
    return top


def main(argv=None) -> int:
    use_one_malloc_arena()  # before torch or a reader thread starts a second thread
    original = argv
    try:
        argv, configfiles, assignments = split_overrides(list(sys.argv[1:] if argv is None
                                                              else argv))
    except EmbedprobeError as exc:
        print(exc.render(), file=sys.stderr)
        return exc.exit_code
    argv, extra = (argv[:argv.index("--")], argv[argv.index("--") + 1:]) if "--" in argv \
        else (argv, [])
    args = parser().parse_args(argv)
    if extra and args.command not in ("resume", "submit"):
        parser().error(f"{args.command} takes no options after --")
    args.configfile, args.config, args.snakemake_args = configfiles, assignments, extra
    # Run by hand, a `fix:` may repeat this command with a setting; a workflow job's command
    # is not one the user typed.
    args.invocation = None if args.job_config else [
        "embedprobe", *(sys.argv[1:] if original is None else original)]
    output = getattr(args, "out", None)
    startup_crashes = 0  # start-up crashes in a row before this attempt (core/attempts.py)
    if output and getattr(args, "attempt", None):  # embed, probe: retried by Snakemake
        from embedprobe.core.attempts import begin_attempt

        start = begin_attempt(output, args.attempt)  # a retry that cannot help stops here
        if start.refusal:
            print(start.refusal, file=sys.stderr)
            return 1
        startup_crashes = start.startup_crashes
    if args.command != "fetch-weights":  # every other step loads checkpoints offline only
        from embedprobe.models.hub import go_offline

        go_offline()
    try:
        config, roots = job_config(args)
        if args.command == "check":
            args.benchmark = args.benchmark or args.benchmark_pos
            if not args.benchmark and not (args.dataset and args.model):
                raise UsageError("check needs a benchmark, or --dataset and --model",
                                 fix="embedprobe check sleep_stage   "
                                     "# or: embedprobe check --dataset D --model M")
        code = COMMANDS[args.command](args, config, roots)
    except EmbedprobeError as exc:
        print(exc.render(), file=sys.stderr)
        if output:
            write_failure_record(output, exc, args.command)
        return exc.exit_code
    except Exception as exc:
        if output:
            write_failure_record(output, exc, args.command, startup_crashes)
            crash = startup_fields(exc, startup_crashes)
            if crash:  # in words, above the traceback
                print(f"error: {crash['message']}\nfix: {crash['fix']}", file=sys.stderr)
        raise
    if output and not code:  # this step now succeeded: its earlier failure is history
        remove_failure_record(output)
    return code or 0


if __name__ == "__main__":
    sys.exit(main())
