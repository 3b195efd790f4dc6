"""Sleep hypnogram: how well do the night's architecture features of the predicted hypnograms
match the scored ones? (The reference's sleep_hypnogram, App. C.2 Table 2; its guide's Sleep
page.)

No embedding and no probe of its own: a benchmark names its `source`, the sleep-staging
benchmark whose fold predictions it reads (the same datasets, models, folds and fold seed).
Its fold job waits for the source's fold of the same pair (a workflow input: the plan lists
the staging jobs it needs), orders each test recording's epochs by their start, and computes
the 34 features (features.py) of the predicted and of the scored sequence. The headline is
the mean over the features of Pearson's r between predicted and scored values over every
fold's test recordings pooled: one value, no SD (the guide's; its benchmark YAML names MAE, and
the guide wins where they disagree). results.tsv also carries each feature's r (`r_<name>`);
each fold's own mean r is in its record.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

from embedprobe.core.errors import DataError, UsageError
from embedprobe.tasks.base import FoldJob, Task, Units
from embedprobe.tasks.hypnogram.features import (
    FEATURES,
    feature_agreement,
    hypnogram_features,
    mean_pearson_r,
)

SOURCE_TASK = "sleep_staging"


class SleepHypnogram(Task):
    name = "sleep_hypnogram"
    metrics = ("pearson_r",)
    headline_label = "mean Pearson r"
    chosen_name = "C"  # the staging probe's, read from its fold
    pair_figures = ("features",)
    defines_units = False
    sd_ddof = 0
    headline_over_folds = "one value over every fold's test recordings pooled (no SD)"

    def units(self, reader, rec, entry: dict, counts: Counter) -> Units:
        raise UsageError("task 'sleep_hypnogram' cuts no windows of its own",
                         fix="its datasets keep `labels: sleep_staging`")

    def check_benchmark(self, config: dict, benchmark: str, bench: dict) -> None:
        """The source is a sleep-staging benchmark over the same pairs and folds."""
        source = bench.get("source")
        benchmarks = config["benchmarks"]
        if source not in benchmarks or benchmarks[source]["task"] != SOURCE_TASK:
            staging = [b for b, e in benchmarks.items() if e["task"] == SOURCE_TASK]
            raise UsageError(f"benchmark '{benchmark}' (sleep_hypnogram) names source "
                             f"{source!r}, which is not a sleep_staging benchmark",
                             fix=f"set benchmarks.{benchmark}.source to one of: "
                                 f"{', '.join(staging) or '(none: add a sleep_staging one)'}")
        src = benchmarks[source]
        for key in ("datasets", "models"):
            missing = [n for n in bench[key] if n not in src[key]]
            if missing:
                raise UsageError(f"benchmark '{benchmark}': {key[:-1]} {missing[0]!r} is not "
                                 f"in its source '{source}'",
                                 fix=f"list it in benchmarks.{source}.{key}, or drop it here")
        for key in ("folds", "fold_seed"):
            if bench[key] != src[key]:
                raise UsageError(f"benchmark '{benchmark}': {key} {bench[key]} differs from its "
                                 f"source's ({src[key]}): fold k must be the source's fold k",
                                 fix=f"set benchmarks.{benchmark}.{key}: {src[key]}")

    # --- the fold ---------------------------------------------------------------------------
    def split(self, job: FoldJob) -> None:
        """None: no probe here; the fold scores the staging fold's saved predictions."""
        return None

    def fit_fold(self, job: FoldJob, split: None) -> tuple[dict, dict]:
        from embedprobe.core.paths import output_path

        source = job.bench["source"]
        path = output_path("fold_predictions", job.roots, benchmark=source, dataset=job.dataset,
                           model=job.model, fold=job.fold)
        with np.load(path) as saved:
            index, scored, predicted = saved["index"], saved["y_true"], saved["y_pred"]
        windows = job.store.windows
        if index.max(initial=-1) >= len(windows) or not np.array_equal(
                windows["label"].to_numpy()[index], scored):
            raise DataError(f"{path}: the staging predictions do not match the cache "
                            f"{job.store.path} (another index or another run)",
                            fix=f"rerun the source benchmark: snakemake {source} "
                                "--forcerun probe")
        table = windows.iloc[index][["recording", "subject", "start"]].assign(
            scored=scored, predicted=predicted).sort_values(["recording", "start"], kind="stable")
        seconds = _epoch_seconds(job)
        rows = []
        for recording, night in table.groupby("recording", sort=True):
            rows.append({"recording": str(recording), "subject": str(night["subject"].iloc[0]),
                         "n_epochs": len(night),
                         "scored": hypnogram_features(night["scored"].to_numpy(), seconds),
                         "predicted": hypnogram_features(night["predicted"].to_numpy(), seconds)})
        scored_m, predicted_m = _matrices(rows)
        agreement = feature_agreement(scored_m, predicted_m)
        record = {"source": source, "n_test": len(table), "n_recordings": len(rows),
                  "test_subjects": sorted({r["subject"] for r in rows}),
                  "chosen": _source_chosen(path),
                  "metrics": {"pearson_r": mean_pearson_r(agreement)},
                  "recordings": rows}
        saved = {"recordings": np.array([r["recording"] for r in rows]), "scored": scored_m,
                 "predicted": predicted_m, "features": np.array(FEATURES)}
        return record, saved

    rescore_needs = ""

    def rescore(self, record: dict, saved) -> dict[str, float]:
        agreement = feature_agreement(np.asarray(saved["scored"]), np.asarray(saved["predicted"]))
        return {"pearson_r": mean_pearson_r(agreement)}

    def pooled_scores(self, folds: list[dict]) -> dict[str, float]:
        """The headline over every fold's recordings pooled (it replaces the mean over folds,
        and has no SD), and each feature's r."""
        rows = [r for f in folds for r in f["recordings"]]
        agreement = feature_agreement(*_matrices(rows))
        out = {"pearson_r_mean": round(mean_pearson_r(agreement), 4), "pearson_r_sd": np.nan,
               "pearson_r_fold_mean": round(float(np.nanmean(
                   [f["metrics"]["pearson_r"] for f in folds])), 4)}
        return out | {f"r_{name}": round(v["pearson_r"], 4) for name, v in agreement.items()}

    # --- preflight -----------------------------------------------------------------------
    def probe_memory(self, config: dict, bench: dict, table: pd.DataFrame, fold: int,
                     dim: int, entry: dict | None = None) -> tuple[str, dict, int]:
        """The store's window table and the fold's predictions: no embeddings are read."""
        return "probe_hypnogram", {"n_rows": len(table)}, 5

    # --- report --------------------------------------------------------------------------
    def plot_pair(self, figure: str, prediction_files: list[Path], title: str,
                  out: Path) -> None:
        from embedprobe.tasks.hypnogram.figures import plot_features

        plot_features(prediction_files, title, out)

    def summary_notes(self, tables: dict[str, pd.DataFrame]) -> list[str]:
        notes = ["", "sleep_hypnogram: mean over 34 sleep-architecture features of Pearson's r "
                     "between predicted and scored values, all folds' test recordings pooled "
                     "(one value); each feature's r:"]
        for dataset, table in tables.items():
            for _, row in table.iterrows():
                values = [f"{n} {row.get(f'r_{n}', np.nan):.2f}" for n in FEATURES
                          if f"r_{n}" in table.columns]
                notes.append(f"  {dataset} {row['model']}: " + ", ".join(values))
        return notes


def _matrices(rows: list[dict]) -> tuple[np.ndarray, np.ndarray]:
    """(scored, predicted): one row per recording, one column per feature (FEATURES order)."""
    def matrix(side: str) -> np.ndarray:
        return np.array([[r[side][n] for n in FEATURES] for r in rows],
                        dtype=np.float64).reshape(len(rows), len(FEATURES))
    return matrix("scored"), matrix("predicted")


def _epoch_seconds(job: FoldJob) -> float:
    from embedprobe.datasets.registry import unit_seconds

    return unit_seconds(job.config, job.dataset)


def _source_chosen(predictions: Path) -> float:
    """The staging probe's chosen C, from the source fold's record beside its predictions."""
    record = predictions.with_suffix(".json")
    try:
        return float(json.loads(record.read_text())["chosen"])
    except (OSError, KeyError, ValueError, TypeError):
        return float("nan")


TASK = SleepHypnogram()
