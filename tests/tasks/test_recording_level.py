"""The recording-level tasks (sleep diagnosis, abnormal EEG) on real HDF5 stores: unit
features, the folds (stratified, TUAB's official split), the probe against known answers and
against shuffled labels."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from embedprobe.core.config import load_config
from embedprobe.core.errors import UsageError
from embedprobe.devtools.workloads import write_store
from embedprobe.pipeline.store import open_embeddings
from embedprobe.probing.folds import fold_split, recording_level_plan
from embedprobe.tasks.base import FoldJob
from embedprobe.tasks.recording_level.probe import ProbeSettings, scores
from embedprobe.tasks.registry import task_for

WINDOWS = 6  # windows per recording
BENCH = {"folds": 5, "fold_seed": 42}


def recordings_table(n_subjects: int, sessions=("1",), official: bool = False) -> pd.DataFrame:
    """Subjects S00, S01, ... with one recording per session, alternating classes; with
    `official` the last fifth are the eval part (session "eval/..."), the rest "train/..."."""
    rows = []
    for k in range(n_subjects):
        part = ("eval" if k >= n_subjects * 4 // 5 else "train") if official else ""
        for session in sessions:
            name = f"S{k:02d}_{session}"
            rows += [{"recording": name, "subject": f"S{k:02d}",
                      "session": f"{part}/{session}" if part else session,
                      "start": w * 2560, "label": k % 2} for w in range(WINDOWS)]
    return pd.DataFrame(rows).astype({"label": np.int8})


def store_for(tmp_path, table: pd.DataFrame, signal: float, seed: int = 0):
    """A finished store whose class-1 windows are shifted by `signal` on 4 of 16 features."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((len(table), 16), dtype=np.float32)
    X[table["label"].to_numpy() == 1, :4] += signal
    path = tmp_path / f"store_{seed}_{signal}.h5"
    write_store(path, X, table["label"].to_numpy(), table, "tuab_demo")
    return path


def run_folds(config, path, benchmark="abnormal_eeg_demo", dataset="tuab_demo") -> list[dict]:
    task = task_for("abnormal_eeg")
    bench = config["benchmarks"][benchmark]
    records = []
    with open_embeddings(path) as store:
        for fold in range(bench["folds"]):
            job = FoldJob(config, {}, benchmark, bench, dataset, store, None, fold)
            records.append(task.fit_fold(job, task.split(job))[0])
    return records


def test_scores_match_a_hand_computed_answer():
    y = np.array([0, 0, 1, 1])
    proba = np.array([[0.9, 0.1], [0.4, 0.6], [0.6, 0.4], [0.1, 0.9]])
    # pairs (positive, negative) ranked right: (0.4 > 0.1), (0.9 > 0.1), (0.9 > 0.6): 3 of 4
    got = scores(y, proba, np.array([0, 1]))
    assert got["auroc"] == pytest.approx(0.75)
    assert got["balanced_accuracy"] == pytest.approx(0.5)  # one of each class right
    assert got["macro_f1"] == pytest.approx(0.5)
    three = scores(np.array([0, 1, 2]), np.eye(3), np.array([0, 1, 2]))
    assert np.isnan(three["auroc"]) and three["balanced_accuracy"] == 1.0  # AUROC n/a


def test_unit_statistics_are_each_units_mean_and_population_sd(tmp_path):
    table = recordings_table(6, sessions=("1", "2"))
    path = store_for(tmp_path, table, 1.0)
    with open_embeddings(path) as store:
        keys, means, sds = store.stats_by("recording", with_std=True)
        X = np.asarray(store.embeddings[:], dtype=np.float64)
    assert list(keys) == sorted(table["recording"].unique())
    for k, key in enumerate(keys):
        rows = X[(table["recording"] == key).to_numpy()]
        np.testing.assert_allclose(means[k], rows.mean(axis=0), rtol=1e-10)
        np.testing.assert_allclose(sds[k], rows.std(axis=0), rtol=1e-6, atol=1e-9)


def test_official_split_tests_the_eval_subjects_in_every_fold():
    table = recordings_table(30, official=True)
    plan = recording_level_plan(table, BENCH, {"split": "official"})
    evals = {s for s, p in zip(table["subject"], table["session"], strict=True)
             if p.startswith("eval/")}
    validated = []
    for fold in range(5):
        assert set(plan.members(fold, "test")) == evals
        validated += plan.members(fold, "val")
    train = set(table["subject"]) - evals
    assert sorted(validated) == sorted(train)  # each train subject validates exactly once
    both = table.copy()
    both.loc[both["subject"] == "S00", "session"] = ["eval/1"] * 3 + ["train/1"] * 3
    with pytest.raises(UsageError, match="S00 is in both") as error:
        recording_level_plan(both, BENCH, {"split": "official"})
    assert error.value.fix
    with pytest.raises(UsageError, match="sessions named train/"):
        recording_level_plan(recordings_table(10), BENCH, {"split": "official"})


def test_stratified_folds_put_both_classes_in_every_test_fold():
    table = recordings_table(20)
    plan = recording_level_plan(table, BENCH, {})
    for fold in range(5):
        masks = fold_split(plan, table, fold)
        assert set(table["label"][masks["test"]]) == {0, 1}
        assert not (masks["train"] & masks["test"]).any()


def recording_option(config: dict, benchmark: str = "abnormal_eeg_demo") -> dict:
    """The config with abnormal EEG's recording-level option on (its default probes windows)."""
    config["benchmarks"][benchmark].setdefault("probe", {})["units"] = "recordings"
    return config


def test_the_probe_finds_the_class_signal_and_not_shuffled_labels(tmp_path):
    config = recording_option(load_config())
    table = recordings_table(40, official=True)
    real = run_folds(config, store_for(tmp_path, table, 1.5))
    assert all(r["metrics"]["auroc"] > 0.9 for r in real)
    assert {r["unit"] for r in real} == {"recording"} and real[0]["n_features"] == 16
    assert real[0]["classes"] == ["normal", "abnormal"]
    # the same embeddings, the recordings' labels permuted: no signal left to find
    per_recording = table.groupby("recording")["label"].first()
    permuted = dict(zip(per_recording.index, np.random.default_rng(7).permutation(
        per_recording.to_numpy()), strict=True))
    shuffled = table.assign(label=table["recording"].map(permuted).astype(np.int8))
    with open_embeddings(store_for(tmp_path, table, 1.5)) as store:
        X = np.asarray(store.embeddings[:])
    path = tmp_path / "shuffled.h5"
    write_store(path, X, shuffled["label"].to_numpy(), shuffled, "tuab_demo")
    aurocs = [r["metrics"]["auroc"] for r in run_folds(config, path)]
    assert abs(np.nanmean(aurocs) - 0.5) < 0.2


def test_mean_std_doubles_the_features_and_bad_settings_are_refused(tmp_path):
    config = recording_option(load_config())
    config["benchmarks"]["abnormal_eeg_demo"]["probe"]["aggregation"] = "mean_std"
    records = run_folds(config, store_for(tmp_path, recordings_table(30, official=True), 1.5))
    assert records[0]["n_features"] == 32 and records[0]["aggregation"] == "mean_std"
    with pytest.raises(UsageError, match="aggregation") as error:
        ProbeSettings.of({"aggregation": "median", "C_grid": [1.0]}, {})
    assert "probe.aggregation" in error.value.fix
