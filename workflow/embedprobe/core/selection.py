"""What a run selects of the configured benchmarks: some models, some datasets, some folds, and
the capped smoke run. The config keys (defaults and comments in the schema):

- `only_models: [a, b]`, `only_datasets: [x]`: every benchmark of the run keeps only these
  (`models:` and `datasets:` themselves hold the definitions, so the selection has its own key);
- `folds: [0, 2]` (or `0,2`, or `debug`: fold 0 only): only these probe folds are planned; the
  fold count of each benchmark (what results.tsv's `folds` column counts against) stays;
- `limit_batches: N`: a capped smoke run: embed stops after N batches of windows spread over the
  subjects (pipeline/embed.capped_rows), the probes fit on them, and the roots it writes
  (cache_root, results_root) become siblings `<root>_limited` (core/paths.limited_roots);
- `strict: true`: a skip known before running (data missing, weights absent) stops the plan,
  and so does a dataset with some recordings incomplete (datasets/registry.partial_allowed).

Only the standard library and core here: the Snakefile's parse and every job import it.
"""

from __future__ import annotations

import re

from embedprobe.core.errors import UsageError

# Keys that choose what runs, not how a job computes: never part of a job's config slice, so a
# selection reruns no finished job (limit_batches is: embed reads it, and the roots differ).
SELECTION_KEYS = ("only_models", "only_datasets", "folds", "strict")
DEBUG_FOLDS = "debug"
FOLDS_FIX = "write folds=debug (fold 0), folds=0,2 or folds=[0,2] (folds count from 0)"


def in_job_config(key: str, value) -> bool:
    """Whether a top-level setting belongs in a job's config slice: not the selection, and
    limit_batches only when set (so an uncapped run's slices, and its jobs, stay as they were)."""
    return key not in SELECTION_KEYS and not (key == "limit_batches" and value is None)


def name_list(config: dict, key: str) -> list[str] | None:
    """only_models / only_datasets as a list (`a,b` from the command line too), model aliases
    as their ids (core/model_aliases.py); None: all."""
    names = _listed(config, key)
    if names is None or key != "only_models":
        return names
    from embedprobe.core.model_aliases import expand_models

    return expand_models(names, config.get("models", {}), "config only_models")


def _listed(config: dict, key: str) -> list[str] | None:
    """The names as written: a list, or `a,b`."""
    value = config.get(key)
    if value is None:
        return None
    names = value.split(",") if isinstance(value, str) else list(value)
    return [str(n).strip() for n in names if str(n).strip()]


def parse_folds(value) -> list[int] | None:
    """`folds` as sorted fold numbers: None (every fold), `debug` (fold 0), 2, `0,2`, [0, 2]
    (snakemake's --config hands a list's items over as strings: ['0', '2'])."""
    if value is None:
        return None
    if isinstance(value, str) and value.strip().lower() == DEBUG_FOLDS:
        return [0]
    items = value.split(",") if isinstance(value, str) else (
        value if isinstance(value, list) else [value])
    folds = set()
    for item in items:
        text = str(item).strip()
        if isinstance(item, bool) or not re.fullmatch(r"\d+", text):
            raise UsageError(f"config folds: {value!r} is not a list of fold numbers",
                             fix=FOLDS_FIX)
        folds.add(int(text))
    if not folds:
        raise UsageError(f"config folds: {value!r} names no fold", fix=FOLDS_FIX)
    return sorted(folds)


def check_misplaced(config: dict) -> None:
    """`--config models=[a]` replaces the model definitions with a list: say which key selects."""
    for kind in ("models", "datasets"):
        value = config.get(kind)
        if isinstance(value, (list, str)):
            names = ",".join(map(str, value)) if isinstance(value, list) else value
            raise UsageError(
                f"config {kind}: {value!r} would replace the {kind[:-1]} definitions "
                f"(config/{kind}.yaml)",
                fix=f"to run only some {kind}, set only_{kind} instead: --config "
                    f"only_{kind}=[{names}]")


def check_selection(config: dict) -> None:
    """The selection's names are defined in the config, its folds are fold numbers, and it
    leaves some benchmark something to run. Fold ranges are checked per benchmark
    (benchmark_folds), when a benchmark of the run needs them."""
    from embedprobe.core.config import closest

    for kind in ("models", "datasets"):
        defined = config.get(kind, {})
        listed = _listed(config, f"only_{kind}")
        if listed == []:
            raise UsageError(f"config only_{kind} is empty",
                             fix=f"name some {kind}, or leave only_{kind} out to run them all")
        if kind == "models":
            name_list(config, "only_models")  # an unknown name or alias: its usage error
            continue
        for name in listed or ():
            if name not in defined:
                raise UsageError(
                    f"config only_{kind} names unknown {kind[:-1]} '{name}'"
                    f"{closest(name, defined)}",
                    fix=f"use one of: {', '.join(sorted(defined))} (config/{kind}.yaml)")
    parse_folds(config.get("folds"))
    if not any(has_work(config, b) for b in config.get("benchmarks", {})):
        raise UsageError(f"{describe(config)} selects nothing of any benchmark",
                         fix="choose models and datasets that some benchmark of "
                             "config/benchmarks.yaml names")


def selected(config: dict, benchmark: str, kind: str) -> list[str]:
    """The benchmark's models or datasets (kind) that the run selects, in the benchmark's order."""
    from embedprobe.core.variants import split_variant

    listed = config["benchmarks"][benchmark][kind]
    chosen = name_list(config, f"only_{kind}")
    # a variant's model id (`token_flattening/m`) is chosen with its model
    return [n for n in listed if chosen is None or n in chosen or split_variant(n)[1] in chosen]


def has_work(config: dict, benchmark: str) -> bool:
    """Whether the selection leaves the benchmark a model and a dataset."""
    return bool(selected(config, benchmark, "models") and selected(config, benchmark, "datasets"))


LOSO = "loso"


def fold_count(config: dict, benchmark: str, dataset: str | None = None) -> int | str:
    """How many folds the benchmark has on the dataset: its `folds`, or under `folds: loso`
    one per subject: the dataset entry's `subjects`, else its generator's (a look-alike),
    known before any file is read. Without a dataset, `loso` stays `loso`."""
    n_folds = config["benchmarks"][benchmark]["folds"]
    if n_folds != LOSO or dataset is None:
        return n_folds
    entry = config["datasets"][dataset]
    subjects = entry.get("subjects") or (entry.get("generator") or {}).get("subjects")
    if not subjects:
        raise UsageError(f"benchmark '{benchmark}' leaves one subject out (folds: loso), but "
                         f"dataset '{dataset}' does not say how many subjects it has",
                         fix=f"add `subjects: N` to datasets.{dataset} in config/datasets.yaml")
    return int(subjects)


def with_fold_count(config: dict, benchmark: str, dataset: str) -> dict:
    """The benchmark's entry with `folds: loso` replaced by the dataset's count: what a job of
    that dataset reads (smk/job_configs.py), so every fold consumer sees a number."""
    return config["benchmarks"][benchmark] | {"folds": fold_count(config, benchmark, dataset)}


def benchmark_folds(config: dict, benchmark: str, dataset: str | None = None) -> list[int]:
    """The benchmark's folds the run plans on the dataset: the selection, else every fold; a
    selected fold outside the benchmark's range is a usage error."""
    n_folds = fold_count(config, benchmark, dataset)
    if n_folds == LOSO:  # no dataset named: the selection, checked per dataset later
        return parse_folds(config.get("folds")) or []
    chosen = parse_folds(config.get("folds"))
    if chosen is None:
        return list(range(n_folds))
    outside = [k for k in chosen if k >= n_folds]
    if outside:
        # under `folds: loso` the count is the dataset's: name it
        on = (f" on dataset '{dataset}'" if dataset is not None
              and config["benchmarks"][benchmark]["folds"] == LOSO else "")
        raise UsageError(
            f"config folds: fold {', '.join(map(str, outside))} is outside benchmark "
            f"'{benchmark}'{on} ({n_folds} folds: 0-{n_folds - 1})",
            fix=f"choose folds from 0 to {n_folds - 1}, e.g. folds=debug (fold 0)")
    return chosen


def fold_selection(config: dict, benchmark: str, dataset: str | None = None) -> list[int] | None:
    """The selected folds when the run selects some (None: every fold), for aggregate: a pair
    whose selected folds all finished is `partial`, not failed."""
    if config.get("folds") is None:
        return None
    return benchmark_folds(config, benchmark, dataset)


def describe(config: dict) -> str:
    """The selection as the settings that make it, e.g. `only_models=biot_random folds=debug`."""
    parts = [f"{key}={','.join(name_list(config, key))}"
             for key in ("only_models", "only_datasets") if config.get(key) is not None]
    if config.get("folds") is not None:
        value = config["folds"]
        parts.append("folds=" + (",".join(map(str, value)) if isinstance(value, list) else
                                 str(value)))
    return " ".join(parts) or "the run"
