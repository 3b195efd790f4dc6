"""The probe step for one fold: cut the fold from the cached embeddings, fit, score, save."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

from .cache import open_embeddings
from .config import lookup
from .folds import fold_split, subject_groups
from .probe import C_GRID, fit_logistic_probe
from .progress import format_duration

HEADLINE = {"sleep_staging": "kappa"}


def run_probe_fold(config: dict, benchmark: str, dataset: str, model: str, embeddings: Path,
                   fold: int, out_json: Path, out_npz: Path) -> dict:
    bench = lookup(config, "benchmarks", benchmark)
    n_folds, seed = bench.get("folds", 5), bench.get("fold_seed", 42)
    started = time.monotonic()
    store = open_embeddings(embeddings)
    X = np.asarray(store.embeddings[:], dtype=np.float32)
    windows = store.windows
    groups = subject_groups(windows["subject"], n_folds, seed)
    masks = fold_split(windows["subject"].map(groups).to_numpy(), fold, n_folds)
    y = windows["label"].to_numpy().astype(np.int64)
    probe = bench.get("probe", {})
    result = fit_logistic_probe(
        X[masks["train"]], y[masks["train"]], X[masks["val"]], y[masks["val"]],
        X[masks["test"]], y[masks["test"]], C_grid=tuple(probe.get("C_grid", C_GRID)),
        n_jobs=config.get("probe", {}).get("n_jobs", 1),
    )
    seconds = time.monotonic() - started
    record = {
        "benchmark": benchmark,
        "dataset": dataset,
        "model": model,
        "fold": fold,
        "n_folds": n_folds,
        "status": "ok",
        "n_train": int(masks["train"].sum()),
        "n_val": int(masks["val"].sum()),
        "n_test": int(masks["test"].sum()),
        "test_subjects": sorted(windows["subject"][masks["test"]].unique().tolist()),
        "chosen": result.chosen_C,
        "chosen_C": result.chosen_C,
        "val_kappa": result.val_kappa,
        "val_kappa_by_C": {str(c): k for c, k in result.val_kappa_by_C.items()},
        "method": result.method,
        "metrics": {k: float(v) for k, v in result.test_metrics.items()},
        "seconds": round(seconds, 2),
    }
    out_npz.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(
        out_npz, index=np.flatnonzero(masks["test"]), y_true=y[masks["test"]],
        y_pred=result.test_pred, proba=result.test_proba,
    )
    out_json.write_text(json.dumps(record, indent=2) + "\n")
    headline = HEADLINE[bench["task"]]
    print(f"[{fold + 1}/{n_folds}] {dataset} {model} fold {fold}: ok, {headline} "
          f"{record['metrics'][headline]:.3f} ({format_duration(seconds)})", file=sys.stderr)
    return record
