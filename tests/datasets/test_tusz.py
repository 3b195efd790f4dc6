"""The TUSZ reader on look-alike files in the v2.0.x layout, and its refusals of bad input
through `embedprobe index` (exit 2, the file named, a `fix:` line, nothing written)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import edfio
import numpy as np
import pandas as pd
import pytest
import yaml

from embedprobe import cli
from embedprobe.core.errors import DataError, UsageError
from embedprobe.datasets.edf import read_edf_header
from embedprobe.datasets.tuh import CONFIGURATIONS
from embedprobe.datasets.tusz import lookalike
from embedprobe.datasets.tusz import reader as tusz

from helpers import lookalike as helper
from helpers.seizure import check_channel_map

SETTINGS = {"train": 3, "dev": 2, "eval": 2, "files_per_subject": 2, "minutes": 2, "seed": 0}
SECONDS = 120
_PATH = re.compile(r"^edf/(train|dev|eval)/([a-z]{8})/s001_\d{4}_\d{2}_\d{2}/"
                   r"(01_tcp_ar|02_tcp_le|03_tcp_ar_a|04_tcp_le_a)/\2_s001_t00[01]\.edf$")


demo = helper.demo_fixture(lookalike, SETTINGS, "tusz")
copy = helper.copy_fixture("data", "tusz")  # under data/ for the CLI's config


def by_recording(demo):
    return {p.recording: p for p in demo[2]}


def test_layout_is_the_corpus(demo):
    root, files, plans = demo
    edfs = [f.relative_to(root).as_posix() for f in files if f.suffix == ".edf"]
    assert len(edfs) == 14 and all(_PATH.match(e) for e in edfs)
    assert sorted(edfs) == sorted(p.relative for p in plans)
    for edf in edfs:  # each with its two annotation files
        assert (root / edf).with_suffix(".csv_bi").is_file()
        assert (root / edf).with_suffix(".csv").is_file()
    assert {p.configuration for p in plans} == set(CONFIGURATIONS)


def test_the_annotation_headers_are_nedcs(demo):
    root, _, plans = demo
    p = next(p for p in plans if p.seizures)
    lines = (root / p.folder / f"{p.recording}.csv_bi").read_text().splitlines()
    assert lines[:6] == ["# version = csv_v1.0.0", f"# bname = {p.recording}",
                         "# duration = 120.00 secs",
                         "# montage_file = $NEDC_NFC/lib/nedc_eas_default_montage.txt", "#",
                         "channel,start_time,stop_time,label,confidence"]
    rows = [line.split(",") for line in lines[6:]]
    assert {r[0] for r in rows} == {"TERM"} and {r[3] for r in rows} == {"bckg", "seiz"}
    assert float(rows[0][1]) == 0 and float(rows[-1][2]) == SECONDS  # the file covered
    per_channel = (root / p.folder / f"{p.recording}.csv").read_text().splitlines()
    assert per_channel[:6] == lines[:6]
    channels = {line.split(",")[0] for line in per_channel[6:]}
    ears = {"A1-T3", "T4-A2"}
    assert len(channels) == (20 if p.configuration.endswith("_a") else 22)
    assert bool(ears & channels) != p.configuration.endswith("_a")


def test_every_recording_its_split_and_seizures_are_recovered(demo):
    root, _, plans = demo
    planned = by_recording(demo)
    recordings = tusz.find_recordings(root)
    assert [r.recording for r in recordings] == sorted(planned)
    for rec in recordings:
        p = planned[rec.recording]
        assert (rec.subject, rec.split, rec.configuration) == (p.subject, p.split,
                                                               p.configuration)
        assert rec.session == f"{p.split}/s001_t{p.token:03d}" and tusz.split_of(rec) == p.split
        events = tusz.read_events(rec)
        assert [(e.onset, e.duration, e.description) for e in events] == [
            (float(s.onset), float(s.duration), "seizure") for s in p.seizures]
        typed = tusz.channel_events(rec)
        assert {(r.start, r.stop) for r in typed} == {(float(s.onset), float(s.end))
                                                      for s in p.seizures}
        assert [r.label for r in typed if r.channel == "FP1-F7"] == list(p.kinds)
    # every split has seizures; the last subject of a split of two or more has none
    for split in tusz.SPLITS:
        subjects = {p.subject: [] for p in plans if p.split == split}
        for p in plans:
            if p.split == split:
                subjects[p.subject] += p.seizures
        assert any(subjects.values())
        assert len(subjects) == 1 or not all(subjects.values())


def test_headers_name_the_electrodes_as_tuh_does(demo):
    root, _, plans = demo
    rates = []
    for p in plans:
        header = read_edf_header(root / p.relative)
        suffix = "LE" if "_le" in p.configuration else "REF"
        assert header.labels[0] == f"EEG FP1-{suffix}" and f"EEG T3-{suffix}" in header.labels
        assert (f"EEG A1-{suffix}" in header.labels) != p.configuration.endswith("_a")
        patient = (root / p.relative).read_bytes()[8:88].decode("ascii").strip()
        assert re.fullmatch(rf"{p.subject} [FM] 01-JAN-\d{{4}} {p.subject} Age:\d+", patient)
        rates.append(header.sfreq(f"EEG FP1-{suffix}"))
    assert sorted(set(rates)) == [250.0, 256.0] and rates.count(250.0) == 1


def test_signals_are_read_by_their_1020_names_whatever_the_reference(demo):
    root, _, plans = demo
    for rec in tusz.find_recordings(root):
        p = by_recording(demo)[rec.recording]
        header = tusz.read_header(rec)
        assert header.sfreq == p.sfreq and header.n_samples == p.sfreq * SECONDS
        assert header.channels[:3] == ("FP1", "FP2", "F3")
        assert ("A1" in header.channels) != p.configuration.endswith("_a")
        assert header.channels[-1] == f"EEG EKG1-{p.reference}"  # other channels as recorded
        signals = tusz.read_signals(rec, ["T3", "CZ"], span=(0, 512))
        written = lookalike.signals(p, SETTINGS["seed"])
        index = {s.label: s for s in written}
        expected = index[f"EEG T3-{p.reference}"].data[:512] * 1e-6
        assert signals.ch_names == ["T3", "CZ"] and signals.data.shape == (2, 512)
        np.testing.assert_allclose(signals.data[0], expected, atol=0.1e-6)


def test_the_official_split_is_train_dev_eval_in_every_fold(demo):
    """The reference's split_mode: official (adapters/tusz.TUSZDataModule._init_official):
    train trains, dev validates, eval tests; no fold number is read, so every fold is the
    same."""
    from embedprobe.probing.folds import seizure_plan

    recordings = tusz.find_recordings(demo[0])
    table = helper.fold_table(recordings, [int(bool(tusz.read_events(r))) for r in recordings])
    plan = seizure_plan(table, {"folds": 5, "fold_seed": 42}, {"split": "official"})
    assert plan.n_folds == 5 and "the official split" in plan.rule
    for k in range(5):
        for part, split in (("train", "train"), ("val", "dev"), ("test", "eval")):
            assert plan.members(k, part) == sorted({r.subject for r in recordings
                                                    if r.split == split})
    with pytest.raises(UsageError, match="no subject in the val part"):
        seizure_plan(table[~table["session"].str.startswith("dev/")],
                     {"folds": 5, "fold_seed": 42}, {"split": "official"})


def test_the_channel_maps_fit_every_family(demo):
    """The default map (the reference's 20 bipolar pairs) and the unipolar one both read."""
    plans = check_channel_map("tusz", helper.first_channels(tusz, demo[0]))
    assert len(plans["biot"].sources) == 16 and len(plans["eegdino"].model_names) == 19
    assert len(plans["cbramod"].model_names) == 20 and "FC3" in plans["eegpt"].model_names
    plans = check_channel_map("tusz_unipolar", helper.first_channels(tusz, demo[0]))
    assert len(plans["biot"].sources) == 16 and len(plans["eegdino"].model_names) == 19
    assert "T7" in plans["eegpt"].model_names and "T3" in plans["labram"].model_names


def test_the_same_seed_writes_the_same_bytes(tmp_path):
    small = {"train": 1, "dev": 1, "eval": 1, "files_per_subject": 1, "minutes": 2}
    helper.check_seed_decides_the_bytes(lookalike, tmp_path, small, ".edf")


def test_settings_are_checked():
    with pytest.raises(UsageError, match="TUSZ: unknown look-alike setting"):
        lookalike.plan({"hours": 1})
    with pytest.raises(UsageError, match="dev=0"):
        lookalike.plan({"dev": 0})
    with pytest.raises(UsageError, match="minutes=1"):
        lookalike.plan({"minutes": 1})


# --- bad inputs, through `embedprobe index` ----------------------------------------------


def a_recording(root: Path, split: str = "train", with_seizures: bool = True) -> Path:
    """An EDF of the split, with seizures (or without)."""
    for edf in sorted((root / "edf" / split).rglob("*.edf")):
        text = edf.with_suffix(".csv_bi").read_text()
        if (",seiz," in text) == with_seizures:
            return edf
    raise AssertionError(f"no {split} recording with_seizures={with_seizures}")


def index(tmp_path: Path, capsys) -> tuple[int, str, Path]:
    config = tmp_path / "tusz.yaml"
    config.write_text(yaml.safe_dump({
        "data_root": str(tmp_path / "data"), "results_root": str(tmp_path / "results"),
        "cache_root": str(tmp_path / "cache"), "weights_root": str(tmp_path / "weights"),
        "datasets": {"tusz_bad": {"format": "tusz", "path": "tusz", "line_freq": 60,
                                  "channel_map": "tusz", "expected_recordings": 14,
                                  "epoch_seconds": 10, "split": "official"}},
        "strict": True}))
    out = tmp_path / "results/index/tusz_bad.tsv"
    capsys.readouterr()
    code = cli.main(["--configfile", str(config), "index", "--dataset", "tusz_bad", "--out",
                     str(out)])
    captured = capsys.readouterr()
    return code, captured.out + captured.err, out


def fix_line(text: str) -> str:
    return next(line.strip()[5:] for line in text.splitlines()
                if line.strip().startswith("fix: "))


def test_the_pristine_look_alike_indexes(copy, tmp_path, capsys):
    code, text, out = index(tmp_path, capsys)
    assert code == 0, text
    table = pd.read_csv(out, sep="\t")
    assert table["recording"].nunique() == 14 and table["label"].sum() > 0


def rewrite(path: Path, old: str, new: str, count: int = 1) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, count))


def last_row(path: Path) -> str:
    return path.read_text().splitlines()[-1]


CASES = {
    # name: (damage(root) -> the file the message must name, message, fix)
    "an annotation outside its recording": (
        lambda root: (lambda edf: (rewrite(edf.with_suffix(".csv_bi"), last_row(
            edf.with_suffix(".csv_bi")), "TERM,110.0000,130.0000,seiz,1.0000"),
            edf.with_suffix(".csv_bi"))[1])(a_recording(root, "dev")),
        "ends after its recording", "correct its times in"),
    "an unknown event label": (
        lambda root: (lambda edf: (rewrite(edf.with_suffix(".csv_bi"), ",seiz,", ",sz,"),
                                   edf.with_suffix(".csv_bi"))[1])(a_recording(root)),
        "unknown event label 'sz'", "correct the label in"),
    "an unknown seizure type per channel": (
        lambda root: (lambda edf: (rewrite(edf.with_suffix(".csv"), "FP1-F7,0.0000",
                                           "FP1-F7,0.0000", 1),
                                   rewrite(edf.with_suffix(".csv"), ",bckg,", ",artf,"),
                                   edf.with_suffix(".csv"))[2])(a_recording(root, "eval")),
        "unknown event label 'artf'", "correct the label in"),
    "a session missing from the split list": (
        lambda root: (lambda edf: (shutil.move(edf.parents[2], root / "edf" / "test"
                                               / edf.parents[2].name),
                                   root / "edf" / "test" / edf.relative_to(
                                       root / "edf" / "train"))[1])(a_recording(root)),
        "its session is in no TUSZ split", "put the session under edf/train, dev or eval"),
    "annotations of another recording": (
        lambda root: (lambda edf: (rewrite(edf.with_suffix(".csv_bi"), f"# bname = {edf.stem}",
                                           "# bname = aaaaaaaa_s001_t000"),
                                   edf.with_suffix(".csv_bi"))[1])(a_recording(root)),
        "its header's bname is 'aaaaaaaa_s001_t000'", "put"),
}


@pytest.mark.parametrize("case", CASES)
def test_bad_input_is_refused_by_name_and_nothing_is_written(case, copy, tmp_path, capsys):
    damage, message, fix = CASES[case]
    named = damage(copy)
    cache = tmp_path / "cache"
    cache.mkdir()
    code, text, out = index(tmp_path, capsys)
    assert code == 2, text
    assert message in text and str(named) in text
    assert fix_line(text).startswith(fix)
    assert not out.exists() and not out.with_suffix(".quality.tsv").exists()
    assert list(cache.rglob("*")) == []  # no header cache kept either


def test_a_missing_annotation_file_makes_the_recording_incomplete(copy):
    edf = a_recording(copy)
    edf.with_suffix(".csv").unlink()
    rec = next(r for r in tusz.find_recordings(copy) if r.edf == edf)
    assert rec.problem == f"no {edf.stem}.csv beside {edf.name} (its seizures)"
    with pytest.raises(DataError, match=f"{edf.stem}: no {edf.stem}.csv") as err:
        tusz.read_events(rec)
    assert "allow_partial=true" in err.value.fix


@pytest.mark.parametrize("place, says", [
    ("edf/train/{name}", "not at edf/train/<subject>/<session>/<configuration>/"),
    ("edf/train/{subject}/s001_2003/05_tcp_xx/{name}", "not a TUSZ channel configuration"),
    ("edf/train/{subject}/s002_2003/01_tcp_ar/{name}", "are not its folders'"),
])
def test_a_recording_outside_the_layout_is_refused(copy, place, says):
    source = a_recording(copy)
    target = copy / place.format(name=source.name, subject=source.name[:8])
    helper.check_refused_at(tusz, copy, source, target, says, move=True)


def test_a_subject_in_two_splits_is_refused(copy):
    source = a_recording(copy, "train")
    session = source.parents[1]
    target = copy / "edf" / "eval" / session.parent.name / "s009_2020"
    shutil.copytree(session, target)
    for path in target.rglob("*_s001_*"):
        path.rename(path.with_name(path.name.replace("_s001_", "_s009_")))
    with pytest.raises(DataError, match=f"subject {source.name[:8]} is in two TUSZ splits"):
        tusz.find_recordings(copy)


def test_a_recording_without_a_scalp_electrode_is_refused(copy):
    path = a_recording(copy, "eval")
    label = next(s.label for s in edfio.read_edf(path).signals if s.label.startswith("EEG CZ-"))
    helper.check_refused_without(tusz, copy, path, label, f"no {label}: TUSZ's")
