"""The DREAMER reader on the one DREAMER.mat its look-alike writes, read as the release's users
read it (scipy.io.loadmat's struct arrays), and the windows, labels and folds made from it."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
import scipy.io
import scipy.signal

from embedprobe.core.errors import DataError, UsageError
from embedprobe.datasets.dreamer import lookalike
from embedprobe.datasets.dreamer import reader as dr
from embedprobe.tasks.registry import task_for

from helpers.lookalike import written_thrice
from helpers.loso import loso_scores

SETTINGS = {"subjects": 3, "clips": 4, "seconds": [9, 14], "baseline_seconds": 2, "seed": 5}
# The release's electrodes, written out from its documentation (not from the reader).
ELECTRODES = ["AF3", "F7", "F3", "FC5", "T7", "P7", "O1", "O2", "P8", "T8", "FC6", "F4", "F8",
              "AF4"]
UV = 1e-6


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    root = tmp_path_factory.mktemp("dreamer")
    return root, lookalike.write_lookalike(root, SETTINGS)


def test_layout_as_the_release_has_it_read_as_its_users_read_it(demo):
    root, files = demo
    assert [f.name for f in files] == ["DREAMER.mat", "MANIFEST.tsv"]
    top = scipy.io.loadmat(files[0])["DREAMER"][0, 0]
    assert top.dtype.names == ("Data", "EEG_SamplingRate", "ECG_SamplingRate", "EEG_Electrodes",
                               "noOfSubjects", "noOfVideoSequences", "Disclaimer", "Provider",
                               "Version", "Acknowledgement")
    assert [str(e[0]) for e in top["EEG_Electrodes"][0]] == ELECTRODES
    assert top["EEG_SamplingRate"][0, 0] == 128 and top["ECG_SamplingRate"][0, 0] == 256
    data = top["Data"][0]
    assert len(data) == 3 and top["noOfVideoSequences"][0, 0] == 4
    lengths = lookalike.clip_seconds(SETTINGS)
    reports = lookalike.scores(SETTINGS)
    for s, subject in enumerate(data):
        for c in range(4):
            stimulus = subject["EEG"][0, 0]["stimuli"][0, 0][c, 0]
            assert stimulus.shape == (lengths[c] * 128, 14)
            assert subject["EEG"][0, 0]["baseline"][0, 0][c, 0].shape == (2 * 128, 14)
            assert subject["ECG"][0, 0]["stimuli"][0, 0][c, 0].shape == (lengths[c] * 256, 2)
            # the headset's DC offset, in its 0.51 uV steps
            assert 3500 < stimulus.mean() < 5000
            steps = stimulus / lookalike.LSB_UV
            np.testing.assert_allclose(steps, np.round(steps), atol=1e-6)
        for scale, field in (("valence", "ScoreValence"), ("arousal", "ScoreArousal"),
                             ("dominance", "ScoreDominance")):
            assert subject[field][0, 0].ravel().tolist() == reports[scale][s].tolist()


@pytest.mark.parametrize("scale", ["valence", "arousal"])
def test_reader_labels_each_clip_by_its_report_cut_at_3(demo, scale):
    root, _ = demo
    recordings = dr.find_recordings(root, dreamer_scale=scale)
    assert [(r.recording, r.subject, r.session) for r in recordings][:5] == [
        ("S01_clip01", "S01", "01"), ("S01_clip02", "S01", "02"), ("S01_clip03", "S01", "03"),
        ("S01_clip04", "S01", "04"), ("S02_clip01", "S02", "01")]
    assert len(recordings) == 12 and all(r.files == (root / "DREAMER.mat",) for r in recordings)
    lengths = lookalike.clip_seconds(SETTINGS)
    reports = lookalike.scores(SETTINGS)[scale]
    for rec in recordings:
        s, c = int(rec.subject[1:]) - 1, int(rec.session) - 1
        want = f"high_{scale}" if reports[s, c] >= 3 else f"low_{scale}"
        assert [(e.onset, e.duration, e.description) for e in dr.read_events(rec)] == [
            (0.0, float(lengths[c]), want)]
        header = dr.read_header(rec)
        assert header.channels == tuple(ELECTRODES) and header.sfreq == 128.0
        assert header.n_samples == lengths[c] * 128


def test_windows_tile_each_clip_in_4_s_with_its_label_and_folds_leave_one_subject_out(demo):
    root, _ = demo
    task = task_for("bci_cognitive")
    entry = {"format": "dreamer", "dreamer_scale": "arousal", "epoch_seconds": 4}
    lengths = lookalike.clip_seconds(SETTINGS)
    reports = lookalike.scores(SETTINGS)["arousal"]
    rows = []
    for rec in dr.find_recordings(root, dreamer_scale="arousal"):
        units = task.units(dr, rec, entry, Counter())
        s, c = int(rec.subject[1:]) - 1, int(rec.session) - 1
        assert units.starts.tolist() == [k * 512 for k in range(lengths[c] // 4)]
        label = task.classes.index("high_arousal" if reports[s, c] >= 3 else "low_arousal")
        assert units.labels.tolist() == [label] * (lengths[c] // 4)
        rows += [rec.subject] * len(units.starts)
    import pandas as pd

    plan = task.fold_rule(pd.DataFrame({"subject": rows}), {"folds": 3, "fold_seed": 42}, entry)
    assert [[s for s, part in fold.items() if part == "test"] for fold in plan.parts] == [
        ["S01"], ["S02"], ["S03"]]
    assert all(sorted(fold.values()) == ["test", "train", "val"] for fold in plan.parts)


def test_signals_in_volts_are_what_the_file_holds(demo):
    root, files = demo
    rec = dr.find_recordings(root, dreamer_scale="valence")[6]  # S02, clip 3
    signals = dr.read_signals(rec, ["O2", "AF3"], span=(128, 640))
    stimulus = scipy.io.loadmat(files[0])["DREAMER"][0, 0]["Data"][0][1]["EEG"][0, 0][
        "stimuli"][0, 0][2, 0]
    # less the DC offset: each channel's mean over the clip
    want = (stimulus - stimulus.mean(axis=0))[128:640, [7, 0]].T * UV
    np.testing.assert_allclose(signals.data, want, rtol=1e-4, atol=1e-4 * UV)
    assert signals.data.dtype == np.float32 and signals.sfreq == 128.0


def test_same_settings_write_the_same_bytes(tmp_path):
    settings = {"subjects": 1, "clips": 2, "seconds": 8, "baseline_seconds": 2, "seed": 1}
    a, b, c = written_thrice(lookalike, tmp_path, settings, 2)
    assert [f.read_bytes() for f in a] == [f.read_bytes() for f in b]
    assert a[0].read_bytes() != c[0].read_bytes()


def test_valence_and_arousal_are_learnable_across_subjects_but_not_trivially(tmp_path):
    """Log band-power shares + logistic regression, fitted on the other subjects, find each
    scale's label above chance (0.5) and well below 1: the report is a noisy read of the
    felt state, the effect sizes vary between subjects."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    root = tmp_path / "dreamer"
    lookalike.write_lookalike(root, {"subjects": 4, "clips": 8, "seconds": 40,
                                     "baseline_seconds": 4, "seed": 0})
    bands = ((4, 8), (8, 13), (13, 20), (20, 30))
    means = {}
    for scale in ("valence", "arousal"):
        features, labels, groups = [], [], []
        for rec in dr.find_recordings(root, dreamer_scale=scale):
            data = dr.read_signals(rec, ELECTRODES).data.astype(float)
            (event,) = dr.read_events(rec)
            for k in range(int(event.duration // 4)):
                freqs, power = scipy.signal.welch(data[:, k * 512:(k + 1) * 512], 128.0,
                                                  nperseg=128)
                total = power[:, (freqs >= 4) & (freqs < 40)].sum(1)
                features.append(np.log(np.stack(
                    [power[:, (freqs >= lo) & (freqs < hi)].sum(1) / total
                     for lo, hi in bands], 1)).ravel())
                labels.append(event.description.startswith("high"))
                groups.append(rec.subject)
        model = make_pipeline(StandardScaler(), LogisticRegression(C=0.1, max_iter=1000))
        scores = loso_scores(model, np.array(features), np.array(labels), np.array(groups))
        means[scale] = float(np.mean(scores))
    # measured: valence 0.758 (0.53-0.90 by subject), arousal 0.845 (0.80-0.92)
    assert all(0.65 < m < 0.95 for m in means.values()), means


def test_an_entry_without_its_scale_is_refused(demo):
    root, _ = demo
    with pytest.raises(UsageError) as info:
        dr.find_recordings(root)
    assert "dreamer_scale" in info.value.message and "dreamer_scale: valence" in info.value.fix


@pytest.mark.parametrize("damage, message", [
    (lambda top: {"Dreamer": top}, "no variable DREAMER"),
    (lambda top: _spoil_clip(top), "EEG.stimuli{1} has shape (14, "),
    (lambda top: _spoil_score(top), "ScoreArousal is [0.0"),
])
def test_a_damaged_file_is_named_with_a_fix(demo, tmp_path, damage, message):
    _, files = demo
    top = scipy.io.loadmat(files[0])["DREAMER"]
    path = tmp_path / "DREAMER.mat"
    variables = damage(top)
    scipy.io.savemat(path, variables if isinstance(variables, dict) else {"DREAMER": top})
    with pytest.raises(DataError) as info:
        dr.find_recordings(tmp_path, dreamer_scale="arousal")
    assert message in info.value.message and str(path) in info.value.message
    assert "zenodo.org/records/546113" in info.value.fix


def _spoil_clip(top):
    clips = top[0, 0]["Data"][0][0]["EEG"][0, 0]["stimuli"][0, 0]
    clips[0, 0] = np.ascontiguousarray(clips[0, 0].T)  # channels x samples
    return top


def _spoil_score(top):
    top[0, 0]["Data"][0][0]["ScoreArousal"][0, 0][0, 0] = 0.0  # outside 1-5
    return top


def test_two_copies_are_refused_and_an_empty_folder_holds_none(demo, tmp_path):
    root, files = demo
    assert dr.find_recordings(tmp_path, dreamer_scale="valence") == []
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "DREAMER.mat").write_bytes(files[0].read_bytes())
    with pytest.raises(DataError) as info:
        dr.find_recordings(tmp_path, dreamer_scale="valence")
    assert "DREAMER.mat is there 2 times" in info.value.message
