"""Abnormal EEG's default probe, the reference's: every 10 s window a row of the seizure probe
(kkontras/NeuroAtlas, extensions/tasks/_seizure_evaluation.py fit_lr_c_grid and
full_binary_probe, which its run lines use for TUAB and Bonn), headline the test windows'
AUROC; `probe.units: recordings` switches back to one mean embedding per recording."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from embedprobe.core.config import load_config
from embedprobe.core.errors import UsageError
from embedprobe.devtools.workloads import write_store
from embedprobe.memory.calibration import load_calibration
from embedprobe.memory.preflight import probe_estimate
from embedprobe.pipeline.store import open_embeddings
from embedprobe.probing.folds import fold_split, recording_level_plan
from embedprobe.tasks.base import FoldJob
from embedprobe.tasks.registry import task_for

BENCHMARK, DATASET = "abnormal_eeg_demo", "tuab_demo"
WINDOWS = 8  # windows per recording


def window_table(n_subjects: int = 20) -> pd.DataFrame:
    """One recording per subject, alternating classes, TUAB's official split (last fifth eval)."""
    rows = [{"recording": f"S{k:02d}_1", "subject": f"S{k:02d}",
             "session": f"{'eval' if k >= n_subjects * 4 // 5 else 'train'}/1",
             "start": w * 2560, "label": k % 2}
            for k in range(n_subjects) for w in range(WINDOWS)]
    return pd.DataFrame(rows).astype({"label": np.int8})


def make_store(tmp_path, table: pd.DataFrame) -> tuple[object, np.ndarray]:
    """Windows whose abnormal ones lean a little on 3 of 12 features (noisy per window)."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((len(table), 12)).astype(np.float32)
    X[table["label"].to_numpy() == 1, :3] += 0.6
    path = tmp_path / "store.h5"
    write_store(path, X, table["label"].to_numpy(), table, DATASET)
    return path, X


def fit(config: dict, path, fold: int) -> tuple[dict, dict]:
    bench = config["benchmarks"][BENCHMARK]
    with open_embeddings(path) as store:
        job = FoldJob(config, {}, BENCHMARK, bench, DATASET, store, None, fold)
        return task_for("abnormal_eeg").fit_fold(job, task_for("abnormal_eeg").split(job))


def reference_answer(X, table, bench, entry, fold) -> tuple[float, float]:
    """(chosen C, test AUROC) as the reference computes them, with scikit-learn: StandardScaler
    on the training windows; per C of the grid in order, LogisticRegression(lbfgs,
    class_weight balanced, max_iter 500); the first C with the highest validation AUPRC."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import average_precision_score, roc_auc_score
    from sklearn.preprocessing import StandardScaler

    masks = fold_split(recording_level_plan(table, bench, entry), table, fold)
    y = table["label"].to_numpy()
    scaler = StandardScaler().fit(X[masks["train"]])
    best, best_score, best_model = None, -np.inf, None
    for C in [0.001, 0.01, 0.1, 1.0, 10.0, 100.0]:
        model = LogisticRegression(C=C, class_weight="balanced", max_iter=500, solver="lbfgs")
        model.fit(scaler.transform(X[masks["train"]]), y[masks["train"]])
        val = model.predict_proba(scaler.transform(X[masks["val"]]))[:, 1]
        score = average_precision_score(y[masks["val"]], val)
        if score > best_score:
            best, best_score, best_model = C, score, model
    test = best_model.predict_proba(scaler.transform(X[masks["test"]]))[:, 1]
    return best, float(roc_auc_score(y[masks["test"]], test))


def test_the_default_probe_is_the_references_window_probe(tmp_path):
    config = load_config()
    table = window_table()
    path, X = make_store(tmp_path, table)
    bench = config["benchmarks"][BENCHMARK]
    entry = config["datasets"][DATASET]
    for fold in (0, 1):
        record, saved = fit(config, path, fold)
        chosen, auroc = reference_answer(X, table, bench, entry, fold)
        assert record["unit"] == "window" and record["chosen"] == chosen
        assert record["metrics"]["auroc"] == pytest.approx(auroc, abs=1e-6)
        # every test window is scored (4 eval subjects x 8 windows), not one row per recording
        assert record["n_test"] == 4 * WINDOWS == len(saved["y_true"])
        assert record["class_weight"] == "balanced" and record["select_on"] == "auprc"
        assert {"auprc", "balanced_accuracy", "macro_f1", "mcc"} <= set(record["metrics"])
    assert task_for("abnormal_eeg").pooled_scores([record]) == {"auroc_pooled": pytest.approx(
        np.nan, nan_ok=True)}


def test_the_option_switches_back_to_one_row_per_recording(tmp_path):
    config = load_config()
    config["benchmarks"][BENCHMARK]["probe"]["units"] = "recordings"
    path, _ = make_store(tmp_path, window_table())
    record, saved = fit(config, path, 0)
    assert record["unit"] == "recording" and record["n_test"] == 4 == len(saved["y_true"])
    assert record["aggregation"] == "mean" and len(record["predictions"]) == 4


def test_preflight_sizes_the_window_probe_as_the_calibrated_seizure_job():
    """The window-level job runs the seizure probe's code on a whole store's windows: the
    calibrated probe_seizure job type sizes it; the option keeps probe_recording."""
    config = load_config()
    task = task_for("abnormal_eeg")
    table = window_table()
    bench = config["benchmarks"][BENCHMARK]
    entry = config["datasets"][DATASET]
    job_type, inputs, _ = task.probe_memory(config, bench, table, 0, 12, entry)
    assert job_type == "probe_seizure"
    assert (inputs["n_train"], inputs["n_val"], inputs["n_test"]) == (12 * WINDOWS,
                                                                      4 * WINDOWS, 4 * WINDOWS)
    calibration = load_calibration()
    assert "probe_seizure" in calibration["jobs"]
    estimate, _ = probe_estimate(config, task, bench, table, 0, 12, calibration, None, 0.15,
                                 None, entry)
    assert estimate.verdict == "ok" and estimate.total > 0
    option = {**bench, "probe": {**bench["probe"], "units": "recordings"}}
    assert task.probe_memory(config, option, table, 0, 12, entry)[0] == "probe_recording"


def test_settings_of_the_other_probe_are_refused():
    config = load_config()
    task = task_for("abnormal_eeg")
    bench = config["benchmarks"][BENCHMARK]
    with pytest.raises(UsageError, match="aggregation") as error:
        task.scored_units({**bench, "probe": {"aggregation": "mean_std"}})
    assert "probe.units: recordings" in error.value.fix
    with pytest.raises(UsageError, match="units"):
        task_for("sleep_diagnosis").scored_units({"probe": {"units": "windows"}})


def test_a_validation_part_of_one_class_takes_the_smallest_C_as_the_reference(tmp_path, capsys):
    """Two abnormal train subjects of 16 (fewer than the folds: KFold, not stratified) leave
    validation parts without an abnormal window. The reference's fit_lr_c_grid scores every C
    alike there and keeps its first (0.001); ours chose it too, with a `warning:`, where it
    used to refuse the fold (the recording_level_demo's TUAB look-alike met this)."""
    config = load_config()
    table = window_table()
    subject = table["subject"].str[1:].astype(int)
    table["label"] = ((subject < 2) | ((subject >= 16) & (subject % 2 == 1))).astype(np.int8)
    path, X = make_store(tmp_path, table)
    bench = config["benchmarks"][BENCHMARK]
    entry = config["datasets"][DATASET]
    plan = recording_level_plan(table, bench, entry)
    one_class = [k for k in range(bench["folds"])
                 if table["label"][fold_split(plan, table, k)["val"]].nunique() == 1]
    assert one_class, "the table must give a validation part of one class"
    record, _ = fit(config, path, one_class[0])
    chosen, auroc = reference_answer(X, table, bench, entry, one_class[0])
    assert chosen == 0.001 == record["chosen"]
    assert record["metrics"]["auroc"] == pytest.approx(auroc, abs=1e-6)
    assert "warning: validation holds one class only (negative windows)" in \
        capsys.readouterr().err
