"""`embedprobe list benchmarks|models|datasets|reference`: what the config offers, without
reading YAML.

One row per benchmark (its task, quick dataset, datasets, models, folds, variants), per model
(its family, architecture, weights and whether they are here, its input contract, the aliases
that name it), per dataset (its format, labelling task, folder and its state on disk: the
rows of `data status`) or per checkpoint of the reference suite (its family and group, the
model that runs it here or why it cannot be had yet: core/reference_models.py). The states
are their owners' (models.registry.weights_state, datasets.availability), so a listing never
disagrees with `check` or the plan.
"""

from __future__ import annotations

from embedprobe.core.errors import UsageError
from embedprobe.core.model_aliases import model_aliases
from embedprobe.core.text import aligned_rows
from embedprobe.core.variants import listed_models

KINDS = ("benchmarks", "models", "datasets", "reference")
# the columns the table shows of each kind's rows (the JSON has every key)
COLUMNS = {
    "benchmarks": ("benchmark", "task", "quick", "datasets", "n_models", "folds", "variants"),
    "models": ("model", "family", "weights", "weights_state", "sfreq", "window_seconds",
               "aliases"),
    "datasets": ("dataset", "format", "labels", "state", "recordings", "folder"),
    "reference": ("reference", "family", "group", "runs_as", "not_available"),
}


def benchmark_rows(config: dict) -> list[dict]:
    from embedprobe.core.selection import quick_dataset

    return [{"benchmark": name, "task": bench["task"], "quick": quick_dataset(bench),
             "datasets": ", ".join(bench["datasets"]), "models": ", ".join(bench["models"]),
             "n_models": len(bench["models"]),
             "folds": str(bench["folds"]),
             "variants": ", ".join(bench.get("variants") or [])}
            for name, bench in config["benchmarks"].items()]


def model_rows(config: dict, roots: dict) -> list[dict]:
    from embedprobe.models.registry import model_spec, weights_state

    named_by: dict[str, list[str]] = {}
    for alias, ids in model_aliases(config["models"]).items():
        for model in ids:
            named_by.setdefault(model, []).append(alias)
    rows = []
    for model, entry in listed_models(config["models"]).items():
        spec = model_spec(config, model)
        rows.append({"model": model, "family": str(entry.get("family", "")),
                     "architecture": str(entry.get("architecture", "")),
                     "weights": str(entry.get("weights", "random")),
                     "weights_state": weights_state(spec, roots),
                     "sfreq": spec.sfreq, "window_seconds": spec.window_seconds,
                     "aliases": ", ".join(named_by.get(model, []))})
    return rows


def dataset_rows(config: dict, roots: dict) -> list[dict]:
    from embedprobe.datasets.availability import availability
    from embedprobe.datasets.registry import labelling_task_name

    return [row | {"labels": labelling_task_name(config["datasets"][row["dataset"]])}
            for row in availability(config, roots)]


def reference_rows(config: dict) -> list[dict]:
    from embedprobe.core.reference_models import reference_checkpoints

    catalog = config["reference_models"]
    return [{"reference": c.name, "family": c.family, "group": c.group,
             "runs_as": c.model or "", "not_available": c.reason,
             "licence": catalog[c.family].get("licence", ""),
             "rule_out_tasks": ", ".join(catalog[c.family].get("rule_out", {}).get("tasks", []))}
            for c in reference_checkpoints(catalog, config["models"]).values()]


def listing(config: dict, roots: dict, kind: str) -> list[dict]:
    """The rows of one kind (KINDS)."""
    if kind == "benchmarks":
        return benchmark_rows(config)
    if kind == "models":
        return model_rows(config, roots)
    if kind == "datasets":
        return dataset_rows(config, roots)
    if kind == "reference":
        return reference_rows(config)
    raise UsageError(f"nothing to list as '{kind}'", fix=f"list one of: {', '.join(KINDS)}")


def format_listing(kind: str, rows: list[dict]) -> str:
    columns = COLUMNS[kind]
    body = aligned_rows(columns, [[str(r[c]) if r[c] not in (None, "") else "-" for c in columns]
                                  for r in rows])
    noun = "reference checkpoints" if kind == "reference" else kind
    return "\n".join([*body, f"{len(rows)} {noun}"])
