"""The probe step for one fold: open the cached embeddings, let the benchmark's task cut the
fold's split (probing/split.py) and fit and score it (embedprobe/tasks/), save its JSON record
and arrays."""

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


class FitProgress:
    """A probe fold's live line on a terminal (core/progress.py's convention): the grid values
    fitted so far, rewritten in place, e.g. `ds model fold 2: C 3/6 (0.1) val kappa 0.6120
    (14 iterations), 0m 04s, ~0m 06s left`. Off a terminal it prints nothing: the fold's
    result line is all a log gets. A probing.logistic.Progress callback."""

    def __init__(self, label: str, stream=None, clock=time.monotonic):
        self.label, self.clock = label, clock
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty()
        self.started = clock()
        self.shown = False

    def __call__(self, done: int, total: int, message: str) -> None:
        if not self.live:
            return
        head, _, scored = message.partition(": ")  # "C=0.1: val kappa ..." (the Progress form)
        name, _, value = head.partition("=")
        elapsed = self.clock() - self.started
        left = (f", ~{format_duration(elapsed / done * (total - done))} left"
                if 0 < done < total else "")
        self.stream.write(f"\r\033[K{self.label}: {name} {done}/{total} ({value}) {scored}, "
                          f"{format_duration(elapsed)}{left}")
        self.stream.flush()
        self.shown = True

    def clear(self) -> None:
        """Wipe the live line before the fold's result (or error) is printed."""
        if self.shown:
            self.stream.write("\r\033[K")
            self.stream.flush()
            self.shown = False


def run_probe_fold(config: dict, roots: dict, benchmark: str, dataset: str, model: str,
                   embeddings: Path, fold: int, out_json: Path, out_npz: Path,
                   n_jobs: int | None = None, streamed: bool = False) -> dict:
    """Fit and score one fold; `n_jobs`: grid values fitted at once (the preflight's knob for
    this job), else the config's probe.n_jobs; `streamed` (the preflight's knob for a fold too
    large to hold): the fold's rows stay in the store, read a block at a time."""
    bench = lookup(config, "benchmarks", benchmark)
    task = task_for(bench["task"])
    n_folds = bench["folds"]
    started = time.monotonic()
    progress = FitProgress(f"{dataset} {model} fold {fold}")
    try:
        with open_embeddings(embeddings) as store:
            groups = task.fold_groups(store.windows["subject"], bench)
            job = FoldJob(config, roots, benchmark, bench, dataset, store, groups, fold,
                          progress, model, n_jobs, streamed)
            # the fold's parts (probing/split.py), cut once: the task's probe fits on them
            fitted, saved = task.fit_fold(job, task.split(job))
    finally:
        progress.clear()
    seconds = time.monotonic() - started
    record = {"benchmark": benchmark, "dataset": dataset, "model": model, "fold": fold,
              "n_folds": n_folds, "status": "ok", **fitted, "seconds": round(seconds, 2)}
    out_npz.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(out_npz, **saved)
    out_json.write_text(json.dumps(record, indent=2) + "\n")
    print(f"[{fold + 1}/{n_folds}] {dataset} {model} fold {fold}: ok, {task.headline_label} "
          f"{record['metrics'][task.metrics[0]]:.3f} ({format_duration(seconds)})", file=sys.stderr)
    return record
