"""Motor imagery end to end on PhysioNet's own S001 runs (../shared/realdata): the CLI's index,
check and embed (random-init BIOT) as the rules run them, with data_root at the real folder.
Every trial of the six imagery runs is there, with the class its annotation gives it."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter

import h5py
import mne
import numpy as np
import pytest

from embedprobe.core.config import load_config
from embedprobe.pipeline.index import read_index
from embedprobe.tasks.bci.motor_imagery import CLASSES

from helpers.realdata import REALDATA, realdata

DATASET = "physionet_mi"
RUNS = (4, 6, 8, 10, 12, 14)  # the dataset's `runs`: the imagery runs
# T1/T2 by run, from PhysioNet's description: left/right fist in 4, 8, 12, both fists/feet
# in 6, 10, 14 (T0, the rest between cues, is no trial)
CLASS_OF = {run: ({"T1": "left_hand", "T2": "right_hand"} if run in (4, 8, 12)
                  else {"T1": "hands", "T2": "feet"}) for run in RUNS}


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    """The project's physionet_mi entry, data_root the real folder (read in place), the other
    roots in a temporary folder; S001's six imagery runs are all the folder has of them."""
    realdata("eeg-motor-movementimagery-dataset-1.0.0", "files", "S001")
    tmp = tmp_path_factory.mktemp("realdata_mi")
    config = load_config()
    entry = config["datasets"][DATASET]
    assert tuple(entry["runs"]) == RUNS
    config["datasets"] = {DATASET: {**entry, "expected_recordings": len(RUNS)}}
    config.update(data_root=str(REALDATA), cache_root=str(tmp / "cache"),
                  results_root=str(tmp / "results"), weights_root=str(tmp / "weights"))
    return tmp, json.dumps(config)


def cli(job, *args) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", "embedprobe.cli", "--job-config", job[1],
                           *args], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done


def annotated_trials() -> dict[tuple[str, str], int]:
    """(run id, class) -> cues, counted from each EDF's annotations through MNE alone."""
    counts = Counter()
    for run in RUNS:
        path = realdata("eeg-motor-movementimagery-dataset-1.0.0", "files", "S001",
                        f"S001R{run:02d}.edf")
        for code in mne.read_annotations(path).description:
            if code != "T0":
                counts[(f"S001R{run:02d}", CLASS_OF[run][code])] += 1
    return dict(counts)


@pytest.fixture(scope="module")
def index(job):
    path = job[0] / "index.tsv"
    done = cli(job, "index", "--dataset", DATASET, "--out", str(path))
    assert "6 recordings, 1 subjects, 90 windows" in done.stderr
    return read_index(path)


def test_the_index_holds_one_trial_per_cue_with_its_annotations_class(index):
    trials = Counter(zip(index["recording"], (CLASSES[i] for i in index["label"]), strict=True))
    assert dict(trials) == annotated_trials()
    assert Counter(CLASSES[i] for i in index["label"]) == {
        "left_hand": 23, "right_hand": 22, "feet": 24, "hands": 21}
    assert set(index["subject"]) == {"S001"} and set(index["sfreq"]) == {160.0}
    # each trial from 1 s after its cue (trial_offset_seconds), at the file's 160 Hz
    onsets = mne.read_annotations(realdata("eeg-motor-movementimagery-dataset-1.0.0", "files",
                                           "S001", "S001R04.edf"))
    cues = [round((onset + 1.0) * 160) for onset, code in
            zip(onsets.onset, onsets.description, strict=True) if code != "T0"]
    assert index.loc[index["recording"] == "S001R04", "start"].tolist() == cues


def test_check_passes_on_the_real_runs(job, index):
    out = job[0] / "check.json"
    cli(job, "check", "--dataset", DATASET, "--model", "biot_random", "--out", str(out))
    result = json.loads(out.read_text())
    assert result["status"] == "ok", result
    assert result["data"] == "found (6/6 recordings)"
    assert result["forward"] == "(32, 256) finite"


def test_embed_stores_every_trial_with_its_class(job, index):
    out = job[0] / "embeddings.h5"
    cli(job, "embed", "--dataset", DATASET, "--model", "biot_random", "--index",
        str(job[0] / "index.tsv"), "--out", str(out), "--threads", "1")
    with h5py.File(out, "r") as store:
        assert bool(store.attrs["complete"])
        embeddings = store["embeddings"][:]
        labels = store["windows"]["label"][:]
        recordings = [r.decode() if isinstance(r, bytes) else str(r)
                      for r in store["windows"]["recording"][:]]
    assert embeddings.shape == (90, 256) and np.isfinite(embeddings).all()
    assert embeddings.std(axis=0).max() > 0  # the trials differ
    stored = Counter(zip(recordings, (CLASSES[i] for i in labels), strict=True))
    assert dict(stored) == annotated_trials()
