"""What a run selects of the configured benchmarks: some models, some datasets, some folds, and
the capped smoke run. The config keys (defaults and comments in the schema):

- `only_models: [a, b]`: every benchmark of the run keeps only these models (`models:` holds
  the definitions, so the selection has its own key);
- `only_datasets`: `full` (every dataset each benchmark lists), `quick` (each benchmark's quick
  dataset: the first it lists, the reference's `--dataset single`) or dataset ids `[x]`;
- `variants`: a BCI benchmark's variants to run: `default` (its default variant, the
  reference's headline protocol: core/variants.default_variant), `all` (every one its
  `variants:` list) or variant names; a benchmark without `variants:` runs as it is;
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
SELECTION_KEYS = ("only_models", "only_datasets", "variants", "folds", "strict")
DEBUG_FOLDS = "debug"
QUICK, FULL = "quick", "full"  # only_datasets: each benchmark's first dataset, or every one
ALL_VARIANTS = "all"
FOLDS_FIX = "write folds=debug (fold 0), folds=0,2 or folds=[0,2] (folds count from 0)"


def in_job_config(key: str, value) -> bool:
    """Whether a top-level setting belongs in a job's config slice: not the selection, and
    limit_batches only when set (so an uncapped run's slices, and its jobs, stay as they were)."""
    return key not in SELECTION_KEYS and not (key == "limit_batches" and value is None)


def name_list(config: dict, key: str = "only_models") -> list[str] | None:
    """only_models as a list (`a,b` from the command line too), model aliases as their ids
    (core/model_aliases.py); None: all."""
    names = _listed(config, key)
    if names is None:
        return names
    from embedprobe.core.model_aliases import expand_models

    return expand_models(names, config.get("models", {}), "config only_models",
                         config.get("reference_models"))


def _listed(config: dict, key: str) -> list[str] | None:
    """The names as written: a list, or `a,b`; None where the key is null."""
    value = config.get(key)
    return None if value is None else _names(value)


def _names(value) -> list[str]:
    names = value.split(",") if isinstance(value, str) else list(value)
    return [str(n).strip() for n in names if str(n).strip()]


def dataset_choice(config: dict) -> str | list[str]:
    """only_datasets: QUICK, FULL, or the dataset ids it names (`a,b` too)."""
    names = _names(config["only_datasets"])
    words = [n for n in names if n in (QUICK, FULL)]
    if words and len(names) > 1:
        raise UsageError(f"config only_datasets: {words[0]} stands alone, not beside "
                         f"{', '.join(n for n in names if n != words[0])}",
                         fix=f"write only_datasets={words[0]} alone, or name the datasets "
                             "(only_datasets=[a,b])")
    return words[0] if words else names


def quick_dataset(bench: dict) -> str:
    """A benchmark's quick dataset (only_datasets=quick): the first it lists, as the
    reference's benchmark tables name theirs first."""
    return bench["datasets"][0]


def variant_choice(config: dict) -> list[str]:
    """`variants` as canonical variant names (the reference's aliases read as theirs, in
    core/variants.py), or [ALL_VARIANTS]; an unknown name is a usage error."""
    from embedprobe.core.names import closest
    from embedprobe.core.variants import VARIANT_ALIASES, VARIANTS, canonical_variant

    names = _names(config["variants"])
    if not names:
        raise UsageError("config variants is empty",
                         fix=f"name some variants, or variants={ALL_VARIANTS}; leave variants "
                             "out to run each benchmark's default variant")
    if ALL_VARIANTS in names and len(names) > 1:
        raise UsageError(f"config variants: {ALL_VARIANTS} stands alone, not beside "
                         f"{', '.join(n for n in names if n != ALL_VARIANTS)}",
                         fix=f"write variants={ALL_VARIANTS} alone, or name the variants")
    if names == [ALL_VARIANTS]:
        return names
    for name in names:
        if canonical_variant(name) is None:
            raise UsageError(
                f"config variants names unknown variant '{name}'"
                f"{closest(name, [ALL_VARIANTS, *VARIANTS, *VARIANT_ALIASES])}",
                fix=f"use variants=default (each BCI benchmark's default variant), "
                    f"variants={ALL_VARIANTS} (every variant it lists), or some of: "
                    f"{', '.join(VARIANTS)} (the reference's aliases too: "
                    f"{', '.join(VARIANT_ALIASES)})")
    return list(dict.fromkeys(canonical_variant(n) for n in names))


def benchmark_variants(config: dict, benchmark: str) -> list[str]:
    """The benchmark's variants the run selects, in its `variants:` order ([] for a benchmark
    without variants): `default` names its default variant (core/variants.default_variant)."""
    from embedprobe.core.variants import DEFAULT_VARIANT, default_variant

    listed = config["benchmarks"][benchmark].get("variants") or []
    chosen = variant_choice(config)
    if not listed or chosen == [ALL_VARIANTS]:
        return list(listed)
    wanted = {default_variant(listed) if v == DEFAULT_VARIANT else v for v in chosen}
    return [v for v in listed if v in wanted]


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
    """`--config models=[a]` (or `datasets=quick`) replaces the definitions with a list or a
    word: say which key selects."""
    for kind in ("models", "datasets"):
        value = config.get(kind)
        if isinstance(value, (list, str)):
            names = f"[{','.join(map(str, value))}]" if isinstance(value, list) else value
            raise UsageError(
                f"config {kind}: {value!r} would replace the {kind[:-1]} definitions "
                f"(config/{kind}.yaml)",
                fix=f"to choose {kind}, set only_{kind} instead: --config "
                    f"only_{kind}={names}")


def check_selection(config: dict) -> None:
    """The selection's names are defined in the config, its folds are fold numbers, and it
    leaves some benchmark something to run. Fold ranges are checked per benchmark
    (benchmark_folds), when a benchmark of the run needs them."""
    from embedprobe.core.config import closest

    _check_not_empty(config, "models")
    name_list(config)  # an unknown name or alias: its usage error
    _check_not_empty(config, "datasets")
    defined = config.get("datasets", {})
    choice = dataset_choice(config)
    for name in [] if isinstance(choice, str) else choice:
        if name not in defined:
            raise UsageError(
                f"config only_datasets names unknown dataset '{name}'"
                f"{closest(name, [QUICK, FULL, *defined])}",
                fix=f"use only_datasets={QUICK} (each benchmark's quick dataset), "
                    f"only_datasets={FULL} (every one it lists), or dataset ids: "
                    f"{', '.join(sorted(defined))} (config/datasets.yaml)")
    variant_choice(config)
    parse_folds(config.get("folds"))
    if not any(has_work(config, b) for b in config.get("benchmarks", {})):
        raise UsageError(f"{describe(config)} selects nothing of any benchmark",
                         fix="choose models and datasets that some benchmark of "
                             "config/benchmarks.yaml names")


def _check_not_empty(config: dict, kind: str) -> None:
    """only_<kind> names something when it is set."""
    if _listed(config, f"only_{kind}") == []:
        raise UsageError(f"config only_{kind} is empty",
                         fix=f"name some {kind}, or leave only_{kind} out to run them all")


def selected(config: dict, benchmark: str, kind: str) -> list[str]:
    """The benchmark's models or datasets (kind) that the run selects, in the benchmark's order:
    its datasets by only_datasets; its models by only_models and, for a benchmark with
    `variants:`, their ids by the selected variants."""
    from embedprobe.core.variants import split_variant

    bench = config["benchmarks"][benchmark]
    listed = bench[kind]
    if kind == "datasets":
        choice = dataset_choice(config)
        if choice == FULL:
            return list(listed)
        return [quick_dataset(bench)] if choice == QUICK else [d for d in listed if d in choice]
    chosen = name_list(config)
    variants = benchmark_variants(config, benchmark)
    # a variant's model id (`token_flattening/m`) is chosen with its model and its variant
    return [n for n in listed
            if (chosen is None or n in chosen or split_variant(n)[1] in chosen)
            and split_variant(n)[0] in (None, *variants)]


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
    """The selection as the settings that make it, e.g. `only_models=biot_random folds=debug`:
    those that leave something out of what the benchmarks list."""
    from embedprobe.core.variants import DEFAULT_VARIANT

    parts = [f"only_models={','.join(name_list(config))}"
             ] if config.get("only_models") is not None else []
    datasets, variants = dataset_choice(config), variant_choice(config)
    if datasets != FULL:
        parts.append(f"only_datasets={setting_value(datasets)}")
    if variants != [DEFAULT_VARIANT]:
        parts.append(f"variants={setting_value(variants)}")
    if config.get("folds") is not None:
        value = config["folds"]
        parts.append("folds=" + (",".join(map(str, value)) if isinstance(value, list) else
                                 str(value)))
    return " ".join(parts) or "the run"


def setting_value(value: str | list[str]) -> str:
    """A choice as written on the command line: `quick`, `a,b`."""
    return value if isinstance(value, str) else ",".join(value)


def selection_lines(config: dict, benchmark: str) -> list[str]:
    """What the plan says of the benchmark (smk/plan.note_selection): the datasets it runs and,
    with `variants:`, the variants, each with the setting that chose them and the one that
    adds the others, e.g. `datasets bnci2014_001 (only_datasets=quick; only_datasets=full adds
    physionet_mi)`."""
    bench = config["benchmarks"][benchmark]
    choice = dataset_choice(config)
    datasets = selected(config, benchmark, "datasets")
    left = [d for d in bench["datasets"] if d not in datasets]
    if left:
        after = f"only_datasets={FULL} adds {', '.join(left)}"
    elif len(datasets) > 1:
        after = f"only_datasets={QUICK} runs {quick_dataset(bench)} alone"
    else:
        after = ""
    lines = [_chosen("datasets", datasets, f"only_datasets={setting_value(choice)}", after)]
    if bench.get("variants"):
        variants = benchmark_variants(config, benchmark)
        left = [v for v in bench["variants"] if v not in variants]
        after = f"variants={ALL_VARIANTS} adds {', '.join(left)}" if left else ""
        lines.append(_chosen("variants", variants,
                             f"variants={setting_value(variant_choice(config))}", after))
    return lines


def _chosen(kind: str, names: list[str], setting: str, after: str) -> str:
    return (f"{kind} {', '.join(names) or 'none'} ({setting}" + (f"; {after}" if after else "")
            + ")")
