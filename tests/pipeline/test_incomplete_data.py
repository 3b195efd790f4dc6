"""Truncated and incomplete data as users meet it, through `embedprobe index` (the CLI in
process, with a job config as the rules hand it): a PSG shorter than its hypnogram (the real
SC4001E0 cut to 5 minutes), a listed Siena file that is absent, a night with no scored stage,
a dataset folder that is a link, an EDF whose header is damaged."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import mne
import pandas as pd
import pytest

from embedprobe import cli
from embedprobe.core.config import load_config
from embedprobe.datasets import registry
from embedprobe.datasets.edf import read_edf_header
from embedprobe.datasets.siena import lookalike as siena_lookalike
from embedprobe.datasets.sleep_edf import lookalike as sleep_edf_lookalike

from helpers.realdata import realdata

FIVE_MINUTES = "sleep-edf-first-5-minutes"
PSG = "sleep-cassette/SC4001E0-PSG.edf"
FIX_DAMAGED = "fix: download the file again (the copy is damaged or cut short, or it is not EDF)"


def run_index(tmp: Path, data_root: Path, path: str, expected: int, dataset="sleep_edf_demo",
              capsys=None, **settings) -> tuple[int, str, Path]:
    """`embedprobe --job-config JSON index` on `data_root/path`: (exit code, stderr, out)."""
    config = load_config()
    entry = {k: v for k, v in config["datasets"][dataset].items() if k != "generator"}
    config["datasets"] = {dataset: entry | {"path": path, "expected_recordings": expected}}
    config.update(data_root=str(data_root), cache_root=str(tmp / "cache"),
                  results_root=str(tmp / "results"), weights_root=str(tmp / "weights"),
                  **settings)
    out = tmp / "results" / "index" / f"{dataset}.tsv"
    capsys.readouterr()
    code = cli.main(["--job-config", json.dumps(config), "index", "--dataset", dataset,
                     "--out", str(out)])
    return code, capsys.readouterr().err, out


def lines(stderr: str, start: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith(start)]


# --- a PSG shorter than its hypnogram ------------------------------------------------------------


@pytest.mark.parametrize("linked", [False, True], ids=["folder", "linked folder"])
def test_a_psg_shorter_than_its_hypnogram_is_indexed_to_its_end(tmp_path, capsys, linked):
    """The real SC4001E0 PSG cut to 300 s (10 records of 30 s) with its real 24 h hypnogram:
    its 10 epochs are indexed, the 2,640 scored epochs after 300 s are cut and named. Behind a
    linked `sleep-cassette` (a cluster's data root) the same, not 0 of 1 recordings."""
    real = realdata(FIVE_MINUTES)
    if linked:
        data_root = tmp_path / "data"
        (data_root / "sc").mkdir(parents=True)
        (data_root / "sc/sleep-cassette").symlink_to(real.resolve() / "sleep-cassette",
                                                     target_is_directory=True)
        psg, folder = data_root / "sc" / PSG, "sc"
    else:
        data_root, psg, folder = real.parent, real / PSG, FIVE_MINUTES
    code, err, out = run_index(tmp_path, data_root, folder, 1, capsys=capsys)
    assert code == 0, err
    assert lines(err, "warning:") == [
        f"warning: {psg}: the signal ends at 300 s but SC4001EC-Hypnogram.edf scores up to "
        "79,500 s: 2,640 scored epochs of 30 s past its end cut; the recording is indexed up "
        "to its end"]
    assert lines(err, "note:") == [
        "note: sleep_edf_demo: unscored annotations dropped: 'Sleep stage ?' x1"]
    table = pd.read_csv(out, sep="\t")
    assert table["recording"].tolist() == ["SC4001E0"] * 10
    assert table["start"].tolist() == list(range(0, 30000, 3000))  # 100 Hz, the last ends at 300 s
    assert table["label"].tolist() == [0] * 10  # the afternoon's wake
    assert read_edf_header(psg).n_samples("EEG Fpz-Cz") == 30000


# --- one recording's file missing ----------------------------------------------------------------

SIENA = {"patients": 2, "files_per_patient": 2, "minutes_per_file": 2, "seed": 0}


@pytest.fixture(scope="module")
def siena_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("siena") / "siena"
    siena_lookalike.write_lookalike(root, SIENA)
    return root


def test_a_missing_siena_file_is_named_and_the_others_run(siena_root, tmp_path, capsys):
    """PN01-2.edf, which PN01's seizure list names, removed: 3 of 4 recordings run; strict
    refuses the dataset (exit 2) with the command that runs it anyway."""
    data = tmp_path / "data" / "siena"
    shutil.copytree(siena_root, data)
    listing = data / "PN01/Seizures-list-PN01.txt"
    assert "PN01-2.edf" in listing.read_text()
    (data / "PN01/PN01-2.edf").unlink()
    problem = f"PN01-2.edf is listed in {listing} but is not in {data / 'PN01'}"

    code, err, out = run_index(tmp_path, tmp_path / "data", "siena", 4, "siena_demo", capsys)
    assert code == 0, err
    assert lines(err, "warning:") == [
        f"warning: siena_demo: recording PN01-2 is missing, the others run: {problem}"]
    assert sorted(pd.read_csv(out, sep="\t")["recording"].unique()) == [
        "PN00-1", "PN00-2", "PN01-1"]

    code, err, _ = run_index(tmp_path / "strict", tmp_path / "data", "siena", 4, "siena_demo",
                             capsys, strict=True)
    assert code == 2
    assert lines(err, "error:") == [
        f"error: dataset 'siena_demo' is partial (3/4 recordings) in {data}: {problem}"]
    assert lines(err, "fix:")[0].startswith("fix: ") and "allow_partial=true" in err
    assert not (tmp_path / "strict/results/index/siena_demo.tsv").exists()

    code, err, _ = run_index(tmp_path / "allowed", tmp_path / "data", "siena", 4, "siena_demo",
                             capsys, strict=True, allow_partial=True)
    assert code == 0 and lines(err, "warning:") == [
        f"warning: siena_demo: recording PN01-2 is missing, the others run: {problem}"]


def test_the_real_siena_list_without_its_file_names_the_missing_recording():
    """The real PN01 list names `PN01.edf` (no file number); with no EDF beside it the reader
    reports PN01-1.edf missing instead of refusing the whole dataset."""
    root = realdata("siena-scalp-eeg-database-1.0.0")
    config = {"datasets": {"siena": {"format": "siena", "path": root.name,
                                     "expected_recordings": 1}}}
    status = registry.data_status(config, {"data_root": str(root.parent)}, "siena")
    assert (status.state, status.found, status.expected) == ("missing", 0, 1)
    assert status.problems == [f"PN01-1.edf is listed in {root / 'PN01/Seizures-list-PN01.txt'} "
                               f"but is not in {root / 'PN01'}"]


# --- a night whose hypnogram holds no scored stage -----------------------------------------------


def test_a_night_without_a_scored_stage_is_named(tmp_path, capsys):
    root = tmp_path / "data" / "sc"
    sleep_edf_lookalike.generate(root, n_subjects=2, nights=2, hours=0.25, seed=3)
    hypnogram = sorted(root.rglob("*-Hypnogram.edf"))[1]
    start = read_edf_header(hypnogram).start
    total = sum(mne.read_annotations(hypnogram).duration)
    sleep_edf_lookalike.write_hypnogram(hypnogram, [(0.0, float(total), "Sleep stage ?")], start)
    psg = next(root.rglob(f"{hypnogram.name[:6]}*-PSG.edf"))

    code, err, out = run_index(tmp_path, tmp_path / "data", "sc", 4, capsys=capsys)
    assert code == 0, err
    assert lines(err, "warning:") == [
        f"warning: {psg}: no window labelled W or N1 or N2 or N3 or REM: {hypnogram.name} holds "
        "only 'Sleep stage ?' x1 unscored; the recording is left out of the index"]
    table = pd.read_csv(out, sep="\t")
    assert table["recording"].nunique() == 3 and psg.name[:8] not in set(table["recording"])


# --- an EDF whose header is damaged --------------------------------------------------------------


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("keep, message, fix", [
    (100, "not a readable EDF file: it is cut short: 100 bytes, less than the 256 of an EDF "
          "header", FIX_DAMAGED),
    (1000, "not a readable EDF file: its header is cut short: 7 signals need 2048 header "
           "bytes, the file has 1000", FIX_DAMAGED),
    (7048, "truncated: the header promises 10 records (184448 bytes) but the file has 7048 "
           "bytes", "fix: download the file again (the copy stopped early)"),
], ids=["fixed header", "signal headers", "samples"])
def test_a_damaged_edf_says_what_is_wrong(tmp_path, capsys, keep, message, fix):
    """A truncated copy of the real 5-minute PSG: exit 2, the file named, what is wrong in
    words (never the parser's "invalid literal for int()"), a fix; the earlier index and the
    cache keep their bytes."""
    data = tmp_path / "data" / "sc"
    shutil.copytree(realdata(FIVE_MINUTES), data)
    psg = data / PSG
    os.chmod(psg, 0o644)
    with open(psg, "r+b") as f:
        f.truncate(keep)
    earlier = [tmp_path / "results/index/sleep_edf_demo.tsv", tmp_path / "cache/x/store.h5"]
    for path in earlier:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(os.urandom(300))
    before = [_digest(p) for p in earlier]

    code, err, _ = run_index(tmp_path, tmp_path / "data", "sc", 1, capsys=capsys)
    assert code == 2
    assert lines(err, "error:") == [f"error: {psg}: {message}"]
    assert "invalid literal" not in err
    assert lines(err, "fix:") == [fix]
    assert [_digest(p) for p in earlier] == before
    assert sorted(p.name for p in (tmp_path / "results/index").iterdir()) == [
        "sleep_edf_demo.tsv", "sleep_edf_demo.tsv.failure.json"]
