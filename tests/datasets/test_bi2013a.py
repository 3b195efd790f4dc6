"""The Brain Invaders 2013a reader on the unzipped layout its look-alike writes, read with scipy
(and MNE, the way MOABB's loader finds the flashes)."""

from __future__ import annotations

import os
import shutil
import time
import zipfile

import numpy as np
import pytest
import scipy.io

from embedprobe.core.errors import DataError, UsageError
from embedprobe.datasets import registry
from embedprobe.datasets.bi2013a import lookalike
from embedprobe.datasets.bi2013a import reader as bi

from helpers.lookalike import written_thrice
from helpers.moabb import offline_moabb

SETTINGS = {"subjects": 2, "sessions": 2, "training_repetitions": 6, "online_repetitions": 2,
            "seed": 1}


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    root = tmp_path_factory.mktemp("bi2013a")
    files = lookalike.write_lookalike(root, SETTINGS)
    return root, files, {p.path: p for p in lookalike.plan(SETTINGS)}


def test_layout_the_way_moabb_reads_it(demo):
    import yaml

    root, files, _ = demo
    names = [f.relative_to(root).as_posix() for f in files]
    assert names[:9] == ["subject_01/meta.yml"] + [
        f"subject_01/Session{s}/run_{n}.mat" for s in (1, 2) for n in (1, 2, 3, 4)]
    assert len(names) == 2 * 9 + 1 and names[-1] == "MANIFEST.tsv"
    meta = yaml.safe_load((root / "subject_01" / "meta.yml").read_text())
    chosen = [r["filename"] for r in meta["runs"]
              if r["experimental_condition"] == "nonadaptive" and r["type"] == "training"]
    assert chosen == ["run_3.gdf"]
    mat = root / "subject_01" / "Session2" / chosen[0].replace(".gdf", ".mat")
    assert scipy.io.whosmat(mat)[0][0] == "data"
    X = scipy.io.loadmat(mat)["data"].T  # MOABB: 16 EEG rows then STI 014, as volts
    assert X.shape[0] == 17 and X.dtype == np.float64
    assert set(np.unique(X[16])) == {0, 33285, 33286}
    assert 1e-6 < X[:16].std() < 5e-5


def test_mne_finds_the_events_moabb_finds(demo):
    mne = pytest.importorskip("mne")
    root, _, _ = demo
    rec = bi.find_recordings(root)[0]
    X = scipy.io.loadmat(rec.mat)["data"].T
    info = mne.create_info(list(bi.CHANNELS) + ["STI 014"], 512, ["eeg"] * 16 + ["stim"])
    events = mne.find_events(mne.io.RawArray(X, info, verbose=False), shortest_event=0,
                             verbose=False)
    names = {33285: "Target", 33286: "NonTarget"}  # MOABB's event_id
    assert [(s / 512, names[c]) for s, _, c in events if c in names] == [
        (e.onset, e.description) for e in bi.read_events(rec)]


def test_reader_recovers_every_flash_onset_and_class(demo):
    root, _, plans = demo
    recordings = bi.find_recordings(root)
    assert [(r.recording, r.subject, r.session) for r in recordings] == [
        (f"subject_0{s}_Session{k}_run_3", f"subject_0{s}", f"Session{k}_nonadaptive_training")
        for s in (1, 2) for k in (1, 2)]
    for rec in recordings:
        plan = plans[rec.mat.relative_to(root).as_posix()]
        want = [(k / 512, 1.0, "Target" if t else "NonTarget")
                for k, t in zip(plan.onsets.tolist(), plan.target.tolist(), strict=True)]
        events = bi.read_events(rec)
        assert [(e.onset, e.duration, e.description) for e in events] == want
        targets = sum(e.description == "Target" for e in events)
        assert len(events) == 6 * 12 and targets * 5 == len(events) - targets  # 1:5
    every = bi.find_recordings(root, run_types=list(bi.RUN_TYPES))
    assert len(every) == 16 and {r.run_type for r in every} == set(bi.RUN_TYPES)
    online = bi.find_recordings(root, run_types=["adaptive_online"])[0]
    assert len(bi.read_events(online)) == 2 * 12


def test_header_and_signals_are_what_was_written(demo):
    root, _, plans = demo
    rec = bi.find_recordings(root)[-1]
    plan = plans[rec.mat.relative_to(root).as_posix()]
    header = bi.read_header(rec)
    assert header.channels == bi.CHANNELS and header.sfreq == 512.0
    assert header.n_samples == plan.n_samples
    signals = bi.read_signals(rec, ["Pz", "Oz"])
    written = lookalike.synthesize(plan, SETTINGS["seed"])[:, [10, 14]].T
    np.testing.assert_allclose(signals.data, written, rtol=1e-6, atol=1e-12)
    with pytest.raises(DataError, match="no channel C3"):
        bi.read_signals(rec, ["C3"])


def test_same_settings_write_the_same_bytes(tmp_path):
    a, b, c = written_thrice(lookalike, tmp_path, SETTINGS | {"subjects": 1, "sessions": 1}, 2)
    assert [f.read_bytes() for f in a] == [f.read_bytes() for f in b]
    assert a[1].read_bytes() != c[1].read_bytes()


def test_the_p300_is_there(demo):
    """Target flashes carry a centro-parietal positivity 250-500 ms after the flash."""
    root, _, _ = demo
    for rec in bi.find_recordings(root):
        pz = bi.read_signals(rec, ["Pz"]).data[0].astype(float) * 1e6
        mean = {}
        for name in ("Target", "NonTarget"):
            starts = [round(e.onset * 512) for e in bi.read_events(rec) if e.description == name]
            mean[name] = np.mean([pz[s + 128:s + 256].mean() - pz[s:s + 25].mean()
                                  for s in starts])
        assert mean["Target"] - mean["NonTarget"] > 2.0, rec.recording  # microvolts


def _copy(root, tmp_path):
    copy = tmp_path / "bi"
    shutil.copytree(root, copy)
    return copy


@pytest.mark.parametrize("change, message", [
    (lambda d: d[:, :16], "the 17th, the stimulation column with the trial markers"),
    (lambda d: np.c_[d[:, :16], 0 * d[:, 16]], "holds no trial marker"),
    (lambda d: d.T, r"shape \(17, \d+\)"),
])
def test_a_run_without_its_trial_markers_is_refused_by_name(demo, tmp_path, change, message):
    root, _, _ = demo
    copy = _copy(root, tmp_path)
    path = copy / "subject_01" / "Session1" / "run_3.mat"
    scipy.io.savemat(path, {"data": change(scipy.io.loadmat(path)["data"])})
    rec = bi.find_recordings(copy)[0]
    with pytest.raises(DataError, match=message) as info:
        bi.read_events(rec)
    assert str(path) in info.value.message and "unzip" in info.value.fix
    scipy.io.savemat(path, {"samples": np.zeros((4, 17))})
    with pytest.raises(DataError, match="no variable `data`.*it holds samples"):
        bi.read_header(rec)


def test_a_missing_run_or_meta_is_named(demo, tmp_path):
    root, _, _ = demo
    copy = _copy(root, tmp_path)
    (copy / "subject_02" / "Session2" / "run_3.mat").unlink()
    missing = [r for r in bi.find_recordings(copy) if r.problem]
    assert [(r.recording, r.problem) for r in missing] == [
        ("subject_02_Session2_run_3",
         "Session2/run_3.mat (subject_02, nonadaptive training) is missing")]
    assert missing[0].files == ()
    # a strict run refuses the partial dataset (a plain one runs on the complete runs)
    config = {"datasets": {"bi": {"format": "bi2013a", "path": "bi", "expected_recordings": 4}},
              "strict": True}
    with pytest.raises(DataError) as info:
        registry.require_data(config, {"data_root": str(tmp_path)}, "bi")
    assert "run_3.mat (subject_02, nonadaptive training) is missing" in info.value.message
    (copy / "subject_01" / "meta.yml").unlink()
    with pytest.raises(DataError, match="subject_01: no meta.yml") as info:
        bi.find_recordings(copy)
    assert info.value.fix
    (copy / "subject_01" / "meta.yml").write_text("runs: []\n")
    with pytest.raises(DataError, match="no `runs` list"):
        bi.find_recordings(copy)


def test_layout_and_setting_errors(tmp_path):
    with pytest.raises(DataError, match="does not exist"):
        bi.find_recordings(tmp_path / "nowhere")
    with pytest.raises(UsageError, match="run_types"):
        bi.find_recordings(tmp_path, run_types=["training"])
    with pytest.raises(UsageError, match="unknown look-alike setting"):
        lookalike.plan({"runs": 2})
    with pytest.raises(UsageError, match="sessions=9"):
        lookalike.plan({"sessions": 9})


@pytest.mark.skipif(not os.environ.get("EMBEDPROBE_TRY_MOABB"),
                    reason="cross-check against MOABB's loader: set EMBEDPROBE_TRY_MOABB=1 "
                           "in an environment with moabb installed")
def test_moabb_reads_the_same_flashes_from_the_lookalike(tmp_path, monkeypatch,
                                                         record_property):
    """MOABB's BI2013a reads the look-alike offline from its download cache and finds the
    reader's flashes: the same onsets and Target / NonTarget classes (its event_id
    {"Target": 33285, "NonTarget": 33286}) in every session's non-adaptive training run.

    MOABB reads no unzipped folder on its own: for subjects 1-7 data_path asks its downloader
    for all eight zips <MNE_DATASETS_BRAININVADERS2013_PATH>/MNE-braininvaders2013-data/
    zenodo/2669187/subject01_session01.zip ... _session08.zip (Zenodo's record/2669187/files/
    URLs), unzips each one whose subject_01/SessionN folder is missing, and copies the zip's
    top folder (subject01_sessionNN/, holding meta.yml and SessionN/) into subject_01/. So
    the test zips the look-alike's subject that way (eight sessions) and lets MOABB unzip it.
    Measured with moabb 1.7.2: 8 sessions x 24 flashes (4 Target), identical."""
    moabb_datasets = pytest.importorskip("moabb.datasets")
    from moabb.datasets.preprocessing import RawToEvents

    root = tmp_path / "lookalike"
    lookalike.write_lookalike(root, {"subjects": 1, "sessions": 8, "training_repetitions": 2,
                                     "online_repetitions": 1, "seed": 1})
    cache = tmp_path / "mne" / "MNE-braininvaders2013-data" / "zenodo" / "2669187"
    cache.mkdir(parents=True)
    subject = root / "subject_01"
    for k in range(1, 9):
        top = f"subject01_session{k:02d}"
        with zipfile.ZipFile(cache / f"{top}.zip", "w") as zipped:
            zipped.write(subject / "meta.yml", f"{top}/meta.yml")
            for mat in sorted((subject / f"Session{k}").iterdir()):
                zipped.write(mat, f"{top}/Session{k}/{mat.name}")
    offline_moabb(monkeypatch, tmp_path / "mne", "BRAININVADERS2013")
    dataset = moabb_datasets.BI2013a()
    start = time.perf_counter()
    sessions = dataset.get_data(subjects=[1])[1]
    record_property("get_data_s", round(time.perf_counter() - start, 3))
    assert dataset.event_id == {"Target": 33285, "NonTarget": 33286}
    names = {v: k for k, v in dataset.event_id.items()}
    recordings = bi.find_recordings(root)
    assert sorted(sessions) == [str(k) for k in range(8)] and len(recordings) == 8
    counts = []
    for rec in recordings:  # Session1..8, each run_3 (MOABB: session k - 1, run "2")
        k = int(rec.session.split("_")[0].removeprefix("Session"))
        assert list(sessions[str(k - 1)]) == ["2"]
        raw = sessions[str(k - 1)]["2"]
        assert raw.info["sfreq"] == 512
        ours = [(round(e.onset * 512), e.description) for e in bi.read_events(rec)]
        found = RawToEvents(dataset.event_id, dataset.interval).transform(raw)
        assert [(s, names[c]) for s, _, c in found] == ours
        assert [(round(a["onset"] * 512), a["description"]) for a in raw.annotations] == ours
        counts.append((len(ours), sum(d == "Target" for _, d in ours)))
    assert counts == [(24, 4)] * 8
    record_property("flashes_per_session", counts)

