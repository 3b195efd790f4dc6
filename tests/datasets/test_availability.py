"""`embedprobe data status`: each dataset's state on disk, in the plan's and check's own states,
from the command (exit codes, table, JSON) and from the Python API."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from embedprobe.api import tables
from embedprobe.core.config import load_config
from embedprobe.core.errors import UsageError
from embedprobe.datasets.availability import datasets_named

DATASET = "sleep_edf_demo"  # 10 recordings: the session's generated demo (tests/conftest.py)


@pytest.fixture
def data_root(demo_root, tmp_path):
    """A data root holding a copy of the 10-recording demo where sleep_edf_demo looks, and a
    TUAB folder with one file outside TUAB's layout."""
    root = tmp_path / "data"
    shutil.copytree(demo_root, root / "demo/sleep-edf")
    stray = root / "demo/tuab/edf/dev/normal/01_tcp_ar/aaaaamye_s001_t000.edf"
    stray.parent.mkdir(parents=True)
    stray.write_bytes(b"0" * 256)
    return root


def status(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "embedprobe.cli", "data", "status", *args],
                          capture_output=True, text=True)


def test_found_partial_missing_and_error_rows(data_root):
    setting = [f"data_root={data_root}"]
    frame = tables.data_status([DATASET, "chbmit_demo", "tuab_demo"], config=setting)
    rows = frame.set_index("dataset")
    assert rows.loc[DATASET, ["state", "found", "expected", "recordings", "fix"]].tolist() == [
        "found", 10, 10, "10/10", ""]
    assert rows.loc[DATASET, "folder"] == str(data_root / "demo/sleep-edf")
    # absent: the look-alike's own command is the fix
    assert rows.loc["chbmit_demo", "state"] == "missing"
    assert "does not exist" in rows.loc["chbmit_demo", "detail"]
    assert rows.loc["chbmit_demo", "fix"].startswith(
        "embedprobe demo-data --dataset chbmit_demo")
    # a folder that is there but empty: missing, and said so (the plan and check print it too)
    (data_root / "demo/siena").mkdir(parents=True)
    empty = tables.data_status(["siena_demo"], config=setting).iloc[0]
    assert (empty["state"], empty["recordings"]) == ("missing", "0/" + str(empty["expected"]))
    assert empty["detail"].endswith("demo/siena holds no siena recording (the layout: "
                                    "docs/usage.md, the datasets table)")
    # a file the format's layout has no place for: the reader's message and fix
    assert rows.loc["tuab_demo", "state"] == "error"
    assert "not in a split folder" in rows.loc["tuab_demo", "detail"]
    assert "TUAB v3.0.x's layout" in rows.loc["tuab_demo", "fix"]
    # one night's hypnogram gone: 9 of 10 complete, the night named
    hypnogram = sorted((data_root / "demo/sleep-edf").rglob("*Hypnogram.edf"))[0]
    hypnogram.unlink()
    row = tables.data_status([DATASET], config=setting).iloc[0]
    assert (row["state"], row["recordings"]) == ("partial", "9/10")
    assert hypnogram.name[:6] in row["detail"]


def test_the_command_prints_the_table_and_json_and_exits_by_state(data_root):
    setting = ("--config", f"data_root={data_root}")
    found = status(DATASET, *setting)
    assert found.returncode == 0, found.stderr
    lines = found.stdout.splitlines()
    assert lines[0].split() == ["dataset", "format", "state", "recordings", "folder"]
    assert lines[1].split()[:4] == [DATASET, "sleep_edf", "found", "10/10"]
    assert lines[-1] == "1 found"
    both = status(DATASET, "chbmit_demo", *setting)
    assert both.returncode == 1  # not every dataset is there
    assert "  fix: embedprobe demo-data --dataset chbmit_demo" in both.stdout
    assert both.stdout.splitlines()[-1] == "1 found, 1 missing"
    as_json = status(DATASET, "chbmit_demo", "--format", "json", *setting)
    assert json.loads(as_json.stdout) == tables.data_status(
        [DATASET, "chbmit_demo"], config=[f"data_root={data_root}"]).to_dict("records")


def test_an_unknown_name_is_a_usage_error_with_the_closest():
    run = status("dmeo")
    assert run.returncode == 2
    assert "'dmeo' is no dataset, benchmark or target group (did you mean 'demo'?)" in run.stderr
    assert "fix:" in run.stderr


def test_names_select_datasets_through_benchmarks_and_groups_once_each():
    config = load_config()
    assert datasets_named(config, ["sleep_events_demo"]) == ["ucddb_demo", "physionet2018_demo"]
    assert datasets_named(config, ["tuab_demo", "abnormal_eeg_demo"]) == ["tuab_demo",
                                                                         "bonn_demo"]
    assert datasets_named(config) == list(config["datasets"])
    with pytest.raises(UsageError, match="did you mean 'sleep_stage'"):
        datasets_named(config, ["sleep_stag"])
