"""The BCI datasets' bad inputs as a run meets them: the index job (`embedprobe index`, what the
workflow's index rule runs) on a damaged look-alike exits 2 with the file named and a fix, and
writes no index: nothing downstream is cached from it, and earlier outputs keep their bytes."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import scipy.io
import yaml

from embedprobe import cli
from embedprobe.core.config import load_config
from embedprobe.datasets.registry import generator_for


def _drop_trial_markers(root: Path) -> Path:
    """BNCI 2014-008: A01.mat without `y`, the per-sample target/non-target codes."""
    path = root / "A01.mat"
    content = scipy.io.loadmat(path, simplify_cells=True)
    del content["data"]["y"]
    scipy.io.savemat(path, {"data": content["data"]})
    return path


def _reshape_ssvep(root: Path) -> Path:
    """Nakanishi 2015: s2.mat's `eeg` array with its axes reversed."""
    path = root / "s2.mat"
    eeg = scipy.io.loadmat(path)["eeg"]
    scipy.io.savemat(path, {"eeg": np.ascontiguousarray(eeg.transpose(3, 2, 1, 0))})
    return path


def _one_file(root: Path) -> Path:
    """EEGMAT: Subject01's arithmetic file gone, its rest file there."""
    path = next(root.rglob("Subject01_2.edf"))
    path.unlink()
    return path


def _rename_struct(root: Path) -> Path:
    """DREAMER: DREAMER.mat re-saved with its struct under another name."""
    path = root / "DREAMER.mat"
    scipy.io.savemat(path, {"Dreamer": scipy.io.loadmat(path)["DREAMER"]})
    return path


CASES = {
    # dataset: (damage(root) -> the file named, what the message says, what the fix says)
    "bnci2014_008_demo": (_drop_trial_markers, "no field y, the trial markers", "download"),
    "nakanishi2015_demo": (_reshape_ssvep, "axes look reversed", "12JFPM_SSVEP"),
    "eegmat_demo": (_one_file, "is partial (7/8 recordings)", "allow_partial=true"),
    "dreamer_demo": (_rename_struct, "no variable DREAMER", "zenodo.org/records/546113"),
}


def tree_hashes(root: Path) -> dict:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*"))
            if p.is_file()}


@pytest.mark.parametrize("dataset", CASES)
def test_a_damaged_bci_dataset_stops_its_index_with_the_file_and_a_fix(tmp_path, capsys,
                                                                      dataset):
    damage, message, fix = CASES[dataset]
    config = load_config()
    entry = config["datasets"][dataset]
    root = tmp_path / "data" / entry["path"]
    generator_for(config, dataset).write_lookalike(root, entry["generator"])
    named = damage(root)
    earlier = tmp_path / "results/index/earlier.tsv"
    earlier.parent.mkdir(parents=True)
    earlier.write_text("subject\trecording\n")
    before = tree_hashes(tmp_path / "results")
    # the user's copy of the dataset (no generator: the fix is the dataset's, not "rerun")
    settings = tmp_path / "mine.yaml"
    mine = {k: v for k, v in entry.items() if k != "generator"} | {"subjects": 4}
    # strict: a partial dataset (EEGMAT's) is refused, not run on its complete recordings
    settings.write_text(yaml.safe_dump({k: str(tmp_path / k.removesuffix("_root")) for k in
                                        ("data_root", "cache_root", "results_root")}
                                       | {"datasets": {"mine": mine}, "strict": True}))
    out = tmp_path / "results/index/mine.tsv"
    capsys.readouterr()
    code = cli.main(["--configfile", str(settings), "index", "--dataset", "mine",
                     "--out", str(out)])
    printed = capsys.readouterr()
    text = printed.out + printed.err
    assert code == 2, text
    error = next(line for line in text.splitlines() if line.startswith("error:"))
    assert message in error and (named.name in error or str(named.parent) in error), error
    assert fix in next(line for line in text.splitlines() if line.startswith("fix:"))
    # no index: only the job's failure record (what `status` and the results table read)
    record = out.with_name(out.name + ".failure.json")
    assert not out.exists() and list(out.parent.glob("mine*")) == [record]
    assert message in json.loads(record.read_text())["message"]
    after = tree_hashes(tmp_path / "results")
    assert {k: v for k, v in after.items() if k != str(record)} == before
    shutil.rmtree(root)
