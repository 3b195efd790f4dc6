"""`embedprobe rescore`: fold metrics recomputed from the saved predictions against answers
computed here with scikit-learn, the results table rebuilt, what cannot be rescored listed with
its fix, usage errors refused before any file changes. (The demo's real folds: the workflow
test `test_rescoring_the_demo_rewrites_its_tables_byte_for_byte`.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import balanced_accuracy_score, cohen_kappa_score, f1_score

from embedprobe.core.paths import output_path
from embedprobe.reporting.rescore import rescore_benchmark
from embedprobe.tasks.registry import task_for

from helpers.project import PROJECT
from helpers.results import roots_in, write_results_table

WRONG = {"kappa": 0.0, "balanced_accuracy": 0.0, "macro_f1": 0.0}


def staging_predictions(fold: int) -> dict:
    rng = np.random.default_rng(fold)
    y_true = rng.integers(0, 5, 200)
    y_pred = np.where(rng.random(200) < 0.6 + 0.05 * fold, y_true, rng.integers(0, 5, 200))
    return {"index": np.arange(200), "y_true": y_true, "y_pred": y_pred,
            "proba": np.eye(5)[y_pred]}


def fold_paths(roots, benchmark, dataset, model, fold):
    values = {"benchmark": benchmark, "dataset": dataset, "model": model, "fold": fold}
    return (output_path("fold_result", roots, **values),
            output_path("fold_predictions", roots, **values))


@pytest.fixture
def results(tmp_path):
    """demo: biot_random's 5 folds with wrong metrics and their true predictions saved;
    labram_random failed at fold 3 (predictions of its folds 0-2 saved, fold 2's lost)."""
    roots = roots_in(tmp_path)
    write_results_table(roots, "demo", "sleep_edf_demo", "sleep_staging", 5, {
        "biot_random": [dict(WRONG, n_classes=5)] * 5,
        "labram_random": [dict(WRONG, n_classes=5)] * 3 + [None, None]},
        failed={("labram_random", 3): "the store is damaged"})
    for model, folds in (("biot_random", range(5)), ("labram_random", range(2))):
        for fold in folds:
            _, arrays = fold_paths(roots, "demo", "sleep_edf_demo", model, fold)
            np.savez_compressed(arrays, **staging_predictions(fold))
    return tmp_path, roots


def run_cli(folder, *args) -> subprocess.CompletedProcess:
    env = {**os.environ, **{f"EMBEDPROBE_{k.upper()}": str(folder / k.removesuffix("_root"))
                            for k in ("data_root", "cache_root", "results_root",
                                      "weights_root")}}
    return subprocess.run([sys.executable, "-m", "embedprobe.cli", "rescore", *args],
                          capture_output=True, text=True, timeout=300, cwd=PROJECT, env=env)


def test_metrics_come_back_from_the_saved_predictions_and_the_table_follows(results):
    folder, roots = results
    run = run_cli(folder, "demo")
    assert run.returncode == 1, run.stderr  # labram_random fold 2 has no predictions
    kappas = []
    for fold in range(5):
        record_path, arrays = fold_paths(roots, "demo", "sleep_edf_demo", "biot_random", fold)
        saved, record = np.load(arrays), json.loads(record_path.read_text())
        expected = {"kappa": cohen_kappa_score(saved["y_true"], saved["y_pred"]),
                    "balanced_accuracy": balanced_accuracy_score(saved["y_true"],
                                                                 saved["y_pred"]),
                    "macro_f1": f1_score(saved["y_true"], saved["y_pred"], average="macro")}
        for metric, value in expected.items():
            assert record["metrics"][metric] == pytest.approx(value, abs=1e-9)
        assert record["rescored"] == {"previous_metrics": WRONG}
        kappas.append(expected["kappa"])
    table = pd.read_csv(output_path("results", roots, benchmark="demo",
                                    dataset="sleep_edf_demo"), sep="\t").set_index("model")
    assert table.loc["biot_random", "kappa_mean"] == pytest.approx(np.mean(kappas), abs=1e-4)
    assert table.loc["biot_random", "kappa_sd"] == pytest.approx(np.std(kappas), abs=1e-4)
    assert table.loc["labram_random", "status"] == "failed"  # a pair keeps its status
    assert table.loc["labram_random", "folds"] == "3/5"
    # the before/after table, then the fold left as it was with the command that refits it
    assert "biot_random" in run.stdout and f"{np.mean(kappas):.3f}" in run.stdout
    assert "0.000" in run.stdout  # the wrong headline before
    lost = fold_paths(roots, "demo", "sleep_edf_demo", "labram_random", 2)[0]
    assert "sleep_edf_demo labram_random fold 2: its predictions file" in run.stdout
    assert f"snakemake --cores all --forcerun {lost}" in run.stdout
    assert json.loads(lost.read_text())["metrics"] == WRONG and "rescored" not in \
        json.loads(lost.read_text())


def test_a_second_rescore_keeps_the_first_metrics_as_the_previous_ones(results):
    _, roots = results
    task = task_for("sleep_staging")
    rescore_benchmark("demo", task, roots, models=("biot_random",))
    record_path, _ = fold_paths(roots, "demo", "sleep_edf_demo", "biot_random", 0)
    first = record_path.read_text()
    done = rescore_benchmark("demo", task, roots, models=("biot_random",))
    assert record_path.read_text() == first  # same metrics, same previous ones
    assert json.loads(first)["rescored"]["previous_metrics"] == WRONG
    assert [r["model"] for r in done.rows] == ["biot_random"] and not done.not_rescored


def test_a_task_whose_scores_need_the_recordings_lists_each_fold(tmp_path):
    roots = roots_in(tmp_path)
    metrics = dict.fromkeys(task_for("seizure_detection").metrics, 0.5)
    write_results_table(roots, "epilepsy_demo", "chbmit_demo", "seizure_detection", 2,
                        {"biot_random": [metrics] * 2})
    for fold in range(2):
        _, arrays = fold_paths(roots, "epilepsy_demo", "chbmit_demo", "biot_random", fold)
        np.savez_compressed(arrays, y_true=np.array([0, 1]), proba=np.array([0.2, 0.9]))
    table = output_path("results", roots, benchmark="epilepsy_demo", dataset="chbmit_demo")
    before = table.read_bytes()
    done = rescore_benchmark("epilepsy_demo", task_for("seizure_detection"), roots)
    assert [f["fold"] for f in done.not_rescored] == ["chbmit_demo biot_random fold 0",
                                                     "chbmit_demo biot_random fold 1"]
    assert all("recordings' seizures" in f["reason"] for f in done.not_rescored)
    assert table.read_bytes() == before  # nothing rescored: the same table


@pytest.mark.parametrize("args, says", [
    (("demo", "--model", "nope"), "no results of model nope"),
    (("demo", "--dataset", "nope"), "no results table of dataset nope"),
    (("demo_brain_age",), "no results tables under"),
    (("nope",), "unknown benchmark"),
])
def test_usage_errors_exit_2_with_the_fix_and_touch_nothing(results, args, says):
    folder, roots = results
    record_path, _ = fold_paths(roots, "demo", "sleep_edf_demo", "biot_random", 0)
    before = record_path.read_bytes()
    run = run_cli(folder, *args)
    assert run.returncode == 2, run.stderr
    assert says in run.stderr and "fix:" in run.stderr
    assert record_path.read_bytes() == before
