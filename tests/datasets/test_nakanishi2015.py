"""The Nakanishi 2015 SSVEP reader on s*.mat files written by its look-alike, read with scipy."""

from __future__ import annotations

import os
import shutil
import time

import numpy as np
import pytest
import scipy.io

from embedprobe.core.config import load_config
from embedprobe.core.errors import DataError, UsageError
from embedprobe.datasets.nakanishi2015 import lookalike
from embedprobe.datasets.nakanishi2015 import reader as nakanishi

from helpers.lookalike import demo_fixture
from helpers.moabb import offline_moabb

SETTINGS = {"subjects": 2, "blocks": 3, "seed": 4}
# The README's target order (eeg(1,:,:,:) is 9.25 Hz, eeg(5,:,:,:) 11.75 Hz) and MOABB's names.
FREQUENCIES = [9.25, 11.25, 13.25, 9.75, 11.75, 13.75, 10.25, 12.25, 14.25, 10.75, 12.75, 14.75]
UV = 1e-6
STRIDE = 50 + 1114 + 50  # MOABB's zeros, the epoch, its zeros

demo = demo_fixture(lookalike, SETTINGS, "nakanishi2015")


def test_layout_the_way_moabb_reads_it(demo):
    root, files, _ = demo
    assert [f.name for f in files] == ["s1.mat", "s2.mat", "MANIFEST.tsv"]
    assert scipy.io.whosmat(files[0]) == [("eeg", (12, 8, 1114, 3), "double")]
    eeg = scipy.io.loadmat(files[0], squeeze_me=True)["eeg"]  # as MOABB loads it
    assert eeg.shape == (12, 8, 1114, 3) and eeg.dtype == np.float64
    assert 2 < eeg.std() < 30  # microvolts (MOABB multiplies by 1e-6)
    assert nakanishi.CHANNELS == ("PO7", "PO3", "POz", "PO4", "PO8", "O1", "Oz", "O2")
    assert nakanishi.SFREQ == 256.0
    assert list(nakanishi.FREQUENCIES) == FREQUENCIES
    assert list(nakanishi.EVENT_NAMES) == [str(f) for f in FREQUENCIES]
    assert (root / "MANIFEST.tsv").read_text().splitlines()[0] == "file\tbytes"


def test_reader_recovers_every_trial_onset_and_class(demo):
    root, _, plans = demo
    recordings = nakanishi.find_recordings(root)
    assert [(r.recording, r.subject, r.session) for r in recordings] == [
        ("s01", "s01", "0"), ("s02", "s02", "0")]
    for rec, plan in zip(recordings, plans, strict=True):
        events = nakanishi.read_events(rec)
        assert [(e.onset, e.duration, e.description) for e in events] == plan.trials()
        assert len(events) == 12 * 3
        # MOABB's order: all blocks of the first target, then the next target's ...
        assert [e.description for e in events[:4]] == ["9.25", "9.25", "9.25", "11.25"]
        # onset = 50 zeros + 38 samples of the epoch before the flicker, per 1214-sample trial
        assert events[4].onset * 256 == 4 * STRIDE + 50 + 38
        header = nakanishi.read_header(rec)
        assert header.channels == nakanishi.CHANNELS and header.sfreq == 256.0
        assert header.n_samples == 36 * STRIDE
        assert all(e.end * 256 <= header.n_samples for e in events)


def test_signals_are_what_was_written_in_moabbs_layout(demo):
    root, files, plans = demo
    rec = nakanishi.find_recordings(root)[1]
    signals = nakanishi.read_signals(rec, ["Oz", "PO7"])
    assert signals.sfreq == 256.0 and signals.data.shape == (2, 36 * STRIDE)
    written = lookalike.synthesize(plans[1], SETTINGS["seed"])
    np.testing.assert_array_equal(written, scipy.io.loadmat(files[1])["eeg"])
    for trial in (0, 5, 35):  # target-major: trial = target * blocks + block
        target, block = divmod(trial, 3)
        epoch = written[target, [6, 0], :, block]
        epoch = epoch - epoch.mean(axis=1, keepdims=True)  # MOABB de-means every epoch
        start = trial * STRIDE
        np.testing.assert_allclose(signals.data[:, start + 50:start + 50 + 1114], epoch * UV,
                                   rtol=1e-5, atol=1e-12)
        assert not signals.data[:, start:start + 50].any()
        assert not signals.data[:, start + 1164:start + STRIDE].any()
    with pytest.raises(DataError, match="no channel Cz") as info:
        nakanishi.read_signals(rec, ["Cz"])
    assert info.value.fix


def test_the_ssvep_signature_is_there(demo):
    """Over the 4 s of flicker, Oz has most power at its trial's frequency (+ 2nd harmonic),
    and the response is largest at the occipital pole."""
    root, _, _ = demo
    freqs = np.fft.rfftfreq(1024, 1 / 256)
    hits, trials, occipital, lateral = 0, 0, [], []
    for rec in nakanishi.find_recordings(root):
        data = nakanishi.read_signals(rec, nakanishi.CHANNELS).data
        for event in nakanishi.read_events(rec):
            first = round(event.onset * 256)
            power = np.abs(np.fft.rfft(data[:, first:first + 1024], axis=1)) ** 2
            target = nakanishi.EVENT_NAMES.index(event.description)
            bins = [[np.argmin(abs(freqs - f)), np.argmin(abs(freqs - 2 * f))]
                    for f in FREQUENCIES]
            score = [power[6, b].sum() for b in bins]
            hits += int(np.argmax(score) == target)
            trials += 1
            occipital.append(power[6, bins[target][0]])  # Oz
            lateral.append(power[0, bins[target][0]])  # PO7
    assert hits / trials > 0.3  # chance 1/12
    assert np.median(occipital) > 3 * np.median(lateral)


def test_same_settings_same_bytes(demo, tmp_path):
    _, files, _ = demo
    again = lookalike.write_lookalike(tmp_path, SETTINGS)
    assert [f.read_bytes() for f in again] == [f.read_bytes() for f in files]
    assert b"embedprobe" in files[0].read_bytes()[:116]  # a fixed header text, not the time


def _copy_with(root, name, variables):
    root.mkdir(parents=True, exist_ok=True)
    path = root / name
    scipy.io.savemat(path, variables)
    return path


def test_an_ssvep_array_of_the_wrong_shape_is_refused(tmp_path):
    path = _copy_with(tmp_path / "a", "s1.mat", {"eeg": np.zeros((12, 8, 1000, 2))})
    with pytest.raises(DataError, match=r"s1\.mat: `eeg` has shape \[12, 8, 1000, 2\]") as info:
        nakanishi.find_recordings(path.parent)
    assert "12JFPM_SSVEP" in info.value.fix
    reversed_axes = _copy_with(tmp_path / "b", "s3.mat", {"eeg": np.zeros((2, 1114, 8, 12))})
    with pytest.raises(DataError, match="s3.mat.*axes look reversed") as info:
        nakanishi.find_recordings(reversed_axes.parent)
    assert info.value.fix
    three_d = _copy_with(tmp_path / "c", "s2.mat", {"eeg": np.zeros((12, 8, 1114))})
    with pytest.raises(DataError, match=r"s2\.mat.*shape \[12, 8, 1114\]"):
        nakanishi.read_events(nakanishi.Recording("s02", three_d, 2))


def test_a_file_without_eeg_is_refused(tmp_path):
    path = _copy_with(tmp_path, "s4.mat", {"data": np.zeros((12, 8, 1114, 1))})
    with pytest.raises(DataError, match=r"s4\.mat: no variable `eeg` \(it holds data") as info:
        nakanishi.find_recordings(tmp_path)
    assert info.value.fix
    with pytest.raises(DataError, match=r"s4\.mat: no variable `eeg`"):
        nakanishi.read_signals(nakanishi.Recording("s04", path, 4), ["Oz"])


def test_a_damaged_file_and_a_missing_folder_are_refused(tmp_path):
    (tmp_path / "s5.mat").write_bytes(b"not a mat file" * 20)
    with pytest.raises(DataError, match=r"s5\.mat: not a readable \.mat file") as info:
        nakanishi.find_recordings(tmp_path)
    assert info.value.fix
    with pytest.raises(DataError, match="does not exist") as info:
        nakanishi.find_recordings(tmp_path / "absent")
    assert "s1.mat" in info.value.fix


@pytest.mark.parametrize("settings, match", [
    ({"subjects": 11}, "s1-s10"), ({"blocks": 16}, "blocks=16"), ({"runs": 2}, "unknown")])
def test_bad_generator_settings_are_refused(settings, match):
    with pytest.raises(UsageError, match=match) as info:
        lookalike.plan(settings)
    assert info.value.fix


def test_the_shipped_entries_and_the_demos_size():
    datasets = load_config()["datasets"]
    assert datasets["nakanishi2015"]["format"] == "nakanishi2015"
    demo = datasets["nakanishi2015_demo"]
    plans = lookalike.plan(demo["generator"])
    assert len(plans) == demo["expected_recordings"] == 4
    assert all(60 <= len(p.trials()) <= 72 for p in plans)


@pytest.mark.skipif(not os.environ.get("EMBEDPROBE_TRY_MOABB"),
                    reason="cross-check against MOABB's loader: set EMBEDPROBE_TRY_MOABB=1 "
                           "in an environment with moabb installed")
def test_moabb_reads_the_same_trials_from_the_lookalike(tmp_path, monkeypatch, record_property):
    """MOABB's Nakanishi2015 reads the look-alike offline from its download cache
    (<MNE_DATASETS_NAKANISHI_PATH>/MNE-nakanishi-data/mnakanishi/12JFPM_SSVEP/raw/master/data/
    s1.mat: the URL https://github.com/mnakanishi/12JFPM_SSVEP/raw/master/data/s1.mat without
    its host) and finds the reader's trials with the same frequency names. Its stim-channel
    events (what its paradigms epoch on, from interval[0] = 0.15 s) sit at each epoch's start,
    38 samples before the reader's stimulus onsets; the annotations get_data sets are shifted
    by int(0.15 * 256) = 38 samples and so fall on the reader's onsets exactly (lasting 4.15 s,
    the reader's events 4 s). MOABB's loader hard-codes 15 blocks, so the look-alike here has
    15. Measured with moabb 1.7.2: 180 trials, 15 per frequency, identical."""
    moabb_datasets = pytest.importorskip("moabb.datasets")
    from moabb.datasets.preprocessing import RawToEvents

    root = tmp_path / "lookalike"
    lookalike.write_lookalike(root, {"subjects": 1, "blocks": 15, "seed": 4})
    cache = (tmp_path / "mne" / "MNE-nakanishi-data" / "mnakanishi" / "12JFPM_SSVEP" / "raw"
             / "master" / "data")
    cache.mkdir(parents=True)
    shutil.copy(root / "s1.mat", cache)
    offline_moabb(monkeypatch, tmp_path / "mne", "NAKANISHI")
    dataset = moabb_datasets.Nakanishi2015()
    start = time.perf_counter()
    raw = dataset.get_data(subjects=[1])[1]["0"]["0"]
    record_property("get_data_s", round(time.perf_counter() - start, 3))
    assert dataset.event_id == {f"{f:g}": k + 1 for k, f in enumerate(FREQUENCIES)}
    assert raw.info["sfreq"] == 256 and raw.n_times == 180 * STRIDE
    ours = [(round(e.onset * 256), e.description)
            for e in nakanishi.read_events(nakanishi.find_recordings(root)[0])]
    assert len(ours) == 180
    names = {v: k for k, v in dataset.event_id.items()}
    found = RawToEvents(dataset.event_id, dataset.interval).transform(raw)
    assert [(s + 38, names[c]) for s, _, c in found] == ours
    assert [(round(a["onset"] * 256), a["description"]) for a in raw.annotations] == ours
    assert {round(a["duration"], 6) for a in raw.annotations} == {4.15}
    record_property("trials", len(ours))

