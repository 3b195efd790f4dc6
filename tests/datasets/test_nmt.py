"""The NMT reader on look-alike files in the archive's layout ({normal,abnormal}/{train,eval}/
with Labels.csv)."""

from __future__ import annotations

import re
import shutil

import numpy as np
import pandas as pd
import pytest

from embedprobe.core.errors import DataError, UsageError
from embedprobe.datasets.edf import read_edf_header
from embedprobe.datasets.nmt import lookalike
from embedprobe.datasets.nmt import reader as nmt
from embedprobe.datasets.registry import entry_recordings
from embedprobe.datasets.tuh import ELECTRODES

from helpers import lookalike as helper
from helpers.seizure import check_channel_map

SETTINGS = {"train_normal": 3, "train_abnormal": 3, "eval_normal": 1, "eval_abnormal": 2,
            "minutes": 2, "seed": 0}
_PATH = re.compile(r"^(normal|abnormal)/(train|eval)/\d{7}\.edf$")


demo = helper.demo_fixture(lookalike, SETTINGS, "nmt")
copy = helper.copy_fixture("nmt")


def test_layout_and_label_table_are_the_archives(demo):
    root, files, plans = demo
    edfs = [f.relative_to(root).as_posix() for f in files if f.suffix == ".edf"]
    assert len(edfs) == 9 and all(_PATH.match(e) for e in edfs)
    assert sorted(edfs) == sorted(p.relative for p in plans)
    table = pd.read_csv(root / "Labels.csv")
    assert list(table.columns) == ["recordname", "label", "age", "gender", "loc"]
    assert sorted(table["recordname"]) == sorted(p.name for p in plans)
    for p in plans:
        row = table[table["recordname"] == p.name].iloc[0]
        assert (row["label"], row["loc"]) == (p.label, p.split)
    numbers = [p.number for p in plans]
    assert sorted(numbers) == list(range(1, 10))
    labels = [p.label for p in sorted(plans, key=lambda p: p.number)]
    assert sum(a != b for a, b in zip(labels[:-1], labels[1:], strict=True)) >= 2


def test_every_recording_its_class_and_split_are_recovered(demo):
    root, _, plans = demo
    recordings = nmt.find_recordings(root)
    assert [r.recording for r in recordings] == [f"{p.number:07d}" for p in plans]
    for rec, p in zip(recordings, plans, strict=True):
        assert (rec.subject, rec.split, nmt.recording_label(rec)) == (rec.recording, p.split,
                                                                     p.label)
        assert rec.session == f"{p.split}/{rec.recording}" and nmt.read_events(rec) == []


def test_headers_and_signals(demo):
    root, _, plans = demo
    rec, p = nmt.find_recordings(root)[0], plans[0]
    header = read_edf_header(rec.edf)
    assert header.labels == ELECTRODES and header.sfreq("FP1") == 200
    assert {s.unit for s in header.signals} == {"uV"}
    assert nmt.read_header(rec).channels == ELECTRODES
    signals = nmt.read_signals(rec, ["FP1", "T5"], span=(0, 400))
    written = lookalike.signals(p, SETTINGS["seed"])
    # stored 100 times too small, as NMT's files are; read back in volts of the real signal
    for i, name in enumerate(["FP1", "T5"]):
        stored = written[ELECTRODES.index(name)].data[:400]
        np.testing.assert_allclose(signals.data[i], stored * 1e-6 * nmt.AMPLITUDE_SCALE,
                                   atol=0.002e-6 * nmt.AMPLITUDE_SCALE)
    assert 5e-6 < float(signals.data.std()) < 100e-6  # scalp EEG's tens of microvolts


def test_the_official_folds_test_eval_in_every_fold(demo):
    from embedprobe.probing.folds import recording_level_plan

    recordings = nmt.find_recordings(demo[0])
    table = helper.fold_table(recordings, [nmt.CLASSES.index(r.label) for r in recordings])
    plan = recording_level_plan(table, {"folds": 3, "fold_seed": 42}, {"split": "official"})
    evaluated = sorted(r.subject for r in recordings if r.split == "eval")
    trained = sorted(r.subject for r in recordings if r.split == "train")
    validated = []
    for k in range(3):
        assert plan.members(k, "test") == evaluated
        validated += plan.members(k, "val")
    assert sorted(validated) == trained  # each train file validates once


def test_the_unipolar_tusz_channel_map_fits_every_family(demo):
    """NMT reads TUSZ's unipolar map: the reference's NMT loader hands the 19 electrodes."""
    plans = check_channel_map("tusz_unipolar", helper.first_channels(nmt, demo[0]))
    assert len(plans["biot"].sources) == 16 and len(plans["cbramod"].model_names) == 19


def test_the_same_seed_writes_the_same_bytes(tmp_path):
    small = {"train_normal": 1, "train_abnormal": 1, "eval_normal": 1, "eval_abnormal": 1,
             "minutes": 2}
    helper.check_seed_decides_the_bytes(lookalike, tmp_path, small, ".edf")


def test_settings_are_checked():
    with pytest.raises(UsageError, match="NMT: unknown look-alike setting"):
        lookalike.plan({"hours": 1})
    with pytest.raises(UsageError, match="eval_normal=0"):
        lookalike.plan({"eval_normal": 0})


# --- bad inputs ------------------------------------------------------------------------------


def first_edf(root, label="normal", split="train"):
    return sorted((root / label / split).glob("*.edf"))[0]


def contradict(root, loc="train"):
    """The look-alike's first normal/train file, its Labels.csv row rewritten to abnormal/loc."""
    path = first_edf(root)
    text = (root / "Labels.csv").read_text()
    rows = [line.replace(",normal,", ",abnormal,").replace(",train", f",{loc}")
            if line.startswith(f"{path.name},") else line for line in text.splitlines()]
    assert rows != text.splitlines()
    (root / "Labels.csv").write_text("\n".join(rows) + "\n")
    return path


def by_id(recordings):
    return {r.recording: r for r in recordings}


def test_a_row_that_contradicts_its_folder_reads_the_folder_by_default(copy, capsys):
    """The reference's rule (class_from: folder, the default): the folders give class and split,
    a warning names the file; the other recordings read as before."""
    before = by_id(nmt.find_recordings(copy))
    path = contradict(copy, loc="eval")
    for recordings in (nmt.find_recordings(copy),
                       entry_recordings({"format": "nmt", "class_from": "folder"}, copy)):
        rec = by_id(recordings)[path.stem]
        assert (rec.label, rec.split, rec.session) == ("normal", "train", f"train/{path.stem}")
        assert by_id(recordings) == before
    err = capsys.readouterr().err
    assert err.count("warning:") == 2
    assert f"normal/train/{path.name} (abnormal/eval in the table)" in err
    assert "class_from: folder" in err


def test_class_from_table_reads_the_row(copy, capsys):
    path = contradict(copy, loc="eval")
    recordings = by_id(entry_recordings({"format": "nmt", "class_from": "table"}, copy))
    rec = recordings[path.stem]
    assert (rec.label, rec.split, rec.session) == ("abnormal", "eval", f"eval/{path.stem}")
    assert nmt.recording_label(rec) == "abnormal" and nmt.split_of(rec) == "eval"
    assert rec.edf == path  # the file is read where it is
    others = [r for r in recordings.values() if r.recording != path.stem]
    assert all(r.edf.parts[-3:-1] == (r.label, r.split) for r in others)
    assert "row's class and split (class_from: table)" in capsys.readouterr().err


def test_class_from_agree_refuses_a_row_that_contradicts_its_folder(copy):
    path = contradict(copy)
    with pytest.raises(DataError, match="says abnormal/train, the folders say normal/train") as e:
        entry_recordings({"format": "nmt", "class_from": "agree"}, copy)
    assert str(path) in e.value.message and "move the file" in e.value.fix
    assert "class_from: folder" in e.value.fix


def test_an_unknown_class_from_is_refused(copy):
    with pytest.raises(UsageError, match="class_from: labels is not one of folder, table, agree"):
        nmt.find_recordings(copy, class_from="labels")


def test_a_file_the_table_does_not_list_is_refused(copy):
    target = copy / "abnormal" / "eval" / "0000099.edf"
    shutil.copy(first_edf(copy), target)
    with pytest.raises(DataError, match="not listed in") as err:
        nmt.find_recordings(copy)
    assert str(target) in err.value.message and err.value.fix


@pytest.mark.parametrize("place, says", [
    ("normal/0000099.edf", "not in a class and split folder"),
    ("normal/dev/0000099.edf", "not in a class and split folder"),
    ("normal/train/subject1.edf", "not an NMT file name"),
])
def test_a_file_outside_the_layout_is_refused(copy, place, says):
    helper.check_refused_at(nmt, copy, first_edf(copy), copy / place, says)


def test_a_folder_without_the_label_table_is_refused(copy):
    (copy / "Labels.csv").unlink()
    with pytest.raises(DataError, match="has no Labels.csv") as err:
        nmt.find_recordings(copy)
    assert "demo_data" in err.value.fix


def test_a_recording_without_a_scalp_electrode_is_refused(copy):
    helper.check_refused_without(nmt, copy, first_edf(copy, "abnormal", "eval"), "PZ",
                          "no PZ: NMT's files hold all 19")
