"""EPILEPSIAE (epilepsiae, format epilepsiae): the .head/.data blocks read as a memmap of the
header's sample type, the annotation CSV's seizures on each block (the reference's onset and
offset fallbacks), patient folds, the 19-electrode maps, and the refusals."""

from __future__ import annotations

import numpy as np
import pytest

from embedprobe.core.errors import DataError
from embedprobe.datasets.epilepsiae import lookalike
from embedprobe.datasets.epilepsiae import reader as epilepsiae
from embedprobe.pipeline.channel_maps import every_channel

from helpers import lookalike as helper
from helpers.seizure import check_channel_map

SETTINGS = {"patients": 3, "blocks_per_patient": 2, "minutes_per_block": 3, "seed": 0}

demo = helper.demo_fixture(lookalike, SETTINGS, "epilepsiae")
copy = helper.copy_fixture("epilepsiae")


def test_the_layout_is_head_and_data_blocks_beside_the_annotation_table(demo):
    root, files, plans = demo
    names = sorted(f.relative_to(root).as_posix() for f in files)
    assert names == sorted(["Annotation/Seizure_annotations.csv", "MANIFEST.tsv",
                            *(f"{p.folder.as_posix()}/{p.recording}{end}" for p in plans
                              for end in (".head", ".data"))])
    assert {p.variant for p in plans} == set(epilepsiae.VARIANTS)
    recordings = epilepsiae.find_recordings(root)
    assert [(r.recording, r.subject) for r in recordings] == [
        (p.recording, f"pat_{p.patient}") for p in plans]


def test_the_header_and_samples_are_what_the_generator_stored(demo):
    root, _, plans = demo
    for rec, p in zip(epilepsiae.find_recordings(root), plans, strict=True):
        header = epilepsiae.read_header(rec)
        assert header.channels == lookalike.CHANNELS
        assert (header.sfreq, header.n_samples) == (p.sfreq, p.seconds * p.sfreq)
        units, factor = lookalike.stored(p, SETTINGS["seed"])
        signals = epilepsiae.read_signals(rec, ["CZ", "ECG"], span=(100, 400))
        expected = units[100:400, [lookalike.CHANNELS.index("CZ"), -1]].T * factor * 1e-6
        np.testing.assert_allclose(signals.data, expected, rtol=1e-6)


def test_events_are_the_planned_seizures_through_the_clinical_fallbacks(demo):
    root, _, plans = demo
    table = (root / epilepsiae.ANNOTATIONS).read_text()
    assert '"NULL","' in table  # some eeg_onset/eeg_offset left to the clinical times
    assert sum(not p.seizures for p in plans) >= 1
    for rec, p in zip(epilepsiae.find_recordings(root), plans, strict=True):
        assert [(e.onset, e.duration) for e in epilepsiae.read_events(rec)] == [
            (float(s.onset), float(s.duration)) for s in p.seizures]


def test_a_seizure_across_two_blocks_is_cut_at_their_edges(copy):
    first, second = epilepsiae.find_recordings(copy)[:2]
    head = epilepsiae.read_head(first)
    start = head.end - np.timedelta64(5, "s").astype(object)
    path = copy / epilepsiae.ANNOTATIONS
    path.write_text(path.read_text() + ",".join(f'"{v}"' for v in (
        "9", head.rec_id, "0", f"{start:%Y-%m-%d %H:%M:%S}.000", "NULL", "NULL", "NULL",
        "NULL", "NULL", "NULL", "NULL", "A", "NULL", "NULL")) + "\n")
    # no offset: the reference's 60 s; 5 s in the first block, the rest from the second's start
    assert epilepsiae.read_events(first)[-1] == epilepsiae.Event(head.seconds - 5, 5.0,
                                                                  "seizure")
    second_start = epilepsiae.read_head(second).start
    rest = (start + np.timedelta64(60, "s").astype(object) - second_start).total_seconds()
    assert rest > 0 and epilepsiae.read_events(second)[0] == epilepsiae.Event(0.0, rest,
                                                                             "seizure")


def test_folds_go_over_patients(demo):
    from embedprobe.probing.folds import seizure_plan

    root, _, plans = demo
    recordings = epilepsiae.find_recordings(root)
    table = helper.fold_table(recordings, [int(bool(p.seizures)) for p in plans])
    plan = seizure_plan(table, {"folds": 3, "fold_seed": 42}, {})
    assert sorted(s for k in range(3) for s in plan.members(k, "test")) == [
        f"pat_{p.patient}" for p in plans[::2]]


def test_the_channel_map_gives_every_family_the_19_electrodes(demo):
    plans = check_channel_map("epilepsiae", helper.first_channels(epilepsiae, demo[0]))
    assert len(plans["biot"].sources) == 16 and len(plans["cbramod"].model_names) == 19
    assert {c for plan in plans.values() for c in every_channel(plan)} == set(
        lookalike.ELECTRODES)


def _table_edit(copy, old, new):
    path = copy / epilepsiae.ANNOTATIONS
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    return path


def _first_row_times(copy, onset: str, offset: str) -> None:
    """The first seizure's onsets and offsets (EEG and clinical) moved to these times."""
    path = copy / epilepsiae.ANNOTATIONS
    lines = path.read_text().splitlines()
    cells = lines[1].split(",")
    cells[3:5], cells[7:9] = [f'"{onset}"'] * 2, [f'"{offset}"'] * 2
    lines[1] = ",".join(cells)
    path.write_text("\n".join(lines) + "\n")


def _first_onset(copy) -> str:
    return (copy / epilepsiae.ANNOTATIONS).read_text().splitlines()[1].split(",")[4]


@pytest.mark.parametrize("damage, says, fix", [
    (lambda c: _table_edit(c, '"SP"', '"XX"') if '"SP"' in (c / epilepsiae.ANNOTATIONS
                                                             ).read_text()
     else _table_edit(c, '"CP"', '"XX"'), "unknown seizure classification 'XX'", "CP, SP"),
    (lambda c: _first_row_times(c, "1999-01-01 00:00:00.000", "1999-01-01 00:01:00.000"),
     "lies in none of its blocks", "correct its onset and offset"),
    (lambda c: _table_edit(c, _first_onset(c), '"yesterday"'), "is not a timestamp",
     "database export again"),
])
def test_a_bad_annotation_is_refused_naming_the_table(copy, damage, says, fix):
    damage(copy)
    rec = epilepsiae.find_recordings(copy)[0]
    with pytest.raises(DataError, match=says) as err:
        epilepsiae.read_events(rec)
    assert str(copy / epilepsiae.ANNOTATIONS) in err.value.message and fix in err.value.fix


def test_a_short_data_file_and_a_header_without_a_field_are_refused(copy):
    first, second = epilepsiae.find_recordings(copy)[:2]
    first.data.write_bytes(first.data.read_bytes()[:-40])
    with pytest.raises(DataError, match="bytes, but") as err:
        epilepsiae.read_signals(first, ["FP1"])
    assert str(first.data) in err.value.message
    second.head.write_text("\n".join(line for line in second.head.read_text().splitlines()
                                     if not line.startswith("sample_freq")))
    with pytest.raises(DataError, match="no sample_freq") as err:
        epilepsiae.read_header(second)
    assert str(second.head) in err.value.message and err.value.fix


def test_missing_files_leave_blocks_incomplete(copy):
    first, second = epilepsiae.find_recordings(copy)[:2]
    first.head.unlink()
    second.data.unlink()
    found = {r.recording: r.problem for r in epilepsiae.find_recordings(copy)}
    assert found[first.recording].startswith(f"{first.head.name} is missing")
    assert found[second.recording].startswith(f"{second.data.name} is missing")
    (copy / epilepsiae.ANNOTATIONS).unlink()
    rest = epilepsiae.find_recordings(copy)[2:]
    assert rest and all("Seizure_annotations.csv missing" in r.problem for r in rest)


def test_same_settings_same_bytes(tmp_path):
    helper.check_seed_decides_the_bytes(lookalike, tmp_path, {
        "patients": 1, "blocks_per_patient": 1, "minutes_per_block": 2}, suffix=".data")
