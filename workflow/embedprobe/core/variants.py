"""The BCI tasks and their protocol variants: one owner for both tables.

The reference has four variants of every BCI benchmark (its user guide, "BCI variants"): the
two filterings crossed with the two ways a trial's patch tokens become one vector. It runs
`default` unless asked for another (`--variant`).

| variant | filtering | embedding |
|---|---|---|
| default | confound filtering (the paradigm's band) | patch tokens averaged |
| token_flattening | confound filtering | patch tokens concatenated in order |
| no_filtering | the model's own band | patch tokens averaged |
| no_filtering_token_flattening | the model's own band | patch tokens concatenated in order |

A benchmark's `variants:` lists the variants it can run; a run runs its default variant
(default_variant) unless the `variants` setting names others (core/selection.py). The list
turns each model `m` into one model id per variant,
`<variant>/<m>`: an entry of its own in config["models"] (m's entry with `bci_filtering` and
`pooling` set). Its store is the one of the (dataset, model, preprocessing, pooling) it runs:
the default variant of `m` reads `m`'s own store, a variant no listed model matches gets its
own (embedding_id), and check, preflight and embed run once per store. Every variant's results
land under `<benchmark>/<dataset>/<variant>/<m>/`. A benchmark without `variants:` runs its
models as they are. Only the standard library here: the Snakefile's parse imports it.
"""

from __future__ import annotations

from dataclasses import dataclass

from embedprobe.core.errors import UsageError

# The trial tasks (tasks/bci/): the tasks whose benchmarks take `variants:`, whose recordings go
# through the reference's BCI filters (pipeline/protocol.py), and which a model entry's
# `<setting>_by_task: {bci: ...}` names together.
BCI_TASKS = ("motor_imagery", "bci_erp", "bci_ssvep", "bci_cognitive")
BCI_GROUP = "bci"
CONFOUND, NO_FILTERING = "confound", "none"  # a model entry's `bci_filtering`


@dataclass(frozen=True)
class Variant:
    filtering: str  # CONFOUND or NO_FILTERING
    flatten_tokens: bool


VARIANTS = {
    "default": Variant(CONFOUND, False),
    "token_flattening": Variant(CONFOUND, True),
    "no_filtering": Variant(NO_FILTERING, False),
    "no_filtering_token_flattening": Variant(NO_FILTERING, True),
}
# The reference's other spellings of the same variants (its guide, "BCI variants").
VARIANT_ALIASES = {
    "confound_filtering": "default", "confound_control": "default",
    "confound_filtering_token_flattening": "token_flattening",
    "confound_control_per_patch": "token_flattening",
    "per_patch": "no_filtering_token_flattening",
}
SEPARATOR = "/"
DEFAULT_VARIANT = "default"  # the reference's headline protocol


def canonical_variant(name: str) -> str | None:
    """A variant's name, an alias read as its variant; None for an unknown name."""
    name = VARIANT_ALIASES.get(name, name)
    return name if name in VARIANTS else None


def variant_name(name: str, where: str) -> str:
    """A variant's name, an alias read as its variant; an unknown one is a usage error."""
    canonical = canonical_variant(str(name))
    if canonical is None:
        raise UsageError(f"{where}: unknown variant '{name}'",
                         fix=f"use any of {', '.join(VARIANTS)} (or the reference's aliases "
                             f"{', '.join(VARIANT_ALIASES)})")
    return canonical


def default_variant(listed: list[str]) -> str:
    """A benchmark's default variant, the one a run without `variants` runs: the reference's
    `default` where its `variants:` list it, else the first they list."""
    return DEFAULT_VARIANT if DEFAULT_VARIANT in listed else listed[0]


def variant_model(variant: str, model: str) -> str:
    """The model id of `model` run in `variant`."""
    return f"{variant}{SEPARATOR}{model}"


def split_variant(model: str) -> tuple[str | None, str]:
    """(variant, base model) of a model id; (None, id) for a model run as it is."""
    head, sep, tail = model.partition(SEPARATOR)
    return (head, tail) if sep and head in VARIANTS else (None, model)


def pooled_variant(variant: str) -> str:
    """The variant with the same filtering whose tokens are averaged (token_flattening ->
    default): the cheaper setting a flattened probe that cannot fit is offered."""
    filtering = VARIANTS[variant].filtering
    return next(name for name, spec in VARIANTS.items()
                if spec.filtering == filtering and not spec.flatten_tokens)


def variant_entry(entry: dict, variant: str) -> dict:
    """`entry` as `variant` runs it: its filtering, and token pooling where it flattens."""
    spec = VARIANTS[variant]
    derived = dict(entry) | {"bci_filtering": spec.filtering}
    if spec.flatten_tokens:
        derived["pooling"] = "tokens"
    return derived


def materialize(config: dict) -> dict:
    """Each benchmark with `variants:`: its variants named canonically, its models replaced by
    their variant ids (each variant's ids together, in the variants' order), and every such id
    given its entry in config["models"]. The ids are made afresh from the models they stand
    for on every pass (an override since an earlier pass, of a model's entry or a benchmark's
    models or variants, shows in them), and a pass over its own output changes nothing.
    Returns the config."""
    models = config.get("models", {})
    for made in [m for m in models if split_variant(m)[0] is not None]:
        del models[made]
    for bench_id, bench in config.get("benchmarks", {}).items():
        if not bench.get("variants"):
            continue
        where = f"benchmark '{bench_id}'"
        if bench.get("task") not in BCI_TASKS:
            raise UsageError(f"{where}: `variants:` is for the BCI tasks ({', '.join(BCI_TASKS)}),"
                             f" not {bench.get('task')}", fix=f"remove variants from {where}")
        variants = list(dict.fromkeys(variant_name(v, where) for v in bench["variants"]))
        bench["variants"] = variants
        # the models the ids stand for (an earlier pass's ids give theirs back)
        base = list(dict.fromkeys(split_variant(m)[1] for m in bench["models"]))
        for model in base:
            if models[model].get("pooling", "mean") != "mean":
                raise UsageError(
                    f"{where}: model '{model}' is a token store (`pooling: tokens`); the "
                    "variants choose the pooling themselves",
                    fix="list its pooled entry instead (token_flattening flattens its tokens)")
            for variant in variants:
                models[variant_model(variant, model)] = variant_entry(models[model], variant)
        bench["models"] = [variant_model(v, m) for v in variants for m in base]
    return config


def embedding_id(models: dict, model: str) -> str:
    """The model id whose store `model` reads: one store per (dataset, model, preprocessing,
    pooling). A variant id reads the store of the first model listed with the same entry
    (the default variant of `m` reads `m`'s; token_flattening of `cbramod_random` reads
    `cbramod_random_tokens`'s), else its own; any other id its own."""
    if split_variant(model)[0] is None:
        return model
    entry = _as_run(models[model])
    return next((other for other, listed in models.items()
                 if split_variant(other)[0] is None and _as_run(listed) == entry), model)


def _as_run(entry: dict) -> dict:
    """An entry with the defaults of what variants set (pooling, bci_filtering) filled."""
    return {"pooling": "mean", "bci_filtering": CONFOUND} | entry


def listed_models(models: dict) -> dict:
    """The entries config/models.yaml lists (and an override adds), without the variant ids
    made from them: the catalogue that aliases, the hub fetch and its job slice read."""
    return {m: entry for m, entry in models.items() if split_variant(m)[0] is None}


def for_task(by_task: dict, task: str | None):
    """A `<setting>_by_task` mapping's value for a labelling task: its own key, else the BCI
    group's key for a BCI task; None when neither is set."""
    if task in by_task:
        return by_task[task]
    if task in BCI_TASKS:
        return by_task.get(BCI_GROUP)
    return None
