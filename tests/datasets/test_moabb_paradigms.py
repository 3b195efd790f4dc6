"""Format moabb beyond motor imagery: an ERP set (BNCI 2014-008) and an SSVEP set (Nakanishi
2015) written in MOABB's cache layout and read by MOABB's own classes, offline (every socket
refused); a config entry indexes their trials, and leave-one-subject-out folds them."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import jsonschema
import pytest

from embedprobe.core.config import _schema, load_config
from embedprobe.datasets.moabb import lookalike
from embedprobe.datasets.moabb import reader as moabb
from embedprobe.pipeline.context import DatasetContext
from embedprobe.pipeline.index import build_index
from embedprobe.tasks.bci.erp import TASK as ERP
from embedprobe.tasks.bci.ssvep import TASK as SSVEP

from helpers.moabb import offline_moabb

CONFIG_DIR = Path(__file__).resolve().parents[2] / "config"
SUBJECTS = 4


@pytest.fixture(autouse=True)
def no_network(monkeypatch, tmp_path):
    """MOABB's network refused; MNE's folders and config under tmp_path."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    offline_moabb(monkeypatch, tmp_path / "elsewhere", "BNCI")


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    """Both look-alikes under one MNE data folder, as MOABB's downloads leave them: 4 subjects
    each; BNCI 2014-008 2 characters x 10 repetitions (240 flashes, 40 Target); Nakanishi
    2015's 15 blocks (MOABB reads exactly 15: 180 trials, 15 per target)."""
    root = tmp_path_factory.mktemp("data")
    lookalike.write_lookalike(root / "mne", {"moabb_dataset": "BNCI2014_008",
                                             "subjects": SUBJECTS, "selections": 2,
                                             "repetitions": 10, "seed": 0})
    lookalike.write_lookalike(root / "mne", {"moabb_dataset": "Nakanishi2015",
                                             "subjects": SUBJECTS, "blocks": 15, "seed": 0})
    return root


def _entry(name: str, labels: str, channel_map: str, epoch: float) -> dict:
    return {"format": "moabb", "moabb_dataset": name, "moabb_subjects": [1, 2, 3, 4],
            "path": "mne", "line_freq": 50, "labels": labels, "channel_map": channel_map,
            "expected_recordings": SUBJECTS, "subjects": SUBJECTS, "epoch_seconds": epoch,
            "trial_offset_seconds": 0.0}


def _index(data: Path, name: str, entry: dict):
    config = load_config(CONFIG_DIR)
    config["datasets"][name] = entry
    jsonschema.validate(config, _schema())
    return build_index(DatasetContext.build(config, {"data_root": str(data)}, name))


NAKANISHI_TARGETS = [f"{9.25 + 0.5 * k:.2f}" for k in range(12)]


@pytest.mark.parametrize(("name", "task", "epoch", "trials", "duration"), [
    # one recording per subject (MOABB's session 0, run 0): 240 one-second flashes, 1 Target
    # in 6, each from MOABB's marker (interval [0, 1])
    ("BNCI2014_008", ERP, 1, {"NonTarget": 200, "Target": 40}, 1.0),
    # 180 trials of 4 s, 15 per target frequency 9.25-14.75 Hz; MOABB's window 0.15-4.3 s
    # after each marker
    ("Nakanishi2015", SSVEP, 4, dict.fromkeys(NAKANISHI_TARGETS, 15), 4.15),
])
def test_moabb_reads_the_lookalike_into_trials_folds_and_draws(data, name, task, epoch, trials,
                                                                 duration):
    dataset = name.lower()
    entry = _entry(name, task.name, dataset, epoch)
    table = _index(data, f"{dataset}_moabb", entry)
    runs = table.groupby("recording")
    assert list(runs.groups) == [f"sub-00{s}_0_0" for s in range(1, 5)]
    assert [Counter(task.classes[y] for y in r["label"]) for _, r in runs] == [trials] * 4
    rec = moabb.find_recordings(data / "mne", name, path="mne", moabb_subjects=[2])[0]
    events = moabb.read_events(rec)
    assert {round(e.duration, 6) for e in events} == {duration}
    assert table[table["recording"] == rec.recording]["start"].tolist() == [
        round(e.onset * 256) for e in events]
    plan = task.fold_rule(table, {"folds": SUBJECTS, "fold_seed": 42}, entry)
    assert [plan.members(k, "test") for k in range(4)] == [[f"sub-00{s}"] for s in range(1, 5)]
    # the reference's draw, train_test_split(others, test_size=0.1, random_state=42) of the
    # three others: sklearn gives these four
    assert [plan.members(k, "val") for k in range(4)] == [
        ["sub-002"], ["sub-001"], ["sub-001"], ["sub-001"]]
