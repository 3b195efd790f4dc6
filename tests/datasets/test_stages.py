"""The STAGES format (datasets/stages/): the look-alike's three site conventions read back
against what its generator wrote (stages, one name per derivation, ages from the harmonized
CSV), repeat nights left out, a CSV without its columns refused by name, and a participant
missing from the harmonized CSV an incomplete night."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from embedprobe.core.errors import DataError
from embedprobe.datasets.stages import lookalike, reader

SMALL = {"sites": ["GSBB", "MSTH", "BOGN"], "subjects": 2, "repeats": 1, "hours": 0.25,
         "seed": 4}


@pytest.fixture(scope="module")
def stages(tmp_path_factory):
    root = tmp_path_factory.mktemp("stages")
    lookalike.write_lookalike(root, SMALL)
    return root


def test_each_sites_csv_and_montage_read_back(stages):
    nights = {p.stem: p for p in lookalike.plan(SMALL)}
    recordings = reader.find_recordings(stages)
    assert [r.recording for r in recordings] == [
        "BOGN00001", "BOGN00002", "GSBB00001", "GSBB00002", "MSTH00001", "MSTH00002"]
    assert any(p.repeat for p in nights.values())  # written, not read
    for rec in recordings:
        p = nights[rec.recording]
        assert (rec.subject, rec.session, rec.problem) == (p.stem, p.site, "")
        counts = Counter()
        starts, labels, sfreq = reader.read_labels(rec, 1440, counts=counts)
        scored = np.flatnonzero(p.stages >= 0)
        np.testing.assert_array_equal(starts, scored * 30 * int(sfreq))
        np.testing.assert_array_equal(labels, p.stages[scored])
        assert counts == Counter({("unscored", "UnknownStage"): 1, ("unscored", "MT"): 1})
        assert reader.read_header(rec).channels == ("C3-M2", "C4-M1", "SpO2")


def test_bare_electrodes_make_the_derivation(stages):
    msth = next(r for r in reader.find_recordings(stages) if r.session == "MSTH")
    from embedprobe.datasets.edf import read_edf_signals

    raw = read_edf_signals(msth.signal_path, ["C3", "M2"], span=(0, 500))
    made = reader.read_signals(msth, ["C4-M1", "C3-M2"], span=(0, 500))
    np.testing.assert_allclose(made.data[1], raw.data[0] - raw.data[1], rtol=1e-6)
    assert made.ch_names == ["C4-M1", "C3-M2"] and made.data.dtype == np.float32


def test_durations_zero_thirty_blocks_and_the_30_day_row(tmp_path):
    csv = tmp_path / "STNF00001.csv"
    csv.write_text("Start Time,Duration (seconds),Event\n22:00:00,0,Lights Off\n"
                   "22:00:00,90,Wake\n22:01:30,30,Stage2\n22:02:00,0,REM\n"
                   "22:02:10,5,Awake\n22:02:30,2592000,Stage3\n22:03:00,30,MT\n")
    stages, unscored = reader.read_stages(csv)
    assert stages.tolist() == [0, 0, 0, 2, 4, 3, -1] and unscored == Counter({"MT": 1})
    csv.write_text("Time,Duration,Event\n22:00:00,30,Wake\n")
    with pytest.raises(DataError, match="no Start Time, Duration \\(seconds\\) column"):
        reader.read_stages(csv)


def test_an_edf_without_its_csv_is_incomplete(tmp_path):
    lookalike.write_lookalike(tmp_path, SMALL)
    (tmp_path / reader.PSGS / "GSBB" / "GSBB00002.csv").unlink()
    problems = {r.recording: r.problem for r in reader.find_recordings(tmp_path)}
    assert problems["GSBB00002"].startswith("GSBB00002 has no GSBB00002.csv")


def test_ages_come_from_the_harmonized_csv(stages):
    nights = lookalike.plan(SMALL)
    ages = reader.subjects_table(stages)
    assert ages == {p.stem: p.age for p in nights if not p.repeat}
    assert len(set(ages.values())) > 1  # not one age for all
    repeat = next(p for p in nights if p.repeat)  # the participant's age on either night
    assert repeat.age == ages[repeat.participant]


def test_a_participant_missing_from_the_csv_is_incomplete(tmp_path):
    import pandas as pd

    lookalike.write_lookalike(tmp_path, SMALL)
    table = tmp_path / "datasets" / lookalike.HARMONIZED
    rows = pd.read_csv(table)
    assert list(rows.columns[:4]) == ["subject_code", "visitcode", "nsrr_age", "nsrr_sex"]
    rows[rows["subject_code"] != "BOGN00002"].to_csv(table, index=False)
    problems = {r.recording: r.problem for r in reader.find_recordings(tmp_path)}
    assert problems["BOGN00002"] == (f"{table}: no row for subject_code BOGN00002")
    assert not any(v for k, v in problems.items() if k != "BOGN00002")
    assert "BOGN00002" not in reader.subjects_table(tmp_path)
    table.unlink()  # staging reads without it; brain age refuses
    assert not any(r.problem for r in reader.find_recordings(tmp_path))
    with pytest.raises(DataError, match="no stages-harmonized-dataset-\\*.csv") as err:
        reader.subjects_table(tmp_path)
    assert "stages/datasets" in err.value.fix
