"""The HMC format (datasets/hmc/): the look-alike read back against what its generator wrote
(stages per 30 s from the scoring's first stage, the lights annotations left out), and bad
scoring files refused by name with their fix."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from embedprobe.core.errors import DataError
from embedprobe.datasets.hmc import lookalike, reader

SMALL = {"subjects": 3, "hours": 0.1, "seed": 4}


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hmc")
    lookalike.write_lookalike(folder, SMALL)
    return folder


def test_each_night_reads_back_its_stages_from_the_first_scored_epoch(root):
    nights = lookalike.plan(SMALL)
    recordings = reader.find_recordings(root)
    assert [r.recording for r in recordings] == ["SN001", "SN002", "SN003"]
    for rec, night in zip(recordings, nights, strict=True):
        assert rec.subject == rec.recording and rec.problem == ""
        counts = Counter()
        starts, labels, sfreq = reader.read_labels(rec, 1440, counts=counts)
        assert sfreq == lookalike.SFREQ
        np.testing.assert_array_equal(labels, night.stages)
        # the scoring starts one epoch into the PSG
        epoch = int(reader.EPOCH_SECONDS * sfreq)
        np.testing.assert_array_equal(starts, epoch * (1 + np.arange(len(night.stages))))
        assert counts == Counter({("ignored", "Lights off"): 1, ("ignored", "Lights on"): 1})
        header = reader.read_header(rec)
        assert header.channels[:4] == reader.EEG_CHANNELS
        assert header.n_samples == int(night.seconds * sfreq)


def test_an_unknown_stage_label_is_refused_naming_the_scoring_file(root, tmp_path):
    from embedprobe.datasets.sleep_edf.lookalike import write_hypnogram

    rec = reader.find_recordings(root)[0]
    night = lookalike.plan(SMALL)[0]
    bad = [(o, d, "Sleep stage N4" if k == 3 else t)
           for k, (o, d, t) in enumerate(night.annotations())]
    copy = tmp_path / "recordings"
    copy.mkdir()
    (copy / rec.signal_path.name).write_bytes(rec.signal_path.read_bytes())
    write_hypnogram(copy / rec.scoring.name, bad, lookalike.START)
    with pytest.raises(DataError, match="unknown sleep stage label 'Sleep stage N4'") as err:
        reader.read_labels(reader.find_recordings(tmp_path)[0], 1440)
    assert "SN001_sleepscoring.edf" in str(err.value) and "Sleep stage N1" in err.value.fix


def test_a_psg_without_its_scoring_file_is_incomplete(root, tmp_path):
    rec = reader.find_recordings(root)[0]
    (tmp_path / rec.signal_path.name).write_bytes(rec.signal_path.read_bytes())
    (found,) = reader.find_recordings(tmp_path)
    assert found.problem == "SN001.edf has no SN001_sleepscoring.edf beside it"
    assert found.files == (found.signal_path,)
    with pytest.raises(DataError, match="has no SN001_sleepscoring.edf"):
        reader.read_labels(found, 1440)
