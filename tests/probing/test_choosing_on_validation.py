"""One rule chooses every probe's C or alpha on validation, every probe returns one record and
takes one split value.

The rule's parts (best score, ties to the first of the grid, NaN not competing, the named
fallback) are checked on known scores; then each task's probe is run on a small fold with the
rule spied on in its module: it must choose through the rule and return a ProbeResult whose
`chosen` is the rule's answer. Each probe's first parameter is the fold's Split
(probing/split.py), which every task cuts (Task.split) and its fit_fold takes.
"""

import importlib
import inspect
import json
import re
import typing

import numpy as np
import pytest

from embedprobe.core.errors import UsageError
from embedprobe.probing import selection
from embedprobe.probing.result import ProbeResult
from embedprobe.probing.selection import FALLBACK, Selection, choose
from embedprobe.probing.split import Split
from embedprobe.tasks.registry import TASKS

NAN = float("nan")


def test_the_best_score_wins_and_ties_go_to_the_first_of_the_grid():
    assert choose({0.1: 0.8, 1.0: 0.9, 10.0: 0.9}, (0.1, 1.0, 10.0), "v").chosen == 1.0
    # the grid's order decides a tie, not the value: a grid given large to small
    assert choose({0.1: 0.9, 10.0: 0.9}, (10.0, 0.1), "v").chosen == 10.0
    error = choose({5.0: 2.0, 1.0: 2.0, 20.0: 3.0}, (5, 1, 20), "inner-CV MAE",
                   lower_is_better=True)
    assert error.chosen == 5.0 and error.lower_is_better and not error.fell_back


def test_an_unscored_value_does_not_compete_and_an_unscored_grid_falls_back():
    assert choose({0.1: NAN, 1.0: 0.2, 10.0: NAN}, (0.1, 1.0, 10.0), "v").chosen == 1.0
    assert choose({0.1: 0.5, 1.0: NAN}, (0.1, 1.0), "v").chosen == 0.1
    to_one = choose({0.1: NAN, 1.0: NAN, 10.0: NAN}, (0.1, 1.0, 10.0), "v")
    assert to_one.chosen == 1.0 and to_one.fell_back
    assert to_one.record()["fallback"] == FALLBACK
    no_one = choose({0.1: NAN, 10.0: NAN}, (0.1, 10.0), "v")
    assert no_one.chosen == 0.1 and no_one.fell_back
    # a grid of one value needs no score: chosen, and no fallback said
    single = choose({}, (2.0,), "v")
    assert single.chosen == 2.0 and not single.fell_back
    assert single.record()["fallback"] == ""


def test_a_repeated_value_counts_once_and_an_empty_grid_is_refused():
    assert selection.grid_values((5, 5.0, 1)) == (5.0, 1.0)
    with pytest.raises(UsageError, match="empty"):
        choose({}, (), "v")


def test_the_record_is_json_ready_and_names_the_rule():
    chosen = choose({0.01: 0.5, 1.0: 0.7}, (0.01, 1.0), "validation kappa")
    record = json.loads(json.dumps(chosen.record()))
    assert record == {"on": "validation kappa", "scores": {"0.01": 0.5, "1.0": 0.7},
                      "rule": f"highest validation kappa; ties: {selection.TIES}",
                      "fallback": ""}


# -- every task's probe goes through the rule ----------------------------------------------------
def _blobs(n: int, classes: int, seed: int, p: int = 6):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % classes
    X = rng.normal(size=(n, p)) + 1.5 * np.eye(classes, p)[y]
    return X.astype(np.float32), y.astype(np.int64)


def _staging():
    from embedprobe.probing.logistic import fit_logistic_probe

    return fit_logistic_probe(Split.of(*(_blobs(90, 3, s) for s in (0, 1, 2))),
                              C_grid=(0.01, 1.0))


def _seizure():
    from embedprobe.tasks.seizure.probe import fit_seizure_probe
    from embedprobe.tasks.seizure.scoring import RecordingTruth, WindowTimeline

    truth = {"r": RecordingTruth(600.0, ())}
    timeline = WindowTimeline(np.array(["r"] * 60), np.arange(60) * 10.0, 10.0, truth)
    return fit_seizure_probe(Split.of(*(_blobs(60, 2, s) for s in (0, 1, 2))), timeline,
                             C_grid=(0.01, 1.0))


def _recording_level():
    from embedprobe.tasks.recording_level.probe import ProbeSettings, fit_units

    X, y = _blobs(60, 2, 0)
    part = np.array(["train", "val", "test"])[np.arange(60) // 2 % 3]
    masks = {p: part == p for p in ("train", "val", "test")}
    return fit_units(Split.cut(X, y, masks), ProbeSettings("mean", (0.01, 1.0), None, "auroc"))


def _events():
    from embedprobe.tasks.sleep_events.probe import EventProbe, fit_event_probes

    X, y = _blobs(90, 2, 0)
    part = np.array(["train", "val", "test"])[np.arange(90) // 2 % 3]
    masks = {p: part == p for p in ("train", "val", "test")}
    seconds = 10.0 * y
    results = fit_event_probes(Split.cut(X, y, masks), {"a": seconds}, [EventProbe("a", 3.0)],
                               (0.01, 1.0))
    return results["a@3s"]


def _brain_age():
    from embedprobe.probing.ridge import fit_age_fold

    rng = np.random.default_rng(0)
    ages = rng.uniform(20, 90, 40)
    X = np.outer(ages, np.ones(4)) / 50 + rng.normal(size=(40, 4))
    return fit_age_fold(Split.of((X[:24], ages[:24]), (X[24:30], ages[24:30]),
                                 (X[30:], ages[30:])), alpha_grid=(1, 10))


PROBES = {  # the module that chooses, and a small fold of its probe
    "embedprobe.probing.logistic": _staging,
    "embedprobe.tasks.seizure.probe": _seizure,
    "embedprobe.tasks.recording_level.probe": _recording_level,
    "embedprobe.tasks.sleep_events.probe": _events,
    "embedprobe.probing.ridge": _brain_age,
}
# Each task and the probe it fits (sleep_hypnogram fits none: it scores the staging probe's
# saved predictions). A new task must say here which probe it uses.
TASK_PROBES = {
    "sleep_staging": "fit_logistic_probe", "motor_imagery": "fit_logistic_probe",
    "bci_erp": "fit_logistic_probe", "bci_ssvep": "fit_logistic_probe",
    "bci_cognitive": "fit_logistic_probe", "seizure_detection": "fit_seizure_probe",
    "abnormal_eeg": "fit_units", "sleep_diagnosis": "fit_units",
    "sleep_arousal": "fit_event_probes", "sleep_respiratory": "fit_event_probes",
    "sleep_limb": "fit_event_probes", "brain_age": "fit_age_fold",
}


@pytest.mark.parametrize("module_name", PROBES)
def test_each_probe_chooses_through_the_rule_and_returns_one_record(module_name, monkeypatch):
    module = importlib.import_module(module_name)
    made: list[Selection] = []

    def spy(*args, **kwargs):
        made.append(choose(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(module, "choose", spy)
    result = PROBES[module_name]()
    assert isinstance(result, ProbeResult) and made
    assert result.selection is made[-1] and result.chosen == made[-1].chosen
    assert set(result.selection.scores) <= {0.01, 1.0, 10.0}
    record = json.loads(json.dumps(result.record()))
    assert record["chosen"] == result.chosen and "chosen_C" not in record
    assert record["selection"]["on"] == result.selection.on and record["metrics"]


def _first_parameter_type(function):
    first = next(iter(inspect.signature(function).parameters))
    return typing.get_type_hints(function)[first]


@pytest.mark.parametrize("task", sorted(TASK_PROBES))
def test_each_probe_and_each_task_fit_take_the_split(task):
    probe = TASK_PROBES[task]
    module = next(m for m in PROBES if hasattr(importlib.import_module(m), probe))
    assert _first_parameter_type(getattr(importlib.import_module(module), probe)) is Split
    task_type = type(importlib.import_module(TASKS[task]).TASK)
    assert list(inspect.signature(task_type.fit_fold).parameters) == ["self", "job", "split"]
    assert typing.get_type_hints(task_type.split)["return"] in (Split, Split | None)


def test_the_split_pools_training_and_validation_in_row_order():
    X = np.arange(12.0).reshape(6, 2)
    masks = {"train": np.array([1, 0, 1, 0, 0, 0], bool),
             "val": np.array([0, 1, 0, 0, 1, 0], bool), "test": np.array([0, 0, 0, 1, 0, 1], bool)}
    split = Split.cut(X, np.arange(6), masks)
    pooled = split.pooled()
    assert pooled.y.tolist() == pooled.rows.tolist() == [0, 1, 2, 4]
    assert np.array_equal(pooled.X, X[[0, 1, 2, 4]])
    assert split.test.rows.tolist() == [3, 5] and len(split.val) == 2


def _reachable_source(module_name: str, depth: int = 2) -> str:
    """The module's source and that of the embedprobe modules it names, `depth` levels down."""
    text = inspect.getsource(importlib.import_module(module_name))
    if depth:
        for named in sorted(set(re.findall(r"embedprobe(?:\.\w+)+", text))):
            try:
                text += _reachable_source(named, depth - 1)
            except (ModuleNotFoundError, OSError):  # a name in a module; an empty __init__
                continue
    return text


def test_every_task_fits_one_of_the_probes_that_choose_through_the_rule():
    assert set(TASK_PROBES) == set(TASKS) - {"sleep_hypnogram"}
    for task, probe in TASK_PROBES.items():
        fit_fold = type(importlib.import_module(TASKS[task]).TASK).fit_fold
        assert re.search(rf"\b{probe}\(", _reachable_source(fit_fold.__module__)), \
            f"{task}: its fit_fold ({fit_fold.__module__}) does not reach {probe}"
