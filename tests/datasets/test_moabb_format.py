"""Format moabb: MOABB's own classes read look-alikes written in its cache layout, offline
(every socket refused here as well as in the reader); a class the project never listed runs
from a config entry alone; a missing subject is named with the command that fetches it."""

from __future__ import annotations

import os
import shutil
import socket
from pathlib import Path

import jsonschema
import numpy as np
import pytest
import scipy.io
import yaml

from embedprobe.core.config import _schema, load_config
from embedprobe.core.errors import DataError, UsageError
from embedprobe.datasets import registry
from embedprobe.datasets.bnci2014_001 import reader as bnci
from embedprobe.datasets.moabb import lookalike, offline
from embedprobe.datasets.moabb import reader as moabb
from embedprobe.pipeline.context import DatasetContext
from embedprobe.pipeline.index import build_index
from embedprobe.tasks.bci.motor_imagery import TASK as MOTOR_IMAGERY

from helpers.moabb import offline_moabb

CONFIG_DIR = Path(__file__).resolve().parents[2] / "config"


@pytest.fixture(autouse=True)
def no_network(monkeypatch, tmp_path):
    """MOABB's network refused, MNE's folders and config under tmp_path (MOABB writes its
    folder settings into MNE's config file)."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    offline_moabb(monkeypatch, tmp_path / "elsewhere", "BNCI")


@pytest.fixture(scope="module")
def bnci004(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("mne_data")
    lookalike.write_lookalike(root, {"moabb_dataset": "BNCI2014_004", "subjects": 2,
                                     "trials_per_run": 6, "seed": 1})
    return root


def _mat_runs(path: Path) -> list[dict]:
    runs = scipy.io.loadmat(str(path), simplify_cells=True)["data"]
    return [runs] if isinstance(runs, dict) else list(runs)


def test_moabb_reads_every_trial_and_sample_from_its_cache_layout(bnci004):
    recordings = moabb.find_recordings(bnci004, "BNCI2014_004", moabb_subjects=[1, 2],
                                       path="mne_data")
    # MOABB's sessions: the T file's three runs are sessions 0train-2train, E's 3test-4test
    assert [r.recording for r in recordings] == [
        f"sub-00{s}_{k}{part}_0" for s in (1, 2)
        for k, part in enumerate(["train"] * 3 + ["test"] * 2)]
    folder = bnci004 / "MNE-bnci-data" / "~bci" / "database" / "004-2014"
    for rec in recordings:
        assert rec.problem == "" and rec.subject == f"sub-00{rec.number}"
        assert rec.files == (folder / f"B0{rec.number}T.mat", folder / f"B0{rec.number}E.mat")
        k = int(rec.session_name[0])
        run = _mat_runs(rec.files[0] if k < 3 else rec.files[1])[k if k < 3 else k - 3]
        # the trial window starts interval[0] = 3 s after each marker, and lasts 4.5 s
        assert [(e.onset, e.duration, e.description) for e in moabb.read_events(rec)] == [
            (pytest.approx((t - 1) / 250 + 3.0), 4.5, ("left_hand", "right_hand")[y - 1])
            for t, y in zip(run["trial"], run["y"], strict=True)]
        header = moabb.read_header(rec)
        assert header.channels == ("C3", "Cz", "C4", "EOG1", "EOG2", "EOG3", "STI")
        assert (header.sfreq, header.n_samples) == (250.0, len(run["X"]))
        signals = moabb.read_signals(rec, ["C4", "C3"], (100, 400))
        np.testing.assert_allclose(signals.data, run["X"][100:400, [2, 0]].T * 1e-6, rtol=1e-6)


def test_a_missing_subject_is_named_with_the_command_that_fetches_it(bnci004, tmp_path):
    root = tmp_path / "partial"
    shutil.copytree(bnci004, root)
    (root / "MNE-bnci-data" / "~bci" / "database" / "004-2014" / "B02E.mat").unlink()
    entry = {"format": "moabb", "moabb_dataset": "BNCI2014_004", "moabb_subjects": [1, 2],
             "path": str(root), "labels": "motor_imagery", "expected_recordings": 10}
    connect, mne_data = socket.socket.connect, os.environ["MNE_DATA"]
    recordings = registry.entry_recordings(entry, root)
    # MOABB read `root` (pinned) and left the process's settings and sockets as they were
    assert (socket.socket.connect, os.environ["MNE_DATA"]) == (connect, mne_data)
    assert "MNE_DATASETS_BNCI_PATH" in os.environ and os.environ["MNE_DATA"] != str(root)
    missing = [r for r in recordings if r.problem]
    assert [r.recording for r in missing] == ["sub-002_missing"]
    assert "BNCI2014_004().download(subject_list=[2], path=" in missing[0].problem
    assert not (root / "MNE-bnci-data" / "~bci" / "database" / "004-2014" / "B02E.mat").exists()
    with pytest.raises(DataError) as refused:  # a strict run refuses it, exit 2
        registry.require_entry_data({"strict": True}, "b4", entry, root)
    assert refused.value.exit_code == 2 and "subject_list=[2]" in str(refused.value)


def test_an_unknown_class_is_refused_with_the_closest_name():
    with pytest.raises(UsageError, match=r"'BNCI2014_04'.*did you mean 'BNCI2014_004'") as err:
        offline.dataset("BNCI2014_04")
    assert err.value.exit_code == 2


def test_a_class_the_project_never_listed_runs_from_a_config_entry_alone(tmp_path):
    """BNCI 2014-002 (no entry, reader or channel map of its own): a user's entry names the
    class; MOABB reads its look-alike; the index holds its trials and LOSO its folds."""
    data = tmp_path / "data"
    lookalike.write_lookalike(data / "mne", {"moabb_dataset": "BNCI2014_002", "subjects": 3,
                                             "runs_per_file": 1, "trials_per_run": 8,
                                             "seed": 0})
    config_dir = tmp_path / "config"
    shutil.copytree(CONFIG_DIR, config_dir)
    user_entry = {"bnci2014_002": {
        "format": "moabb", "moabb_dataset": "BNCI2014_002", "moabb_subjects": [1, 2, 3],
        "path": "mne", "line_freq": 50, "labels": "motor_imagery", "channel_map":
        "bnci2015_001", "expected_recordings": 6, "subjects": 3, "epoch_seconds": 3,
        "trial_offset_seconds": 1.0}}
    datasets = config_dir / "datasets.yaml"
    config_text = yaml.safe_load(datasets.read_text())
    config_text["datasets"].update(user_entry)
    datasets.write_text(yaml.safe_dump(config_text))
    config = load_config(config_dir)
    jsonschema.validate(config, _schema())
    context = DatasetContext.build(config, {"data_root": str(data)}, "bnci2014_002")
    assert context.root == data / "mne"
    table = build_index(context)
    # 3 subjects x one session of MOABB's runs 0train and 1test (the T and E files), 8
    # trials each, half right hand (1), half feet (2)
    runs = table.groupby("recording")
    assert list(runs.groups) == [f"sub-00{s}_0_{k}{part}" for s in (1, 2, 3)
                                 for k, part in enumerate(("train", "test"))]
    assert runs.size().tolist() == [8] * 6
    assert runs["label"].apply(lambda y: np.bincount(y, minlength=3).tolist()).tolist() == \
        [[0, 4, 4]] * 6
    rec = moabb.find_recordings(data / "mne", "BNCI2014_002", path="mne",
                                moabb_subjects=[1, 2, 3])[0]
    events = moabb.read_events(rec)  # a unit starts 1 s into MOABB's window (3 s after)
    assert table[table["recording"] == rec.recording]["start"].tolist() == [
        round((e.onset + 1.0) * 512) for e in events]
    assert {e.duration for e in events} == {5.0}
    plan = MOTOR_IMAGERY.fold_rule(table, {"folds": 3, "fold_seed": 42},
                                   user_entry["bnci2014_002"])
    assert [plan.members(k, "test") for k in range(plan.n_folds)] == [
        ["sub-001"], ["sub-002"], ["sub-003"]]
    validating = [plan.members(k, "val") for k in range(plan.n_folds)]
    assert all(len(v) == 1 and v != [f"sub-00{k + 1}"] for k, v in enumerate(validating))


def test_moabb_and_the_hand_written_reader_give_the_same_trials(tmp_path):
    """BNCI 2014-001's files, read by MOABB's class and by datasets/bnci2014_001: the same
    cues, classes and samples run for run (the comparison item 3 of the issue starts from)."""
    root = tmp_path / "mne_data"
    lookalike.write_lookalike(root, {"moabb_dataset": "BNCI2014_001", "subjects": 1,
                                     "runs_per_file": 2, "trials_per_run": 8, "seed": 0})
    theirs = moabb.find_recordings(root, "BNCI2014_001", moabb_subjects=[1], path="x")
    ours = bnci.find_recordings(root)
    assert len(ours) == len(theirs) == 4
    for mine, other in zip(ours, theirs, strict=True):
        assert [(e.onset, e.description) for e in bnci.read_events(mine)] == [
            (pytest.approx(e.onset), e.description) for e in moabb.read_events(other)]
        channels = list(bnci.EEG_CHANNELS)
        np.testing.assert_allclose(moabb.read_signals(other, channels).data,
                                   bnci.read_signals(mine, channels).data, rtol=1e-6)
