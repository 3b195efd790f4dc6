"""The PhysioNet motor-imagery reader on EDF+ runs written by its look-alike, read through MNE."""

from __future__ import annotations

import dataclasses
import os
import shutil

import edfio
import numpy as np
import pytest

from embedprobe.core.errors import DataError, UsageError
from embedprobe.datasets import registry
from embedprobe.datasets.physionet_mi import lookalike
from embedprobe.datasets.physionet_mi import reader as pm

from helpers.motor_imagery import band_power_accuracy

# Runs of every kind: baseline, executed and imagined left/right fist, imagined and executed
# both fists/feet.
SETTINGS = {"subjects": 2, "runs": [1, 3, 4, 6, 13], "trials_per_run": 6, "seed": 3}
# What T0/T1/T2 mean, by run, written out from PhysioNet's description (not from the reader).
MEANING = {1: {"T0": "rest"},
           3: {"T0": "rest", "T1": "left_hand", "T2": "right_hand"},
           4: {"T0": "rest", "T1": "left_hand", "T2": "right_hand"},
           6: {"T0": "rest", "T1": "hands", "T2": "feet"},
           13: {"T0": "rest", "T1": "hands", "T2": "feet"}}
UV = 1e-6


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    root = tmp_path_factory.mktemp("physionet_mi")
    files = lookalike.write_lookalike(root, SETTINGS)
    return root, files, lookalike.plan(SETTINGS)


def test_layout_names_and_manifest(demo):
    root, files, plans = demo
    assert [f.relative_to(root).as_posix() for f in files] == [
        f"S00{s}/S00{s}R{r:02d}.edf" for s in (1, 2) for r in (1, 3, 4, 6, 13)] + ["MANIFEST.tsv"]
    recordings = pm.find_recordings(root, runs=SETTINGS["runs"])
    assert [r.recording for r in recordings] == [p.path[5:-4] for p in plans]
    assert {(r.subject, r.session) for r in recordings} >= {("S001", "R04"), ("S002", "R13")}
    assert all(r.files == (r.edf,) for r in recordings)


def test_reader_recovers_every_cue_onset_and_class_by_run(demo):
    root, _, plans = demo
    recordings = {r.recording: r for r in pm.find_recordings(root, runs=SETTINGS["runs"])}
    for plan in plans:
        rec = recordings[f"S{plan.subject:03d}R{plan.run:02d}"]
        events = pm.read_events(rec)
        want = [(onset, duration, MEANING[plan.run][code])
                for onset, duration, code in plan.annotations]
        assert [(e.onset, e.duration, e.description) for e in events] == want
        if plan.run != 1:  # a rest period before each of the 6 cues
            assert [e.description == "rest" for e in events] == [True, False] * 6
    # The same code means different movements in different runs.
    for run, t1, t2 in ((3, "left_hand", "right_hand"), (4, "left_hand", "right_hand"),
                        (6, "hands", "feet"), (13, "hands", "feet")):
        plan = next(p for p in plans if (p.subject, p.run) == (1, run))
        named = {e.onset: e.description for e in pm.read_events(recordings[f"S001R{run:02d}"])}
        codes = {onset: code for onset, _, code in plan.annotations}
        assert {named[o] for o, c in codes.items() if c == "T1"} == {t1}
        assert {named[o] for o, c in codes.items() if c == "T2"} == {t2}


def test_header_and_signals_are_what_was_written(demo):
    root, _, plans = demo
    rec = next(r for r in pm.find_recordings(root, runs=[4]) if r.subject == "S002")
    plan = next(p for p in plans if (p.subject, p.run) == (2, 4))
    header = pm.read_header(rec)
    assert header.channels == pm.CHANNELS and len(header.channels) == 64
    assert header.sfreq == 160.0 and header.n_samples == plan.seconds * 160
    signals = pm.read_signals(rec, ["C3..", "C4..", "Iz.."])
    assert signals.data.shape == (3, plan.seconds * 160)
    written = lookalike.synthesize(plan, SETTINGS["seed"])[[8, 12, 63]]
    # EDF stores whole microvolts (+-8092 uV in +-8092 steps)
    np.testing.assert_allclose(signals.data, written * UV, atol=0.5 * UV + 1e-9)
    assert 3 * UV < signals.data.std() < 50 * UV


def test_same_settings_write_the_same_bytes(tmp_path):
    small = {"subjects": 1, "runs": [4], "trials_per_run": 3, "seed": 1}
    a = lookalike.write_lookalike(tmp_path / "a", small)
    b = lookalike.write_lookalike(tmp_path / "b", small)
    c = lookalike.write_lookalike(tmp_path / "c", small | {"seed": 2})
    assert a[0].read_bytes() == b[0].read_bytes() != c[0].read_bytes()
    assert (tmp_path / "a" / "MANIFEST.tsv").read_text() == (tmp_path / "b" / "MANIFEST.tsv"
                                                             ).read_text()


def test_default_runs_are_the_imagery_runs_and_missing_ones_are_named(demo):
    root, _, _ = demo
    recordings = pm.find_recordings(root)  # runs 4, 6, 8, 10, 12, 14
    assert pm.IMAGERY_RUNS == (4, 6, 8, 10, 12, 14)
    assert [r.recording for r in recordings if r.subject == "S001"] == [
        "S001R04", "S001R06", "S001R08", "S001R10", "S001R12", "S001R14"]
    missing = [r for r in recordings if r.problem]
    assert [r.recording for r in missing] == ["S001R08", "S001R10", "S001R12", "S001R14",
                                              "S002R08", "S002R10", "S002R12", "S002R14"]
    assert missing[0].problem == "S001R08.edf (run 8 of S001) is missing"
    assert missing[0].files == ()


def test_a_partial_download_runs_on_its_complete_runs_and_is_refused_when_strict(demo):
    """A partial download runs on its complete recordings; a strict run refuses it."""
    root, _, _ = demo
    config = {"datasets": {"mi": {"format": "physionet_mi", "path": root.name,
                                  "expected_recordings": 12}}}
    roots = {"data_root": str(root.parent)}
    complete = registry.require_data(config, roots, "mi")
    assert complete and not any(p.name == "S001R08.edf" for p in complete)
    with pytest.raises(DataError) as info:
        registry.require_data(config | {"strict": True}, roots, "mi")
    assert "S001R08.edf (run 8 of S001) is missing" in info.value.message
    assert info.value.fix


def _copy_run(demo, tmp_path, annotations):
    """S001R04 with its annotations replaced (signals unchanged)."""
    root, _, _ = demo
    folder = tmp_path / "S001"
    folder.mkdir()
    edf = edfio.read_edf(root / "S001" / "S001R04.edf")
    edf.set_annotations([edfio.EdfAnnotation(*a) for a in annotations])
    edf.write(folder / "S001R04.edf")
    return pm.find_recordings(tmp_path, runs=[4])[0]


def test_a_run_without_annotations_is_refused_by_name(demo, tmp_path):
    rec = _copy_run(demo, tmp_path, [])
    with pytest.raises(DataError) as info:
        pm.read_events(rec)
    assert str(rec.edf) in info.value.message and "no annotations" in info.value.message
    assert "PhysioNet" in info.value.fix


def test_an_unknown_event_code_is_refused_by_name(demo, tmp_path):
    rec = _copy_run(demo, tmp_path, [(0.0, 4.2, "T0"), (4.2, 4.1, "T1"), (8.3, 4.2, "T3")])
    with pytest.raises(DataError) as info:
        pm.read_events(rec)
    message = info.value.message
    assert str(rec.edf) in message and "'T3'" in message and "T1 left_hand" in message
    assert info.value.fix


def test_layout_errors(tmp_path, demo):
    with pytest.raises(DataError, match="does not exist"):
        pm.find_recordings(tmp_path / "nowhere")
    with pytest.raises(UsageError):
        pm.find_recordings(tmp_path, runs=[15])
    (tmp_path / "S001").mkdir()
    shutil.copy(demo[0] / "S001" / "S001R04.edf", tmp_path / "S001" / "S001R15.edf")
    with pytest.raises(DataError, match="R01-R14"):
        pm.find_recordings(tmp_path)
    with pytest.raises(UsageError, match="holds 1 EDF files") as info:
        lookalike.write_lookalike(tmp_path, {"subjects": 1, "runs": [4]})
    assert "empty folder" in info.value.fix


def test_the_class_signature_survives_amplitude_scaling(tmp_path):
    """The known signature (ERD over the contralateral motor cortex) is found across subjects."""
    root = tmp_path / "mi"
    lookalike.write_lookalike(root, {"subjects": 3, "runs": [4, 6], "trials_per_run": 15,
                                     "seed": 0})
    recordings = pm.find_recordings(root, runs=[4, 6])
    left_right = band_power_accuracy(pm, [r for r in recordings if r.run == 4],
                                      ["left_hand", "right_hand"])
    hands_feet = band_power_accuracy(pm, [r for r in recordings if r.run == 6],
                                      ["hands", "feet"])
    assert left_right > 0.75 and hands_feet > 0.75  # chance 0.5; 0.98 and 0.98 measured


@pytest.mark.skipif(not os.environ.get("EMBEDPROBE_TRY_MOABB"),
                    reason="cross-check against MOABB's loader: set EMBEDPROBE_TRY_MOABB=1 "
                           "in an environment with moabb installed")
def test_moabb_reads_the_same_trials_from_the_lookalike(demo, tmp_path, monkeypatch):
    """MOABB's PhysionetMI finds the same cues in the look-alike (its cache layout, offline)."""
    moabb_datasets = pytest.importorskip("moabb.datasets")
    import mne

    root, _, _ = demo
    cache = tmp_path / "MNE-eegbci-data" / "files" / "eegmmidb" / "1.0.0" / "S001"
    cache.mkdir(parents=True)
    runs = (4, 6, 8, 10, 12, 14)
    settings = {"subjects": 1, "runs": list(runs), "trials_per_run": 6, "seed": 3}
    lookalike.write_lookalike(tmp_path / "ours", settings)
    for run in runs:
        shutil.copy(tmp_path / "ours" / "S001" / f"S001R{run:02d}.edf", cache)
    monkeypatch.setenv("MNE_DATA", str(tmp_path))
    monkeypatch.setenv("MNE_DATASETS_EEGBCI_PATH", str(tmp_path))
    monkeypatch.setenv("MOABB_DOWNLOAD_PROVIDER", "upstream")
    sessions = moabb_datasets.PhysionetMI().get_data(subjects=[1])[1]["0"]
    ours = pm.find_recordings(tmp_path / "ours", runs=runs)
    for rec in ours:  # MOABB's runs "0".."5": hand runs, then feet runs
        raw = sessions[str([4, 8, 12, 6, 10, 14].index(rec.run))]
        theirs = [(round(o, 6), d) for o, d in zip(raw.annotations.onset,
                                                   raw.annotations.description, strict=True)
                  if d != "rest"]  # (MOABB loses the rest period at 0 s: no stim at sample 0)
        assert theirs == [(round(e.onset, 6), e.description) for e in pm.read_events(rec)
                          if e.description != "rest"]
    assert isinstance(raw, mne.io.BaseRaw)


def test_unknown_settings_are_refused():
    with pytest.raises(UsageError, match="unknown look-alike setting"):
        lookalike.plan({"subject": 3})
    plans = lookalike.plan({"subjects": 1, "runs": [2]})
    assert plans[0].annotations == ((0.0, 60.2, "T0"),) and plans[0].seconds == 61
    run = dataclasses.replace(plans[0], run=4)
    assert run.cues() == []


def test_the_references_six_subjects_are_left_out_unless_the_entry_keeps_them(demo, tmp_path):
    """The reference reads 103 of the 109 subjects (its dataio/bci.py SUBJECTS_PHYSIONET_MI:
    range(1, 110) without 88, 90, 92, 100, 104, 106); `exclude_subjects: []` keeps them."""
    root, _, _ = demo
    for subject in ("S001", "S088", "S106", "S107"):
        (tmp_path / subject).mkdir()
        shutil.copy(root / "S001" / "S001R04.edf", tmp_path / subject / f"{subject}R04.edf")
    reference = [s for s in range(1, 110) if s not in {88, 90, 92, 100, 104, 106}]
    assert [int(s[1:]) for s in pm.REFERENCE_EXCLUDED] == sorted(set(range(1, 110))
                                                                  - set(reference))
    assert [r.subject for r in pm.find_recordings(tmp_path, runs=[4])] == ["S001", "S107"]
    config = {"datasets": {"mi": {"format": "physionet_mi", "path": tmp_path.name,
                                  "runs": [4]}}}
    roots = {"data_root": str(tmp_path.parent)}
    found = registry.find_dataset_recordings(config, roots, "mi")
    assert [r.subject for r in found] == ["S001", "S107"]
    config["datasets"]["mi"]["exclude_subjects"] = []
    found = registry.find_dataset_recordings(config, roots, "mi")
    assert [r.subject for r in found] == ["S001", "S088", "S106", "S107"]
