"""The Python API: the tables the commands print, as pandas DataFrames.

    from embedprobe.api import tables

    tables.results("demo")                    # embedprobe results demo --format json
    tables.results("demo", per_fold=True)     # ... --per-fold
    tables.status("demo")                     # embedprobe status demo --format json
    tables.plan("demo")                       # the jobs `snakemake -n demo` would start
    tables.check("demo")                      # the pairs' check JSONs (results/check/)
    tables.memory()                           # the runs table (results/memory/runs.tsv)
    tables.data_status(["demo"])              # embedprobe data status demo --format json
    tables.listing("models")                  # embedprobe list models --format json

A frame's rows are the objects the command's `--format json` prints (a test keeps the two
equal). Every function takes the settings as the commands do: `configfile=[...]` (like
`--configfile`) and `config=["KEY=VALUE", ...]` (like `--config`); the roots come from them or
from the EMBEDPROBE_*_ROOT variables. A usage error (an unknown benchmark, no results yet) is
raised as `embedprobe.core.errors.UsageError`, whose `fix` says what to run.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from embedprobe.core.config import check_names, closest, load_config, lookup, resolve_roots
from embedprobe.core.errors import UsageError
from embedprobe.core.overrides import apply_overrides
from embedprobe.core.paths import output_path
from embedprobe.core.variants import embedding_id


def settings(configfile=(), config=()) -> tuple[dict, dict]:
    """(the checked config, its roots): config/*.yaml with the overrides over it."""
    merged = apply_overrides(load_config(), list(configfile), list(config))
    check_names(merged)
    return merged, resolve_roots(merged)


# ------------------------------------------------------------------------- the records


def result_records(config: dict, roots: dict, benchmark: str, per_fold: bool = False,
                   reference: str | Path | None = None, configfile=(), assignments=()
                   ) -> tuple[list[dict], list[str], object]:
    """(rows, notes, the benchmark's task): what `embedprobe results` prints; with no results
    yet, the fix is the snakemake command with the same --configfile and --config."""
    from embedprobe.reporting.results import fold_rows, read_reference, result_rows
    from embedprobe.tasks.registry import benchmark_task

    bench = lookup(config, "benchmarks", benchmark)
    task = benchmark_task(config, benchmark)
    published = read_reference(Path(reference), task.metrics) if reference else None
    rows, notes = (fold_rows if per_fold else result_rows)(benchmark, bench, task, roots,
                                                          published, configfile, assignments)
    return rows, notes, task


def known_target(config: dict, target: str) -> str:
    """A benchmark, a target group or `all`; another name is a usage error."""
    targets = {*config["benchmarks"], *(config.get("target_groups") or {}), "all"}
    if target not in targets:
        raise UsageError(f"unknown target '{target}'{closest(target, targets)}",
                         fix=f"use one of: {', '.join(sorted(targets))} (a benchmark of "
                             "config/benchmarks.yaml, a target group, or all)")
    return target


def status_records(config: dict, roots: dict, target: str = "all", scheduler: bool = True,
                   configfile=(), assignments=(), workdir: Path | None = None
                   ) -> tuple[list[dict], list[str]]:
    """(one row per job of the target with its verdict, notes): `embedprobe status`."""
    from embedprobe.smk.status import job_status

    return job_status(known_target(config, target), config, roots,
                      Path(workdir or Path.cwd()), configfile, assignments, scheduler)


def availability_records(config: dict, roots: dict, names=(),
                         invocation: list[str] | None = None) -> list[dict]:
    """One row per dataset the names select: what `embedprobe data status --format json`
    prints (a fix that is a command repeats `invocation`, the command typed, if any)."""
    from embedprobe.datasets.availability import availability

    return availability(config, roots, list(names), invocation)


def check_records(config: dict, roots: dict, benchmark: str, dataset: str | None = None,
                  model: str | None = None) -> list[dict]:
    """The check JSON of every pair of the benchmark that has one (results/check/), as
    `embedprobe check --format json` prints a pair."""
    from embedprobe.pipeline.check import read_result

    bench = lookup(config, "benchmarks", benchmark)
    rows = []
    for d in [dataset] if dataset else bench["datasets"]:
        for m in [model] if model else bench["models"]:
            path = output_path("check", roots, dataset=d,
                               model=embedding_id(config["models"], m))
            if path.is_file():
                rows.append(read_result(path).as_dict())
    return rows


# ------------------------------------------------------------------------- the frames


def results(benchmark: str, per_fold: bool = False, reference: str | Path | None = None,
            configfile=(), config=()) -> pd.DataFrame:
    """One row per (dataset, model) of the benchmark (per fold with `per_fold`): the headline
    mean and SD, folds done/expected, status, chance level (None where the headline has
    none), normalised score (None unless the task sets a dummy); `reference` (a TSV/CSV of
    dataset, model, metric, value) adds `reference_<metric>` columns."""
    rows, _, _ = result_records(*settings(configfile, config), benchmark, per_fold, reference,
                                configfile, config)
    return pd.DataFrame(rows)


def status(target: str = "all", scheduler: bool = True, configfile=(), config=(),
           workdir: str | Path | None = None) -> pd.DataFrame:
    """One row per job of the target's plan (index, check, preflight, embed, probe, aggregate,
    summary, leaderboard): rule, wildcards, verdict, detail, fix, job id, output."""
    loaded, roots = settings(configfile, config)
    rows, _ = status_records(loaded, roots, target, scheduler, configfile, config, workdir)
    return pd.DataFrame(rows)


def plan(target: str = "all", configfile=(), config=(),
         workdir: str | Path | None = None) -> pd.DataFrame:
    """One row per job `snakemake -n TARGET` would start (empty when all is up to date):
    rule, jobid, local, the wildcards, output, reason, threads, resources."""
    from embedprobe.smk.status import planned_jobs

    loaded, _ = settings(configfile, config)
    return pd.DataFrame(planned_jobs(known_target(loaded, target), Path(workdir or Path.cwd()),
                                     configfile, config))


def check(benchmark: str, dataset: str | None = None, model: str | None = None,
          configfile=(), config=()) -> pd.DataFrame:
    """The check result of every pair of the benchmark that has been checked."""
    return pd.DataFrame(check_records(*settings(configfile, config), benchmark, dataset, model))


def data_status(names=(), configfile=(), config=()) -> pd.DataFrame:
    """One row per dataset (datasets, or those of benchmarks and target groups; none: every
    one): state (found, partial, missing, error), complete recordings against the expected
    count, the folder looked in, what is wrong and the fix."""
    return pd.DataFrame(availability_records(*settings(configfile, config), names))


def listing(kind: str, configfile=(), config=()) -> pd.DataFrame:
    """One row per benchmark, model or dataset of the config (`kind`): what `embedprobe list
    KIND --format json` prints."""
    from embedprobe.api.listings import listing as rows_of

    return pd.DataFrame(rows_of(*settings(configfile, config), kind))


def memory(configfile=(), config=()) -> pd.DataFrame:
    """The runs table: one row per embed and probe attempt (estimate, request, measured peak)."""
    from embedprobe.memory.report import read_runs

    _, roots = settings(configfile, config)
    return read_runs(output_path("runs", roots))
