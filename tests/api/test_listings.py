"""`embedprobe list benchmarks|models|datasets|reference`: the config's catalogue a row each,
with the weights' and data's states from their owners (as check and the plan see them)."""

from __future__ import annotations

import json
import subprocess
import sys

from embedprobe.api import tables
from embedprobe.core.config import load_config
from embedprobe.core.variants import listed_models


def run_list(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "embedprobe.cli", "list", *args],
                          capture_output=True, text=True)


def test_models_with_their_family_weights_state_and_aliases(tmp_path):
    weights = tmp_path / "weights"
    weights.mkdir()
    (weights / "biot.pt").write_bytes(b"\0")  # a local file: found
    setting = [f"weights_root={weights}", "models.biot_pretrained.weights=biot.pt",
               "models.labram_pretrained.weights=absent.safetensors"]
    frame = tables.listing("models", config=setting).set_index("model")
    assert list(frame.index) == list(listed_models(load_config()["models"]))  # no variant ids
    assert frame.loc["biot_random", ["family", "weights", "weights_state"]].tolist() == [
        "biot", "random", "not needed"]
    assert frame.loc["biot_pretrained", "weights_state"] == "found"
    assert frame.loc["labram_pretrained", "weights_state"] == "missing"
    assert frame.loc["cbramod_pretrained", "weights_state"] == "not fetched"  # a hub checkpoint
    assert frame.loc["eegpt_random", ["sfreq", "window_seconds"]].tolist() == [256, 10]
    assert "all_random" in frame.loc["biot_random", "aliases"]
    assert "biot" in frame.loc["biot_pretrained", "aliases"].split(", ")
    run = run_list("models", "--format", "json", "--config", *setting)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout) == tables.listing("models", config=setting).to_dict("records")


def test_benchmarks_and_datasets_tables(tmp_path):
    run = run_list("benchmarks")
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].split() == ["benchmark", "task", "quick", "datasets", "n_models", "folds",
                                "variants"]
    demo = next(line for line in lines if line.startswith("demo "))
    assert demo.split()[:6] == ["demo", "sleep_staging", "sleep_edf_demo", "sleep_edf_demo", "1",
                                "5"]
    assert lines[-1] == f"{len(load_config()['benchmarks'])} benchmarks"
    rows = tables.listing("benchmarks").set_index("benchmark")
    # the quick dataset (only_datasets=quick) is the reference's: Siena for epilepsy
    listed = load_config()["benchmarks"]["epilepsy"]["datasets"]
    assert listed[:2] == ["siena", "chbmit"]
    assert rows.loc["epilepsy", ["quick", "datasets"]].tolist() == ["siena", ", ".join(listed)]
    assert rows.loc["bci_mi_demo", "variants"] == (
        "default, token_flattening, no_filtering, no_filtering_token_flattening")
    data = tables.listing("datasets", config=[f"data_root={tmp_path}"]).set_index("dataset")
    assert len(data) == len(load_config()["datasets"])
    assert data.loc["sleep_edf_demo", ["format", "labels", "state", "recordings"]].tolist() == [
        "sleep_edf", "sleep_staging", "missing", "0/10"]
    assert data.loc["tuab_demo", "labels"] == "abnormal_eeg"


def test_an_unknown_kind_is_a_usage_error():
    run = run_list("modles")
    assert run.returncode == 2 and "invalid choice: 'modles'" in run.stderr


def test_the_reference_checkpoints_with_the_model_that_runs_each_or_why_not():
    run = run_list("reference")
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].split() == ["reference", "family", "group", "runs_as", "not_available"]
    assert lines[-1] == "44 reference checkpoints"
    rows = tables.listing("reference").set_index("reference")
    assert rows.loc["reve_pretrained", ["runs_as", "not_available"]].tolist() == [
        "reve_base_pretrained", ""]
    assert rows.loc["moirai_large", "group"] == "ts_fm"
    assert rows.loc["moirai_large", "licence"].startswith("CC BY-NC 4.0")
    assert rows.loc["chronos_t5_base", ["runs_as", "not_available"]].tolist() == [
        "chronos_t5_base", ""]
    assert rows.loc["neurogpt_pretrained", "not_available"].startswith("family not built here")
    assert "seizure_detection" in rows.loc["sleepyco_shhs_fold0", "rule_out_tasks"]
    # 10, and Chronos's 4, MOMENT's 3 and EEGNet's 12
    assert (rows["runs_as"] != "").sum() == 29
