"""The CHB-MIT reader on look-alike files in PhysioNet's layout, read through MNE."""

from __future__ import annotations

import hashlib
import shutil

import mne
import numpy as np
import pytest

from embedprobe.core.errors import DataError, UsageError
from embedprobe.datasets.base import Event
from embedprobe.datasets.chbmit import lookalike as chbmit_lookalike
from embedprobe.datasets.chbmit import reader as chbmit
from embedprobe.pipeline.channel_maps import input_positions

from helpers.seizure import band_power_auroc, check_channel_map

SETTINGS = {"patients": 5, "files_per_patient": 2, "minutes_per_file": 4, "seed": 0}
SECONDS = 4 * 60
UV_STEP_V = 6400 / 65535 * 1e-6  # quantization step of the +-3200 uV range, in volts


@pytest.fixture(scope="module")
def lookalike(tmp_path_factory):
    root = tmp_path_factory.mktemp("chbmit")
    files = chbmit_lookalike.write_lookalike(root, SETTINGS)
    return root, chbmit_lookalike.plan(SETTINGS), files


@pytest.fixture
def patient(lookalike, tmp_path):
    """A copy of chb01 and chb02 (folders and summaries) to damage."""
    root, _, _ = lookalike
    for folder in ("chb01", "chb02"):
        shutil.copytree(root / folder, tmp_path / folder)
    return tmp_path


def test_the_lookalike_holds_what_the_real_summaries_do(lookalike):
    root, plans, files = lookalike
    counts = {len(p.seizures) for p in plans}
    assert counts == {0, 1, 2}  # files without seizures, with one, with two
    assert all(any(p.seizures for p in plans if p.patient == n) for n in range(1, 6))
    texts = {p.folder: (root / p.folder / f"{p.folder}-summary.txt").read_text() for p in plans}
    assert "\nSeizure Start Time: " in texts["chb01"]  # both phrasings
    assert "\nSeizure 1 Start Time: " in texts["chb02"] and "Seizure 2 End Time" in texts["chb02"]
    assert "Number of Seizures in File: 0" in "".join(texts.values())
    assert "Channels changed:" in texts["chb02"] and "Channel 5: -" in texts["chb02"]
    assert (root / "RECORDS").read_text().splitlines() == [f"{p.folder}/{p.name}" for p in plans]


def test_every_seizure_interval_is_recovered_exactly(lookalike):
    root, plans, _ = lookalike
    recordings = chbmit.find_recordings(root)
    assert [r.recording for r in recordings] == [p.name[:-4] for p in plans]
    for rec, p in zip(recordings, plans, strict=True):
        assert (rec.subject, rec.session) == (p.folder, f"{p.number:02d}")
        assert rec.files == (root / p.folder / p.name, root / p.folder / f"{p.folder}-summary.txt")
        assert chbmit.read_events(rec) == [Event(float(s.onset), float(s.duration), "seizure")
                                           for s in p.seizures]


def test_channel_names_are_mnes_with_the_duplicate_and_dummies_numbered(lookalike):
    root, plans, _ = lookalike
    for rec, p in zip(chbmit.find_recordings(root), plans, strict=True):
        header = chbmit.read_header(rec)
        assert header.channels == tuple(mne.io.read_raw_edf(rec.edf, verbose="error").ch_names)
        assert (header.sfreq, header.n_samples) == (256.0, SECONDS * 256)
        assert len(header.channels) == len(p.layout)
        assert header.channels.count("T8-P8-0") == header.channels.count("T8-P8-1") == 1
    standard = chbmit.read_header(chbmit.find_recordings(root)[0]).channels
    assert standard[14] == "T8-P8-0" and standard[-1] == "T8-P8-1" and len(standard) == 23
    dummies = chbmit.read_header([r for r in chbmit.find_recordings(root)
                                  if r.recording == "chb02_02"][0]).channels
    assert len(dummies) == 28
    assert [c for c in dummies if c.startswith("-")] == ["--0", "--1", "--2", "--3", "--4"]
    assert dummies[20] == "T8-P8-0" and dummies[27] == "T8-P8-1"


def test_signals_are_volts_of_the_written_derivations(lookalike):
    root, plans, _ = lookalike
    rec = [r for r in chbmit.find_recordings(root) if r.recording == "chb02_02"][0]
    plan = [p for p in plans if p.name == "chb02_02.edf"][0]
    wanted = ["FP1-F7", "T8-P8-1", "--0", "T8-P8-0"]
    signals = chbmit.read_signals(rec, wanted)
    assert signals.sfreq == 256.0 and signals.data.shape == (4, SECONDS * 256)
    written = {s.label: s.data for s in chbmit_lookalike.signals(plan, SETTINGS["seed"])}
    np.testing.assert_allclose(signals.data[0], written["FP1-F7"] * 1e-6, atol=UV_STEP_V)
    np.testing.assert_allclose(signals.data[1], written["T8-P8"] * 1e-6, atol=UV_STEP_V)
    np.testing.assert_array_equal(signals.data[1], signals.data[3])  # the same derivation twice
    # a dummy channel is flat: zero within the half step EDF's digital range leaves at 0 uV
    assert np.ptp(signals.data[2]) == 0 and abs(signals.data[2][0]) < UV_STEP_V
    rms = np.sqrt(np.mean(signals.data[0] ** 2))
    assert 5e-6 < rms < 2e-4  # tens of microvolts, in volts


def test_the_same_seed_writes_the_same_bytes(tmp_path):
    small = {"patients": 2, "files_per_patient": 1, "minutes_per_file": 2}

    def digests(root):
        files = chbmit_lookalike.write_lookalike(root, small)
        return {f.relative_to(root).as_posix(): hashlib.sha256(f.read_bytes()).hexdigest()
                for f in files}

    first = digests(tmp_path / "a")
    assert digests(tmp_path / "b") == first
    assert digests(tmp_path / "c") == first  # and again over an existing look-alike
    chbmit_lookalike.write_lookalike(tmp_path / "d", small | {"seed": 1})
    assert (tmp_path / "d/chb01/chb01_01.edf").read_bytes() != \
        (tmp_path / "a/chb01/chb01_01.edf").read_bytes()


def test_settings_are_checked(tmp_path):
    with pytest.raises(UsageError, match="minutes_per_file=1"):
        chbmit_lookalike.write_lookalike(tmp_path, {"minutes_per_file": 1})
    with pytest.raises(UsageError, match="CHB-MIT: unknown look-alike setting"):
        chbmit_lookalike.plan({"subjects": 3})
    chbmit_lookalike.write_lookalike(tmp_path / "big", {"patients": 2, "files_per_patient": 2,
                                                        "minutes_per_file": 2})
    with pytest.raises(UsageError, match="would not write"):
        chbmit_lookalike.write_lookalike(tmp_path / "big", {"patients": 1, "minutes_per_file": 2})


def test_a_band_power_probe_finds_the_seizures(lookalike):
    """The signature survives BIOT's per-window, per-channel scaling on its 16 channels; the
    look-alike is made hard (seizure-like background, focal and low-voltage seizures), so a
    band-power probe finds most seizures, not all."""
    root, _, _ = lookalike
    biot = check_channel_map("chbmit", set(chbmit.read_header(
        chbmit.find_recordings(root)[0]).channels))["biot"]
    auroc, windows, positives = band_power_auroc(chbmit, root, biot.recorded)
    assert windows == 10 * SECONDS // 10 and positives >= 20
    # 0.68 at seed 0 (0.73-0.81 at seeds 1-3); shuffled labels: 0.48 on average, at most 0.58
    # in 20 draws
    assert 0.62 < auroc < 0.9


def test_the_channel_map_fits_both_layouts(lookalike):
    root, _, _ = lookalike
    recs = chbmit.find_recordings(root)
    standard = set(chbmit.read_header(recs[0]).channels)
    with_dummies = set(chbmit.read_header([r for r in recs if r.recording == "chb02_02"][0])
                       .channels)
    plans = check_channel_map("chbmit", standard & with_dummies)
    double_banana = ("FP1-F7", "F7-T7", "T7-P7", "P7-O1", "FP2-F8", "F8-T8", "T8-P8", "P8-O2",
                     "FP1-F3", "F3-C3", "C3-P3", "P3-O1", "FP2-F4", "F4-C4", "C4-P4", "P4-O2")
    # BIOT: every one of its 16 slots filled by the recorded derivation of its name (T8-P8 is
    # recorded twice: the first copy)
    assert plans["biot"].model_names == double_banana
    assert plans["biot"].recorded == tuple(
        "T8-P8-0" if name == "T8-P8" else name for name in double_banana)
    assert list(input_positions(plans["biot"])) == list(range(16))
    # LaBraM knows 8 bipolar names, the temporal chains; the other derivations are dropped
    assert plans["labram"].model_names == double_banana[:8]
    # CBraMod: all 18 derivations the reference hands a model, midline included
    assert plans["cbramod"].recorded[16:] == ("FZ-CZ", "CZ-PZ")
    assert len(plans["cbramod"].recorded) == 18
    # EEGPT: each derivation named by one electrode, 18 different (the reference's table: the
    # temporal chains by their second electrode, the others and the midline by their first)
    assert plans["eegpt"].model_names == ("F7", "T7", "P7", "O1", "F8", "T8", "P8", "O2",
                                          "FP1", "F3", "C3", "P3", "FP2", "F4", "C4", "P4",
                                          "FZ", "PZ")


# --- summaries as the real ones are, and bad ones ------------------------------------------


def write_summary(folder, text):
    (folder / f"{folder.name}-summary.txt").write_text(text)


def test_starts_and_ends_pair_by_position_and_clock_hours_past_24_are_read(tmp_path):
    """chb09_08 prints 'Seizure 1 End Time' for its second seizure; summaries count hours past
    midnight as 24:xx:xx."""
    folder = tmp_path / "chb09"
    folder.mkdir()
    write_summary(folder, "File Name: chb09_08.edf\nFile Start Time: 24:10:00\n"
                          "File End Time: 25:10:00\nNumber of Seizures in File: 2\n"
                          "Seizure 1 Start Time: 2951 seconds\nSeizure 1 End Time:   3030 seconds\n"
                          "Seizure 2 Start Time: 9196 seconds\nSeizure 1 End Time:   9267 seconds\n"
                          "\r\nFile Name: chb09_09.edf\nNumber of Seizures in File: 0\n")
    entries = chbmit.parse_summary(folder / "chb09-summary.txt")
    assert entries["chb09_08.edf"].seizures == ((2951.0, 3030.0), (9196.0, 9267.0))
    assert entries["chb09_09.edf"].seizures == ()


def test_chb21_is_chb01s_patient(patient):
    folder = patient / "chb21"
    folder.mkdir()
    shutil.copy(patient / "chb01/chb01_01.edf", folder / "chb21_01.edf")
    write_summary(folder, "File Name: chb21_01.edf\nNumber of Seizures in File: 0\n")
    rec = [r for r in chbmit.find_recordings(patient) if r.recording == "chb21_01"][0]
    assert (rec.subject, rec.session, rec.problem) == ("chb01", "01", "")


def test_a_seizure_past_the_end_of_its_file_is_refused(patient):
    summary = patient / "chb01/chb01-summary.txt"
    text = summary.read_text()
    first = next(p for p in chbmit_lookalike.plan(SETTINGS) if p.patient == 1 and p.seizures)
    end = f"Seizure End Time: {first.seizures[0].end} seconds"
    summary.write_text(text.replace(end, f"Seizure End Time: {SECONDS + 5} seconds", 1))
    rec = [r for r in chbmit.find_recordings(patient) if r.recording == first.name[:-4]][0]
    with pytest.raises(DataError) as err:
        chbmit.read_events(rec)
    assert str(summary) in err.value.message and first.name in err.value.message
    assert f"ends after the file ({SECONDS} s long)" in err.value.message
    assert "correct the seizure's seconds in chb01-summary.txt" in err.value.fix


def test_an_unknown_file_in_the_summary_is_refused(patient):
    summary = patient / "chb01/chb01-summary.txt"
    summary.write_text(summary.read_text() + "\nFile Name: chb07_01.edf\n"
                                              "Number of Seizures in File: 0\n")
    with pytest.raises(DataError) as err:
        chbmit.find_recordings(patient)
    assert str(summary) in err.value.message and "unknown file 'chb07_01.edf'" in \
        err.value.message
    assert "chb01_MM.edf" in err.value.fix


def test_a_listed_file_that_is_not_there_and_an_unlisted_file_are_incomplete(patient):
    summary = patient / "chb01/chb01-summary.txt"
    summary.write_text(summary.read_text() + "\nFile Name: chb01_09.edf\n"
                                              "Number of Seizures in File: 1\n"
                                              "Seizure Start Time: 10 seconds\n"
                                              "Seizure End Time: 40 seconds\n")
    shutil.copy(patient / "chb02/chb02_01.edf", patient / "chb02/chb02_07.edf")
    recs = {r.recording: r for r in chbmit.find_recordings(patient)}
    assert recs["chb01_09"].problem == f"chb01_09.edf is listed in {summary} but is not in " \
                                       f"{patient / 'chb01'}"
    assert recs["chb02_07"].problem == ("chb02_07.edf is not listed in "
                                        f"{patient / 'chb02/chb02-summary.txt'}")
    assert recs["chb01_09"].files == (summary,)
    with pytest.raises(DataError) as err:
        chbmit.read_events(recs["chb01_09"])
    assert "chb01_09" in err.value.message and "allow_partial=true" in err.value.fix
    assert not [r for r in recs.values() if r.problem and r.recording not in
                ("chb01_09", "chb02_07")]


def test_a_missing_summary_is_named_with_the_fix(patient):
    (patient / "chb01/chb01-summary.txt").unlink()
    recs = [r for r in chbmit.find_recordings(patient) if r.subject == "chb01"]
    assert len(recs) == 2
    assert all(r.problem == f"no chb01-summary.txt in {patient / 'chb01'} (it lists the "
                            "seizures)" for r in recs)
    with pytest.raises(DataError) as err:
        chbmit.read_events(recs[0])
    assert "no chb01-summary.txt" in err.value.message
    assert "chb01-summary.txt from CHB-MIT" in err.value.fix


@pytest.mark.parametrize("text, says", [
    ("File Name: chb01_01.edf\nNumber of Seizures in File: 2\nSeizure Start Time: 10 seconds\n"
     "Seizure End Time: 40 seconds\n", "'Number of Seizures in File: 2' but 1 seizure"),
    ("File Name: chb01_01.edf\nNumber of Seizures in File: 1\nSeizure Start Time: 10 seconds\n",
     "1 seizure start(s) but 0 end(s)"),
    ("File Name: chb01_01.edf\nNumber of Seizures in File: 1\nSeizure Start Time: 50 seconds\n"
     "Seizure End Time: 40 seconds\n", "ends (40 s) before it starts (50 s)"),
    ("Seizure Start Time: 10 seconds\n", "a seizure time before any 'File Name:' line"),
    ("File Name: chb01_01.edf\nNumber of Seizures in File: 0\n\nFile Name: chb01_01.edf\n",
     "chb01_01.edf is listed twice"),
])
def test_a_malformed_summary_is_refused_with_its_line(patient, text, says):
    write_summary(patient / "chb01", text)
    with pytest.raises(DataError) as err:
        chbmit.parse_summary(patient / "chb01/chb01-summary.txt")
    assert says in err.value.message and ", line " in err.value.message
    assert err.value.fix


def test_a_file_not_named_as_chbmit_is_refused(patient):
    shutil.copy(patient / "chb01/chb01_01.edf", patient / "chb01/record.edf")
    with pytest.raises(DataError, match="record.edf: not a CHB-MIT file name"):
        chbmit.find_recordings(patient)
