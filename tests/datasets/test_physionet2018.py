"""The PhysioNet/CinC Challenge 2018 reader on look-alike files in the release's layout (WFDB
headers, "16+24" .mat signals, .arousal annotations, MATLAB v7.3 -arousal.mat, age-sex.csv),
and wfdb itself on the look-alike's files."""

from __future__ import annotations

import hashlib
import shutil
import struct
from collections import Counter

import numpy as np
import pytest

from embedprobe.core.errors import DataError, UsageError
from embedprobe.datasets.physionet2018 import lookalike
from embedprobe.datasets.physionet2018 import reader as challenge
from embedprobe.datasets.sleep_edf.reader import trim_wake
from embedprobe.pipeline.channel_maps import input_positions

from helpers.seizure import check_channel_map

SETTINGS = {"subjects": 3, "hours": 1 / 3, "seed": 2}
EPOCH = 30 * 200  # samples per 30 s epoch


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    root = tmp_path_factory.mktemp("challenge2018")
    files = lookalike.write_lookalike(root, SETTINGS)
    return root, lookalike.plan(SETTINGS), files


@pytest.fixture
def night(demo, tmp_path):
    """A copy of the first record's folder, to damage (its first stage note is at sample 0)."""
    root, plans, _ = demo
    shutil.copytree(root / plans[0].folder, tmp_path / plans[0].folder)
    return tmp_path, plans[0], challenge.find_recordings(tmp_path)[0]


def by_id(root):
    return {r.recording: r for r in challenge.find_recordings(root)}


def rewrite_notes(rec, notes: list[tuple[int, str]]) -> None:
    """The record's .arousal rewritten with these (sample, aux note) annotations."""
    import wfdb

    samples, texts = zip(*notes, strict=True)
    wfdb.wrann(rec.recording, "arousal", np.array(samples, np.int64), symbol=['"'] * len(texts),
               aux_note=list(texts), write_dir=str(rec.folder))


# --- the layout, read by wfdb and h5py ----------------------------------------------------------


def test_the_lookalike_writes_the_release_layout(demo):
    root, plans, files = demo
    assert files[-2] == root / "age-sex.csv"  # before the manifest
    assert [f.relative_to(root).as_posix() for f in files[:4]] == [
        "training/tr03-0005/tr03-0005.hea", "training/tr03-0005/tr03-0005.mat",
        "training/tr03-0005/tr03-0005.arousal", "training/tr03-0005/tr03-0005-arousal.mat"]
    assert [p.record for p in plans] == ["tr03-0005", "tr03-0012", "tr03-0019"]
    assert (root / "age-sex.csv").read_text().splitlines() == ["Record,Age,Sex"] + [
        f"{p.record},{p.age},{p.sex}" for p in plans]
    assert challenge.subjects_table(root) == {p.record: float(p.age) for p in plans}
    for p in plans:
        hea = (root / p.names[0]).read_text().splitlines()
        assert hea[0] == f"{p.record} 13 200 {p.n_samples}" and len(hea) == 14
        assert hea[1].startswith(f"{p.record}.mat 16+24 1/uV 16 0 ") and hea[1].endswith(" F3-M2")
        assert " 655.35(-32768)/% 16 0 " in hea[12] and " 1000/mV 16 0 " in hea[13]
        mat = (root / p.names[1]).read_bytes()
        assert struct.unpack("<5i", mat[:20]) == (30, 13, p.n_samples, 0, 4)  # int16 13 x n
        assert mat[20:24] == b"val\x00" and len(mat) == 24 + 2 * 13 * p.n_samples


def test_wfdb_reads_the_header_and_signals(demo):
    import wfdb

    root, plans, _ = demo
    p = plans[2]
    header = wfdb.rdheader(str(root / p.names[0])[:-4])
    assert header.sig_name == list(challenge.CHANNELS) and header.fs == 200
    assert header.sig_len == p.n_samples and set(header.fmt) == {"16"}
    assert set(header.byte_offset) == {24} and set(header.file_name) == {f"{p.record}.mat"}
    assert header.units == ["uV"] * 11 + ["%", "mV"]
    assert header.adc_gain == [1.0] * 11 + [655.35, 1000.0]
    assert header.baseline == [0] * 11 + [-32768, 0]
    record = wfdb.rdrecord(str(root / p.names[0])[:-4], physical=False)
    written = lookalike.digital(p, SETTINGS["seed"])
    np.testing.assert_array_equal(record.d_signal.T, written)
    assert header.init_value == written[:, 0].tolist()
    sums = [(int(row.astype(np.int64).sum()) + 32768) % 65536 - 32768 for row in written]
    assert header.checksum == sums
    sao2 = wfdb.rdrecord(str(root / p.names[0])[:-4], channel_names=["SaO2"]).p_signal[:, 0]
    assert 85 < sao2.min() and sao2.max() < 97  # percent


def test_wfdb_reads_the_annotations_and_h5py_the_arousal_mat(demo):
    import h5py
    import wfdb

    root, plans, _ = demo
    for p in plans:
        ann = wfdb.rdann(str(root / p.names[2])[:-8], "arousal")
        assert set(ann.symbol) == {'"'}
        notes = [(s, n) for s, n in p.notes if s > 0]  # rdann drops notes at sample 0
        assert list(zip(ann.sample.tolist(), ann.aux_note, strict=True)) == notes
        path = root / p.names[3]
        head = path.read_bytes()[:128]
        assert head.startswith(b"MATLAB 7.3 MAT-file") and head[124:128] == b"\x00\x02IM"
        with h5py.File(path, "r") as h5:
            assert h5.userblock_size == 512
            assert sorted(h5["data/sleep_stages"]) == sorted(challenge.STAGE_VECTORS)
            vectors = {k: v[()] for k, v in h5["data/sleep_stages"].items()}
            arousals = h5["data/arousals"][()]
            assert h5["data/arousals"].attrs["MATLAB_class"] == b"double"
        assert arousals.shape == (1, p.n_samples) and set(np.unique(arousals)) == {-1, 0, 1}
        assert all(v.shape == (1, p.n_samples) for v in vectors.values())
        assert (sum(v.astype(int) for v in vectors.values()) == 1).all()
        undefined = vectors["undefined"][0].reshape(-1)[:len(p.stages) * EPOCH:EPOCH]
        np.testing.assert_array_equal(undefined == 1, p.stages == "U")
    assert plans[0].notes[0] == (0, "W") and plans[1].notes[0][0] > 0


def test_the_plan_covers_every_type_and_kind_and_several_cycles(demo):
    _, plans, _ = demo
    events = [e for p in plans for e in p.events]
    assert {e.type for e in events} == set(challenge.KINDS_OF_TYPE)
    assert {k for p in plans for _, _, k in p.kind_events} == set(challenge.EVENT_KINDS)
    assert any(e.start % 200 for e in events)  # onsets between whole seconds
    for p in plans:
        runs = [s for i, s in enumerate(p.stages) if i == 0 or p.stages[i - 1] != s]
        assert runs.count("R") >= 3 and runs.count("N3") >= 2  # several cycles
        assert "U" in p.stages[2:]  # an undefined epoch inside the night


# --- what the reader recovers -------------------------------------------------------------------


def test_every_recording_subject_and_session(demo):
    root, plans, _ = demo
    recordings = challenge.find_recordings(root)
    assert [r.recording for r in recordings] == [p.record for p in plans]
    for rec, p in zip(recordings, plans, strict=True):
        assert (rec.subject, rec.session) == (p.record, "1")
        assert rec.files == tuple(root / name for name in p.names)
        assert rec.signal_path == root / p.names[1]


def test_every_scored_epoch_is_recovered(demo):
    root, plans, _ = demo
    recordings = by_id(root)
    seen = set()
    for p in plans:
        counts = Counter()
        starts, labels, sfreq = challenge.read_labels(recordings[p.record], counts=counts)
        epochs, stages = p.scored
        assert sfreq == 200.0 and starts.dtype == labels.dtype == np.int64
        np.testing.assert_array_equal(starts, epochs * EPOCH)
        np.testing.assert_array_equal(labels, stages)
        assert counts == {("unscored", "undefined"): int((p.stages == "U").sum())}
        trimmed = challenge.read_labels(recordings[p.record], trim_wake_minutes=1.0)
        want = trim_wake(epochs * EPOCH, stages, 200.0, 1.0)
        np.testing.assert_array_equal(trimmed[0], want[0])
        seen |= set(labels.tolist())
    assert seen == {0, 1, 2, 3, 4}


def test_every_event_is_recovered_in_seconds_from_the_first_sample(demo):
    root, plans, _ = demo
    recordings = by_id(root)
    for p in plans:
        events = challenge.read_events(recordings[p.record])
        assert [(e.onset, e.duration, e.description) for e in events] == p.kind_events
        assert [e.onset for e in events] == sorted(e.onset for e in events)
    first = plans[0].events[0]
    event = challenge.read_events(recordings[plans[0].record])[0]
    assert (event.onset, event.end) == (first.start / 200, first.end / 200)
    rera = next(e for e in plans[0].events if e.type == "arousal_rera")
    assert {e.description for e in challenge.read_events(recordings[plans[0].record])
            if e.onset == rera.start / 200} >= {"arousal", "rera"}


def test_headers_and_signals_in_volts(demo):
    root, plans, _ = demo
    recordings = by_id(root)
    p = plans[1]
    header = challenge.read_header(recordings[p.record])
    assert header == challenge.RecordingHeader(challenge.CHANNELS, 200.0, p.n_samples)
    written = lookalike.signals(p, SETTINGS["seed"])
    signals = challenge.read_signals(recordings[p.record], ["O2-M1", "F3-M2", "ECG"],
                                     span=(EPOCH, 3 * EPOCH))
    assert signals.data.shape == (3, 2 * EPOCH) and signals.sfreq == 200.0
    for row, (name, step) in enumerate((("O2-M1", 1e-6), ("F3-M2", 1e-6), ("ECG", 1e-6))):
        want = written[name][EPOCH:3 * EPOCH] * (1e-3 if name == "ECG" else 1e-6)
        np.testing.assert_allclose(signals.data[row], want, atol=step / 2 + 1e-9)
    assert 0.5e-3 < signals.data[2].max() < 2e-3  # R waves of ~1 mV
    with pytest.raises(DataError) as err:
        challenge.read_signals(recordings[p.record], ["SaO2"])
    assert "channel SaO2 is in '%', not a voltage" in err.value.message
    assert str(recordings[p.record].header_path) in err.value.message and err.value.fix
    with pytest.raises(DataError, match="no channel Fp1") as err:
        challenge.read_signals(recordings[p.record], ["Fp1"])
    assert "physionet2018.yaml" in err.value.fix


def test_the_events_show_in_the_eeg(demo):
    """Epochs an apnea or hypopnea overlaps by more than 10 s, or an arousal by more than 3 s,
    carry much more EEG power above the 0.5 Hz high-pass than the others."""
    import scipy.signal
    from sklearn.metrics import roc_auc_score

    root, plans, _ = demo
    power, respiratory, arousal = [], [], []
    sos = scipy.signal.butter(5, 0.5, "high", fs=200, output="sos")
    for p in plans:
        x = challenge.read_signals(by_id(root)[p.record], ["C4-M1"]).data[0].astype(np.float64)
        x = scipy.signal.sosfiltfilt(sos, x)
        n = len(p.stages)
        edges = np.arange(n) * 30
        overlap = {"resp": np.zeros(n), "arousal": np.zeros(n)}
        for onset, duration, kind in p.kind_events:
            field = "arousal" if kind == "arousal" else "resp" if kind in (
                "apnea_obstructive", "apnea_central", "apnea_mixed", "hypopnea") else None
            if field:
                overlap[field] += np.clip(np.minimum(onset + duration, edges + 30)
                                          - np.maximum(onset, edges), 0, None)
        power += list(np.log(x[:n * EPOCH].reshape(n, EPOCH).var(1)))
        respiratory += list(overlap["resp"] > 10)
        arousal += list(overlap["arousal"] > 3)
    assert 0.15 < np.mean(respiratory) < 0.5 and 0.15 < np.mean(arousal) < 0.6
    assert roc_auc_score(respiratory, power) > 0.85
    assert roc_auc_score(arousal, power) > 0.8


def test_the_channel_map_fits(demo):
    root, _, _ = demo
    plans = check_channel_map("physionet2018", set(challenge.read_header(
        challenge.find_recordings(root)[0]).channels))
    biot = plans["biot"]  # F3-C3 and F4-C4 derived, 8 by one electrode, 6 zero
    assert len(list(input_positions(biot))) == 10
    assert plans["labram"].model_names == ("C3", "C4", "F3", "F4", "O1", "O2")
    assert plans["cbramod"].recorded == ("C3-M2", "C4-M1", "F3-M2", "F4-M1", "O1-M2", "O2-M1")


# --- the look-alike's settings and bytes --------------------------------------------------------


def test_the_same_settings_write_the_same_bytes(tmp_path):
    small = {"subjects": 1, "hours": 1 / 6}

    def digests(root):
        files = lookalike.write_lookalike(root, small)
        return {f.name: hashlib.sha256(f.read_bytes()).hexdigest() for f in files}

    first = digests(tmp_path / "a")
    assert digests(tmp_path / "b") == first
    assert digests(tmp_path / "a") == first  # and again over an existing look-alike
    lookalike.write_lookalike(tmp_path / "c", small | {"seed": 1})
    mat = "training/tr03-0005/tr03-0005.mat"
    assert (tmp_path / "c" / mat).read_bytes() != (tmp_path / "a" / mat).read_bytes()


def test_settings_are_checked(tmp_path):
    for bad, message in (({"nights": 2}, "unknown look-alike setting"),
                         ({"subjects": 995}, "subjects=995"), ({"hours": 0.1}, "hours=0.1")):
        with pytest.raises(UsageError, match=message) as err:
            lookalike.plan(bad)
        assert err.value.fix
    lookalike.write_lookalike(tmp_path, {"subjects": 2, "hours": 1 / 6})
    with pytest.raises(UsageError, match="would not write"):
        lookalike.write_lookalike(tmp_path, {"subjects": 1, "hours": 1 / 6})


# --- bad inputs ---------------------------------------------------------------------------------


def test_a_missing_annotation_file_makes_the_record_incomplete(night):
    root, _, rec = night
    rec.annotation_path.unlink()
    rec = challenge.find_recordings(root)[0]
    assert rec.problem == "tr03-0005 has no tr03-0005.arousal beside its header"
    assert rec.files == (rec.header_path, rec.signal_path, rec.arousal_mat)
    for read in (challenge.read_events, challenge.read_labels):
        with pytest.raises(DataError) as err:
            read(rec)
        assert str(rec.header_path) in err.value.message
        assert "tr03-0005.arousal" in err.value.message
        assert "allow_partial=true" in err.value.fix and "challenge-2018" in err.value.fix


def test_a_cut_signal_file_is_refused(night):
    _, p, rec = night
    data = rec.signal_path.read_bytes()
    rec.signal_path.write_bytes(data[:len(data) - 26 * 100])
    with pytest.raises(DataError) as err:
        challenge.read_signals(rec, ["C3-M2"], span=(0, 10))
    assert str(rec.signal_path) in err.value.message
    assert f"counts {p.n_samples} samples of 13 signals" in err.value.message
    assert err.value.fix.startswith("the file is cut")


def test_an_unknown_note_is_refused(night):
    _, p, rec = night
    notes = p.notes
    sample = notes[5][0]
    notes[5] = (sample, "(resp_snoring")
    rewrite_notes(rec, notes)
    with pytest.raises(DataError) as err:
        challenge.read_events(rec)
    assert str(rec.annotation_path) in err.value.message
    assert f"unknown annotation type 'resp_snoring' at sample {sample}" in err.value.message
    assert "resp_obstructiveapnea" in err.value.fix and "N3" in err.value.fix


def test_an_event_past_the_end_is_refused(night):
    _, p, rec = night
    last = p.events[-1]
    notes = [n for n in p.notes if n[1] != f"{last.type})" or n[0] != last.end]
    rewrite_notes(rec, [*notes, (p.n_samples + 400, f"{last.type})")])
    with pytest.raises(DataError) as err:
        challenge.read_events(rec)
    assert str(rec.annotation_path) in err.value.message
    assert f"{last.type} (from sample {last.start}) ending at sample {p.n_samples + 400} is " \
           f"past the end of tr03-0005.mat ({p.n_samples} samples)" in err.value.message
    assert "cut or from another record" in err.value.fix
    rewrite_notes(rec, [*p.notes, (p.n_samples, "N2")])
    with pytest.raises(DataError, match=f"stage N2 at sample {p.n_samples} is past the end"):
        challenge.read_labels(rec)


def test_an_unpaired_event_note_is_refused(night):
    _, p, rec = night
    first, last = p.events[0], p.events[-1]
    rewrite_notes(rec, [n for n in p.notes if n != (last.end, f"{last.type})")])
    with pytest.raises(DataError) as err:
        challenge.read_events(rec)
    assert f"({last.type} at sample {last.start} has no closing {last.type})" in \
        err.value.message
    assert str(rec.annotation_path) in err.value.message and "cut" in err.value.fix
    rewrite_notes(rec, [n for n in p.notes if n != (first.start, f"({first.type}")])
    with pytest.raises(DataError) as err:
        challenge.read_events(rec)
    assert f"'{first.type})' at sample {first.end} closes no ({first.type}" in err.value.message
    assert "damaged" in err.value.fix


def test_a_cut_arousal_mat_and_no_stage_note_are_refused(night):
    import h5py

    _, p, rec = night
    with h5py.File(rec.arousal_mat, "r+") as h5:
        values = h5["data/sleep_stages/undefined"][()]
        del h5["data/sleep_stages/undefined"]
        h5["data/sleep_stages/undefined"] = values[:, :-10]
    with pytest.raises(DataError) as err:
        challenge.read_labels(rec)
    assert str(rec.arousal_mat) in err.value.message
    assert f"covers {p.n_samples - 10} samples, less than the {p.n_samples}" in \
        err.value.message
    assert "cut or another record's" in err.value.fix
    rewrite_notes(rec, [n for n in p.notes if n[1] not in challenge.STAGE_OF_NOTE])
    with pytest.raises(DataError, match="no sleep stage note"):
        challenge.read_labels(rec)


def test_test_set_records_are_skipped_and_foreign_names_refused(night):
    root, _, rec = night
    test = root / "test" / "te03-0001"
    test.mkdir(parents=True)
    header = rec.header_path.read_text().replace("tr03-0005", "te03-0001")
    (test / "te03-0001.hea").write_text(header)
    shutil.copy(rec.signal_path, test / "te03-0001.mat")
    assert [r.recording for r in challenge.find_recordings(root)] == ["tr03-0005"]
    with pytest.raises(DataError, match="no age-sex.csv") as err:
        challenge.subjects_table(root)
    assert "challenge-2018" in err.value.fix
    shutil.copy(rec.header_path, root / "night1.hea")
    with pytest.raises(DataError, match="not a challenge-2018 record name") as err:
        challenge.find_recordings(root)
    assert "trNN-NNNN" in err.value.fix
