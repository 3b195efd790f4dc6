"""The reference suite's checkpoints by its own ids (config/models.yaml `reference_models:`,
the one table of them): which model entry runs each here, or why it cannot be had yet, and the
tasks whose benchmarks the reference leaves a family out of.

An id runs here when its `model:` (default: the id itself) is an entry of `models:`; any other
id is not available, with its own `unavailable:` reason or its family's. Only the standard
library and core here: model_aliases, which the Snakefile's parse imports, reads it.
"""

from __future__ import annotations

from dataclasses import dataclass

NOT_AVAILABLE_FIX = ("leave it out; config/models.yaml `reference_models:` says which of the "
                     "reference's checkpoints run here and why the others cannot yet")


@dataclass(frozen=True)
class ReferenceCheckpoint:
    name: str  # the reference's id
    family: str
    group: str
    model: str | None  # the model id that runs it here; None: not available
    reason: str  # why it is not available ("" when it runs)


def reference_checkpoints(catalog: dict, models: dict) -> dict[str, ReferenceCheckpoint]:
    """Every reference id, in the catalogue's order."""
    out = {}
    for family, entry in catalog.items():
        for name, checkpoint in entry["checkpoints"].items():
            model = checkpoint.get("model", name)
            runs = model in models
            reason = "" if runs else checkpoint.get("unavailable") or entry.get(
                "unavailable") or f"no entry `{model}` in config/models.yaml `models:`"
            out[name] = ReferenceCheckpoint(name, family, entry["group"],
                                            model if runs else None, reason)
    return out


def unavailable_reason(catalog: dict, models: dict, name: str) -> str:
    """Why a reference id, or a reference family none of whose checkpoints runs here, cannot
    be had ("" for any other name)."""
    checkpoints = reference_checkpoints(catalog, models)
    if name in checkpoints:
        return checkpoints[name].reason
    if name in catalog:
        members = [c for c in checkpoints.values() if c.family == name]
        if not any(c.model for c in members):
            return members[0].reason
    return ""


def runs_as(catalog: dict, models: dict, name: str) -> list[str]:
    """The model ids a reference id (its model) or family (those of its checkpoints that run)
    stands for here; [] for a name the catalogue does not hold or one not available."""
    checkpoints = reference_checkpoints(catalog, models)
    if name in checkpoints:
        return [checkpoints[name].model] if checkpoints[name].model else []
    return [c.model for c in checkpoints.values() if c.family == name and c.model]


def group_reasons(catalog: dict, models: dict, group: str) -> dict[str, str]:
    """Each family of the group with no checkpoint that runs here, and its reason."""
    return {family: unavailable_reason(catalog, models, family)
            for family, entry in catalog.items()
            if entry["group"] == group and unavailable_reason(catalog, models, family)}


def reference_kind(catalog: dict, name: str) -> str:
    """What a reference name is, for messages: "the reference's chronos checkpoint" or "a
    family of the reference's"."""
    if name in catalog:
        return "a family of the reference's"
    family = next(f for f, entry in catalog.items() if name in entry["checkpoints"])
    return f"the reference's {family} checkpoint"


def rule_out_reason(catalog: dict, family: str, task: str) -> str:
    """Why the reference leaves the family's models out of the task's benchmarks ("" when it
    does not)."""
    rule = catalog.get(family, {}).get("rule_out")
    return rule["reason"] if rule and task in rule["tasks"] else ""
