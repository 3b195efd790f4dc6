"""The NSRR format (datasets/nsrr/): each study's look-alike read back against what its
generator wrote (stages, events with durations, ages, visits), the XML parser on the
documented edge cases, and bad files refused by name with their fix."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from embedprobe.core.errors import DataError
from embedprobe.datasets.nsrr import annotations as xml
from embedprobe.datasets.nsrr import lookalike, reader

SMALL = {"participants": 2, "second_visits": 1, "hours": 0.25, "seed": 5}


@pytest.fixture(scope="module")
def studies(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("nsrr")
    for study in reader.STUDIES:
        lookalike.write_lookalike(root / study, {**SMALL, "study": study})
    return {study: root / study for study in reader.STUDIES}


@pytest.mark.parametrize("study", list(reader.STUDIES))
@pytest.mark.parametrize("annotations", ["nsrr", "profusion"])
def test_each_study_reads_back_what_its_generator_wrote(study, annotations, studies):
    root = studies[study]
    nights = lookalike.plan({**SMALL, "study": study})
    recordings = reader.find_recordings(root, study, annotations=annotations)
    assert [r.recording for r in recordings] == sorted(p.stem for p in nights)
    by_stem = {p.stem: p for p in nights}
    ages = reader.demographics(root, recordings)
    for rec in recordings:
        p = by_stem[rec.recording]
        assert rec.problem == "" and rec.session == p.visit.name
        assert rec.subject == p.participant and rec.visit_number == p.visit.number
        assert ages[rec.recording] == reader.Demographics(p.age, p.sex, p.visit.number)
        counts = Counter()
        starts, labels, sfreq = reader.read_labels(rec, 1440, counts=counts)
        scored = np.flatnonzero(p.stages >= 0)
        np.testing.assert_array_equal(starts, scored * 30 * int(sfreq))
        np.testing.assert_array_equal(labels, p.stages[scored])
        assert counts == Counter({("unscored", "Unscored|9"): 1, ("unscored", "Movement|6"): 1})
        events = reader.read_events(rec)
        wanted = sorted((e.start, e.duration, kind) for e in p.events
                        for kind in xml.EVENTS[e.name].kinds)
        assert sorted((e.onset, e.duration, e.description) for e in events) == wanted
        assert {"arousal", "hypopnea", "apnea_obstructive", "limb_movement",
                "limb_movement_periodic"} <= {e.description for e in events}


def test_a_participants_visits_are_one_subject_with_each_visits_age(studies):
    recordings = reader.find_recordings(studies["shhs"], "shhs")
    assert [(r.recording, r.subject, r.session) for r in recordings] == [
        ("shhs1-200001", "200001", "shhs1"), ("shhs1-200002", "200002", "shhs1"),
        ("shhs2-200001", "200001", "shhs2")]
    ages = reader.demographics(studies["shhs"], recordings)
    assert ages["shhs2-200001"].age == ages["shhs1-200001"].age + 4
    # brain age's one unit per subject: the age at the first visit
    assert reader.subjects_table(studies["shhs"]) == {
        "200001": ages["shhs1-200001"].age, "200002": ages["shhs1-200002"].age}
    # a brain age per recording (`brain_age_unit: recording`): each night its visit's age
    assert reader.recording_ages(studies["shhs"]) == {
        rec: row.age for rec, row in ages.items()}
    assert [r.recording for r in reader.find_recordings(studies["mros"], "mros", ["1"])] == [
        "mros-visit1-aa0001", "mros-visit1-aa0002"]


def test_the_real_folders_and_names(studies):
    """NSRR's folders (its gem's download; Luna's sample lists), each study's stems."""
    names = {s: sorted(p.relative_to(studies[s]).as_posix() for p in studies[s].rglob("*.*")
                       if p.name != "MANIFEST.tsv") for s in studies}
    assert "polysomnography/edfs/shhs1/shhs1-200001.edf" in names["shhs"]
    assert "polysomnography/annotations-events-nsrr/shhs2/shhs2-200001-nsrr.xml" in names["shhs"]
    assert "polysomnography/annotations-events-profusion/shhs1/shhs1-200002-profusion.xml" \
        in names["shhs"]
    assert "datasets/shhs-harmonized-dataset-0.21.0.csv" in names["shhs"]
    assert "polysomnography/edfs/mesa-sleep-0001.edf" in names["mesa"]
    assert "polysomnography/edfs/visit2/mros-visit2-aa0001.edf" in names["mros"]
    assert "datasets/mros-visit2-harmonized-0.6.0.csv" in names["mros"]
    assert "polysomnography/annotations-events-nsrr/cfs-visit5-800002-nsrr.xml" in names["cfs"]
    assert "polysomnography/edfs/lab/full/homepap-lab-full-1600001.edf" in names["homepap"]
    table = pd.read_csv(studies["mesa"] / "datasets/mesa-sleep-harmonized-dataset-0.8.0.csv")
    assert table["nsrrid"].tolist() == [1, 2]  # unpadded, as MESA's CSV holds them


# --- the XML parser's edge cases ---------------------------------------------------------------


def stage_file(tmp_path: Path, runs, events=()) -> Path:
    return xml.write_nsrr(tmp_path / "x-nsrr.xml", 30, 600, [], events, runs)


def test_unscored_epochs_and_gaps_are_left_out_and_counted(tmp_path):
    path = stage_file(tmp_path, [(0, 60, "Wake|0"), (60, 30, "Unscored|9"),
                                 (150, 60, "Stage 4 sleep|4"), (210, 30, "REM sleep|5")])
    scoring = xml.read_nsrr(path)
    np.testing.assert_array_equal(scoring.stages, [0, 0, -1, -1, -1, 3, 3, 4])
    assert scoring.unscored == Counter({"Unscored|9": 1, "no stage event": 2})


def test_two_scorings_in_one_file_are_refused(tmp_path):
    path = stage_file(tmp_path, [(0, 90, "Wake|0"), (60, 60, "Stage 2 sleep|2")])
    with pytest.raises(DataError, match="two stage events score the epoch at 60 s"):
        xml.read_nsrr(path)


def test_a_stage_event_off_the_epoch_grid_is_refused(tmp_path):
    path = stage_file(tmp_path, [(0, 45, "Wake|0")])
    with pytest.raises(DataError, match=r"spans 0-45 s, not whole 30 s epochs"):
        xml.read_nsrr(path)


def test_an_unknown_concept_is_refused_with_the_table_to_extend(tmp_path):
    path = stage_file(tmp_path, [(0, 60, "Wake|0")], [xml.Scored(5, 3, "Hypopnea")])
    path.write_text(path.read_text().replace("Hypopnea|Hypopnea", "Snore|Snore"))
    with pytest.raises(DataError) as err:
        xml.read_nsrr(path)
    assert "unknown event concept 'Snore|Snore'" in err.value.message
    assert "annotations.py EVENTS" in err.value.fix


def test_events_of_unread_types_are_left_out(tmp_path):
    path = stage_file(tmp_path, [(0, 60, "Wake|0")], [xml.Scored(5, 3, "Hypopnea")])
    path.write_text(path.read_text().replace(
        "<ScoredEvents>", "<ScoredEvents><ScoredEvent><EventType>Position|Position</EventType>"
        "<EventConcept>Supine|0</EventConcept><Start>0</Start><Duration>60</Duration>"
        "</ScoredEvent>"))
    assert [e.name for e in xml.read_nsrr(path).events] == ["Hypopnea"]


def copy(studies, study: str, tmp_path: Path) -> Path:
    root = tmp_path / study
    shutil.copytree(studies[study], root)
    return root


def rewrite_first(root: Path, study: str, change) -> reader.Recording:
    rec = reader.find_recordings(root, study)[0]
    rec.annotation_path.write_text(change(rec.annotation_path.read_text()))
    return rec


def test_an_event_spanning_the_end_is_cut_there_and_one_past_it_refused(studies, tmp_path):
    root = copy(studies, "cfs", tmp_path)
    p = lookalike.plan({**SMALL, "study": "cfs"})[0]
    first = p.events[0]
    rec = rewrite_first(root, "cfs", lambda t: t.replace(
        f"<Start>{first.start:g}</Start>", f"<Start>{p.seconds - 2:g}</Start>", 1))
    cut = [e for e in reader.read_events(rec) if e.onset == p.seconds - 2]
    assert [(e.duration, e.description) for e in cut] == [(2.0, "arousal")]
    rec.annotation_path.write_text(rec.annotation_path.read_text().replace(
        f"<Start>{p.seconds - 2:g}</Start>", f"<Start>{p.seconds + 1:g}</Start>", 1))
    with pytest.raises(DataError, match="the XML disagrees with the EDF"):
        reader.read_events(rec)


def test_an_xml_scoring_more_epochs_than_the_edf_is_refused(studies, tmp_path):
    root = copy(studies, "mesa", tmp_path)
    p = lookalike.plan({**SMALL, "study": "mesa"})[0]
    last = p.stage_events()[-1]
    longer = f"<Start>{last[0]:g}</Start>\n      <Duration>{last[1] + 60:g}</Duration>"
    rec = rewrite_first(root, "mesa", lambda t: t.replace(
        f"<Start>{last[0]:g}</Start>\n      <Duration>{last[1]:g}</Duration>", longer))
    with pytest.raises(DataError) as err:
        reader.read_labels(rec, 1440)
    assert f"{len(p.stages) + 2} epochs of 30 s scored" in err.value.message
    assert "use the mesa-sleep-0001-nsrr.xml of this EDF" in err.value.fix
    # one epoch past the end (a last partial epoch) is cut, with the index's warning
    rec.annotation_path.write_text(rec.annotation_path.read_text().replace(
        f"<Duration>{last[1] + 60:g}</Duration>", f"<Duration>{last[1] + 30:g}</Duration>"))
    counts = Counter()
    _, labels, _ = reader.read_labels(rec, 1440, counts=counts)
    assert len(labels) == int((p.stages >= 0).sum())
    assert any(key[0] == "cut at the signal's end" for key in counts)


def test_a_subject_missing_from_the_csv_makes_its_night_incomplete(studies, tmp_path):
    root = copy(studies, "shhs", tmp_path)
    table = root / "datasets/shhs-harmonized-dataset-0.21.0.csv"
    rows = pd.read_csv(table)
    rows[~((rows["nsrrid"] == 200001) & (rows["visitnumber"] == 2))].to_csv(table, index=False)
    recordings = reader.find_recordings(root, "shhs")
    assert [r.problem for r in recordings][:2] == ["", ""]
    assert "no row for nsrrid 200001 (visit 2) of shhs2-200001" in recordings[2].problem
    with pytest.raises(DataError) as err:
        reader.demographics(root, recordings)
    assert "allow_partial=true" in err.value.fix


def test_a_visit_folder_without_annotations_is_refused(studies, tmp_path):
    root = copy(studies, "mros", tmp_path)
    shutil.rmtree(root / "polysomnography/annotations-events-nsrr/visit2")
    with pytest.raises(DataError) as err:
        reader.find_recordings(root, "mros")
    assert "visit2: 1 EDFs but no annotation folder" in err.value.message
    assert "annotations-events-nsrr/ folder from NSRR" in err.value.fix
    assert len(reader.find_recordings(root, "mros", ["1"])) == 2


def test_a_night_without_its_xml_is_incomplete_and_unknown_names_refused(studies, tmp_path):
    root = copy(studies, "homepap", tmp_path)
    rec = reader.find_recordings(root, "homepap")[0]
    rec.annotation_path.unlink()
    assert "has no homepap-lab-full-1600001-nsrr.xml" in \
        reader.find_recordings(root, "homepap")[0].problem
    shutil.copy(rec.signal_path, rec.signal_path.with_name("homepap-lab-split-1600009.edf"))
    with pytest.raises(DataError, match="not a homepap lab-full EDF name"):
        reader.find_recordings(root, "homepap")


def test_an_unknown_study_names_the_setting():
    with pytest.raises(DataError) as err:
        reader.find_recordings(Path("."), "wsc")
    assert "set `study:`" in err.value.fix and "shhs" in err.value.fix


def test_the_shhs_entry_reads_a_placed_manifest_of_shhs1_nights(tmp_path):
    """The shhs entry's folds: a manifest of the reference's shape (shhs_v1.json: partitions of
    shhs1 recordings, no `unit`) read as recording folds, fold k testing partition k."""
    import json

    from embedprobe.core.errors import UsageError
    from embedprobe.probing.folds import manifest_plan

    lookalike.write_lookalike(tmp_path / "shhs", {"study": "shhs", "participants": 6,
                                                  "second_visits": 2, "hours": 0.25, "seed": 1})
    recordings = reader.find_recordings(tmp_path / "shhs", "shhs", visits=["shhs1"])
    assert {r.session for r in recordings} == {"shhs1"} and len(recordings) == 6
    path = lookalike.write_fold_manifest(tmp_path / "folds" / "shhs_v1.json",
                                         [r.recording for r in recordings], 5, 42)
    folds = json.loads(path.read_text())["folds"]
    assert json.loads(path.read_text())["n_subjects"] == 6 and list(folds) == list("01234")
    table = pd.DataFrame({"recording": [r.recording for r in recordings],
                          "subject": [r.subject for r in recordings]})
    plan = manifest_plan(str(path), table, 5, "recording")
    assert plan.unit == "recording"
    for k in range(5):
        assert sorted(u for u, p in plan.parts[k].items() if p == "test") == folds[str(k)]
        assert sorted(u for u, p in plan.parts[k].items() if p == "val") == \
            folds[str((k + 1) % 5)]
    with pytest.raises(UsageError, match="shhs_v1.json does not exist") as caught:
        manifest_plan(str(tmp_path / "nowhere" / "shhs_v1.json"), table, 5, "recording")
    assert "reference suite ships its manifests in configs/folds/" in caught.value.fix
