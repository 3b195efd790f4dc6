"""The UCDDB reader on look-alike files in PhysioNet's layout (.rec EDF files read through MNE,
stage files, fixed-width respiratory event lists, SubjectDetails.xls)."""

from __future__ import annotations

import datetime as dt
import hashlib
import shutil
from collections import Counter

import numpy as np
import pytest

from embedprobe.core.errors import DataError, UsageError
from embedprobe.datasets.base import CUT
from embedprobe.datasets.edf import read_edf_header
from embedprobe.datasets.sleep_edf.reader import trim_wake
from embedprobe.datasets.ucddb import lookalike
from embedprobe.datasets.ucddb import reader as ucddb
from embedprobe.pipeline.channel_maps import input_positions

from helpers.seizure import check_channel_map

SETTINGS = {"subjects": 3, "hours": 1 / 3, "seed": 2}
EPOCH = 30 * 128  # samples per 30 s epoch
UV_STEP_V = 2000 / 65535 * 1e-6  # quantization step of the +-1000 uV range, in volts


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    root = tmp_path_factory.mktemp("ucddb")
    files = lookalike.write_lookalike(root, SETTINGS)
    return root, lookalike.plan(SETTINGS), files


@pytest.fixture
def night(demo, tmp_path):
    """A copy of the first recording and its annotation files, to damage."""
    root, plans, _ = demo
    for name in plans[0].names:
        shutil.copy(root / name, tmp_path)
    return tmp_path, plans[0], ucddb.find_recordings(tmp_path)[0]


def event_lines(rec) -> list[str]:
    return rec.events_file.read_bytes().decode("ascii").rstrip("\x1a").split("\r\n")


def write_lines(rec, lines: list[str]) -> None:
    rec.events_file.write_bytes("\r\n".join(lines).encode("ascii"))


def by_id(root):
    return {r.recording: r for r in ucddb.find_recordings(root)}


# --- the layout ---------------------------------------------------------------------------------


def test_the_lookalike_writes_physionets_layout(demo):
    root, plans, files = demo
    assert [f.name for f in files[:-1]] == [
        "ucddb002.rec", "ucddb002_stage.txt", "ucddb002_respevt.txt", "ucddb003.rec",
        "ucddb003_stage.txt", "ucddb003_respevt.txt", "ucddb005.rec", "ucddb005_stage.txt",
        "ucddb005_respevt.txt", "SubjectDetails.xls"]
    for p in plans:
        rec = root / p.names[0]
        assert rec.read_bytes()[:8] == b"0       " and rec.read_bytes()[192:236].strip() == b""
        header = read_edf_header(rec)
        assert header.labels == lookalike.LAYOUT and header.record_seconds == 1
        assert header.n_records == p.seconds and p.seconds % 30 > 0  # a partial epoch at the end
        assert (header.sfreq("C3A2"), header.sfreq("SpO2"), header.sfreq("ECG")) == (128, 8, 128)
        assert header.start == p.start
        stage_text = (root / p.names[1]).read_bytes()
        assert stage_text == "".join(f"{c}\r\n" for c in p.codes).encode()
        assert len(p.codes) == p.seconds // 30 and set(p.codes) >= {0, 1, 2, 3, 6, 7}
        events = (root / p.names[2]).read_bytes()
        assert events.endswith(b"\r\n\x1a")
        lines = events.decode("ascii").rstrip("\x1a").split("\r\n")[:-1]
        assert lines[:3] == list(lookalike.HEADER) and len(lines) == 3 + len(p.rows)
        for line, row in zip(lines[3:], p.rows, strict=True):
            assert line[:10].strip() == p.clock(row.onset) and line[10:20].strip() == row.type
            assert line[20:25].strip() == row.flag and int(line[25:30]) == row.duration


def test_the_subject_table_has_the_real_columns(demo):
    import xlrd

    root, plans, _ = demo
    sheet = xlrd.open_workbook(str(root / "SubjectDetails.xls")).sheet_by_index(0)
    columns = sheet.row_values(0)
    assert columns[:6] == ["S/No", "Study Number", "Height (cm)", "Weight (kg)", "Gender",
                           "PSG Start Time"]
    assert columns[6:] == ["PSG AHI", "BMI", "Age", "Epworth Sleepiness Score",
                           "Study Duration (hr)", "Sleep Efficiency (%)",
                           "No of data blocks in EDF"]
    assert sheet.col_values(1)[1:] == ["UCDDB002", "UCDDB003", "UCDDB005"]
    assert sheet.col_values(5)[1:] == [p.start.strftime("%H:%M:%S") for p in plans]
    assert sheet.col_values(12)[1:] == [p.seconds for p in plans]
    assert ucddb.subjects_table(root) == {p.recording: float(p.age) for p in plans}


def test_the_plan_covers_every_kind_midnight_and_flags(demo):
    _, plans, _ = demo
    events = [e for p in plans for e in p.events]
    assert {kind for _, _, kind in events} == set(ucddb.EVENT_KINDS)
    assert {r.flag for p in plans for r in p.rows if r.type != "PB EVENT"} == {"", "PB", "CS"}
    assert any(p.clock(r.onset) < p.start.strftime("%H:%M:%S") for p in plans for r in p.rows)
    assert all(10 <= d <= 60 for _, d, _ in events)


# --- what the reader recovers -------------------------------------------------------------------


def test_every_recording_subject_and_session(demo):
    root, plans, _ = demo
    recordings = ucddb.find_recordings(root)
    assert [r.recording for r in recordings] == [p.recording for p in plans]
    for rec, p in zip(recordings, plans, strict=True):
        assert (rec.subject, rec.session) == (p.recording, "1")
        assert rec.files == tuple(root / name for name in p.names)


def test_every_scored_epoch_is_recovered(demo):
    root, plans, _ = demo
    recordings = by_id(root)
    seen = set()
    for p in plans:
        counts = Counter()
        starts, labels, sfreq = ucddb.read_labels(recordings[p.recording], counts=counts)
        epochs, stages = p.scored
        assert sfreq == 128.0 and starts.dtype == labels.dtype == np.int64
        np.testing.assert_array_equal(starts, epochs * EPOCH)
        np.testing.assert_array_equal(labels, stages)
        assert counts == {("unscored", text): int((p.codes == code).sum())
                          for code, text in ((6, "artifact"), (7, "indeterminate"))}
        trimmed = ucddb.read_labels(recordings[p.recording], trim_wake_minutes=1.0)
        want = trim_wake(epochs * EPOCH, stages, 128.0, 1.0)
        np.testing.assert_array_equal(trimmed[0], want[0])
        seen |= set(labels.tolist())
    assert seen == {0, 1, 2, 3, 4}


def test_every_event_is_recovered_in_seconds_from_the_first_sample(demo):
    root, plans, _ = demo
    recordings = by_id(root)
    for p in plans:
        events = ucddb.read_events(recordings[p.recording])
        assert [(e.onset, e.duration, e.description) for e in events] == \
            [(float(o), float(d), k) for o, d, k in p.events]
        assert [e.onset for e in events] == sorted(e.onset for e in events)
    first = ucddb.read_events(recordings[plans[0].recording])
    row = plans[0].rows[0]
    assert first[0].onset == row.onset  # its clock time minus the EDF start, past midnight


def test_headers_and_signals_in_volts(demo):
    root, plans, _ = demo
    recordings = by_id(root)
    for p in plans:
        header = ucddb.read_header(recordings[p.recording])
        assert header.channels == lookalike.LAYOUT
        assert (header.sfreq, header.n_samples) == (128.0, p.seconds * 128)
    p = plans[1]
    written = lookalike.signals(p, SETTINGS["seed"])
    signals = ucddb.read_signals(recordings[p.recording], ["C4A1", "C3A2"],
                                 span=(EPOCH, 3 * EPOCH))
    assert signals.data.shape == (2, 2 * EPOCH) and signals.sfreq == 128.0
    for row, label in enumerate(("C4A1", "C3A2")):
        np.testing.assert_allclose(signals.data[row], written[label][EPOCH:3 * EPOCH] * 1e-6,
                                   atol=UV_STEP_V)
    assert not list(root.rglob("*.edf"))  # read in place: nothing renamed or copied


def test_the_events_show_in_the_eeg(demo):
    """Epochs an apnea or hypopnea overlaps by more than 10 s carry much more EEG power above
    the 0.5 Hz high-pass than the others, in every stage."""
    import scipy.signal
    from sklearn.metrics import roc_auc_score

    root, plans, _ = demo
    power, positive, stages = [], [], []
    for p in plans:
        x = ucddb.read_signals(by_id(root)[p.recording], ["C3A2"]).data[0].astype(np.float64)
        x = scipy.signal.sosfiltfilt(scipy.signal.butter(5, 0.5, "high", fs=128, output="sos"), x)
        n = len(p.stages)
        overlap = np.zeros(n)
        for onset, duration, kind in p.events:
            if kind != "periodic_breathing":
                edges = np.arange(n) * 30
                overlap += np.clip(np.minimum(onset + duration, edges + 30)
                                   - np.maximum(onset, edges), 0, None)
        power += list(np.log(x[:n * EPOCH].reshape(n, EPOCH).var(1)))
        positive += list(overlap > 10)
        stages += list(p.stages)
    assert 0.2 < np.mean(positive) < 0.45
    assert roc_auc_score(positive, power) > 0.8
    sleep = np.isin(stages, list("1234R"))
    assert {s for s, y in zip(stages, positive, strict=True) if y} >= {"1", "2", "R"}
    assert roc_auc_score(np.array(positive)[sleep], np.array(power)[sleep]) > 0.8


def test_the_channel_map_fits(demo):
    root, _, _ = demo
    plans = check_channel_map("ucddb", set(ucddb.read_header(
        ucddb.find_recordings(root)[0]).channels))
    biot = plans["biot"]  # F3-C3, C3-P3, F4-C4, C4-P4 by one electrode each, 12 zero
    assert list(input_positions(biot)) == [9, 10, 13, 14]
    assert plans["labram"].model_names == plans["eegpt"].model_names == ("C3", "C4")
    assert plans["cbramod"].recorded == ("C3A2", "C4A1")


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
    assert (tmp_path / "c/ucddb002.rec").read_bytes() != (tmp_path / "a/ucddb002.rec").read_bytes()


def test_settings_are_checked(tmp_path):
    for bad, message in (({"nights": 2}, "unknown look-alike setting"),
                         ({"subjects": 26}, "subjects=26"), ({"hours": 0.1}, "hours=0.1")):
        with pytest.raises(UsageError, match=message) as err:
            lookalike.plan(bad)
        assert err.value.fix
    lookalike.write_lookalike(tmp_path, {"subjects": 2, "hours": 1 / 6})
    with pytest.raises(UsageError, match="would not write"):
        lookalike.write_lookalike(tmp_path, {"subjects": 1, "hours": 1 / 6})


# --- bad inputs ---------------------------------------------------------------------------------


def test_an_event_past_the_end_is_refused(night):
    _, p, rec = night
    lines = event_lines(rec)
    last = lines[3 + len(p.rows) - 1]
    end = p.clock(p.seconds - 5)
    lines[3 + len(p.rows) - 1] = end + last[8:]  # starts 5 s before the end, lasts longer
    write_lines(rec, lines)
    with pytest.raises(DataError) as err:
        ucddb.read_events(rec)
    assert str(rec.events_file) in err.value.message and f"at {end}" in err.value.message
    assert "not within ucddb002.rec" in err.value.message
    assert "cut or from another recording" in err.value.fix


def test_an_event_before_the_start_is_refused(night):
    _, p, rec = night
    lines = event_lines(rec)
    before = (p.start - dt.timedelta(seconds=60)).strftime("%H:%M:%S")
    lines[3] = before + lines[3][8:]
    write_lines(rec, lines)
    with pytest.raises(DataError, match=f"line 4: .* at {before} .* is not within") as err:
        ucddb.read_events(rec)
    assert str(rec.events_file) in err.value.message and err.value.fix


def test_an_unknown_event_type_is_refused(night):
    _, _, rec = night
    lines = event_lines(rec)
    lines[5] = lines[5][:10] + "SNORE     " + lines[5][20:]
    write_lines(rec, lines)
    with pytest.raises(DataError) as err:
        ucddb.read_events(rec)
    assert str(rec.events_file) in err.value.message
    assert "line 6: unknown respiratory event type 'SNORE'" in err.value.message
    assert "APNEA-O" in err.value.fix and "HYP-M" in err.value.fix


def test_a_possible_row_is_left_out_and_a_pb_row_is_periodic_breathing(night):
    _, p, rec = night
    lines = event_lines(rec)
    lines[3] = lines[3][:10] + "POSSIBLE  " + lines[3][20:]  # an unconfirmed event
    lines[4] = lines[4][:10] + "PB        " + lines[4][20:]  # its flag adds nothing
    write_lines(rec, lines)
    second = p.rows[1]
    want = sorted([(float(second.onset), float(second.duration), "periodic_breathing")]
                  + [(float(o), float(d), k) for o, d, k in p.events if o > second.onset])
    assert [(e.onset, e.duration, e.description) for e in ucddb.read_events(rec)] == want


def test_a_row_without_a_duration_or_a_clock_time_is_refused(night):
    _, _, rec = night
    lines = event_lines(rec)
    write_lines(rec, [*lines[:4], lines[4][:20], *lines[5:]])
    with pytest.raises(DataError, match="line 5: .* has no duration in seconds") as err:
        ucddb.read_events(rec)
    assert "three header lines" in err.value.fix
    write_lines(rec, [*lines[:4], "25:00:00" + lines[4][8:], *lines[5:]])
    with pytest.raises(DataError, match="line 5 does not start with a clock time"):
        ucddb.read_events(rec)
    write_lines(rec, lines[3:])
    with pytest.raises(DataError, match="no header of an event list"):
        ucddb.read_events(rec)


def test_a_short_stage_file_is_refused(night):
    _, p, rec = night
    rec.stage_file.write_bytes("".join(f"{c}\r\n" for c in p.codes[:-1]).encode())
    with pytest.raises(DataError) as err:
        ucddb.read_labels(rec)
    n = len(p.codes)
    assert str(rec.stage_file) in err.value.message
    assert f"{n - 1} stage codes for the {n} epochs" in err.value.message
    assert "one line per 30 s epoch" in err.value.fix


def test_an_unknown_stage_code_is_refused_and_extra_lines_counted(night):
    _, p, rec = night
    codes = [str(c) for c in p.codes]
    rec.stage_file.write_text("\r\n".join([*codes, "0", "0"]) + "\r\n")
    counts = Counter()
    starts, _, _ = ucddb.read_labels(rec, counts=counts)
    assert starts[-1] < len(codes) * EPOCH
    header = read_edf_header(rec.rec)  # its last 8 s are no whole epoch
    assert header.n_records * header.record_seconds == len(codes) * 30 + 8
    assert counts[(CUT, f"{rec.rec}: the signal ends at {len(codes) * 30 + 8:,} s but "
                        f"{rec.stage_file.name} scores up to {(len(codes) + 2) * 30:,} s: 2 "
                        "scored epochs of 30 s past its end cut; the recording is indexed "
                        "up to its end")] == 2
    codes[4] = "8"
    rec.stage_file.write_text("\r\n".join(codes) + "\r\n")
    with pytest.raises(DataError) as err:
        ucddb.read_labels(rec)
    assert str(rec.stage_file) in err.value.message and "line 5 holds '8'" in err.value.message
    assert "6 Artifact, 7 Indeterminate" in err.value.fix


def test_a_missing_annotation_file_makes_the_recording_incomplete(night):
    root, _, rec = night
    rec.events_file.unlink()
    rec = ucddb.find_recordings(root)[0]
    assert rec.problem == "ucddb002.rec has no ucddb002_respevt.txt beside it"
    assert rec.files == (rec.rec, rec.stage_file)
    for read in (ucddb.read_events, ucddb.read_labels):
        with pytest.raises(DataError) as err:
            read(rec)
        assert str(rec.rec) in err.value.message and "ucddb002_respevt.txt" in err.value.message
        assert "allow_partial=true" in err.value.fix
    rec.stage_file.unlink()
    assert "no ucddb002_stage.txt or ucddb002_respevt.txt" in \
        ucddb.find_recordings(root)[0].problem


def test_a_foreign_name_and_a_missing_table_are_refused(night):
    root, _, rec = night
    with pytest.raises(DataError, match="no SubjectDetails.xls") as err:
        ucddb.subjects_table(root)
    assert "PhysioNet" in err.value.fix
    shutil.copy(rec.rec, root / "night1.rec")
    with pytest.raises(DataError, match="not a UCDDB recording name") as err:
        ucddb.find_recordings(root)
    assert "ucddbNNN.rec" in err.value.fix
