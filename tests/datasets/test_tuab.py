"""The TUAB reader on look-alike files in the v3.0.x layout (edf/<split>/<class>/01_tcp_ar/)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import mne
import numpy as np
import pytest
import scipy.signal

from embedprobe.core.errors import DataError, UsageError
from embedprobe.datasets.edf import read_edf_header
from embedprobe.datasets.tuab import lookalike
from embedprobe.datasets.tuab import reader as tuab

from helpers import lookalike as helper
from helpers.seizure import check_channel_map

SETTINGS = {"train_normal": 4, "train_abnormal": 4, "eval_normal": 2, "eval_abnormal": 2,
            "minutes": 2, "seed": 0}
SECONDS = 120
UV_STEP_V = 6400 / 65535 * 1e-6  # quantization step of the +-3200 uV EEG range, in volts
_PATH = re.compile(r"^edf/(train|eval)/(normal|abnormal)/01_tcp_ar/[a-z]{8}_s\d{3}_t\d{3}\.edf$")


demo = helper.demo_fixture(lookalike, SETTINGS, "tuab")
copy = helper.copy_fixture("tuab")


def a_file(root, split="train", label="normal"):
    return sorted((root / "edf" / split / label / "01_tcp_ar").glob("*.edf"))[0]


def test_layout_is_the_corpus(demo):
    root, files, plans = demo
    relative = [f.relative_to(root).as_posix() for f in files[:-1]]
    assert all(_PATH.match(r) for r in relative) and len(relative) == 12
    assert sorted(relative) == sorted(p.relative for p in plans)
    for split in tuab.SPLITS:
        for label in tuab.CLASSES:
            found = list((root / "edf" / split / label / "01_tcp_ar").glob("*.edf"))
            assert len(found) == SETTINGS[f"{split}_{label}"]


def test_headers_are_tuhs(demo):
    root, files, plans = demo
    by_name = {p.recording: p for p in plans}
    rates = []
    for path in files[:-1]:
        plan = by_name[path.stem]
        header = read_edf_header(path)
        assert header.labels == (*tuab.EEG_CHANNELS, "EEG EKG1-REF")
        assert header.labels[:3] == ("EEG FP1-REF", "EEG FP2-REF", "EEG F3-REF")
        assert header.record_seconds == 1 and header.n_records == SECONDS
        assert {s.unit for s in header.signals} == {"uV"}
        assert header.start == plan.start
        patient = path.read_bytes()[8:88].decode("ascii").strip()
        assert re.fullmatch(rf"{plan.subject} [FM] 01-JAN-\d{{4}} {plan.subject} Age:\d+",
                            patient)
        rates.append(header.sfreq("EEG FP1-REF"))
    assert sorted(set(rates)) == [250.0, 256.0] and rates.count(250.0) == 1  # rates vary


def test_every_recording_its_class_and_split_are_recovered(demo):
    root, _, plans = demo
    recordings = tuab.find_recordings(root)
    assert [r.recording for r in recordings] == [p.recording for p in plans]
    for rec, plan in zip(recordings, plans, strict=True):
        assert (rec.subject, rec.patient, rec.session) == (
            plan.recording, plan.subject, f"{plan.split}/{plan.session_name}")
        assert re.fullmatch(r"(train|eval)/s\d{3}_t\d{3}", rec.session)
        assert tuab.split_of(rec) == plan.split and tuab.recording_label(rec) == plan.label
        assert rec.files == (root / plan.relative,) == (rec.signal_path,)
        assert tuab.read_events(rec) == []
        header = tuab.read_header(rec)
        assert header.channels == (*tuab.EEG_CHANNELS, "EEG EKG1-REF")
        assert (header.sfreq, header.n_samples) == (plan.sfreq, SECONDS * plan.sfreq)


def test_subjects_as_the_corpus_has_them(demo):
    """A subject with two sessions and one with both classes in train (as the corpus has);
    eval subjects only in eval; a session's file other than t000."""
    recordings = tuab.find_recordings(demo[0], subject_id="patient")
    by_subject = {}
    for rec in recordings:
        assert rec.subject == rec.patient
        by_subject.setdefault(rec.subject, []).append(rec)
    assert len(by_subject) == 10
    both = [s for s, recs in by_subject.items() if {r.label for r in recs} == set(tuab.CLASSES)]
    assert len(both) == 1 and {r.split for r in by_subject[both[0]]} == {"train"}
    assert max(len(recs) for recs in by_subject.values()) == 2
    assert all(len({r.split for r in recs}) == 1 for recs in by_subject.values())
    assert sum(r.session.endswith("_t001") for r in recordings) == 1


def test_each_file_is_its_own_subject_as_the_references_reader_has_it(demo):
    """The reference's dataio/tuab.py takes the path part after the montage folder as the
    subject (v2's patient folder); in v3.0.1's flat layout that part is the file: a patient's
    two files are two subjects. subject_id: patient groups them."""
    root, _, plans = demo
    by_file = tuab.find_recordings(root)
    assert [r.subject for r in by_file] == [Path(p.relative).stem for p in plans]
    assert len({r.subject for r in by_file}) == len(plans)
    two = [p for p in {r.patient for r in by_file}
           if sum(r.patient == p for r in by_file) == 2]
    # the patient with two sessions and the one with a file of each class: two subjects each
    # by file, one by patient
    assert len(two) == 2
    by_patient = tuab.find_recordings(root, subject_id="patient")
    assert len({r.subject for r in by_patient}) == len(plans) - 2
    assert all(sum(r.subject == p for r in by_patient) == 2 for p in two)


def test_the_official_folds_validate_on_the_references_draw_over_files(demo):
    """The reference's TUAB adapter (`adapters/tuab.py` `_train_val_subject_split`): the train
    subjects (here files) sorted, labelled abnormal when any recording is, and
    `registry/splits.make_subject_kfold(5, labels, seed=42)`: StratifiedKFold(5, shuffle=True,
    random_state=42) where each class has 5 subjects, else KFold with the same arguments (this
    look-alike's 4 + 4 train files); fold k validates on split k, and the eval files test every
    fold. Computed here with scikit-learn."""
    from sklearn.model_selection import KFold, StratifiedKFold

    from embedprobe.probing.folds import recording_level_plan

    recordings = tuab.find_recordings(demo[0])
    table = helper.fold_table(recordings, [tuab.CLASSES.index(r.label) for r in recordings])
    plan = recording_level_plan(table, {"folds": 5, "fold_seed": 42}, {"split": "official"})
    train = sorted(r.subject for r in recordings if r.split == "train")
    labels = [int(any(r.label == "abnormal" for r in recordings if r.subject == s))
              for s in train]
    kind = StratifiedKFold if min(labels.count(0), labels.count(1)) >= 5 else KFold
    splits = kind(5, shuffle=True, random_state=42).split(train, labels)
    for k, (_, val) in enumerate(splits):
        assert plan.members(k, "val") == sorted(train[i] for i in val)
        assert plan.members(k, "test") == sorted(r.subject for r in recordings
                                                 if r.split == "eval")


def test_an_unknown_subject_id_is_refused_with_the_choices(demo):
    from embedprobe.core.errors import UsageError

    with pytest.raises(UsageError, match="subject_id: recording is not one of file, patient"):
        tuab.find_recordings(demo[0], subject_id="recording")


def test_signals_are_volts_of_the_written_electrodes(demo):
    root, _, plans = demo
    rec = tuab.find_recordings(root)[0]
    plan = plans[0]
    wanted = ["EEG FP1-REF", "EEG T3-REF", "EEG A2-REF"]
    signals = tuab.read_signals(rec, wanted)
    assert signals.sfreq == plan.sfreq and signals.data.shape == (3, SECONDS * plan.sfreq)
    written = {s.label: s.data for s in lookalike.signals(plan, SETTINGS["seed"])}
    for row, name in enumerate(wanted):
        np.testing.assert_allclose(signals.data[row], written[name] * 1e-6, atol=UV_STEP_V)
    raw = mne.io.read_raw_edf(rec.edf, include=["EEG T3-REF"], verbose="error")
    np.testing.assert_allclose(signals.data[1], raw.get_data()[0], atol=1e-12)
    assert 5e-6 < np.sqrt(np.mean(signals.data[1] ** 2)) < 2e-4  # tens of microvolts


def band_ratio(signals) -> float:
    """Delta (1-4 Hz) over alpha (7-13 Hz) power, averaged over the channels."""
    freqs, power = scipy.signal.welch(signals.data, signals.sfreq, nperseg=int(4 * signals.sfreq))
    delta = power[:, (freqs >= 1) & (freqs < 4)].sum(1)
    alpha = power[:, (freqs >= 7) & (freqs < 13)].sum(1)
    return float(np.mean(np.log(delta / alpha)))


def test_abnormal_recordings_carry_slowing_with_spread(demo):
    """Generalised slowing separates the classes in every recording's spectrum, by amounts
    that vary between subjects; lengths and file order do not show the class."""
    recordings = tuab.find_recordings(demo[0])
    ratios = {"normal": [], "abnormal": []}
    for rec in recordings:
        ratios[tuab.recording_label(rec)].append(band_ratio(tuab.read_signals(
            rec, tuab.EEG_CHANNELS[:16])))
    assert min(ratios["abnormal"]) > max(ratios["normal"]) + 0.5
    assert np.std(ratios["abnormal"]) > 0.1 and np.std(ratios["normal"]) > 0.1
    headers = [tuab.read_header(r) for r in recordings]
    assert len({h.n_samples / h.sfreq for h in headers}) == 1
    labels = [tuab.recording_label(r) for r in recordings]
    changes = sum(a != b for a, b in zip(labels[:-1], labels[1:], strict=True))
    assert changes >= 3  # sorted by id, the classes interleave


def test_the_channel_map_fits_every_family(demo):
    plans = check_channel_map("tuab", helper.first_channels(tuab, demo[0]))
    assert len(plans["biot"].sources) == 16 and len(plans["eegdino"].model_names) == 19
    assert "T7" in plans["eegpt"].model_names and "T3" in plans["labram"].model_names


def test_the_same_seed_writes_the_same_bytes(tmp_path):
    small = {"train_normal": 1, "train_abnormal": 1, "eval_normal": 1, "eval_abnormal": 1,
             "minutes": 2}
    helper.check_seed_decides_the_bytes(lookalike, tmp_path, small)


def test_settings_are_checked(tmp_path):
    with pytest.raises(UsageError, match="TUAB: unknown look-alike setting"):
        lookalike.plan({"hours": 1})
    with pytest.raises(UsageError, match="eval_abnormal=0"):
        lookalike.plan({"eval_abnormal": 0})
    with pytest.raises(UsageError, match="minutes=1"):
        lookalike.plan({"minutes": 1})


def test_a_foreign_edf_is_not_mixed_in(demo, copy):
    shutil.copy(a_file(copy), copy / "edf/train/normal/01_tcp_ar/aaaaaaaa_s001_t000.edf")
    with pytest.raises(UsageError, match="this look-alike would not write"):
        lookalike.write_lookalike(copy, SETTINGS)


# --- bad inputs ------------------------------------------------------------------------------


@pytest.mark.parametrize("place, says", [
    ("edf/train/unknown/01_tcp_ar/aaaaamye_s001_t000.edf", "in unknown/, not a class folder"),
    ("edf/train/aaaaamye_s001_t000.edf", "directly in edf/train/"),
    ("edf/aaaaamye_s001_t000.edf", "not in a split folder"),
    ("edf/dev/normal/01_tcp_ar/aaaaamye_s001_t000.edf", "not in a split folder"),
    ("edf/train/normal/02_tcp_le/aaaaamye_s001_t000.edf", "not in edf/train/normal/01_tcp_ar/"),
    ("edf/train/normal/aaaaamye_s001_t000.edf", "not in edf/train/normal/01_tcp_ar/"),
])
def test_a_recording_outside_the_layout_is_refused(copy, place, says):
    error = helper.check_refused_at(tuab, copy, a_file(copy), copy / place, says)
    assert "edf/{train,eval}/{normal,abnormal}/01_tcp_ar/" in error.fix


@pytest.mark.parametrize("name", ["aaaaamye_s1_t000.edf", "AAAAAMYE_s001_t000.edf",
                                  "aaaaamye_s001.edf", "00010194_s001_t001.edf"])
def test_a_file_name_not_in_the_pattern_is_refused(copy, name):
    target = copy / "edf/eval/normal/01_tcp_ar" / name
    shutil.copy(a_file(copy), target)
    with pytest.raises(DataError, match="not a TUAB file name") as err:
        tuab.find_recordings(copy)
    assert str(target) in err.value.message and "aaaaamye_s001_t000.edf" in err.value.message
    assert err.value.fix


def test_the_v2_layout_is_named(copy):
    target = copy / "edf/train/normal/01_tcp_ar/101/00010194/s001_2013_01_09/00010194_s001_t001.edf"
    target.parent.mkdir(parents=True)
    shutil.copy(a_file(copy), target)
    with pytest.raises(DataError, match="TUAB v2's layout") as err:
        tuab.find_recordings(copy)
    assert str(target) in err.value.message and "v3.0.1" in err.value.fix


def test_a_subject_in_both_splits_is_refused(copy):
    source = a_file(copy, "train", "abnormal")
    subject = source.name[:8]
    target = copy / f"edf/eval/normal/01_tcp_ar/{subject}_s009_t000.edf"
    shutil.copy(source, target)
    with pytest.raises(DataError, match=f"subject {subject} is in both TUAB splits") as err:
        tuab.find_recordings(copy)
    assert str(target) in err.value.message and "disjoint" in err.value.fix


def test_a_recording_in_two_places_is_refused(copy):
    source = a_file(copy, "eval", "normal")
    target = copy / "edf/eval/abnormal/01_tcp_ar" / source.name
    shutil.copy(source, target)
    with pytest.raises(DataError, match=f"recording {source.stem} is there twice"):
        tuab.find_recordings(copy)


def test_a_recording_without_a_montage_electrode_is_refused(copy):
    helper.check_refused_without(tuab, copy, a_file(copy, "eval", "abnormal"), "EEG A2-REF",
                          "no EEG A2-REF: the 01_tcp_ar montage needs all 21")


def test_a_folder_without_edf_is_refused(tmp_path):
    with pytest.raises(DataError, match="has no edf/ folder") as err:
        tuab.find_recordings(tmp_path)
    assert "v3.0.1" in err.value.fix
    (tmp_path / "edf").mkdir()
    with pytest.raises(DataError, match="no TUAB recording under"):
        tuab.find_recordings(tmp_path / "edf")  # the edf/ folder itself is a root too
