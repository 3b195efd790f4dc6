"""The MASS format (datasets/mass/): the look-alike read back against what its generator wrote
(SS1's 30 s stages and micro-arousals with their durations, SS2's 20 s scoring kept where a
30 s window's epochs agree, the electrodes by name with LER nights and zero-filled ones), an
SS1 night without arousals refused, and the reference's subset-wise folds."""

from __future__ import annotations

import shutil
from collections import Counter

import numpy as np
import pytest

from embedprobe.core.errors import DataError
from embedprobe.datasets.mass import lookalike, reader
from embedprobe.probing.folds import chunk_plan

SMALL = {"subsets": [1, 2], "subjects": 2, "hours": 0.1, "seed": 3}


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mass")
    lookalike.write_lookalike(folder, SMALL)
    return folder


def expected_windows(night) -> tuple[np.ndarray, np.ndarray]:
    """(start s, stage) of the 30 s windows one stage covers, from the first scored epoch."""
    per_second = np.repeat(night.stages, night.epoch)
    n = len(per_second) // 30
    grid = per_second[:n * 30].reshape(n, 30)
    keep = (grid.min(1) == grid.max(1)) & (grid[:, 0] >= 0)
    return lookalike.PSG_SECONDS_BEFORE + 30.0 * np.flatnonzero(keep), grid[keep, 0]


def test_each_subset_reads_back_its_stages_in_30_s_windows(root):
    nights = {p.recording: p for p in lookalike.plan(SMALL)}
    recordings = reader.find_recordings(root)
    assert [(r.recording, r.session) for r in recordings] == [
        ("01-01-0001", "SS1"), ("01-01-0002", "SS1"), ("01-02-0001", "SS2"),
        ("01-02-0002", "SS2")]
    for rec in recordings:
        night = nights[rec.recording]
        counts = Counter()
        starts, labels, sfreq = reader.read_labels(rec, 1440, counts=counts)
        seconds, stages = expected_windows(night)
        np.testing.assert_array_equal(labels, stages)
        np.testing.assert_array_equal(starts, np.round(seconds * sfreq).astype(np.int64))
        if rec.subset == 1:  # 30 s scoring: every scored epoch is a window
            np.testing.assert_array_equal(labels, night.stages[1:])
        else:  # 20 s scoring: windows over two stages are left out and counted
            assert counts[("unscored", "mixed stages")] > 0
            assert len(labels) < len(night.stages) * 2 // 3
        assert counts[("ignored", "Lights off comment")] == 1


def test_ss1_arousals_come_with_their_durations_and_ss2_has_none(root):
    nights = {p.recording: p for p in lookalike.plan(SMALL)}
    for rec in reader.find_recordings(root):
        events = reader.read_events(rec)
        assert [(e.onset, e.duration) for e in events] == list(nights[rec.recording].arousals)
        assert {e.description for e in events} <= set(reader.EVENT_KINDS)
        assert bool(events) == (rec.subset == 1)


def test_electrodes_are_named_alone_and_a_missing_one_reads_as_zeros(root):
    ss1, _, ss2, _ = reader.find_recordings(root)
    assert reader.read_header(ss1).channels[:6] == ("F3", "F4", "C3", "C4", "O1", "O2")
    assert reader.read_header(ss2).channels[:4] == ("C3", "C4", "O1", "O2")  # EEG C3-LER
    assert reader.zero_filled(ss2, ["F3", "C3", "F4"]) == ("F3", "F4")
    assert reader.zero_filled(ss1, ["F3", "C3"]) == ()
    read = reader.read_signals(ss2, ["F3", "C3"], (0, 640))
    assert not read.data[0].any() and np.abs(read.data[1]).max() > 1e-6
    with pytest.raises(DataError, match="no channel ECG"):
        reader.read_signals(ss2, ["C3", "ECG"])


def test_subsets_read_only_those_and_an_ss1_night_without_arousals_is_refused(root, tmp_path):
    assert [r.recording for r in reader.find_recordings(root, subsets=[2])] == [
        "01-02-0001", "01-02-0002"]
    from embedprobe.datasets.sleep_edf.lookalike import write_hypnogram

    shutil.copytree(root / "SS01", tmp_path / "SS01")
    night = lookalike.plan(SMALL)[0]
    quiet = [a for a in night.annotations() if reader.AROUSAL not in a[2]]
    write_hypnogram(tmp_path / "SS01/annotations/01-01-0001 Base.edf", quiet, lookalike.START)
    rec = reader.find_recordings(tmp_path)[0]
    with pytest.raises(DataError, match="no MicroArousal annotation") as err:
        reader.read_events(rec)
    assert "01-01-0001 Base.edf" in str(err.value)
    reader.read_labels(rec, 1440)  # its stages still read (staging needs no arousal)


# The reference's MASS fold manifest (kkontras/NeuroAtlas cohorts/mass/folds.json), fold 0:
# per subset, the subject numbers it tests and validates on.
MASS_FOLD0 = {1: ([4, 6, 13, 14, 18, 20, 33, 42, 44, 48, 51],
                  [5, 7, 9, 16, 25, 27, 34, 35, 38, 45, 50]),
              2: ([5, 9, 16, 18], [6, 10, 11, 17]),
              3: ([4, 6, 13, 22, 27, 30, 39, 47, 48, 51, 52, 53, 56],
                  [2, 3, 5, 20, 28, 32, 33, 35, 37, 44, 57, 59, 60]),
              4: ([8, 12, 18, 21, 28, 32, 34, 40], [2, 6, 16, 22, 23, 24, 29, 38]),
              5: ([10, 14, 15, 16, 19, 25], [2, 4, 5, 17, 24])}
MASS_SIZES = {1: 53, 2: 19, 3: 64, 4: 40, 5: 26}
MASS_ABSENT = {"01-03-0043", "01-03-0049"}  # SS3 has 62 nights


def test_mass_folds_reproduce_the_references_manifest():
    subjects = [f"01-0{s}-{k:04d}" for s, n in MASS_SIZES.items() for k in range(1, n + 1)
                if f"01-0{s}-{k:04d}" not in MASS_ABSENT]
    assert len(subjects) == 200
    plan = chunk_plan(subjects, 5, 42, r"^01-(\d\d)-")
    for part, index in (("test", 0), ("val", 1)):
        expected = sorted(f"01-0{s}-{k:04d}" for s, lists in MASS_FOLD0.items()
                          for k in lists[index])
        assert plan.members(0, part) == expected
