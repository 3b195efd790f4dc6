"""Fold manifests in the reference's two forms (explicit lists, partitions), read back into the
masks a probe fold cuts; the dataset settings that choose a plan (fold_manifest, fold_strata,
split) through each task's fold_groups; the paper's recording-level Siena folds."""

import json

import numpy as np
import pandas as pd
import pytest

from embedprobe.core.errors import UsageError
from embedprobe.probing import folds
from embedprobe.probing.folds import fold_split, manifest_plan, read_manifest
from embedprobe.tasks.classification import fold_part_sizes
from embedprobe.tasks.registry import task_for

SUBJECTS = ["S1", "S2", "S3", "S4", "S5", "S6"]
ROWS = pd.DataFrame({"subject": np.repeat(SUBJECTS, [1, 2, 3, 1, 2, 3]), "label": 0})
BENCH = {"folds": 3, "fold_seed": 42}


def write(path, payload):
    path.write_text(json.dumps(payload))
    return path


def explicit(tmp_path):
    return write(tmp_path / "explicit.json", {"n_folds": 3, "folds": {
        "0": {"train": ["S3", "S4", "S5", "S6"], "val": ["S2"], "test": ["S1"]},
        "1": {"train": ["S1", "S5", "S6"], "val": ["S4"], "test": ["S2", "S3"]},
        "2": {"train": ["S1", "S2", "S3"], "val": ["S4"], "test": ["S5", "S6"]}}})


def test_an_explicit_manifest_gives_its_lists_as_masks(tmp_path):
    plan = manifest_plan(str(explicit(tmp_path)), ROWS, 3)
    masks = fold_split(plan, ROWS, 1)
    assert masks["test"].tolist() == [False, True, True, True, True, True] + [False] * 6
    assert masks["val"].tolist() == [False] * 6 + [True] + [False] * 5
    assert masks["train"].sum() == 1 + 2 + 3 and plan.rule.endswith("(explicit, 3 folds)")


def test_a_partition_manifest_tests_k_validates_k_plus_1(tmp_path):
    path = write(tmp_path / "partition.json",
                 {"subject_folds": [["S1", "S2"], ["S3", "S4"], ["S5", "S6"]]})
    plan = manifest_plan(str(path), ROWS, 3)
    for k, (test, val, train) in enumerate([("S1 S2", "S3 S4", "S5 S6"),
                                            ("S3 S4", "S5 S6", "S1 S2"),
                                            ("S5 S6", "S1 S2", "S3 S4")]):
        for part, members in (("test", test), ("val", val), ("train", train)):
            assert plan.members(k, part) == members.split()
    rows = fold_split(plan, ROWS, 2)
    assert ROWS["subject"][rows["test"]].tolist() == ["S5", "S5", "S6", "S6", "S6"]


def test_a_relative_manifest_is_read_under_config_folds(tmp_path, monkeypatch):
    monkeypatch.setattr(folds, "MANIFEST_DIR", tmp_path)
    explicit(tmp_path)
    assert manifest_plan("explicit.json", ROWS, 3).n_folds == 3


def test_a_subject_the_data_lacks_is_named_with_a_fix(tmp_path):
    rows = ROWS[ROWS["subject"] != "S4"]
    with pytest.raises(UsageError, match="fold 0 names subjects the data does not have: S4") as e:
        manifest_plan(str(explicit(tmp_path)), rows, 3)
    assert "remove fold_manifest" in e.value.fix and "explicit.json" in e.value.fix


def test_a_subject_in_no_part_is_named(tmp_path):
    rows = pd.concat([ROWS, pd.DataFrame({"subject": ["S7"], "label": [0]})])
    with pytest.raises(UsageError, match="puts subjects S7 in none of train, val and test"):
        manifest_plan(str(explicit(tmp_path)), rows, 3)


@pytest.mark.parametrize("fold, message", [
    ({"train": ["S1"], "val": ["S1"], "test": ["S2"]}, "fold 0 puts S1 in two parts"),
    ({"train": ["S1"], "test": ["S2"]}, "fold 0 has no val list"),
])
def test_a_leaky_or_incomplete_fold_is_refused(tmp_path, fold, message):
    with pytest.raises(UsageError, match=message):
        read_manifest(write(tmp_path / "bad.json", {"folds": [fold]}))


def test_a_subject_tested_twice_and_a_wrong_fold_count_are_refused(tmp_path):
    twice = write(tmp_path / "twice.json", {"folds": [
        {"train": ["S2"], "val": ["S3"], "test": ["S1"]},
        {"train": ["S3"], "val": ["S2"], "test": ["S1"]}]})
    with pytest.raises(UsageError, match="fold 1 tests S1 again"):
        read_manifest(twice)
    with pytest.raises(UsageError, match="has 3 folds, the benchmark 5") as e:
        manifest_plan(str(explicit(tmp_path)), ROWS, 5)
    assert e.value.fix.startswith("set `folds: 3`")


def test_a_materialised_splits_block_must_agree(tmp_path):
    path = write(tmp_path / "p.json", {"folds": [["S1", "S2"], ["S3", "S4"], ["S5", "S6"]],
                                       "splits": {"0": {"val": ["S5", "S6"]}}})
    with pytest.raises(UsageError, match="fold 0's val in `splits` differs"):
        read_manifest(path)


# --- the dataset settings through each task ---------------------------------------------------
def test_fold_manifest_overrides_each_task_rule(tmp_path):
    entry = {"fold_manifest": str(explicit(tmp_path))}
    for task in ("sleep_staging", "motor_imagery", "seizure_detection", "brain_age"):
        plan = task_for(task).fold_groups(ROWS, BENCH, entry)
        assert plan.members(0, "test") == ["S1"], task
    assert fold_part_sizes(task_for("sleep_staging"), BENCH, ROWS, 2, entry) == {
        "n_train": 6, "n_val": 1, "n_test": 5}


def test_without_settings_each_task_keeps_the_reference_rule():
    sleep = task_for("sleep_staging").fold_groups(ROWS["subject"], BENCH)  # ids alone will do
    assert sleep.rule == "3 subject folds (seed 42)"
    mi = task_for("motor_imagery").fold_groups(ROWS, {"folds": 6, "fold_seed": 42})
    assert [mi.members(k, "test") for k in range(6)] == [[s] for s in SUBJECTS]
    seizure = task_for("seizure_detection").fold_groups(ROWS.assign(label=1), BENCH)
    assert seizure.rule.startswith("3 subject folds stratified")
    # subject ids alone cannot stratify: no plan (fit_fold plans from its window table)
    assert task_for("seizure_detection").fold_groups(ROWS["subject"], BENCH) is None
    with pytest.raises(UsageError, match="need the windows' label"):
        folds.seizure_plan(ROWS[["subject"]], BENCH, {})
    with pytest.raises(UsageError, match="split: paper_recordings is a seizure-detection"):
        task_for("sleep_staging").fold_groups(ROWS, BENCH, {"split": "paper_recordings"})


# The reference paper's Siena folds (its configs/cohorts/siena/folds_paper_recordings.json):
# 40 recordings, one without a seizure window (sub-14 run 2), fold 0 and 1 test / validation.
SIENA_RUNS = {"00": 5, "01": 1, "03": 2, "05": 3, "06": 5, "07": 1, "09": 3, "10": 6, "11": 1,
              "12": 3, "13": 3, "14": 3, "16": 2, "17": 2}
SIENA_PAPER = [
    ("00-2 03-0 09-0 09-2 10-1 10-4 12-0 16-0", "01-0 03-1 05-2 07-0 13-2 14-0 14-2"),
    ("00-3 05-1 06-0 06-2 06-4 10-0 13-1 16-1", "00-1 00-4 07-0 09-1 12-1 14-1"),
]


def test_paper_recordings_reproduce_the_reference_paper_siena_folds():
    recordings = [f"{s}-{r}" for s, n in SIENA_RUNS.items() for r in range(n)]
    windows = pd.DataFrame({"recording": np.repeat(recordings, 3),
                            "subject": [r[:2] for r in np.repeat(recordings, 3)],
                            "label": [int(r != "14-2") for r in np.repeat(recordings, 3)]})
    bench = {"folds": 5, "fold_seed": 42}
    plan = task_for("seizure_detection").fold_groups(windows, bench, {"split": "paper_recordings"})
    assert plan.unit == "recording"
    for k, (test, val) in enumerate(SIENA_PAPER):
        assert plan.members(k, "test") == test.split() and plan.members(k, "val") == val.split()
    masks = fold_split(plan, windows, 0)
    assert masks["test"].sum() == 3 * 8 and masks["val"].sum() == 3 * 7
    patients = task_for("seizure_detection").fold_groups(windows, bench, {})
    assert patients.unit == "subject" and len(patients.members(0, "test")) == 3


def test_a_probe_job_plans_over_its_window_table_with_its_dataset_entry(tmp_path):
    """pipeline/fold_job hands over subject ids alone; the fit plans from the job itself."""
    from types import SimpleNamespace

    from embedprobe.tasks.base import FoldJob, job_folds

    config = {"datasets": {"toy": {"fold_manifest": str(explicit(tmp_path))}}}
    job = FoldJob(config, {}, "b", BENCH, "toy", SimpleNamespace(windows=ROWS), None, 0)
    assert job_folds(task_for("seizure_detection"), job).members(1, "test") == ["S2", "S3"]
    config["datasets"]["toy"] = {}
    assert job_folds(task_for("seizure_detection"), job).rule.startswith("3 subject folds strat")
