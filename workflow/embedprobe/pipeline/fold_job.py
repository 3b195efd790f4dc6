"""The probe step for one fold: open the cached embeddings, let the benchmark's task fit and
score the fold (embedprobe/tasks/), save its JSON record and arrays."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

from embedprobe.core.config import lookup
from embedprobe.core.progress import format_duration
from embedprobe.pipeline.store import open_embeddings
from embedprobe.tasks.base import FoldJob
from embedprobe.tasks.registry import task_for


def run_probe_fold(config: dict, roots: dict, benchmark: str, dataset: str, model: str,
                   embeddings: Path, fold: int, out_json: Path, out_npz: Path) -> dict:
    bench = lookup(config, "benchmarks", benchmark)
    task = task_for(bench["task"])
    n_folds = bench["folds"]
    started = time.monotonic()
    with open_embeddings(embeddings) as store:
        groups = task.fold_groups(store.windows["subject"], bench)
        fitted, saved = task.fit_fold(FoldJob(config, roots, benchmark, bench, dataset, store,
                                              groups, fold))
    seconds = time.monotonic() - started
    record = {"benchmark": benchmark, "dataset": dataset, "model": model, "fold": fold,
              "n_folds": n_folds, "status": "ok", **fitted, "seconds": round(seconds, 2)}
    out_npz.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(out_npz, **saved)
    out_json.write_text(json.dumps(record, indent=2) + "\n")
    print(f"[{fold + 1}/{n_folds}] {dataset} {model} fold {fold}: ok, {task.headline_label} "
          f"{record['metrics'][task.metrics[0]]:.3f} ({format_duration(seconds)})", file=sys.stderr)
    return record
