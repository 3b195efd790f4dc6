"""The BNCI 2014-001 reader on .mat session files written by its look-alike, read with scipy."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest
import scipy.io

from embedprobe.core.errors import DataError, UsageError
from embedprobe.datasets import registry
from embedprobe.datasets.bnci2014_001 import lookalike
from embedprobe.datasets.bnci2014_001 import reader as bnci

from helpers.motor_imagery import band_power_accuracy

SETTINGS = {"subjects": 2, "sessions": ["T", "E"], "runs_per_session": 2, "trials_per_run": 8,
            "eog_runs": 3, "eog_run_seconds": [4, 2, 2], "seed": 5}
# y -> MOABB's class name, from the dataset description (class 1 left hand ... 4 tongue).
CLASS = {1: "left_hand", 2: "right_hand", 3: "feet", 4: "tongue"}
UV = 1e-6


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    root = tmp_path_factory.mktemp("bnci2014_001")
    files = lookalike.write_lookalike(root, SETTINGS)
    return root, files, lookalike.plan(SETTINGS)


def test_layout_the_way_moabb_reads_it(demo):
    root, files, _ = demo
    assert [f.name for f in files] == ["A01T.mat", "A01E.mat", "A02T.mat", "A02E.mat",
                                       "MANIFEST.tsv"]
    assert scipy.io.whosmat(files[0]) == [("data", (1, 5), "cell")]
    # Read the way MOABB's _convert_mi does: struct_as_record=False, squeeze_me=True.
    runs = scipy.io.loadmat(files[0], struct_as_record=False, squeeze_me=True)["data"]
    assert list(runs[0]._fieldnames) == ["X", "trial", "y", "fs", "classes", "artifacts",
                                         "gender", "age"]
    assert [len(r.trial) for r in runs] == [0, 0, 0, 8, 8]  # the EOG calibration first
    assert runs[3].X.shape[1] == 25 and runs[3].X.dtype == np.float64 and runs[3].fs == 250
    assert runs[3].trial.dtype.kind == "i"  # MOABB indexes its stim channel with it
    assert list(runs[3].classes) == ["left hand", "right hand", "feet", "tongue"]
    assert runs[0].X.shape == (4 * 250, 25)


def test_reader_recovers_every_trial_onset_and_class(demo):
    root, _, plans = demo
    recordings = bnci.find_recordings(root)
    assert [r.recording for r in recordings] == [
        f"A0{s}{t}_run{k}" for s in (1, 2) for t in "TE" for k in (4, 5)]
    assert [(r.subject, r.session) for r in recordings[:3]] == [
        ("A01", "T_run4"), ("A01", "T_run5"), ("A01", "E_run4")]
    by_id = {r.recording: r for r in recordings}
    for plan in plans:
        for k, run in enumerate(plan.runs, start=1):
            if not len(run.trial):
                assert f"{plan.name[:4]}_run{k}" not in by_id  # calibration: no recording
                continue
            events = bnci.read_events(by_id[f"{plan.name[:4]}_run{k}"])
            want = [((start - 1) / 250 + 2.0, 4.0, CLASS[code])
                    for start, code in zip(run.trial.tolist(), run.y.tolist(), strict=True)]
            assert [(e.onset, e.duration, e.description) for e in events] == want
            assert sorted({e.description for e in events}) == sorted(CLASS.values())


def test_header_and_signals_are_what_was_written(demo):
    root, _, plans = demo
    rec = bnci.find_recordings(root)[-1]  # A02E_run5
    plan = plans[-1]
    header = bnci.read_header(rec)
    assert header.channels == bnci.CHANNELS and header.sfreq == 250.0
    assert header.n_samples == plan.runs[4].n_samples
    signals = bnci.read_signals(rec, ["C3", "C4", "EOG1"])
    written = lookalike.synthesize(plan, plan.runs[4], SETTINGS["seed"])[:, [7, 11, 22]].T
    np.testing.assert_allclose(signals.data, written * UV, rtol=1e-6, atol=1e-12)
    assert 3 * UV < signals.data[:2].std() < 50 * UV
    with pytest.raises(DataError, match="no channel C7"):
        bnci.read_signals(rec, ["C7"])


def test_same_settings_write_the_same_bytes(tmp_path):
    small = SETTINGS | {"subjects": 1, "sessions": ["T"], "runs_per_session": 1}
    a = lookalike.write_lookalike(tmp_path / "a", small)
    b = lookalike.write_lookalike(tmp_path / "b", small)
    c = lookalike.write_lookalike(tmp_path / "c", small | {"seed": 6})
    assert a[0].read_bytes() == b[0].read_bytes() != c[0].read_bytes()
    assert a[0].read_bytes()[:19] == b"MATLAB 5.0 MAT-file"


def _rewrite(source, target, change):
    """Copy a session file with its runs changed by `change(list of run dicts)`."""
    runs = scipy.io.loadmat(source, simplify_cells=True)["data"]
    change(runs)
    cell = np.empty((1, len(runs)), dtype=object)
    for k, run in enumerate(runs):
        cell[0, k] = run
    target.parent.mkdir(parents=True, exist_ok=True)
    scipy.io.savemat(target, {"data": cell})
    return target


def test_a_missing_session_is_named_and_refused(demo, tmp_path):
    root, _, _ = demo
    copy = tmp_path / "bnci"
    shutil.copytree(root, copy)
    (copy / "A02E.mat").unlink()
    recordings = bnci.find_recordings(copy)
    missing = [r for r in recordings if r.problem]
    assert [(r.recording, r.problem) for r in missing] == [
        ("A02E", "A02E.mat (session E of A02) is missing")]
    assert missing[0].files == ()
    # a strict run refuses the partial dataset (a plain one runs on the complete sessions)
    config = {"datasets": {"bnci": {"format": "bnci2014_001", "path": "bnci",
                                    "expected_recordings": 8}}, "strict": True}
    with pytest.raises(DataError) as info:
        registry.require_data(config, {"data_root": str(tmp_path)}, "bnci")
    assert "A02E.mat (session E of A02) is missing" in info.value.message and info.value.fix
    assert [r.recording for r in bnci.find_recordings(copy, sessions=["T"])] == [
        "A01T_run4", "A01T_run5", "A02T_run4", "A02T_run5"]


def test_a_run_without_trials_after_the_calibration_is_refused(demo, tmp_path):
    root, _, _ = demo

    def empty_run_5(runs):
        for field in ("trial", "y", "artifacts"):
            runs[4][field] = np.zeros((0, 0))

    path = _rewrite(root / "A01T.mat", tmp_path / "A01T.mat", empty_run_5)
    with pytest.raises(DataError) as info:
        bnci.find_recordings(tmp_path)
    assert str(path) in info.value.message and "run 5 holds no trials" in info.value.message
    assert "download" in info.value.fix


def test_a_file_without_the_session_structure_is_refused(tmp_path):
    scipy.io.savemat(tmp_path / "A01T.mat", {"X": np.zeros((10, 25))})
    with pytest.raises(DataError, match=r"A01T.mat: no variable `data`") as info:
        bnci.find_recordings(tmp_path)
    assert info.value.fix
    (tmp_path / "A01T.mat").write_bytes(b"not a mat file")
    with pytest.raises(DataError, match="not a readable .mat file"):
        bnci.find_recordings(tmp_path)


def test_a_run_with_the_wrong_channel_count_is_refused(demo, tmp_path):
    root, _, _ = demo

    def drop_eog(runs):
        runs[3]["X"] = runs[3]["X"][:, :22]

    _rewrite(root / "A01T.mat", tmp_path / "A01T.mat", drop_eog)
    with pytest.raises(DataError, match=r"run 4 X has shape \(\d+, 22\)"):
        bnci.find_recordings(tmp_path)


@pytest.mark.parametrize("change, message", [
    (lambda runs: runs[3]["y"].__setitem__(2, 7), "unknown event code y=7"),
    (lambda runs: runs[3].__setitem__("classes", np.array(
        ["left hand", "right hand", "both hands", "tongue"], dtype=object)), "'both hands'"),
])
def test_an_unknown_event_code_is_refused_by_name(demo, tmp_path, change, message):
    root, _, _ = demo

    def set_code(runs):
        runs[3]["y"] = np.array([1, 2, 3, 3, 4, 4, 1, 2], np.uint8)
        change(runs)

    path = _rewrite(root / "A01T.mat", tmp_path / "A01T.mat", set_code)
    rec = bnci.find_recordings(tmp_path)[0]
    with pytest.raises(DataError) as info:
        bnci.read_events(rec)
    assert str(path) in info.value.message and message in info.value.message
    assert info.value.fix


def test_layout_and_setting_errors(tmp_path):
    with pytest.raises(DataError, match="does not exist"):
        bnci.find_recordings(tmp_path / "nowhere")
    with pytest.raises(UsageError):
        bnci.find_recordings(tmp_path, sessions=["X"])
    with pytest.raises(UsageError, match="unknown look-alike setting"):
        lookalike.plan({"runs": 2})
    with pytest.raises(UsageError, match="eog_run_seconds"):
        lookalike.plan({"eog_runs": 1})


def test_the_class_signature_survives_amplitude_scaling(tmp_path):
    """The known signature (ERD where each imagined movement acts) is found across subjects."""
    root = tmp_path / "bnci"
    lookalike.write_lookalike(root, {"subjects": 3, "sessions": ["T"], "runs_per_session": 1,
                                     "trials_per_run": 24, "eog_run_seconds": [2, 1, 1],
                                     "seed": 0})
    recordings = bnci.find_recordings(root, sessions=["T"])
    four = band_power_accuracy(bnci, recordings, list(CLASS.values()))
    left_right = band_power_accuracy(bnci, recordings, ["left_hand", "right_hand"])
    assert four > 0.5 and left_right > 0.75  # chance 0.25 and 0.5; 0.93 and 0.94 measured


@pytest.mark.skipif(not os.environ.get("EMBEDPROBE_TRY_MOABB"),
                    reason="cross-check against MOABB's loader: set EMBEDPROBE_TRY_MOABB=1 "
                           "in an environment with moabb installed")
def test_moabb_reads_the_same_trials_from_the_lookalike(demo, tmp_path, monkeypatch):
    """MOABB's BNCI2014_001 finds the same trials in the look-alike (its cache layout)."""
    moabb_datasets = pytest.importorskip("moabb.datasets")
    import mne

    root, _, _ = demo
    cache = tmp_path / "MNE-bnci-data" / "~bci" / "database" / "001-2014"
    cache.mkdir(parents=True)
    for name in ("A01T.mat", "A01E.mat"):
        shutil.copy(root / name, cache)
    monkeypatch.setenv("MNE_DATA", str(tmp_path))
    monkeypatch.setenv("MNE_DATASETS_BNCI_PATH", str(tmp_path))
    monkeypatch.setenv("MOABB_DOWNLOAD_PROVIDER", "upstream")
    sessions = moabb_datasets.BNCI2014_001().get_data(subjects=[1])[1]
    ours = [r for r in bnci.find_recordings(root) if r.subject == "A01"]
    theirs = [sessions[f"{k}{name}"][str(run)] for k, name in enumerate(("train", "test"))
              for run in (0, 1)]
    for rec, raw in zip(ours, theirs, strict=True):
        found = mne.find_events(raw, stim_channel="STI", verbose=False)
        names = {v: k for k, v in BNCI_EVENT_ID.items()}
        assert [(s / 250 + 2.0, names[c]) for s, _, c in found] == [
            (e.onset, e.description) for e in bnci.read_events(rec)]


BNCI_EVENT_ID = {"left_hand": 1, "right_hand": 2, "feet": 3, "tongue": 4}
