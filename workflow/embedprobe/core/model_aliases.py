"""Names that stand for several model ids wherever models are listed: a benchmark's `models:`,
`only_models` and `embedprobe check --model`.

- `all_pretrained`: every model whose `weights` are not `random` (Hub checkpoints, local files);
- `all_random`: every random-init baseline;
- `all_fm`, `all_ts`, `all_supervised`: the pretrained models of one group (an entry's `group:`,
  `eeg_fm` when unset), as the reference names its EEG foundation models, time-series foundation
  models and supervised baselines;
- `all`: every pretrained and random model;
- a family name (`biot`, `labram`, ...): that family's pretrained checkpoints;
- `all_tokens`: every entry read as a token store (`pooling: tokens`), which the others above
  leave out: the same weights read another way, and a width the default benchmarks need not pay.

Each expands to the ids in config/models.yaml's order. A model id spelled like an alias is
that model, not the alias. A name after a minus (`-biot`, `-labram_pretrained`) removes that
alias's or model's ids from what the list's other names give (`[all_fm, -biot]`). The
reference's own ids and families (config/models.yaml `reference_models:`,
core/reference_models.py) are names too: one that runs here stands for its model ids, one not
available is refused with its reason, and removing it removes what of it runs here (nothing,
without an error), so the reference's `all,-sleepyco,-eegnetv4` reads as it is.
config.check_names expands a benchmark's list, selection.name_list `only_models`. Only the
standard library and core here: the Snakefile's parse imports it.
"""

from __future__ import annotations

from embedprobe.core.errors import UsageError
from embedprobe.core.names import closest
from embedprobe.core.reference_models import (
    NOT_AVAILABLE_FIX,
    group_reasons,
    reference_checkpoints,
    reference_kind,
    runs_as,
    unavailable_reason,
)
from embedprobe.core.variants import listed_models

RANDOM_WEIGHTS = "random"
ALL_PRETRAINED = "all_pretrained"
ALL_RANDOM = "all_random"
ALL_TOKENS = "all_tokens"
ALL = "all"
EEG_FM = "eeg_fm"  # an entry's group when it sets none
# the reference's group aliases and the `group:` each stands for
GROUP_ALIASES = {"all_fm": EEG_FM, "all_ts": "ts_fm", "all_supervised": "supervised"}
REMOVE = "-"


def is_pretrained(entry: dict) -> bool:
    """Whether a model entry loads trained weights (anything but `weights: random`)."""
    return str(entry.get("weights", RANDOM_WEIGHTS)) != RANDOM_WEIGHTS


def model_aliases(models: dict) -> dict[str, list[str]]:
    """Each alias and the model ids it stands for, in config order. A family alias exists
    where the family has a pretrained checkpoint; the `all_` aliases always exist."""
    models = listed_models(models)  # a benchmark's variant ids are made from these
    tokens = [m for m, entry in models.items() if entry.get("pooling") == "tokens"]
    pooled = {m: entry for m, entry in models.items() if m not in tokens}
    pretrained = [m for m, entry in pooled.items() if is_pretrained(entry)]
    aliases = {ALL_PRETRAINED: pretrained,
               ALL_RANDOM: [m for m in pooled if m not in pretrained], ALL_TOKENS: tokens}
    for alias, group in GROUP_ALIASES.items():
        aliases[alias] = [m for m in pretrained if models[m].get("group", EEG_FM) == group]
    aliases[ALL] = list(pooled)
    for model in pretrained:
        family = models[model].get("family")
        if family:
            aliases.setdefault(str(family), []).append(model)
    return {alias: ids for alias, ids in aliases.items() if alias not in models}


def expand_models(names, models: dict, where: str, catalog: dict | None = None) -> list[str]:
    """`names` with each alias replaced by its model ids, in order, each id once, less the ids
    of the names after a minus. An unknown name is a usage error naming `where` and the closest
    valid name; so is an alias that stands for no model (no pretrained checkpoint is
    configured, say), a reference id or family not available here (its reason), and a list of
    removals alone. `catalog`: the config's `reference_models` (None: no reference names)."""
    aliases = model_aliases(models)
    catalog = catalog or {}
    expanded: list[str] = []
    removed: set[str] = set()
    removes = False
    for name in map(str, names):
        removing = name.startswith(REMOVE) and name not in models
        removes = removes or removing
        bare = name[len(REMOVE):] if removing else name
        if removing and bare not in models and bare not in aliases and (
                unavailable_reason(catalog, models, bare) or runs_as(catalog, models, bare)):
            removed.update(runs_as(catalog, models, bare))  # what of it runs here, maybe none
            continue
        ids = _ids(bare, models, aliases, where, catalog)
        if removing:
            removed.update(ids)
        else:
            expanded += [model for model in ids if model not in expanded]
    if removes and not expanded:
        raise UsageError(f"{where} only removes models ({', '.join(map(str, names))}): there "
                         "is nothing to remove them from",
                         fix="name what to keep first, e.g. [all_fm, -biot]")
    return [model for model in expanded if model not in removed]


def _ids(name: str, models: dict, aliases: dict, where: str, catalog: dict) -> list[str]:
    if name in models:
        return [name]
    if name in aliases:
        if not aliases[name]:
            group = GROUP_ALIASES.get(name)
            missing = group_reasons(catalog, models, group) if group else {}
            why = "".join(f"; the reference's {family}: {reason}"
                          for family, reason in missing.items())
            raise UsageError(f"{where} names '{name}', which stands for no model of "
                             f"config/models.yaml{why}",
                             fix="name model ids instead, or add such a model" + (
                                 f" (an entry with `group: {group}`)" if group else ""))
        return aliases[name]
    reason = unavailable_reason(catalog, models, name)
    if reason:
        raise UsageError(f"{where} names '{name}' ({reference_kind(catalog, name)}): not "
                         f"available: {reason}", fix=NOT_AVAILABLE_FIX)
    if runs_as(catalog, models, name):
        return runs_as(catalog, models, name)
    known = [*models, *aliases, *reference_checkpoints(catalog, models), *catalog]
    raise UsageError(
        f"{where} names unknown model '{name}'{closest(name, known)}",
        fix=f"use one of: {', '.join(sorted(models))} (config/models.yaml), or an "
            f"alias: {', '.join(aliases)}")
