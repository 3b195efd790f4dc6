"""Results as a run leaves them, without running one: hand-made fold records written where the
probe writes them, then results.tsv from the real aggregate (reporting/aggregate.py)."""

from __future__ import annotations

import json
from pathlib import Path

from embedprobe.core.errors import DataError, write_failure_record
from embedprobe.core.paths import output_path
from embedprobe.reporting.aggregate import aggregate_folds, write_results
from embedprobe.tasks.registry import task_for


def roots_in(folder: Path) -> dict:
    return {root: str(folder / root.removesuffix("_root"))
            for root in ("data_root", "cache_root", "results_root", "weights_root")}


def fold_record(benchmark: str, dataset: str, model: str, fold: int, n_folds: int,
                metrics: dict, **extra) -> dict:
    """One fold's JSON as a probe job writes it (the keys aggregate and `results` read)."""
    return {"benchmark": benchmark, "dataset": dataset, "model": model, "fold": fold,
            "n_folds": n_folds, "status": "ok", "n_test": 100 + fold, "chosen": 0.1,
            "seconds": 1.5, "metrics": metrics, **extra}


def write_results_table(roots: dict, benchmark: str, dataset: str, task_name: str,
                        n_folds: int, pairs: dict[str, list], failed: dict | None = None
                        ) -> Path:
    """Each model's folds (a dict of metrics and extra record keys, or None: never ran) as
    fold JSONs, a failure record for each (model, fold) of `failed` (-> message), then the
    dataset's results.tsv through the real aggregate. Returns the table's path."""
    task = task_for(task_name)
    paths = []
    for model, folds in pairs.items():
        for fold, values in enumerate(folds):
            path = output_path("fold_result", roots, benchmark=benchmark, dataset=dataset,
                               model=model, fold=fold)
            if (model, fold) in (failed or {}):
                write_failure_record(path, DataError(failed[(model, fold)], fix="fix it"),
                                     "probe")
            if values is None:
                continue
            values = dict(values)
            metrics = {m: values.pop(m) for m in list(values) if m in task.metrics}
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(fold_record(benchmark, dataset, model, fold, n_folds,
                                                   metrics, **values)))
            paths.append(path)
    table = aggregate_folds(paths, task, n_folds)
    out = output_path("results", roots, benchmark=benchmark, dataset=dataset)
    write_results(table, out)
    return out
