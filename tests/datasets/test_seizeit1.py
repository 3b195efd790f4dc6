"""SeizeIT1 (sz1, format seizeit1): the KU Leuven RDR release's layout, the hospital's _a1.tsv
seizures read back as the look-alike wrote them, patient folds, the 19-electrode maps, and the
refusals of a bad annotation."""

from __future__ import annotations

import numpy as np
import pytest

from embedprobe.core.errors import DataError
from embedprobe.datasets.seizeit1 import lookalike
from embedprobe.datasets.seizeit1 import reader as sz1
from embedprobe.pipeline.channel_maps import every_channel

from helpers import lookalike as helper
from helpers.seizure import check_channel_map

SETTINGS = {"patients": 3, "files_per_patient": 2, "minutes_per_file": 3, "seed": 0}

demo = helper.demo_fixture(lookalike, SETTINGS, "sz1")
copy = helper.copy_fixture("sz1")


def test_the_layout_is_the_releases(demo):
    root, files, plans = demo
    names = sorted(f.relative_to(root).as_posix() for f in files)
    assert names == sorted(["subject_info.csv", "MANIFEST.tsv",
                            *(f"{p.folder}/{p.stem}{end}" for p in plans
                              for end in (".edf", "_a1.tsv", "_a2.tsv"))])
    recordings = sz1.find_recordings(root)
    assert [(r.recording, r.subject, r.session) for r in recordings] == [
        (p.stem, p.folder, f"r{p.number}") for p in plans]
    assert all(not r.problem and r.files == (r.edf, r.annotation) for r in recordings)


def test_events_are_the_planned_seizures_a_missing_stop_lasting_30_s(demo):
    root, _, plans = demo
    assert any(any(p.no_stop) for p in plans), "the look-alike lost its stop-less seizure"
    assert sum(not p.seizures for p in plans) >= 1 and sum(len(p.seizures) for p in plans) >= 4
    for rec, p in zip(sz1.find_recordings(root), plans, strict=True):
        events = sz1.read_events(rec)
        assert [(e.onset, e.duration) for e in events] == p.annotated()
        assert {e.description for e in events} <= {sz1.SEIZURE}
        stopless = [line for line in rec.annotation.read_text().splitlines()
                    if not line.startswith("#") and line.split("\t")[1] == ""]
        assert len(stopless) == sum(p.no_stop)


def test_the_signals_are_the_generators_in_volts(demo):
    root, _, plans = demo
    rec, p = sz1.find_recordings(root)[0], plans[0]
    written = {s.label: s.data for s in lookalike.signals(p, SETTINGS["seed"])}
    signals = sz1.read_signals(rec, ["T3", "BTEleft SD"], span=(0, 500))
    for row, label in zip(signals.data, ("T3", "BTEleft SD"), strict=True):
        np.testing.assert_allclose(row, written[label][:500] * 1e-6, atol=0.2e-6)


def test_folds_go_over_patients_each_test_patient_with_seizures(demo):
    from embedprobe.probing.folds import seizure_plan

    root, _, plans = demo
    recordings = sz1.find_recordings(root)
    table = helper.fold_table(recordings, [int(bool(p.seizures)) for p in plans])
    plan = seizure_plan(table, {"folds": 3, "fold_seed": 42}, {})
    tested = sorted(s for k in range(3) for s in plan.members(k, "test"))
    assert tested == sorted({p.folder for p in plans})
    for k in range(3):
        assert not set(plan.members(k, "test")) & set(plan.members(k, "train"))


def test_the_channel_map_gives_every_family_the_19_scalp_electrodes(demo):
    plans = check_channel_map("sz1", helper.first_channels(sz1, demo[0]))
    assert len(plans["biot"].sources) == 16 and len(plans["cbramod"].model_names) == 19
    assert "T7" in plans["eegpt"].model_names and "T3" in plans["labram"].model_names
    used = {c for plan in plans.values() for c in every_channel(plan)}
    assert used == set(lookalike.SCALP)  # the behind-the-ear channels feed no family


def _rewrite(path, change):
    lines = path.read_text().splitlines()
    rows = [i for i, line in enumerate(lines) if not line.startswith("#")]
    lines[rows[0]] = change(lines[rows[0]].split("\t"))
    path.write_text("\n".join(lines) + "\n")


def _first_with_seizures(root):
    return next(r for r in sz1.find_recordings(root) if sz1.read_events(r))


@pytest.mark.parametrize("change, says, fix", [
    (lambda cells: "\t".join([cells[0], cells[1], "myoclonic", cells[3]]),
     "unknown seizure type 'myoclonic'", "FIA, FA, F-BTC"),
    (lambda cells: "\t".join(["170", "200", *cells[2:]]), "is not within", "correct its start"),
    (lambda cells: "\t".join([cells[0], str(float(cells[0]) - 5), *cells[2:]]),
     "is not within", "correct its start"),
    (lambda cells: "twelve\tseconds", "not start, stop, type", "download the recording again"),
])
def test_a_bad_annotation_row_is_refused_naming_the_file(copy, change, says, fix):
    rec = _first_with_seizures(copy)
    _rewrite(rec.annotation, change)
    with pytest.raises(DataError, match=says) as err:
        sz1.read_events(rec)
    assert str(rec.annotation) in err.value.message and fix in err.value.fix


def test_a_recording_without_its_a1_is_incomplete_and_a2_is_not_needed(copy):
    first, second = sz1.find_recordings(copy)[:2]
    first.annotation.unlink()
    second.annotation.with_name(f"{second.recording}_a2.tsv").unlink()
    found = {r.recording: r for r in sz1.find_recordings(copy)}
    assert f"no {first.recording}_a1.tsv beside" in found[first.recording].problem
    assert found[second.recording].problem == ""
    with pytest.raises(DataError, match="the hospital's seizure annotation") as err:
        sz1.read_events(found[first.recording])
    assert "allow_partial=true" in err.value.fix


def test_same_settings_same_bytes(tmp_path):
    helper.check_seed_decides_the_bytes(lookalike, tmp_path, {
        "patients": 1, "files_per_patient": 1, "minutes_per_file": 2}, suffix=".edf")
