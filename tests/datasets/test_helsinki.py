"""The Helsinki neonatal format (datasets/helsinki/): the look-alike's files against the
generator, the experts' majority consensus, and the refusals."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from embedprobe.core.errors import DataError
from embedprobe.datasets.helsinki import lookalike, reader

SMALL = {"neonates": 4, "minutes": 3, "seed": 0}


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    root = tmp_path_factory.mktemp("helsinki")
    return root, lookalike.write_lookalike(root, SMALL)


@pytest.fixture
def copy(written, tmp_path):
    shutil.copytree(written[0], tmp_path / "h")
    return tmp_path / "h"


def majority_by_hand(columns: list[np.ndarray]) -> list[tuple[int, int]]:
    """(onset, duration) of each stretch of seconds two or three experts marked."""
    common = min(len(c) for c in columns)
    runs, start = [], None
    for second in range(common + 1):
        ictal = second < common and sum(bool(c[second]) for c in columns) >= 2
        if ictal and start is None:
            start = second
        elif not ictal and start is not None:
            runs.append((start, second - start))
            start = None
    return runs


def test_the_layout_is_the_zenodo_records(written):
    root, files = written
    assert sorted(p.name for p in root.iterdir()) == sorted(
        [f"eeg{n}.edf" for n in range(1, 5)] + ["annotations_2017_A.csv",
         "annotations_2017_B.csv", "annotations_2017_C.csv", "clinical_information.csv",
         "MANIFEST.tsv"])
    assert files[-1] == root / "MANIFEST.tsv"
    header = (root / "annotations_2017_B.csv").read_text().splitlines()[0]
    assert header == "1,2,3,4"
    plans = lookalike.plan(SMALL)
    recordings = reader.find_recordings(root)
    assert [r.recording for r in recordings] == ["eeg01", "eeg02", "eeg03", "eeg04"]
    for rec, p in zip(recordings, plans, strict=True):
        head = reader.read_header(rec)
        assert head.channels == reader.EEG_CHANNELS and head.sfreq == 256
        assert head.n_samples == p.seconds * 256
        assert rec.subject == rec.recording and rec.problem == ""
    # a shorter recording's column is blank past its end
    shortest = min(plans, key=lambda p: p.seconds)
    lines = (root / "annotations_2017_A.csv").read_text().splitlines()
    assert len(lines) == 1 + max(p.seconds for p in plans)
    assert lines[-1].split(",")[shortest.number - 1] == "" or shortest.seconds == max(
        p.seconds for p in plans)


def test_events_are_the_consensus_of_the_generators_experts(written):
    root, _ = written
    plans = lookalike.plan(SMALL)
    seen_disagreement = False
    for rec, p in zip(reader.find_recordings(root), plans, strict=True):
        columns = [p.expert_seconds(k) for k in range(3)]
        assert [c.tolist() for c in reader.expert_seconds(rec)] == [c.tolist() for c in columns]
        expected = majority_by_hand(columns)
        events = reader.read_events(rec)
        assert [(e.onset, e.duration, e.description) for e in events] == [
            (float(o), float(d), "seizure") for o, d in expected]
        seen_disagreement |= len({tuple(c.nonzero()[0]) for c in columns}) > 1
    assert seen_disagreement, "the look-alike's experts should not all agree"
    assert not reader.read_events(reader.find_recordings(root)[-1])  # the seizure-free one


def test_the_consensus_rule_on_a_hand_built_case():
    """Two of three mark a second: ictal; one: not; the seconds past the shortest expert's
    column are not voted on (the reference's rule)."""
    a = np.array([0, 1, 1, 1, 0, 0, 1, 1], bool)
    b = np.array([0, 1, 1, 0, 0, 1, 1, 1], bool)
    c = np.array([0, 0, 1, 1, 1, 0, 0], bool)  # one second shorter
    ictal = reader.consensus([a, b, c])
    assert ictal.tolist() == [False, True, True, True, False, False, True]
    assert reader.seconds_to_events(ictal) == [(1, 3), (6, 1)]
    assert reader.consensus([a, a, ~a]).tolist() == a.tolist()


def test_an_annotation_with_another_column_count_is_refused_by_name(copy):
    path = copy / "annotations_2017_C.csv"
    path.write_text("\n".join(",".join(line.split(",")[:3])
                              for line in path.read_text().splitlines()) + "\n")
    with pytest.raises(DataError) as caught:
        reader.find_recordings(copy)
    assert str(path) in caught.value.message and "3 columns" in caught.value.message
    assert "one column per recording" in caught.value.fix


def test_a_recording_without_a_column_is_refused_and_a_column_without_its_edf_is_missing(copy):
    shutil.copy(copy / "eeg1.edf", copy / "eeg5.edf")
    with pytest.raises(DataError, match="holds eeg5.edf: the annotation files and the "
                                        "recordings disagree") as caught:
        reader.find_recordings(copy)
    assert "one column per eegN.edf" in caught.value.fix
    (copy / "eeg5.edf").unlink()
    (copy / "eeg2.edf").unlink()
    recordings = {r.recording: r for r in reader.find_recordings(copy)}
    assert recordings["eeg02"].problem == "eeg2.edf is missing"
    assert [r for r, rec in recordings.items() if rec.problem] == ["eeg02"]


def test_a_recording_shorter_than_its_annotation_is_refused_by_name(copy):
    """eeg1.edf cut by 30 s: the experts annotate seconds the file no longer has."""
    import edfio

    edf = edfio.read_edf(copy / "eeg1.edf")
    edf.slice_between_seconds(0, edf.duration - 30)
    edf.write(copy / "eeg1.edf")
    rec = reader.find_recordings(copy)[0]
    with pytest.raises(DataError) as caught:
        reader.read_events(rec)
    assert str(copy / "eeg1.edf") in caught.value.message
    assert "annotations_2017_A.csv annotates" in caught.value.message
    assert "download eeg1.edf again" in caught.value.fix


def test_a_cell_other_than_0_1_or_blank_is_refused(copy):
    path = copy / "annotations_2017_B.csv"
    lines = path.read_text().splitlines()
    lines[5] = "2," + lines[5].split(",", 1)[1]
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError, match="row 6, column '1' reads '2', not 0 or 1"):
        reader.find_recordings(copy)


def test_a_missing_annotation_file_leaves_every_recording_incomplete(copy):
    (copy / "annotations_2017_A.csv").unlink()
    recordings = reader.find_recordings(copy)
    assert len(recordings) == 4
    assert {r.problem for r in recordings} == {
        "annotations_2017_A.csv missing (the experts' seizure annotations)"}
