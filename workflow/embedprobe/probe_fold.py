"""The probe step for one fold: cut the fold from the cached embeddings, fit, score, save.

Sleep staging fits on the fold's training windows, picks C on its validation windows and scores
its test windows. Brain age reduces each subject to one mean embedding (streamed from the store),
picks alpha by an inner stratified CV over the fold's training and validation subjects, and
scores the test subjects.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

from .cache import open_embeddings
from .config import lookup
from .datasets.registry import dataset_root, reader_for
from .errors import DataError
from .folds import fold_split, subject_groups
from .probe import AGE_BINS, ALPHA_GRID, C_GRID, fit_age_fold, fit_logistic_probe
from .progress import format_duration

HEADLINE = {"sleep_staging": ("kappa", "kappa"), "brain_age": ("mae", "MAE(years)")}


def fit_sleep_staging(config, bench, store, groups, fold) -> tuple[dict, dict]:
    windows = store.windows
    X = np.asarray(store.embeddings[:], dtype=np.float32)
    masks = fold_split(windows["subject"].map(groups).to_numpy(), fold, bench.get("folds", 5))
    y = windows["label"].to_numpy().astype(np.int64)
    result = fit_logistic_probe(
        X[masks["train"]], y[masks["train"]], X[masks["val"]], y[masks["val"]],
        X[masks["test"]], y[masks["test"]],
        C_grid=tuple(bench.get("probe", {}).get("C_grid", C_GRID)),
        n_jobs=config.get("probe", {}).get("n_jobs", 1),
    )
    record = {
        "n_train": int(masks["train"].sum()), "n_val": int(masks["val"].sum()),
        "n_test": int(masks["test"].sum()),
        "test_subjects": sorted(windows["subject"][masks["test"]].unique().tolist()),
        "chosen": result.chosen_C, "chosen_C": result.chosen_C, "val_kappa": result.val_kappa,
        "val_kappa_by_C": {str(c): k for c, k in result.val_kappa_by_C.items()},
        "method": result.method,
        "metrics": {k: float(v) for k, v in result.test_metrics.items()},
    }
    saved = {"index": np.flatnonzero(masks["test"]), "y_true": y[masks["test"]],
             "y_pred": result.test_pred, "proba": result.test_proba}
    return record, saved


def fit_brain_age(config, roots, bench, store, groups, fold, dataset) -> tuple[dict, dict]:
    ages_by_subject = reader_for(config, dataset).subjects_table(
        dataset_root(config, roots, dataset))
    subjects, means = store.mean_by("subject")
    known = np.array([s in ages_by_subject for s in subjects])
    if not known.any():
        raise DataError(f"no subject of {dataset} has an age in its subjects table",
                        fix="brain_age needs the cassette subjects table (SC-subjects.xls)")
    subjects, means = subjects[known], means[known]
    ages = np.array([ages_by_subject[s] for s in subjects], dtype=float)
    group = np.array([groups[s] for s in subjects])
    masks = fold_split(group, fold, bench.get("folds", 5))
    train = masks["train"] | masks["val"]  # alpha comes from inner CV, not the validation group
    probe = bench.get("probe", {})
    result = fit_age_fold(means[train], ages[train], means[masks["test"]], ages[masks["test"]],
                          alpha_grid=tuple(probe.get("alpha_grid", ALPHA_GRID)),
                          age_bins=AGE_BINS, seed=bench.get("fold_seed", 42) + fold)
    record = {
        "n_train": int(train.sum()), "n_test": int(masks["test"].sum()),
        "test_subjects": subjects[masks["test"]].tolist(),
        "chosen": result["alpha"], "chosen_alpha": result["alpha"],
        "inner_mae_by_alpha": {str(a): v for a, v in result["inner_mae_by_alpha"].items()},
        "baseline_mae": result["baseline_mae"],
        "method": "StandardScaler + Ridge, alpha by inner stratified 4-fold CV",
        "metrics": result["metrics"],
        # Per subject, so the aggregate can pool r and R2 over folds (a fold has few subjects).
        "predictions": [{"subject": str(s), "age": float(a), "predicted": float(p)}
                        for s, a, p in zip(subjects[masks["test"]], ages[masks["test"]],
                                           result["predictions"], strict=True)],
    }
    saved = {"subjects": subjects[masks["test"]], "y_true": ages[masks["test"]],
             "y_pred": result["predictions"]}
    return record, saved


def run_probe_fold(config: dict, roots: dict, benchmark: str, dataset: str, model: str,
                   embeddings: Path, fold: int, out_json: Path, out_npz: Path) -> dict:
    bench = lookup(config, "benchmarks", benchmark)
    n_folds, seed = bench.get("folds", 5), bench.get("fold_seed", 42)
    started = time.monotonic()
    with open_embeddings(embeddings) as store:
        groups = subject_groups(store.windows["subject"], n_folds, seed)
        if bench["task"] == "brain_age":
            fitted, saved = fit_brain_age(config, roots, bench, store, groups, fold, dataset)
        else:
            fitted, saved = fit_sleep_staging(config, bench, store, groups, fold)
    seconds = time.monotonic() - started
    record = {"benchmark": benchmark, "dataset": dataset, "model": model, "fold": fold,
              "n_folds": n_folds, "status": "ok", **fitted, "seconds": round(seconds, 2)}
    out_npz.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(out_npz, **saved)
    out_json.write_text(json.dumps(record, indent=2) + "\n")
    key, label = HEADLINE[bench["task"]]
    print(f"[{fold + 1}/{n_folds}] {dataset} {model} fold {fold}: ok, {label} "
          f"{record['metrics'][key]:.3f} ({format_duration(seconds)})", file=sys.stderr)
    return record
