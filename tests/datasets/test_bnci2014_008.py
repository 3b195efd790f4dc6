"""The BNCI 2014-008 reader on subject files written by its look-alike, read with scipy (and
MNE, the way MOABB's loader finds the flashes)."""

from __future__ import annotations

import os
import shutil
import time

import numpy as np
import pytest
import scipy.io
import scipy.signal

from embedprobe.core.errors import DataError, UsageError
from embedprobe.datasets.bnci2014_008 import lookalike
from embedprobe.datasets.bnci2014_008 import reader as bnci

from helpers.lookalike import demo_fixture, written_thrice
from helpers.loso import loso_scores
from helpers.moabb import offline_moabb

SETTINGS = {"subjects": 2, "selections": 2, "repetitions": 5, "seed": 3}
UV = 1e-6

demo = demo_fixture(lookalike, SETTINGS, "bnci2014_008")


def test_layout_the_way_moabb_reads_it(demo):
    root, files, _ = demo
    assert [f.name for f in files] == ["A01.mat", "A02.mat", "MANIFEST.tsv"]
    assert scipy.io.whosmat(files[0]) == [("data", (1, 1), "struct")]
    # Read the way MOABB's _load_data_008_2014 does: struct_as_record=False, squeeze_me=True.
    run = scipy.io.loadmat(files[0], struct_as_record=False, squeeze_me=True)["data"]
    assert list(run._fieldnames) == list(bnci.FIELDS)
    assert list(run.channels) == ["Fz", "Cz", "Pz", "Oz", "P3", "P4", "PO7", "PO8"]
    assert run.X.ndim == 2 and run.X.shape[1] == 8 and run.X.dtype == np.float64
    assert run.y.shape == run.y_stim.shape == (run.X.shape[0],)
    assert set(np.unique(run.y)) == {0, 1, 2} and set(np.unique(run.y_stim)) == set(range(13))
    assert list(run.classes) == ["NonTarget", "Target"]
    assert list(run.classes_stim) == [f"Row{k}" for k in range(1, 7)] + [
        f"Col{k}" for k in range(1, 7)]
    raw = scipy.io.loadmat(files[0])["data"][0, 0]  # MATLAB's orientations
    assert raw["y"].shape == (run.X.shape[0], 1) and raw["trial"].shape == (1, 2)
    # A flash is 32 samples on, 32 off; trial is the 1-based sample of a character's first one.
    on = (run.y_stim > 0).astype(int)
    onsets = np.flatnonzero(np.diff(np.r_[0, on]) > 0)
    offsets = np.flatnonzero(np.diff(np.r_[on, 0]) < 0) + 1
    assert set(offsets - onsets) == {32} and set(np.diff(onsets[:60])) == {64}
    assert list(run.trial - 1) == [onsets[0], onsets[60]]


def test_mne_finds_the_events_moabb_finds(demo):
    """MOABB's _convert_run_p300_sl stim channels + mne.find_events give the reader's events."""
    mne = pytest.importorskip("mne")
    root, files, _ = demo
    run = scipy.io.loadmat(files[0], struct_as_record=False, squeeze_me=True)["data"]
    flash = run.y_stim.astype(float)
    flash[flash > 0] += 2
    info = mne.create_info(list(run.channels) + ["Target stim", "Flash stim"], 256,
                           ["eeg"] * 8 + ["stim"] * 2)
    raw = mne.io.RawArray(np.c_[1e-6 * run.X, run.y, flash].T, info, verbose=False)
    events = mne.find_events(raw, shortest_event=0, verbose=False)
    events = events[np.isin(events[:, 2], [1, 2])]  # MOABB's event_id Target 2, NonTarget 1
    ours = bnci.read_events(bnci.find_recordings(root)[0])
    assert [(s / 256, {1: "NonTarget", 2: "Target"}[c]) for s, _, c in events] == [
        (e.onset, e.description) for e in ours]


def test_reader_recovers_every_flash_onset_and_class(demo):
    root, _, plans = demo
    recordings = bnci.find_recordings(root)
    assert [(r.recording, r.subject, r.session) for r in recordings] == [
        ("A01", "A01", "0"), ("A02", "A02", "0")]
    for rec, plan in zip(recordings, plans, strict=True):
        events = bnci.read_events(rec)
        want = [(k / 256, 1.0, "Target" if t else "NonTarget")
                for k, t in zip(plan.onsets.tolist(), plan.target.tolist(), strict=True)]
        assert [(e.onset, e.duration, e.description) for e in events] == want
        assert len(events) == 2 * 5 * 12
        targets = sum(e.description == "Target" for e in events)
        assert targets * 5 == len(events) - targets  # 1:5


def test_header_and_signals_are_what_was_written(demo):
    root, _, plans = demo
    rec = bnci.find_recordings(root)[1]
    header = bnci.read_header(rec)
    assert header.channels == bnci.CHANNELS and header.sfreq == 256.0
    assert header.n_samples == plans[1].n_samples
    signals = bnci.read_signals(rec, ["Pz", "PO8"])
    written = lookalike.synthesize(plans[1], SETTINGS["seed"])[:, [2, 7]].T
    np.testing.assert_allclose(signals.data, written * UV, rtol=1e-6, atol=1e-12)
    assert 3 * UV < signals.data.std() < 50 * UV
    with pytest.raises(DataError, match="no channel C3"):
        bnci.read_signals(rec, ["C3"])


def test_same_settings_write_the_same_bytes(tmp_path):
    a, b, c = written_thrice(lookalike, tmp_path, SETTINGS | {"subjects": 1, "selections": 1}, 4)
    assert a[0].read_bytes() == b[0].read_bytes() != c[0].read_bytes()
    assert a[0].read_bytes()[:19] == b"MATLAB 5.0 MAT-file"


def test_the_p300_is_there_across_subjects(tmp_path):
    """Target flashes carry a centro-parietal positivity 250-500 ms after the flash, which a
    linear probe on the epochs finds in a subject it was not fitted on."""
    from sklearn.linear_model import LogisticRegression

    lookalike.write_lookalike(tmp_path, {"subjects": 3, "selections": 3, "repetitions": 10,
                                         "seed": 0})
    band = scipy.signal.butter(4, (1, 12), "bandpass", fs=256, output="sos")
    x, y, g = [], [], []
    for rec in bnci.find_recordings(tmp_path):
        data = bnci.read_signals(rec, bnci.CHANNELS).data.astype(float) / UV
        data = scipy.signal.sosfiltfilt(band, data, axis=1)
        for event in bnci.read_events(rec):
            start = round(event.onset * 256)
            x.append(data[:, start:start + 205:8].ravel())  # 0-0.8 s, 32 Hz
            y.append(event.description == "Target")
            g.append(rec.subject)
    x, y, g = np.array(x), np.array(y), np.array(g)
    pz = x.reshape(len(x), 8, -1)[:, 2, 8:16].mean(1)  # Pz, 250-500 ms
    assert pz[y].mean() - pz[~y].mean() > 3.0  # microvolts
    probe = LogisticRegression(C=0.001, class_weight="balanced", max_iter=2000)
    assert np.mean(loso_scores(probe, x, y, g)) > 0.62  # chance 0.5; 0.69 measured


def _rewrite(source, target, change):
    content = scipy.io.loadmat(source, simplify_cells=True)
    change(content["data"])
    scipy.io.savemat(target, {"data": content["data"]})
    return target


@pytest.mark.parametrize("change, message", [
    (lambda d: d.pop("y"), "no field y, the trial markers"),
    (lambda d: d.__setitem__("X", d["X"].T), r"X has shape \(8, \d+\)"),
    (lambda d: d.__setitem__("y", d["y"][:-5]), "one trial marker per sample"),
    (lambda d: d.__setitem__("y", 0 * d["y"]), "marks no flash"),
    (lambda d: d.__setitem__("y", 3 * d["y"]), "y holds code 3"),
    (lambda d: d.pop("X"), "no field X"),
])
def test_a_broken_subject_file_is_refused_by_name(demo, tmp_path, change, message):
    root, _, _ = demo
    path = _rewrite(root / "A01.mat", tmp_path / "A01.mat", change)
    rec = bnci.find_recordings(tmp_path)[0]
    with pytest.raises(DataError, match=message) as info:
        bnci.read_events(rec)
    assert str(path) in info.value.message and "download" in info.value.fix


def test_a_file_without_the_struct_is_refused(tmp_path):
    scipy.io.savemat(tmp_path / "A01.mat", {"X": np.zeros((10, 8))})
    with pytest.raises(DataError, match=r"A01.mat: no variable `data`.*it holds X") as info:
        bnci.read_header(bnci.find_recordings(tmp_path)[0])
    assert info.value.fix
    (tmp_path / "A01.mat").write_bytes(b"not a mat file")
    with pytest.raises(DataError, match="not a readable .mat file"):
        bnci.read_header(bnci.find_recordings(tmp_path)[0])


def test_layout_and_setting_errors(tmp_path):
    with pytest.raises(DataError, match="does not exist"):
        bnci.find_recordings(tmp_path / "nowhere")
    assert bnci.find_recordings(tmp_path) == []
    with pytest.raises(UsageError, match="unknown look-alike setting"):
        lookalike.plan({"runs": 2})
    with pytest.raises(UsageError, match="subjects=9"):
        lookalike.plan({"subjects": 9})


@pytest.mark.skipif(not os.environ.get("EMBEDPROBE_TRY_MOABB"),
                    reason="cross-check against MOABB's loader: set EMBEDPROBE_TRY_MOABB=1 "
                           "in an environment with moabb installed")
def test_moabb_reads_the_same_flashes_from_the_lookalike(demo, tmp_path, monkeypatch,
                                                         record_property):
    """MOABB's BNCI2014_008 reads the look-alike offline from its download cache
    (<MNE_DATASETS_BNCI_PATH>/MNE-bnci-data/~bci/database/008-2014/A01.mat, the URL
    https://lampx.tugraz.at/~bci/database/008-2014/A01.mat without its host) and finds the
    reader's flashes: the same onsets and Target / NonTarget classes, both in the stim-channel
    events its paradigms epoch on (RawToEvents) and in the annotations get_data sets.
    Measured with moabb 1.7.2: 120 flashes of A01 (20 Target), identical."""
    moabb_datasets = pytest.importorskip("moabb.datasets")
    from moabb.datasets.preprocessing import RawToEvents

    root, _, _ = demo
    cache = tmp_path / "MNE-bnci-data" / "~bci" / "database" / "008-2014"
    cache.mkdir(parents=True)
    shutil.copy(root / "A01.mat", cache)
    offline_moabb(monkeypatch, tmp_path, "BNCI")
    dataset = moabb_datasets.BNCI2014_008()
    start = time.perf_counter()
    raw = dataset.get_data(subjects=[1])[1]["0"]["0"]
    record_property("get_data_s", round(time.perf_counter() - start, 3))
    assert dataset.event_id == {"Target": 2, "NonTarget": 1} and raw.info["sfreq"] == 256
    ours = [(round(e.onset * 256), e.description)
            for e in bnci.read_events(bnci.find_recordings(root)[0])]
    names = {v: k for k, v in dataset.event_id.items()}
    found = RawToEvents(dataset.event_id, dataset.interval).transform(raw)
    assert [(s, names[c]) for s, _, c in found] == ours
    annotated = [(round(a["onset"] * 256), a["description"]) for a in raw.annotations]
    assert annotated == ours
    record_property("flashes", len(ours))
    record_property("targets", sum(d == "Target" for _, d in ours))

