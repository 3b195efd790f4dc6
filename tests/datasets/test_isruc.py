"""The ISRUC-Sleep reader on look-alike files in the site's layout (.rec EDF files read through
MNE, the scorers' stage files, the subject tables as .xlsx)."""

from __future__ import annotations

import hashlib
import shutil
from collections import Counter

import edfio
import numpy as np
import pytest
import scipy.signal

from embedprobe.core.errors import DataError, UsageError
from embedprobe.datasets.base import CUT
from embedprobe.datasets.edf import read_edf_header
from embedprobe.datasets.isruc import lookalike
from embedprobe.datasets.isruc import reader as isruc
from embedprobe.datasets.sleep_edf.reader import trim_wake
from embedprobe.pipeline.channel_maps import input_positions

from helpers.seizure import check_channel_map

SETTINGS = {"subgroup_I": 6, "subgroup_II": 1, "subgroup_III": 4, "hours": 1 / 6, "seed": 3,
            "diagnoses": ["SAOS", "PLMS"]}
EPOCHS = 6 + 20 + 4  # wake before, the 10-min sleep period, wake after
EPOCH = 6000  # samples per 30 s epoch at 200 Hz
UV_STEP_V = 2000 / 65535 * 1e-6  # quantization step of the +-1000 uV range, in volts


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    root = tmp_path_factory.mktemp("isruc")
    files = lookalike.write_lookalike(root, SETTINGS)
    return root, lookalike.plan(SETTINGS), files


@pytest.fixture
def subject(demo, tmp_path):
    """A copy of subgroup I's first subject and its table, to damage."""
    root, _, _ = demo
    shutil.copytree(root / "subgroupI/1", tmp_path / "subgroupI/1")
    shutil.copy(root / isruc.table_name("I"), tmp_path)
    return tmp_path, isruc.find_recordings(tmp_path)[0]


def by_id(root):
    return {r.recording: r for r in isruc.find_recordings(root)}


# --- the layout -------------------------------------------------------------------------------


def test_the_lookalike_writes_the_sites_layout(demo):
    root, plans, files = demo
    names = {f.relative_to(root).as_posix() for f in files}
    for name in ("subgroupI/1/1.rec", "subgroupI/6/6_2.txt", "subgroupII/1/1/1.rec",
                 "subgroupII/1/2/2_1.txt", "subgroupIII/4/4_1.txt",
                 "Details_subgroup_I_Submission.xlsx", "Details_subgroup_II_Submission.xlsx",
                 "Details_subgroup_III_Submission.xlsx"):
        assert name in names
    assert len([n for n in names if n.endswith(".rec")]) == len(plans) == 12
    for p in plans:
        rec = root / p.names[0]
        assert rec.read_bytes()[:8] == b"0       "  # EDF, no EDF+ annotation signal
        assert rec.read_bytes()[192:236].strip() == b""
        header = read_edf_header(rec)
        assert header.labels == p.layout and header.record_seconds == 1
        assert header.n_records == EPOCHS * 30
        assert {header.sfreq(label) for label in header.labels} == {200.0}
        for stage_file, codes in zip(p.names[1:], (p.scorer_1, p.scorer_2), strict=True):
            text = (root / stage_file).read_text()
            assert text == "".join(f"{c}\n" for c in codes) and len(codes) == EPOCHS
            assert set(codes) <= {0, 1, 2, 3, 5}
    layouts = Counter(p.layout[0] for p in plans)
    assert layouts == {"F3-M2": 8, "F3-A2": 4}  # both spellings of the mastoids


def test_the_tables_hold_a_row_per_subject_under_two_title_rows(demo):
    import pandas as pd

    root, plans, _ = demo
    table = pd.read_excel(root / isruc.table_name("II"), header=None, dtype=object)
    assert list(table.iloc[2, :4]) == ["Subject", "Age", "Sex", "Diagnosis"]
    assert list(table.iloc[3:, 0]) == ["1_Rec.1", "1_Rec.2"]
    assert table.iloc[3, 3] == "SAOS" and pd.isna(table.iloc[4, 3])  # on Rec.1 only
    first = pd.read_excel(root / isruc.table_name("I"), header=None, dtype=object)
    assert list(first.iloc[3:, 0]) == [1, 2, 3, 4, 5, 6]
    assert list(first.iloc[3:, 3]) == ["SAOS", "PLMS"] * 3
    healthy = pd.read_excel(root / isruc.table_name("III"), header=None, dtype=object)
    assert healthy.iloc[3:, 3].isna().all()
    ages = isruc.subjects_table(root)
    assert ages == {p.subject: float(p.age) for p in plans}


# --- what the reader recovers -----------------------------------------------------------------


def test_every_recording_subject_session_and_class(demo):
    root, plans, _ = demo
    recordings = isruc.find_recordings(root)
    assert [r.recording for r in recordings] == sorted(p.recording for p in plans)
    truth = {p.recording: p for p in plans}
    for rec in recordings:
        p = truth[rec.recording]
        assert (rec.subject, rec.session) == (p.subject, str(p.night))
        assert rec.files == (root / p.names[0], root / p.names[1], root / p.names[2],
                             root / isruc.table_name(p.subgroup))
        assert isruc.recording_label(rec) == p.label
    assert {r.recording: isruc.recording_label(r) for r in recordings if r.subgroup == "II"} \
        == {"II-1-1": "osa", "II-1-2": "osa"}  # Rec.2's empty diagnosis: the subject's
    assert Counter(p.label for p in plans) == {"osa": 5, "plms": 3, "healthy": 4}
    assert isruc.CLASSES[0] == "healthy" and len(isruc.CLASSES) == 11


def test_every_epoch_both_scorers_agree_on_is_recovered(demo):
    root, plans, _ = demo
    recordings = by_id(root)
    seen = set()
    for p in plans:
        rec = recordings[p.recording]
        counts = Counter()
        starts, labels, sfreq = isruc.read_labels(rec, counts=counts)
        epochs, stages = p.consensus
        assert sfreq == 200.0 and starts.dtype == labels.dtype == np.int64
        np.testing.assert_array_equal(starts, epochs * EPOCH)
        np.testing.assert_array_equal(labels, stages)
        assert counts == ({("unscored", "scorers disagree"): int((p.scorer_1 != p.scorer_2).sum())}
                          if len(epochs) < EPOCHS else {})
        trimmed = isruc.read_labels(rec, trim_wake_minutes=1.0)
        want = trim_wake(epochs * EPOCH, stages, 200.0, 1.0)
        np.testing.assert_array_equal(trimmed[0], want[0])
        seen |= set(labels.tolist())
    assert seen == {0, 1, 2, 3, 4}
    disagree = sum(int((p.scorer_1 != p.scorer_2).sum()) for p in plans)
    assert 0.03 < disagree / (EPOCHS * len(plans)) < 0.2  # the scorers mostly agree


def test_headers_and_signals_in_volts_under_one_spelling(demo):
    root, plans, _ = demo
    recordings = by_id(root)
    for p in plans:
        header = isruc.read_header(recordings[p.recording])
        assert header.channels == isruc.EEG_CHANNELS  # A-spelled files renamed
        assert (header.sfreq, header.n_samples) == (200.0, EPOCHS * EPOCH)
    for p in (plans[0], plans[2]):  # written as F3-M2 ... and as F3-A2 ...
        rec = recordings[p.recording]
        written = lookalike.signals(p, SETTINGS["seed"])
        signals = isruc.read_signals(rec, ["O2-M1", "F3-M2"], span=(EPOCH, 3 * EPOCH))
        assert signals.data.shape == (2, 2 * EPOCH) and signals.sfreq == 200.0
        for row, label in enumerate((p.layout[5], p.layout[0])):
            np.testing.assert_allclose(signals.data[row], written[label][EPOCH:3 * EPOCH] * 1e-6,
                                       atol=UV_STEP_V)
    assert not list(root.rglob("*.edf"))  # read in place: nothing renamed or copied


def test_bare_electrodes_are_derived_against_their_mastoid(tmp_path):
    """Subgroup I's subject 40 records the electrodes and both mastoids unreferenced."""
    rng = np.random.default_rng(0)
    labels = ["ROC", "A1", "LOC", "A2", "C4", "O2", "C3", "O1", "F4", "F3", "X1"]
    data = {label: rng.normal(0, 30, 200 * 60) for label in labels}
    folder = tmp_path / "subgroupI/40"
    folder.mkdir(parents=True)
    edfio.Edf([edfio.EdfSignal(data[label], 200, label=label, physical_dimension="uV",
                               physical_range=(-500, 500)) for label in labels],
              data_record_duration=1).write(folder / "40.rec")
    for scorer in (1, 2):
        (folder / f"40_{scorer}.txt").write_text("0\n2\n")
    rec = isruc.find_recordings(tmp_path)[0]
    assert rec.problem == ""
    assert isruc.read_header(rec).channels == (*labels, "F3-M2", "C3-M2", "O1-M2", "F4-M1",
                                               "C4-M1", "O2-M1", "E1-M2", "E2-M1")
    signals = isruc.read_signals(rec, ["F3-M2", "E2-M1", "X1"])
    for row, (plus, minus) in enumerate((("F3", "A2"), ("ROC", "A1"), ("X1", None))):
        want = data[plus] - (data[minus] if minus else 0)
        np.testing.assert_allclose(signals.data[row], want * 1e-6, atol=2 * 1000 / 65535 * 1e-6)
    assert [isruc.channel_name(c) for c in ("LOC-A2", "ROC-A1", "c3-a2", "E1-M2", "SaO2")] == \
        ["E1-M2", "E2-M1", "C3-M2", "E1-M2", "SaO2"]


def test_classes_and_stages_show_in_the_eeg(demo):
    """A subject's mean log relative band powers (each window z-scored, as several models'
    inputs are) tell its class, leave one subject out; shuffled classes do not. Epoch band
    powers stage the nights well above chance, leave one subject out."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import cohen_kappa_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    root, _, _ = demo
    bands = ((0.5, 2), (2, 4), (4, 8), (8, 12), (12, 16), (16, 30), (30, 45), (45, 70))
    by_subject, classes, epochs, stages, owners = {}, {}, [], [], []
    for rec in isruc.find_recordings(root):
        starts, labels, _ = isruc.read_labels(rec)
        x = isruc.read_signals(rec, isruc.EEG_CHANNELS).data.astype(np.float64)
        windows = np.stack([x[:, s:s + EPOCH] for s in starts])
        windows = (windows - windows.mean(-1, keepdims=True)) / windows.std(-1, keepdims=True)
        freqs, power = scipy.signal.welch(windows, 200, nperseg=400)
        power = np.stack([power[..., (freqs >= lo) & (freqs < hi)].sum(-1) for lo, hi in bands],
                         -1)
        features = np.log(power / power.sum(-1, keepdims=True)).mean(1)
        by_subject.setdefault(rec.subject, []).append(features.mean(0))
        classes[rec.subject] = isruc.recording_label(rec)
        epochs.append(features), stages.append(labels), owners.extend([rec.subject] * len(labels))
    subjects = sorted(by_subject)
    x = np.array([np.mean(by_subject[s], 0) for s in subjects])
    y = np.array([classes[s] for s in subjects])

    def leave_one_out(x, y, groups):
        predicted = np.empty_like(y)
        for group in np.unique(groups):
            test = groups == group
            model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
            predicted[test] = model.fit(x[~test], y[~test]).predict(x[test])
        return predicted

    assert np.mean(leave_one_out(x, y, np.array(subjects)) == y) == 1.0
    rng = np.random.default_rng(0)
    shuffled = [np.mean(leave_one_out(x, z, np.array(subjects)) == z)
                for z in (rng.permutation(y) for _ in range(10))]
    assert np.mean(shuffled) < 0.6
    stages, owners = np.concatenate(stages), np.array(owners)
    kappa = cohen_kappa_score(stages, leave_one_out(np.concatenate(epochs), stages, owners))
    assert kappa > 0.45


def test_the_channel_map_fits(demo):
    root, _, _ = demo
    plans = check_channel_map("isruc", set(isruc.read_header(
        isruc.find_recordings(root)[0]).channels))
    # BIOT: F3-C3 and F4-C4 derived (the mastoid cancels), 8 slots by one electrode, 6 zero
    biot = plans["biot"]
    assert list(input_positions(biot)) == [3, 7, 8, 9, 10, 11, 12, 13, 14, 15]
    assert [(s.kind, s.plus, s.minus) for s in biot.sources if s.kind == "derived"] == \
        [("derived", "F3-M2", "C3-M2"), ("derived", "F4-M1", "C4-M1")]
    assert plans["labram"].model_names == plans["eegpt"].model_names == \
        ("C3", "C4", "F3", "F4", "O1", "O2")
    assert plans["cbramod"].recorded == ("C3-M2", "C4-M1", "F3-M2", "F4-M1", "O1-M2", "O2-M1")


# --- the look-alike's settings and bytes ------------------------------------------------------


def test_the_same_settings_write_the_same_bytes(tmp_path):
    small = {"subgroup_I": 1, "subgroup_II": 1, "subgroup_III": 1, "hours": 1 / 6}

    def digests(root):
        files = lookalike.write_lookalike(root, small)
        return {f.relative_to(root).as_posix(): hashlib.sha256(f.read_bytes()).hexdigest()
                for f in files}

    first = digests(tmp_path / "a")
    assert digests(tmp_path / "b") == first
    assert digests(tmp_path / "a") == first  # and again over an existing look-alike
    lookalike.write_lookalike(tmp_path / "d", small | {"seed": 1})
    assert (tmp_path / "d/subgroupI/1/1.rec").read_bytes() != \
        (tmp_path / "a/subgroupI/1/1.rec").read_bytes()


def test_settings_are_checked(tmp_path):
    for bad, message in (({"subjects": 3}, "ISRUC: unknown look-alike setting"),
                         ({"subgroup_II": 9}, "subgroup_II=9"),
                         ({"hours": 0.1}, "hours=0.1"),
                         ({"diagnoses": ["flu"]}, "not the tables' texts"),
                         ({"subgroup_I": 0, "subgroup_III": 0}, "no subject")):
        with pytest.raises(UsageError, match=message) as err:
            lookalike.plan(bad)
        assert err.value.fix
    lookalike.write_lookalike(tmp_path, {"subgroup_I": 2, "subgroup_III": 0, "hours": 1 / 6})
    with pytest.raises(UsageError, match="would not write"):
        lookalike.write_lookalike(tmp_path, {"subgroup_I": 1, "subgroup_III": 0,
                                             "hours": 1 / 6})


# --- bad inputs ---------------------------------------------------------------------------------


def test_a_missing_stage_file_makes_the_recording_incomplete(subject):
    root, rec = subject
    rec.stage_files[1].unlink()
    rec = isruc.find_recordings(root)[0]
    assert rec.problem == "1.rec has no 1_2.txt beside it (the scorers' stages)"
    assert rec.files == (rec.rec, rec.stage_files[0], rec.details)
    with pytest.raises(DataError) as err:
        isruc.read_labels(rec)
    assert str(rec.rec) in err.value.message and "1_2.txt" in err.value.message
    assert "allow_partial=true" in err.value.fix


def test_a_short_stage_file_is_refused(subject):
    _, rec = subject
    lines = rec.stage_files[0].read_text().splitlines()
    rec.stage_files[0].write_text("\n".join(lines[:-1]) + "\n\n")
    with pytest.raises(DataError) as err:
        isruc.read_labels(rec)
    assert str(rec.stage_files[0]) in err.value.message
    assert f"{EPOCHS - 1} stage codes for the {EPOCHS} epochs" in err.value.message
    assert "one line per 30 s epoch" in err.value.fix


def test_an_unknown_stage_code_is_refused(subject):
    _, rec = subject
    lines = rec.stage_files[1].read_text().splitlines()
    lines[4] = "4"  # R&K's stage 4: not an ISRUC code
    rec.stage_files[1].write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError) as err:
        isruc.read_labels(rec)
    assert str(rec.stage_files[1]) in err.value.message and "line 5 holds '4'" in \
        err.value.message
    assert "0 W, 1 N1, 2 N2, 3 N3, 5 REM" in err.value.fix


def test_lines_past_the_recording_are_cut_and_named(subject):
    _, rec = subject
    for path in rec.stage_files:
        path.write_text(path.read_text() + "0\n0\n")
    counts = Counter()
    starts, _, _ = isruc.read_labels(rec, counts=counts)
    assert starts[-1] < EPOCHS * EPOCH
    assert counts[(CUT, f"{rec.rec}: the signal ends at {EPOCHS * 30} s but 1_1.txt scores "
                        f"up to {(EPOCHS + 2) * 30} s: 2 scored epochs of 30 s past its end "
                        "cut; the recording is indexed up to its end")] == 2


def test_a_subject_missing_from_its_table_is_refused(subject, demo):
    _, rec = subject
    _, plans, _ = demo
    rows = lookalike._table_rows([p for p in plans if p.subject != "I-1"], "I")
    lookalike.write_table(rec.details, rows)
    with pytest.raises(DataError) as err:
        isruc.recording_label(rec)
    assert str(rec.details) in err.value.message and "no row for subject 1" in \
        err.value.message
    assert "Details_subgroup_I_Submission.xlsx" in err.value.fix


def test_an_unknown_diagnosis_is_refused_and_the_reference_texts_are_grouped(subject, demo):
    _, rec = subject
    _, plans, _ = demo
    first = plans[0]
    for text, label in (("SAOS", "osa"), ("Parasomnia ", "parasomnia"),
                        ("PRIVAÇÃO DE SONO", "sleep_deprivation"), ("srvas", "uars"),
                        ("Epilepsy", "epilepsy")):
        rows = lookalike._table_rows([first], "I")
        rows[3][3] = text
        lookalike.write_table(rec.details, rows)
        assert isruc.recording_label(rec) == label
    rows[3][3] = "Insomnia"
    lookalike.write_table(rec.details, rows)
    with pytest.raises(DataError) as err:
        isruc.recording_label(rec)
    assert str(rec.details) in err.value.message and "'Insomnia'" in err.value.message
    assert "SAOS" in err.value.fix


def test_a_subgroup_ii_recording_without_its_own_row_takes_its_subjects(demo, tmp_path):
    root, plans, _ = demo
    shutil.copytree(root / "subgroupII", tmp_path / "subgroupII")
    second = [p for p in plans if p.subgroup == "II"]
    lookalike.write_table(tmp_path / isruc.table_name("II"),
                          lookalike._table_rows(second[:1], "II"))  # no 1_Rec.2 row
    assert [isruc.recording_label(r) for r in isruc.find_recordings(tmp_path)] == ["osa"] * 2
    lookalike.write_table(tmp_path / isruc.table_name("II"), lookalike._table_rows([], "II"))
    with pytest.raises(DataError, match="no row for subject 1_Rec.1") as err:
        isruc.recording_label(isruc.find_recordings(tmp_path)[0])
    assert "a row per recording of subgroup II" in err.value.fix


def test_a_missing_table_is_refused(subject):
    root, rec = subject
    rec.details.unlink()
    rec = isruc.find_recordings(root)[0]
    assert rec.problem == "" and rec.details == root / isruc.table_name("I")
    with pytest.raises(DataError) as err:
        isruc.recording_label(rec)
    assert "Details_subgroup_I_Submission.xlsx" in err.value.message
    assert str(root) in err.value.fix


def test_a_table_in_the_subgroup_folder_is_found(subject):
    root, rec = subject
    rec.details.rename(root / "subgroupI" / rec.details.name)
    rec = isruc.find_recordings(root)[0]
    assert rec.details == root / "subgroupI" / isruc.table_name("I")
    assert isruc.recording_label(rec) == "osa"


@pytest.fixture(scope="module")
def subgroup_i_8(tmp_path_factory):
    """Subgroup I up to subject 8, whose file (as the real one) has no F3 and F4."""
    root = tmp_path_factory.mktemp("isruc-i8")
    settings = {"subgroup_I": 8, "subgroup_II": 0, "subgroup_III": 0, "hours": 1 / 6, "seed": 3}
    lookalike.write_lookalike(root, settings)
    return root


def test_subject_i_8_reads_its_missing_f3_f4_as_zeros_as_the_reference(subgroup_i_8):
    """The reference's resolve_and_read_channels zero-fills a montage channel a file lacks."""
    rec = by_id(subgroup_i_8)["I-8"]
    assert read_edf_header(rec.rec).labels == ("C3-M2", "O1-M2", "C4-M1", "O2-M1")
    assert rec.problem == "" and rec.absent == ("F3-M2", "F4-M1")
    assert isruc.zero_filled(rec, isruc.EEG_CHANNELS) == ("F3-M2", "F4-M1")
    assert isruc.zero_filled(by_id(subgroup_i_8)["I-7"], isruc.EEG_CHANNELS) == ()
    signals = isruc.read_signals(rec, ["F3-M2", "C3-M2", "F4-M1"])
    assert signals.ch_names == ["F3-M2", "C3-M2", "F4-M1"] and signals.sfreq == 200
    assert signals.data.shape == (3, EPOCHS * EPOCH)
    assert not signals.data[[0, 2]].any()
    np.testing.assert_array_equal(signals.data[1], isruc.read_signals(rec, ["C3-M2"]).data[0])
    assert np.abs(signals.data[1]).max() > 10e-6  # the recorded channel is real EEG
    only_filled = isruc.read_signals(rec, ["F4-M1"], span=(0, EPOCH))
    assert only_filled.data.shape == (1, EPOCH) and not only_filled.data.any()
    starts, labels, sfreq = isruc.read_labels(rec)
    assert len(starts) == len(labels) > 0 and sfreq == 200
    with pytest.raises(DataError, match="no channel E1-M2"):
        isruc.read_signals(rec, ["E1-M2"])  # only the six EEG channels are filled


def test_the_index_notes_the_zero_filled_channels(subgroup_i_8, capsys):
    from embedprobe.core.config import load_config
    from embedprobe.pipeline.context import DatasetContext
    from embedprobe.pipeline.index import build_index

    config = load_config()
    config["datasets"]["isruc_demo"].update(path=subgroup_i_8.name)
    config["datasets"]["isruc_demo"].pop("expected_recordings", None)
    roots = {"data_root": str(subgroup_i_8.parent), "cache_root": "", "results_root": "",
             "weights_root": ""}
    index = build_index(DatasetContext.build(config, roots, "isruc_demo"))
    assert set(index["recording"]) == {f"I-{n}" for n in range(1, 9)}
    err = capsys.readouterr().err
    assert "note: isruc_demo: zero-filled where a recording lacks them" in err
    assert "F3-M2 in 1" in err and "F4-M1 in 1" in err


def test_zero_fill_missing_false_makes_the_recording_incomplete(subgroup_i_8):
    rec = {r.recording: r for r in isruc.find_recordings(subgroup_i_8, zero_fill_missing=False)
           }["I-8"]
    assert rec.problem == "8.rec has no EEG channel F3-M2, F4-M1" and rec.absent == ()
    with pytest.raises(DataError) as err:
        isruc.read_signals(rec, ["F3-M2"])
    assert str(rec.rec) in err.value.message and "no channel F3-M2" in err.value.message
    with pytest.raises(DataError) as err:
        isruc.read_labels(rec)
    assert str(rec.rec) in err.value.message and "no EEG channel F3-M2" in err.value.message
    assert "allow_partial=true" in err.value.fix and "zero_fill_missing: true" in err.value.fix


def test_a_recording_without_any_eeg_channel_is_incomplete(subject):
    root, rec = subject
    edf = edfio.read_edf(rec.rec)
    edf.drop_signals(list(edf.labels))
    edf.append_signals(edfio.EdfSignal(np.zeros(EPOCHS * 30 * 10), 10, label="ECG"))
    edf.write(rec.rec)
    rec = isruc.find_recordings(root)[0]
    assert rec.problem == "1.rec has no EEG channel " + ", ".join(isruc.EEG_CHANNELS)
    with pytest.raises(DataError, match="no EEG channel F3-M2"):
        isruc.read_labels(rec)


def test_a_file_outside_the_layout_is_refused(subject):
    root, rec = subject
    shutil.copy(rec.rec, root / "subgroupI/1/copy.rec")
    with pytest.raises(DataError) as err:
        isruc.find_recordings(root)
    assert "copy.rec" in err.value.message and "subgroupI/<n>/<n>.rec" in err.value.fix
