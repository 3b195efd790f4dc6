"""SzCORE BIDS (datasets/szcore_bids/): the look-alike's files and events against the generator,
the same window labels as the PhysioNet layouts it converts, and its refusals."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from embedprobe.core.errors import DataError, UsageError
from embedprobe.datasets.chbmit import lookalike as chbmit_lookalike
from embedprobe.datasets.chbmit import reader as chbmit
from embedprobe.datasets.siena import lookalike as siena_lookalike
from embedprobe.datasets.siena import reader as siena
from embedprobe.datasets.szcore_bids import lookalike, reader
from embedprobe.tasks.registry import task_for

SMALL = {"patients": 2, "files_per_patient": 2, "minutes_per_file": 2, "seed": 0}
SOURCES = {"chbmit": (chbmit, chbmit_lookalike), "siena": (siena, siena_lookalike)}
ENTRY = {"epoch_seconds": 10}


@pytest.fixture(scope="module", params=list(SOURCES))
def converted(request, tmp_path_factory):
    """(source name, its PhysioNet look-alike, the BIDS conversion, source id -> BIDS EDF)."""
    name = request.param
    root = tmp_path_factory.mktemp(name)
    SOURCES[name][1].write_lookalike(root / "physionet", SMALL)
    written = lookalike.convert(root / "physionet", root / "bids", name)
    return name, root / "physionet", root / "bids", written


def by_stem(root: Path) -> dict:
    return {r.recording: r for r in reader.find_recordings(root)}


def test_the_conversion_names_files_as_szcore_does(converted):
    name, _, bids, written = converted
    if name == "chbmit":
        assert written["chb01_01"].relative_to(bids).as_posix() == (
            "sub-01/ses-01/eeg/sub-01_ses-01_task-szMonitoring_run-00_eeg.edf")
        assert written["chb02_02"].name == "sub-02_ses-01_task-szMonitoring_run-01_eeg.edf"
    else:
        assert written["PN00-1"].relative_to(bids).as_posix() == (
            "sub-00/ses-01/eeg/sub-00_ses-01_task-szMonitoring_run-01_eeg.edf")
    recordings = reader.find_recordings(bids)
    assert [r.edf for r in recordings] == sorted(written.values())
    rec = recordings[0]
    assert rec.subject == rec.recording.split("_")[0] and rec.problem == ""
    assert rec.session == "ses-01_run-" + rec.recording.rsplit("run-", 1)[1]
    assert {p.name.split("_")[-1] for p in rec.files} == {"eeg.edf", "eeg.json", "events.tsv"}
    sidecar = json.loads(rec.sidecar.read_text())
    assert sidecar["SamplingFrequency"] == 256 and sidecar["TaskName"] == "szMonitoring"
    header = reader.read_header(rec)
    assert header.sfreq == 256
    if name == "chbmit":  # the 18 double-banana derivations, T8-P8 once
        assert header.channels == lookalike.CHBMIT_CHANNELS
    else:
        assert header.channels == tuple(f"{e}-Avg" for e in lookalike.ELECTRODES_10_20)
    assert sidecar["RecordingDuration"] == header.n_samples / header.sfreq == 120
    assert (bids / "participants.tsv").read_text().split() == [
        "participant_id", *sorted({r.subject for r in recordings})]


def test_events_are_the_generators_seizures(converted):
    """Every seizure the generator planned, in seconds from the file's start, labelled as
    SzCORE labels the dataset; a file without one has a single bckg row over its length."""
    name, _, bids, written = converted
    plans = SOURCES[name][1].plan(SMALL)
    found = by_stem(bids)
    assert len(plans) == len(found) == 4
    seizure_free = 0
    for p in plans:
        rec = found[written[p.name.removesuffix(".edf")].name.removesuffix("_eeg.edf")]
        events = reader.read_events(rec)
        assert [(e.onset, e.duration, e.description) for e in events] == [
            (float(s.onset), float(s.duration), "seizure") for s in p.seizures]
        table = pd.read_csv(rec.events, sep="\t")
        assert list(table.columns) == list(lookalike.COLUMNS)
        if p.seizures:
            expected = "sz" if name == "chbmit" else lookalike.SIENA_TYPES[p.patient % 3]
            assert set(table["eventType"]) == {expected}
        else:
            seizure_free += 1
            assert table[["onset", "duration", "eventType"]].values.tolist() == [
                [0.0, 120.0, "bckg"]]
    assert seizure_free == (1 if name == "chbmit" else 0)  # Siena: every file has one


def test_bids_window_labels_equal_the_physionet_layouts(converted):
    """The seizure task's windows of each recording, read from BIDS and from the PhysioNet
    layout it was converted from: the same starts (in seconds) and the same labels."""
    name, physionet, bids, written = converted
    task = task_for("seizure_detection")
    source_reader = SOURCES[name][0]
    found = by_stem(bids)
    positives = 0
    for rec in source_reader.find_recordings(physionet):
        target = found[written[rec.recording].name.removesuffix("_eeg.edf")]
        ours = task.units(source_reader, rec, ENTRY, Counter())
        theirs = task.units(reader, target, ENTRY, Counter())
        np.testing.assert_array_equal(theirs.labels, ours.labels)
        np.testing.assert_array_equal(theirs.starts / theirs.sfreq, ours.starts / ours.sfreq)
        positives += int(ours.labels.sum())
    assert positives > 0


def test_the_lookalike_writes_its_sources_conversion(tmp_path):
    files = lookalike.write_lookalike(tmp_path / "bids", {"source": "chbmit", **SMALL})
    assert files[-1] == tmp_path / "bids/MANIFEST.tsv"
    assert sorted(p.name for p in (tmp_path / "bids").iterdir()) == [
        "MANIFEST.tsv", "dataset_description.json", "events.json", "participants.tsv",
        "sub-01", "sub-02"]  # the scratch PhysioNet layout is gone
    assert len(reader.find_recordings(tmp_path / "bids")) == 4
    with pytest.raises(UsageError, match="converts chbmit, siena, sz2"):
        lookalike.write_lookalike(tmp_path / "x", {"source": "tusz"})


# ------------------------------------------------------------------ refusals


@pytest.fixture(scope="module")
def chb_bids(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("refusals")
    chbmit_lookalike.write_lookalike(root / "physionet", SMALL)
    lookalike.convert(root / "physionet", root / "bids", "chbmit")
    return root / "bids"


@pytest.fixture
def bids(tmp_path, chb_bids) -> Path:
    """A copy of a CHB-MIT conversion to damage."""
    import shutil

    shutil.copytree(chb_bids, tmp_path / "bids")
    return tmp_path / "bids"


def first_seizure(root: Path):
    return next(r for r in reader.find_recordings(root) if reader.read_events(r))


def test_a_recording_without_its_events_file_is_incomplete(bids):
    rec = first_seizure(bids)
    rec.events.unlink()
    rec = by_stem(bids)[rec.recording]
    assert rec.problem == f"no {rec.events.name} beside {rec.edf.name} (it lists the " \
                          "recording's seizures)"
    assert rec.events not in rec.files
    with pytest.raises(DataError, match="no sub-01_ses-01_task-szMonitoring_run-00_events.tsv"
                       ) as caught:
        reader.read_events(rec)
    assert "allow_partial=true" in caught.value.fix


def test_an_unknown_event_label_is_refused_naming_the_file(bids):
    rec = first_seizure(bids)
    rec.events.write_text(rec.events.read_text().replace("\tsz\t", "\tspike\t"))
    with pytest.raises(DataError, match="unknown event label 'spike'") as caught:
        reader.read_events(rec)
    assert str(rec.events) in str(caught.value) and "sz_<type>" in caught.value.fix


def test_typed_seizures_and_trial_type_files_are_read(bids):
    rec = first_seizure(bids)
    before = reader.read_events(rec)
    text = rec.events.read_text()
    rec.events.write_text(text.replace("\tsz\t", "\tsz_foc_ia_m_automatisms\t"))
    assert reader.read_events(rec) == before
    rec.events.write_text(text.replace("eventType", "trial_type"))  # plain BIDS
    assert reader.read_events(rec) == before
    rec.events.write_text(text)
    table = pd.read_csv(rec.events, sep="\t", keep_default_na=False)  # SeizeIT2's columns
    seizeit2 = table[["onset", "duration", "eventType"]].assign(
        eventType="sz_foc_ia_nm", lateralization="left", localization="temporal",
        vigilance="asleep")
    seizeit2.to_csv(rec.events, sep="\t", index=False)
    assert reader.read_events(rec) == before
    rec.events.write_text(text.replace("eventType", "kind"))
    with pytest.raises(DataError, match="no eventType or trial_type column"):
        reader.read_events(rec)


def test_an_event_outside_its_recording_is_refused_naming_the_file(bids):
    rec = first_seizure(bids)
    table = pd.read_csv(rec.events, sep="\t")
    table.loc[0, "duration"] = 120 - table.loc[0, "onset"] + 5
    table.to_csv(rec.events, sep="\t", index=False)
    with pytest.raises(DataError, match="is not within sub-01_ses-01") as caught:
        reader.read_events(rec)
    assert str(rec.events) in str(caught.value) and "correct its onset" in caught.value.fix


def test_a_sidecar_of_another_rate_is_refused(bids):
    rec = first_seizure(bids)
    sidecar = json.loads(rec.sidecar.read_text())
    rec.sidecar.write_text(json.dumps(sidecar | {"SamplingFrequency": 512}))
    with pytest.raises(DataError, match="SamplingFrequency 512 but"):
        reader.read_events(rec)


def test_a_missing_folder_is_named(tmp_path):
    with pytest.raises(DataError, match="BIDS folder .* does not exist"):
        reader.find_recordings(tmp_path / "nowhere")


def test_the_channel_maps_fit_the_converted_channels(converted):
    """Every family's plan of chbmit_bids / siena_bids reads recorded channels only."""
    from helpers.seizure import check_channel_map

    name, _, bids, _ = converted
    header = reader.read_header(reader.find_recordings(bids)[0])
    plans = check_channel_map(f"{name}_bids", set(header.channels))
    assert len(plans["biot"].model_names) == 16
