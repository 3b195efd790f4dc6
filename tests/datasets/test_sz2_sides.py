"""SeizeIT2 (sz2, SzCORE BIDS as OpenNeuro ds005873 lays it out): recordings worn on either ear
name their behind-the-ear channel after it, and the channel map's first_of reads both."""

from __future__ import annotations

import numpy as np
import pytest

from embedprobe.core.errors import DataError, UsageError
from embedprobe.datasets.chbmit import lookalike as chbmit_lookalike
from embedprobe.datasets.szcore_bids import lookalike, reader
from embedprobe.pipeline.channel_maps import (
    FIRST_OF,
    channel_plan,
    mapped_channels,
    plan_from_entry,
    recorded_in,
)
from embedprobe.pipeline.protocol import Preprocessing
from embedprobe.pipeline.window_source import WindowRecipe, make_windows

SMALL = {"source": "sz2", "patients": 2, "files_per_patient": 1, "minutes_per_file": 2,
         "seed": 0}
CONFIG = {"datasets": {"sz2": {"channel_map": "sz2"}}}


@pytest.fixture(scope="module")
def sz2(tmp_path_factory):
    root = tmp_path_factory.mktemp("sz2")
    lookalike.write_lookalike(root, SMALL)
    return root


def test_the_lookalike_has_a_left_and_a_right_recording_in_ds005873s_layout(sz2):
    recordings = reader.find_recordings(sz2)
    assert [r.edf.relative_to(sz2).as_posix() for r in recordings] == [
        f"sub-{s}/ses-01/eeg/sub-{s}_ses-01_task-szMonitoring_run-01_eeg.edf"
        for s in ("001", "002")]
    assert [reader.read_header(r).channels for r in recordings] == [
        ("BTEleft SD", "CROSStop SD"), ("BTEright SD", "CROSStop SD")]
    # the events are the CHB-MIT look-alike's seizures, typed one type per patient
    plans = chbmit_lookalike.plan({k: v for k, v in SMALL.items() if k != "source"})
    for rec, p in zip(recordings, plans, strict=True):
        assert [(e.onset, e.duration) for e in reader.read_events(rec)] == [
            (float(s.onset), float(s.duration)) for s in p.seizures]
        labels = {label for *_, label in reader.event_labels(rec)}
        assert labels <= {"bckg", lookalike.SIENA_TYPES[int(rec.subject[4:]) % 3]}


def test_both_sides_map_to_the_same_model_inputs(sz2):
    """The by-order families get the focal channel of either ear as input 0 and CROSStop SD as
    input 1; the windows are that recording's own channels."""
    plan = channel_plan(CONFIG, "sz2", "cbramod")
    assert plan.model_names == ("BTE SD", "CROSStop SD")
    assert plan.sources[0].kind == FIRST_OF
    assert set(mapped_channels(CONFIG, "sz2")) == {"BTEleft SD", "BTEright SD", "CROSStop SD"}
    recipe = WindowRecipe("szcore_bids", plan, 256.0, 10.0, Preprocessing())
    for rec, focal in zip(reader.find_recordings(sz2), ("BTEleft SD", "BTEright SD"),
                          strict=True):
        channels = reader.read_header(rec).channels
        assert recorded_in(plan, channels, rec.edf) == (focal, "CROSStop SD")
        windows = make_windows(recipe, rec, np.array([0, 2560]), index_sfreq=256.0)
        recorded = reader.read_signals(rec, [focal, "CROSStop SD"]).data
        np.testing.assert_array_equal(windows[1], recorded[:, 2560:5120])


def test_a_recording_with_no_alternative_is_refused_by_name(sz2, tmp_path):
    plan = channel_plan(CONFIG, "sz2", "cbramod")
    with pytest.raises(DataError) as caught:
        recorded_in(plan, ("ECG SD", "CROSStop SD"), tmp_path / "x_eeg.edf")
    assert "x_eeg.edf" in caught.value.message and "BTEleft SD, BTEright SD" in caught.value.message
    assert "first_of" in caught.value.fix


@pytest.mark.parametrize("entry, message", [
    ({"derive": {"a": {"first_of": ["X"]}}}, "is not a source"),
    ({"derive": {"a": {"first_of": ["X", "X"]}}}, "is not a source"),
    ({"derive": {"a": {"first_of": ["X", "Y"]}, "b": "Y"}}, "more than one source"),
    ({"derive": {"a": {"first_of": ["X", "Y"]}, "b": "X"}}, "both as itself"),
])
def test_a_first_of_that_cannot_name_one_channel_is_refused(entry, message, tmp_path):
    with pytest.raises(UsageError, match=message):
        plan_from_entry(tmp_path / "m.yaml", "cbramod", entry)
