"""The WSC format (datasets/wsc/): the look-alike read back against what its generator wrote
(stages from both stage files, ages and visits), and bad stage files refused by name."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
import pytest

from embedprobe.core.errors import DataError
from embedprobe.datasets.wsc import lookalike, reader
from embedprobe.probing.folds import balanced_plan

SMALL = {"participants": 3, "second_visits": 2, "hours": 0.25, "seed": 3}


@pytest.fixture(scope="module")
def wsc(tmp_path_factory):
    root = tmp_path_factory.mktemp("wsc")
    lookalike.write_lookalike(root, SMALL)
    return root


def test_visits_read_back_with_their_stages_ages_and_visit(wsc):
    visits = {p.recording: p for p in lookalike.plan(SMALL)}
    recordings = reader.find_recordings(wsc)
    assert [r.recording for r in recordings] == [
        "10001_visit1", "10001_visit2", "10002_visit1", "10002_visit2", "10003_visit1"]
    assert [r.annotation_path.name.split(".", 1)[1] for r in recordings] == [
        "allscore.txt", "stg.txt", "stg.txt", "stg.txt", "stg.txt"]
    ages = reader.demographics(wsc, recordings)
    for rec in recordings:
        p = visits[rec.recording]
        assert (rec.subject, rec.session, rec.problem) == (p.participant, f"visit{p.visit}", "")
        assert ages[rec.recording] == reader.Demographics(p.age, p.sex, p.visit)
        counts = Counter()
        starts, labels, sfreq = reader.read_labels(rec, 1440, counts=counts)
        scored = np.flatnonzero(p.stages >= 0)
        np.testing.assert_array_equal(starts, scored * 30 * int(sfreq))
        np.testing.assert_array_equal(labels, p.stages[scored])
        unscored = {"NO STAGE", "MVT"} if p.allscore else {"stg code 7", "stg code 6"}
        assert counts == Counter({("unscored", u): 1 for u in unscored})
        assert [e.description for e in reader.read_events(rec)] == [
            reader.STAGES[s] for s in p.stages[scored]]
    # the first visit's stage marks cross midnight; visit 2 is four years older
    assert visits["10001_visit1"].start.hour == 23
    assert reader.subjects_table(wsc) == {p.participant: p.age for p in visits.values()
                                          if p.visit == 1}


def test_stage_4_is_n3_and_an_unknown_code_or_stage_is_refused(wsc, tmp_path):
    stg = tmp_path / "x.stg.txt"
    stg.write_text("Epoch\tUser-Defined Stage\n1\t4\n2\t5\n3\t7\n")
    stages, unscored = reader.read_stg(stg)
    assert stages.tolist() == [3, 4, -1] and unscored == Counter({"stg code 7": 1})
    stg.write_text("1\t9\n")
    with pytest.raises(DataError, match="unknown stage code 9"):
        reader.read_stg(stg)
    allscore = tmp_path / "x.allscore.txt"
    allscore.write_text("22:00:00.000\tSTART RECORDING\n22:00:00.000\tSTAGE - N5\n")
    with pytest.raises(DataError, match="unknown stage 'N5'"):
        reader.read_allscore(allscore)
    allscore.write_text("22:00:00.000\tSTAGE - W\n22:01:00.000\tEND\n")
    with pytest.raises(DataError, match="no START RECORDING") as caught:
        reader.read_allscore(allscore)
    assert "download x.allscore.txt again" in caught.value.fix


def test_a_visit_without_a_stage_file_or_csv_row_is_incomplete(tmp_path):
    lookalike.write_lookalike(tmp_path, SMALL)
    folder = tmp_path / "polysomnography"
    (folder / "wsc-visit2-10002-nsrr.stg.txt").unlink()
    table = tmp_path / "datasets" / lookalike.TABLE
    rows = pd.read_csv(table)
    rows[rows["wsc_id"] != 10003].to_csv(table, index=False)
    problems = {r.recording: r.problem for r in reader.find_recordings(tmp_path) if r.problem}
    assert "neither wsc-visit2-10002-nsrr.allscore.txt nor" in problems["10002_visit2"]
    assert "no row for wsc_id 10003 (wsc_vst 1)" in problems["10003_visit1"]


def test_balanced_folds_are_the_references_lpt_chunks():
    # 7 participants: two with three visits, two with two, three with one (13 recordings)
    visits = {"10001": 3, "10002": 1, "10003": 2, "10004": 1, "10005": 3, "10006": 2,
              "10007": 1}
    table = pd.DataFrame([(s, f"{s}_visit{v}") for s, n in visits.items()
                          for v in range(1, n + 1)], columns=["subject", "recording"])
    plan = balanced_plan(table, 3, 42)
    # by hand: sorted ids shuffled by RandomState(42), stably by visits (most first), each to
    # the least-loaded chunk
    subjects = sorted(visits)
    np.random.RandomState(42).shuffle(subjects)
    subjects.sort(key=lambda s: -visits[s])
    loads, chunk = [0, 0, 0], {}
    for s in subjects:
        j = min(range(3), key=lambda i: (loads[i], i))
        chunk[s], loads[j] = j, loads[j] + visits[s]
    for k in range(3):
        assert {s for s, part in plan.parts[k].items() if part == "test"} == {
            s for s, j in chunk.items() if j == k}
    assert sum(loads) == 13 and max(loads) - min(loads) <= 1  # recordings, not subjects
