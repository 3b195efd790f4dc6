"""The +- of every task, as the reference (NeuroAtlas) reports it: the population SD (ddof=0) over
folds for sleep staging, sleep diagnosis, brain age and BCI, the sample SD (ddof=1) for epilepsy
(seizures and abnormal EEG); checked on one hand-made set of fold values written through the real
aggregate into results.tsv."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from embedprobe.reporting.aggregate import read_results
from embedprobe.tasks.registry import TASKS, task_for

from helpers.results import roots_in, write_results_table

VALUES = [0.70, 0.72, 0.74, 0.76, 0.78]
# mean 0.74; squared deviations 0.0016, 0.0004, 0, 0.0004, 0.0016: sum 0.004
POPULATION_SD = 0.0283  # sqrt(0.004 / 5) = 0.028284
SAMPLE_SD = 0.0316  # sqrt(0.004 / 4) = 0.031623


def sleep_fold(value: float) -> dict:
    return {"kappa": value, "balanced_accuracy": 0.5, "macro_f1": 0.5, "n_classes": 5}


def age_fold(value: float) -> dict:
    return {"mae": value, "baseline_mae": 12.0,
            "predictions": [{"subject": "a", "age": 40.0, "predicted": 41.0},
                            {"subject": "b", "age": 60.0, "predicted": 58.0}]}


def trial_fold(value: float) -> dict:
    return {"balanced_accuracy": value, "kappa": 0.3, "macro_f1": 0.5, "n_classes": 4}


def seizure_fold(value: float) -> dict:
    return dict.fromkeys(task_for("seizure_detection").metrics, 0.5) | {"event_auc": value}


def unit_fold(value: float) -> dict:
    return {"auroc": value, "balanced_accuracy": 0.5, "macro_f1": 0.5, "n_classes": 2,
            "predictions": [{"unit": "a", "label": 0, "proba": [0.8, 0.2]},
                            {"unit": "b", "label": 1, "proba": [0.3, 0.7]}]}


def event_fold(value: float) -> dict:
    return {"auprc": value, "macro_f1": 0.5, "balanced_accuracy": 0.5, "auroc": 0.6,
            "positive_share": 0.2, "probes": {}}


CASES = {  # task -> (fold record from a headline value, ddof, the SD by hand)
    "sleep_staging": (sleep_fold, 0, POPULATION_SD),
    "brain_age": (age_fold, 0, POPULATION_SD),
    "motor_imagery": (trial_fold, 0, POPULATION_SD),
    "bci_erp": (trial_fold, 0, POPULATION_SD),
    "bci_ssvep": (trial_fold, 0, POPULATION_SD),
    "bci_cognitive": (trial_fold, 0, POPULATION_SD),
    "seizure_detection": (seizure_fold, 1, SAMPLE_SD),
    "sleep_diagnosis": (unit_fold, 0, POPULATION_SD),
    "abnormal_eeg": (unit_fold, 1, SAMPLE_SD),
    "sleep_arousal": (event_fold, 0, POPULATION_SD),
    "sleep_respiratory": (event_fold, 0, POPULATION_SD),
    "sleep_limb": (event_fold, 0, POPULATION_SD),
}
# the headline's chance differs by dataset: BCI's 1/C, the sleep events' positive share
DRAWS_CHANCE = {"motor_imagery", "bci_erp", "bci_ssvep", "bci_cognitive", "sleep_arousal",
                "sleep_respiratory", "sleep_limb"}
# the epilepsy benchmark's catalog scores abnormal EEG against a dummy AUROC of 0.5
DUMMIES = {"abnormal_eeg": 0.5}


# one value pooled over every fold's test recordings, no SD (the reference's sleep_hypnogram)
POOLED_ONLY = {"sleep_hypnogram"}


def test_every_task_is_covered():
    assert set(CASES) | POOLED_ONLY == set(TASKS)


def hypnogram_fold(value: float) -> dict:
    """Two recordings whose predicted features are twice the scored ones: pooled r = 1 (the
    fold's own mean r is `value`)."""
    from embedprobe.tasks.hypnogram.features import FEATURES

    scored = [dict.fromkeys(FEATURES, 1.0 + k) for k in range(2)]
    return {"pearson_r": value, "recordings": [
        {"scored": s, "predicted": {n: 2 * v for n, v in s.items()}} for s in scored]}


def test_the_hypnogram_headline_is_one_pooled_value_without_sd(tmp_path):
    path = write_results_table(roots_in(tmp_path), "h", "d", "sleep_hypnogram", len(VALUES),
                               {"m": [hypnogram_fold(v) for v in VALUES]})
    row = read_results(path).iloc[0]
    assert row["pearson_r_mean"] == 1.0 and np.isnan(row["pearson_r_sd"])
    assert row["pearson_r_fold_mean"] == pytest.approx(0.74)
    assert row["r_TST"] == 1.0


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_headline_sd_over_folds_is_the_reference_s(tmp_path, name):
    make, ddof, by_hand = CASES[name]
    task = task_for(name)
    assert task.sd_ddof == ddof
    path = write_results_table(roots_in(tmp_path), "b", "d", name, len(VALUES),
                               {"m": [make(v) for v in VALUES]})
    row = read_results(path).iloc[0]
    headline = task.metrics[0]
    assert row[f"{headline}_mean"] == pytest.approx(0.74, abs=1e-9)
    assert row[f"{headline}_sd"] == by_hand == round(float(np.std(VALUES, ddof=ddof)), 4)


def test_the_population_sd_of_two_folds_is_half_their_distance(tmp_path):
    """Two sleep-staging folds 0.6 and 0.8: population SD 0.1 (the sample SD would be 0.141)."""
    path = write_results_table(roots_in(tmp_path), "b", "d", "sleep_staging", 2,
                               {"m": [sleep_fold(0.6), sleep_fold(0.8)]})
    assert read_results(path).iloc[0]["kappa_sd"] == 0.1


def test_results_tsv_carries_the_chance_and_normalised_columns(tmp_path):
    """BCI's chance is 1/C of the classes present in the dataset's labels (3 here); no task sets
    a dummy but abnormal EEG (the reference's catalog sets none elsewhere), so the normalised
    column is empty but there."""
    roots = roots_in(tmp_path)
    three = [trial_fold(v) | {"n_classes": 3} for v in VALUES]
    table = read_results(write_results_table(roots, "bci", "d", "motor_imagery", 5,
                                             {"m": three}))
    assert table["chance"].tolist() == [0.3333] and table["normalised"].isna().all()
    table = read_results(write_results_table(roots, "stage", "d", "sleep_staging", 5,
                                             {"m": [sleep_fold(v) for v in VALUES]}))
    assert table["chance"].tolist() == [0.0]  # kappa
    table = read_results(write_results_table(roots, "age", "d", "brain_age", 5,
                                             {"m": [age_fold(v) for v in VALUES]}))
    assert pd.isna(table["chance"]).all()  # no chance level for an error
    table = read_results(write_results_table(roots, "abn", "d", "abnormal_eeg", 5,
                                             {"m": [unit_fold(v) for v in VALUES]}))
    assert table["normalised"].tolist() == [pytest.approx(0.48, abs=1e-4)]  # (0.74-0.5)/0.5
    table = read_results(write_results_table(roots, "ev", "d", "sleep_arousal", 5,
                                             {"m": [event_fold(v) for v in VALUES]}))
    assert table["chance"].tolist() == [0.2]  # AUPRC of a guess: the positive share


@pytest.mark.parametrize("name", sorted(CASES))
def test_only_abnormal_eeg_sets_a_dummy_and_bci_and_events_have_a_chance_column(name):
    task = task_for(name)
    assert task.dummy == DUMMIES.get(name)
    assert task.draws_chance == (name in DRAWS_CHANCE)
