"""Brain age's unit: the subject, or the recording where the dataset's entry says
`brain_age_unit: recording` (the reference's for ISRUC and SHHS), each with its own age."""

from types import SimpleNamespace

import pandas as pd

from embedprobe.probing.folds import age_stratified_plan, fold_split
from embedprobe.probing.ridge import AGE_BINS
from embedprobe.tasks.brain_age import TASK, unit_ages, unit_of, unit_plan

# two participants came back for a second night
WINDOWS = pd.DataFrame({
    "recording": ["a1", "a1", "a2", "b1", "c1", "c2", "d1", "e1", "f1"],
    "subject": ["a", "a", "a", "b", "c", "c", "d", "e", "f"]})
AGES = {"a": 41.0, "b": 52.0, "c": 63.0, "d": 70.0, "e": 35.0, "f": 48.0}


def test_the_unit_is_the_subject_unless_the_entry_says_recording():
    assert unit_of({}) == "subject"
    assert unit_of({"brain_age_unit": "subject"}) == "subject"
    assert unit_of({"brain_age_unit": "recording"}) == "recording"


def test_a_recording_takes_its_nights_age_where_the_reader_has_one_else_its_subjects():
    by_subject = SimpleNamespace(subjects_table=lambda root: AGES)
    assert unit_ages(by_subject, "root", WINDOWS, "subject") == AGES
    assert unit_ages(by_subject, "root", WINDOWS, "recording") == {
        "a1": 41.0, "a2": 41.0, "b1": 52.0, "c1": 63.0, "c2": 63.0, "d1": 70.0, "e1": 35.0,
        "f1": 48.0}
    nightly = {"a1": 41.0, "a2": 45.0}
    by_night = SimpleNamespace(subjects_table=lambda root: AGES,
                               recording_ages=lambda root: nightly)
    assert unit_ages(by_night, "root", WINDOWS, "recording") == nightly


def test_the_age_folds_over_recordings_split_the_recordings():
    ages = unit_ages(SimpleNamespace(subjects_table=lambda root: AGES), "root", WINDOWS,
                     "recording")
    plan = unit_plan(age_stratified_plan(ages, 3, 42, AGE_BINS), "recording")
    assert plan.unit == "recording" and "3 recording folds" in plan.rule
    units = pd.DataFrame({"recording": sorted(ages)})
    tested = [r for k in range(3) for r in units["recording"][fold_split(plan, units, k)["test"]]]
    assert sorted(tested) == sorted(ages)  # every recording tested once
    same = age_stratified_plan(AGES, 3, 42, AGE_BINS)
    assert unit_plan(same, "subject") is same


def test_preflight_sizes_the_probe_over_recordings():
    bench = {"folds": 3, "fold_seed": 42, "probe": {"alpha_grid": [1, 10]}}
    table = WINDOWS.assign(label=0)
    _, per_subject, _ = TASK.probe_memory({}, bench, table, 0, 8, {})
    _, per_recording, _ = TASK.probe_memory({}, bench, table, 0, 8,
                                            {"brain_age_unit": "recording"})
    assert per_subject["n_subjects"] == 6 and per_recording["n_subjects"] == 8
    assert per_subject["n"] == 6 - 2 and per_recording["n"] == 8 - 2
