"""The DCSM format (datasets/dcsm/): the look-alike read back against what its generator
wrote (stage runs cut in 30 s windows, the UNKNOWN run left out, microvolts read as volts),
a bad hypnogram line refused, and the reference's folds over its folder names as text."""

from __future__ import annotations

from collections import Counter

import h5py
import numpy as np
import pytest

from embedprobe.core.errors import DataError
from embedprobe.datasets.dcsm import lookalike, reader
from embedprobe.probing.folds import chunk_plan

SMALL = {"subjects": 3, "hours": 0.1, "seed": 2}


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    folder = tmp_path_factory.mktemp("dcsm")
    lookalike.write_lookalike(folder, SMALL)
    return folder


def test_each_night_reads_back_its_stage_runs_in_30_s_windows(root):
    nights = sorted(lookalike.plan(SMALL), key=lambda p: p.name)
    recordings = reader.find_recordings(root)
    assert [r.recording for r in recordings] == [p.name for p in nights]
    for rec, night in zip(recordings, nights, strict=True):
        counts = Counter()
        starts, labels, sfreq = reader.read_labels(rec, 1440, counts=counts)
        np.testing.assert_array_equal(labels, night.stages)
        np.testing.assert_array_equal(starts, np.arange(len(night.stages)) * 30 * int(sfreq))
        assert counts == Counter({("unscored", "unscored or not scored"):
                                  lookalike.UNKNOWN_EPOCHS})
        with h5py.File(rec.signal_path) as h5:
            microvolts = np.asarray(h5["channels/C4-M1"][:100], np.float64)
        read = reader.read_signals(rec, ["C4-M1"], (0, 100))
        np.testing.assert_allclose(read.data[0], microvolts * 1e-6, rtol=1e-6)
        assert set(reader.EEG_CHANNELS) <= set(reader.read_header(rec).channels)


def test_a_hypnogram_line_of_an_unknown_stage_is_refused_by_its_number(root, tmp_path):
    rec = reader.find_recordings(root)[0]
    folder = tmp_path / rec.recording
    folder.mkdir()
    (folder / "psg.h5").write_bytes(rec.signal_path.read_bytes())
    lines = rec.hypnogram.read_text().splitlines()
    lines[2] = lines[2].rsplit(",", 1)[0] + ",S4"
    (folder / "hypnogram.ids").write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError, match=r"line 3 reads '.*,S4'"):
        reader.read_labels(reader.find_recordings(tmp_path)[0], 1440)


def test_a_folder_without_its_hypnogram_is_incomplete(root, tmp_path):
    rec = reader.find_recordings(root)[0]
    (tmp_path / rec.recording).mkdir()
    (tmp_path / rec.recording / "psg.h5").write_bytes(rec.signal_path.read_bytes())
    (found,) = reader.find_recordings(tmp_path)
    assert found.problem == f"{rec.recording}/ has no hypnogram.ids"


def test_folds_take_the_folder_names_in_text_order_as_the_reference_does():
    """adapters/dcsm.py _patient_splits: sorted(os.listdir), RandomState(42), 5 chunks."""
    names = ["tp00c5869f_db8e", "tp005f7e68_a084", "tp0a1047c5_b734", "tp0a077a08_04aa",
             "tp12a99669_d54e", "tp1599a50d_347a", "tp9ccb1352_a537", "tpa0310558_1ae6",
             "tpe1a44c3e_e149", "tpf7c5bec8_9c35"]
    order = np.arange(len(names))
    np.random.RandomState(42).shuffle(order)
    chunks = np.array_split(order, 5)
    ordered = sorted(names)
    plan = chunk_plan(names, 5, 42, as_text=True)
    for k in range(5):
        assert set(plan.members(k, "test")) == {ordered[i] for i in chunks[k]}
        assert set(plan.members(k, "val")) == {ordered[i] for i in chunks[(k + 1) % 5]}
    # digit runs as numbers put tp00c5869f before tp005f7e68: another draw
    assert chunk_plan(names, 5, 42).parts != plan.parts
