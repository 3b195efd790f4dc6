"""The readers on the publishers' own files (../shared/realdata): every file there is read
through the project's reader of its format and the values its publisher documents are asserted
(the folder's README lists them). Where the reader does not read a file (a checksum list, a
subject table no task uses), a test says so and checks what the reader assumes of it.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
import shutil
from collections import Counter
from pathlib import Path

import edfio
import h5py
import numpy as np
import pytest
import wfdb

from embedprobe.core.config import load_config
from embedprobe.core.errors import DataError
from embedprobe.datasets.chbmit import lookalike as chbmit_lookalike
from embedprobe.datasets.chbmit import reader as chbmit
from embedprobe.datasets.edf import mne_channel_names, read_edf_header
from embedprobe.datasets.physionet2018 import reader as pn18
from embedprobe.datasets.physionet_mi import lookalike as mi_lookalike
from embedprobe.datasets.physionet_mi import reader as mi
from embedprobe.datasets.siena import lookalike as siena_lookalike
from embedprobe.datasets.siena import reader as siena
from embedprobe.datasets.sleep_edf import reader as sleep_edf

from helpers.realdata import REALDATA, checksums, realdata, sha256
from helpers.seizure import check_channel_map

MI = "eeg-motor-movementimagery-dataset-1.0.0/files"
SLEEP_EDF = "sleep-edf-database-expanded-1.0.0"
FIRST_5_MIN = "sleep-edf-first-5-minutes"
CHBMIT = "chb-mit-scalp-eeg-database-1.0.0"
SIENA = "siena-scalp-eeg-database-1.0.0"
PN18 = "physionet2018"


def test_every_file_is_the_one_listed_and_each_is_read_below():
    """The copies are intact (SHA256SUMS-here.txt), and a file added to the folder fails here
    until a test below reads it."""
    listed = checksums()
    here = {p.relative_to(REALDATA).as_posix() for p in realdata().rglob("*") if p.is_file()}
    assert here - set(listed) == {"README.md", "SHA256SUMS-here.txt"}
    assert set(listed) <= here
    assert {name: sha256(REALDATA / name) for name in listed} == listed
    read_here = {  # folder -> the names the tests below read, as patterns
        MI: r"S001/S001R\d\d\.edf(\.event)?|S00[2-4]/S00[2-4]R01\.edf",
        SLEEP_EDF: r"sleep-cassette/SC4001EC-Hypnogram\.edf|S[CT]-subjects\.xls|RECORDS(-v1)?|"
                   r"SHA256SUMS\.txt",
        FIRST_5_MIN: r"sleep-cassette/SC4001E(0-PSG|C-Hypnogram)\.edf|SC-subjects\.xls",
        CHBMIT: r"chb01/chb01-summary\.txt|chb\d\d/chb\d\d_\d\d\+?\.edf\.seizures|RECORDS|"
                r"RECORDS-WITH-SEIZURES|SUBJECT-INFO|SHA256SUMS\.txt",
        SIENA: r"PN01/Seizures-list-PN01\.txt",
        PN18: r"training/tr03-00(05|29)/tr03-00(05|29)(\.hea|\.arousal|-arousal\.mat)",
    }
    unread = [name for name in listed if not any(
        name.startswith(folder + "/") and re.fullmatch(pattern, name[len(folder) + 1:])
        for folder, pattern in read_here.items())]
    assert unread == []


def verified_by_publisher(folder: str, names) -> None:
    """The files equal the publisher's own checksums (the dataset's SHA256SUMS.txt)."""
    published = {}
    for line in realdata(folder, "SHA256SUMS.txt").read_text().splitlines():
        digest, name = line.split(maxsplit=1)
        published[name] = digest
    assert {n: sha256(realdata(folder, n)) for n in names} == {n: published[n] for n in names}


# --- PhysioNet EEG Motor Movement/Imagery: S001's 14 runs, S002-S004's run 1 ------------------

BASELINE = {"T0": "rest"}
LEFT_RIGHT = {"T0": "rest", "T1": "left_hand", "T2": "right_hand"}
HANDS_FEET = {"T0": "rest", "T1": "hands", "T2": "feet"}
# What T0/T1/T2 mean by run, from PhysioNet's description (not from the reader).
MEANING = {1: BASELINE, 2: BASELINE} | {r: LEFT_RIGHT for r in (3, 4, 7, 8, 11, 12)} | {
    r: HANDS_FEET for r in (5, 6, 9, 10, 13, 14)}
# (T1, T2) cues per run of S001 around 15 rests: run 4's are the README's; the others as
# PhysioNet's files hold them (each run of cues is 125 s: 15 rests and 15 cues).
CUES = {3: (8, 7), 4: (8, 7), 5: (8, 7), 6: (7, 8), 7: (8, 7), 8: (8, 7), 9: (8, 7),
        10: (7, 8), 11: (7, 8), 12: (7, 8), 13: (7, 8), 14: (7, 8)}


@pytest.fixture(scope="module")
def mi_runs():
    """Every run in the folder, by id (S001R01..R14, S002R01, S003R01, S004R01)."""
    recordings = mi.find_recordings(realdata(MI), runs=range(1, 15))
    return {r.recording: r for r in recordings if not r.problem}


def test_mi_finds_every_run_and_names_the_runs_the_folder_lacks(mi_runs):
    assert sorted(mi_runs) == [f"S001R{r:02d}" for r in range(1, 15)] + [
        "S002R01", "S003R01", "S004R01"]
    assert all(r.files == (r.edf,) for r in mi_runs.values())  # the .edf.event beside: unread
    missing = [r for r in mi.find_recordings(realdata(MI), runs=range(1, 15)) if r.problem]
    assert len(missing) == 3 * 13  # S002-S004 have run 1 only
    assert missing[0].problem == "S002R02.edf (run 2 of S002) is missing"
    # the default runs are the imagery ones: S002-S004 have none, so only S001's six
    assert [r.recording for r in mi.find_recordings(realdata(MI))] == [
        f"S001R{r:02d}" for r in (4, 6, 8, 10, 12, 14)]


def test_mi_headers_64_dotted_channels_at_160_hz_and_the_run_lengths(mi_runs):
    for rec in mi_runs.values():
        header = mi.read_header(rec)
        assert header.channels == mi.CHANNELS and len(header.channels) == 64
        assert header.channels[:3] == ("Fc5.", "Fc3.", "Fc1.") and header.channels[-1] == "Iz.."
        assert header.sfreq == 160.0
        seconds = 61 if rec.run in (1, 2) else 125  # baselines 61 s, runs of cues 125 s
        assert header.n_samples == seconds * 160, rec.recording


def test_mi_events_count_and_class_by_run(mi_runs):
    for rec_id, rec in mi_runs.items():
        events = mi.read_events(rec)
        counts = Counter(e.description for e in events)
        if rec.run in (1, 2):
            assert counts == {"rest": 1}, rec_id  # one T0 over the baseline
            continue
        t1, t2 = CUES[rec.run]
        meaning = MEANING[rec.run]
        assert counts == {"rest": 15, meaning["T1"]: t1, meaning["T2"]: t2}, rec_id
        assert len(events) == 30
        # rest 4.2 s, then the cue 4.1 s, alternating from 0 s
        assert [e.description == "rest" for e in events] == [True, False] * 15
        assert (events[0].onset, events[0].duration) == (0.0, 4.2)
        assert (events[1].onset, events[1].duration) == (4.2, 4.1)
        assert events[-1].end == pytest.approx(124.5)


def test_mi_events_equal_the_wfdb_event_files_beside_each_run(mi_runs):
    """PhysioNet ships each run's annotations twice: in the EDF+ (what the reader reads) and as
    a WFDB .edf.event file; both must give the same codes, onsets and durations. (wfdb's
    rdann drops a note at sample 0: the first rest period.) The folder has S001's."""
    for rec_id, rec in mi_runs.items():
        if rec.subject != "S001":
            continue
        notes = wfdb.rdann(str(rec.edf), "event")
        assert notes.fs == 160
        theirs = []
        for sample, note in zip(notes.sample, notes.aux_note, strict=True):
            code, duration = re.fullmatch(r"(T[012]) duration: ([\d.]+)", note.strip()).groups()
            theirs.append((round(sample / 160, 4), float(duration), MEANING[rec.run][code]))
        ours = [(round(e.onset, 4), e.duration, e.description) for e in mi.read_events(rec)
                if e.onset > 0]
        assert ours == theirs, rec_id
        assert len(theirs) == (0 if rec.run in (1, 2) else 29), rec_id


def test_mi_signals_are_real_eeg_in_volts(mi_runs):
    rec = mi_runs["S001R04"]
    signals = mi.read_signals(rec, ["C3..", "Cz..", "C4.."], span=(0, 160 * 10))
    assert signals.sfreq == 160.0 and signals.data.shape == (3, 1600)
    assert signals.data.dtype == np.float32
    # EEG of tens of microvolts, stored in whole microvolts
    assert 5e-6 < float(signals.data.std()) < 200e-6
    steps = np.unique(np.round(signals.data[0] * 1e6, 3))
    assert np.allclose(steps, np.round(steps))


def test_mi_lookalike_writes_the_real_runs_layout(mi_runs, tmp_path):
    """The look-alike's runs as PhysioNet's: 125 s runs of 15 rests of 4.2 s and 15 cues of
    4.1 s, baselines of 61 s whose one T0 ends before the run does (60.2 s in S001's, 60.1 s
    in S002's), and the real header fields (labels, start, equipment, scaling)."""
    settings = {"subjects": 1, "runs": [1, 4], "trials_per_run": 15}
    plans = {p.run: p for p in mi_lookalike.plan(settings)}
    real = {run: mi.read_events(mi_runs[f"S001R{run:02d}"]) for run in (1, 4)}
    assert plans[4].seconds == 125 and plans[1].seconds == 61
    assert [(o, d) for o, d, _ in plans[4].annotations] == [
        (e.onset, e.duration) for e in real[4]]
    assert [(o, d) for o, d, _ in plans[1].annotations] == [
        (e.onset, e.duration) for e in real[1]] == [(0.0, 60.2)]
    assert [mi.read_events(mi_runs[s])[0].duration for s in ("S002R01", "S003R01",
                                                             "S004R01")] == [60.1, 60.2, 60.2]
    written = mi_lookalike.write_lookalike(tmp_path, settings)[1]
    ours, theirs = read_edf_header(written), read_edf_header(mi_runs["S001R04"].edf)
    for field in ("labels", "start", "n_records", "record_seconds", "header_bytes"):
        assert getattr(ours, field) == getattr(theirs, field), field
    assert ours.signals[:64] == theirs.signals[:64]  # units, ranges, samples per record
    # the recording field ("Startdate 12-AUG-2009 X X BCI2000") and the transducer fields
    real_bytes, our_bytes = mi_runs["S001R04"].edf.read_bytes(), written.read_bytes()
    assert our_bytes[88:168] == real_bytes[88:168]
    transducers = slice(256 + 65 * 16, 256 + 65 * 96)  # 65 signals: 64 + annotations
    assert our_bytes[transducers] == real_bytes[transducers]


# --- Sleep-EDF expanded: SC4001's hypnogram, the subject tables, the first 5 minutes --------


def hypnogram_only(folder: str) -> sleep_edf.Recording:
    """SC4001E0 with its real hypnogram; the full folder has no PSG, and read_events and the
    annotation parsing read the hypnogram alone."""
    hypnogram = realdata(folder, "sleep-cassette", "SC4001EC-Hypnogram.edf")
    return sleep_edf.Recording("SC4001E0", hypnogram.with_name("SC4001E0-PSG.edf"), hypnogram,
                               "SC00", 1, "SC")


def test_sc4001_hypnogram_154_annotations_from_1989_04_24_16_13():
    verified_by_publisher(SLEEP_EDF, ["sleep-cassette/SC4001EC-Hypnogram.edf",
                                      "SC-subjects.xls", "ST-subjects.xls"])
    rec = hypnogram_only(SLEEP_EDF)
    assert read_edf_header(rec.hypnogram).start == dt.datetime(1989, 4, 24, 16, 13, 0)
    events = sleep_edf.read_events(rec)
    assert len(events) == 154
    assert Counter(e.description for e in events) == {
        "Sleep stage W": 12, "Sleep stage 1": 24, "Sleep stage 2": 40, "Sleep stage 3": 48,
        "Sleep stage 4": 23, "Sleep stage R": 6, "Sleep stage ?": 1}
    assert {sleep_edf.annotation_kind(e.description) for e in events} == {"stage", "unscored"}
    # the runs follow each other with no gap, from the PSG's start to 24 h
    assert events[0].onset == 0.0 and events[-1].end == 86400.0
    assert all(a.end == b.onset for a, b in zip(events[:-1], events[1:], strict=True))
    assert events[-1].description == "Sleep stage ?"
    # the 5-minute folder holds the same hypnogram
    assert hypnogram_only(FIRST_5_MIN).hypnogram.read_bytes() == rec.hypnogram.read_bytes()


def test_sc4001_staged_as_the_field_does_gives_841_epochs():
    """3 and 4 merged into N3, '?' dropped, 30 min of wake kept on each side of the sleep
    period: 841 epochs (DeepSleepNet's published count for SC4001E0). The full night's PSG is
    not here: its scored epochs end at 79,500 s, within the hypnogram's 24 h, so the end of
    the signal would cut nothing the hypnogram scores."""
    rec = hypnogram_only(SLEEP_EDF)
    events = sleep_edf.read_events(rec)
    counts = Counter()
    starts, labels = sleep_edf.epochs_from_annotations(
        [e.onset for e in events], [e.duration for e in events],
        [e.description for e in events], rec.hypnogram, 100.0, 86400 * 100, counts)
    assert counts == {("unscored", "Sleep stage ?"): 1}
    assert len(starts) == 2650 and starts[-1] == (79500 - 30) * 100
    starts, labels = sleep_edf.trim_wake(starts, labels, 100.0, 30.0)
    assert len(starts) == 841
    by_stage = Counter(sleep_edf.STAGES[i] for i in labels)
    assert by_stage == {"W": 188, "N1": 58, "N2": 250, "N3": 220, "REM": 125}
    assert np.all(np.diff(starts) == 3000)  # one run of epochs: no gap in the kept night


def test_the_first_5_minutes_header_channels_rates_and_start():
    recordings = sleep_edf.find_recordings(realdata(FIRST_5_MIN))
    assert [(r.recording, r.subject, r.night, r.cohort) for r in recordings] == [
        ("SC4001E0", "SC00", 1, "SC")]
    rec = recordings[0]
    assert rec.hypnogram.name == "SC4001EC-Hypnogram.edf" and rec.problem == ""
    header = read_edf_header(rec.psg)
    rates = {label: header.sfreq(label) for label in header.labels}
    assert rates == {"EEG Fpz-Cz": 100.0, "EEG Pz-Oz": 100.0, "EOG horizontal": 100.0,
                     "Resp oro-nasal": 1.0, "EMG submental": 1.0, "Temp rectal": 1.0,
                     "Event marker": 1.0}
    assert header.start == read_edf_header(rec.hypnogram).start == dt.datetime(1989, 4, 24, 16,
                                                                               13)
    assert (header.n_records, header.record_seconds) == (10, 30.0)  # 300 s
    assert sleep_edf.read_header(rec).n_samples == 30000
    signals = sleep_edf.read_signals(rec, sleep_edf.EEG_CHANNELS)
    assert signals.data.shape == (2, 30000) and signals.sfreq == 100.0
    assert 2e-6 < float(signals.data.std(axis=1).min()) < 200e-6  # real EEG, in volts


def test_subject_ages_of_the_78_cassette_subjects():
    ages = sleep_edf.subjects_table(realdata(SLEEP_EDF))
    # Sleep-EDF: 78 cassette subjects aged 25-101 (SC-subjects.xls: one row per night, 153)
    assert len(ages) == 78
    assert sorted(int(s[2:]) for s in ages) == sorted(set(range(83)) - {39, 68, 69, 78, 79})
    assert (min(ages.values()), max(ages.values())) == (25.0, 101.0)
    assert (ages["SC00"], ages["SC01"], ages["SC02"], ages["SC82"]) == (33.0, 33.0, 26.0, 56.0)
    assert sleep_edf.subjects_table(realdata(FIRST_5_MIN)) == ages


def test_the_telemetry_table_is_not_a_source_of_ages(tmp_path):
    """ST-subjects.xls (22 subjects; "M1/F2", the reverse of the cassette table's "F=1") is
    not read: brain age is on the 78 cassette subjects. Beside SC-subjects.xls no ST id comes
    in, and alone it is not taken for the cassette table."""
    import xlrd

    sheet = xlrd.open_workbook(str(realdata(SLEEP_EDF, "ST-subjects.xls"))).sheet_by_index(0)
    assert sheet.row_values(1)[:3] == ["Nr", "Age", "M1/F2"] and sheet.nrows - 2 == 22
    assert not any(s.startswith("ST") for s in sleep_edf.subjects_table(realdata(SLEEP_EDF)))
    shutil.copy(realdata(SLEEP_EDF, "ST-subjects.xls"), tmp_path)
    with pytest.raises(DataError, match="no SC-subjects.xls"):
        sleep_edf.subjects_table(tmp_path)


def test_every_published_file_name_pairs_psg_and_hypnogram(tmp_path):
    """The 197 recordings of RECORDS (153 cassette, 44 telemetry) and the 197 hypnograms of
    SHA256SUMS.txt, as empty files: find_recordings pairs each PSG with its hypnogram by the
    first 6 characters and names subjects and nights as the dataset does."""
    psgs = realdata(SLEEP_EDF, "RECORDS").read_text().split()
    hypnograms = [line.split()[1] for line in
                  realdata(SLEEP_EDF, "SHA256SUMS.txt").read_text().splitlines()
                  if line.endswith("-Hypnogram.edf")]
    assert len(psgs) == len(hypnograms) == 197
    for name in psgs + hypnograms:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).touch()
    recordings = sleep_edf.find_recordings(tmp_path)
    assert [r.psg.relative_to(tmp_path).as_posix() for r in recordings] == sorted(
        psgs, key=lambda p: Path(p).name)
    assert all(r.problem == "" and r.hypnogram.name[:6] == r.recording[:6] for r in recordings)
    assert Counter(r.cohort for r in recordings) == {"SC": 153, "ST": 44}
    subjects = {r.subject for r in recordings}
    assert len([s for s in subjects if s.startswith("SC")]) == 78
    assert len([s for s in subjects if s.startswith("ST")]) == 22
    assert {r.night for r in recordings} == {1, 2}
    # RECORDS-v1 (the 61 recordings of the first release) are among them
    first_release = realdata(SLEEP_EDF, "RECORDS-v1").read_text().split()
    assert len(first_release) == 61
    assert {Path(n).name for n in first_release} <= {r.psg.name for r in recordings}


# --- CHB-MIT: chb01's summary, the .seizures files, the file lists ---------------------------

CHB01_SEIZURES = {"chb01_03.edf": (2996, 3036), "chb01_04.edf": (1467, 1494),
                  "chb01_15.edf": (1732, 1772), "chb01_16.edf": (1015, 1066),
                  "chb01_18.edf": (1720, 1810), "chb01_21.edf": (327, 420),
                  "chb01_26.edf": (1862, 1963)}


def test_chb01_summary_lists_the_seven_seizure_files_with_their_seconds():
    verified_by_publisher(CHBMIT, ["chb01/chb01-summary.txt", "RECORDS",
                                   "RECORDS-WITH-SEIZURES", "SUBJECT-INFO"] + [
        f"chb01/{name}.seizures" for name in CHB01_SEIZURES])
    entries = chbmit.parse_summary(realdata(CHBMIT, "chb01", "chb01-summary.txt"))
    listed = [n.split("/")[1] for n in realdata(CHBMIT, "RECORDS").read_text().split()
              if n.startswith("chb01/")]
    assert sorted(entries) == sorted(listed) and len(entries) == 42
    assert {name: e.seizures for name, e in entries.items() if e.seizures} == {
        name: ((float(start), float(end)),) for name, (start, end) in CHB01_SEIZURES.items()}
    with_seizures = [n.split("/")[1] for n in
                     realdata(CHBMIT, "RECORDS-WITH-SEIZURES").read_text().split()
                     if n.startswith("chb01/")]
    assert sorted(with_seizures) == sorted(CHB01_SEIZURES)


def test_chb01_montage_is_the_lookalikes_and_its_channel_map_finds_every_name():
    """The summary's 23 channels (T8-P8 twice) are the look-alike's layout, in order, and MNE's
    names of them (T8-P8-0, T8-P8-1) are the names config/channel_maps/chbmit.yaml uses."""
    text = realdata(CHBMIT, "chb01", "chb01-summary.txt").read_text()
    assert text.startswith("Data Sampling Rate: 256 Hz\n")
    montage = re.findall(r"^Channel \d+: (\S+)$", text.split("File Name:")[0], re.MULTILINE)
    assert len(montage) == 23 and montage.count("T8-P8") == 2
    assert tuple(montage) == chbmit_lookalike.LAYOUT
    names = mne_channel_names(montage)
    assert names[14] == "T8-P8-0" and names[22] == "T8-P8-1"
    check_channel_map("chbmit", set(names))


def test_the_seizures_files_hold_the_summary_onsets_at_256_hz():
    entries = chbmit.parse_summary(realdata(CHBMIT, "chb01", "chb01-summary.txt"))
    for name in CHB01_SEIZURES:
        notes = wfdb.rdann(str(realdata(CHBMIT, "chb01") / name), "seizures")
        assert notes.fs == 256 and list(notes.symbol) == ["[", "]"]
        assert entries[name].seizures == ((notes.sample[0] / 256, notes.sample[1] / 256),)
    # the two of patients whose summary is not here (their names: the RECORDS test below)
    for folder, name, seconds in (("chb02", "chb02_16+.edf", [2972, 3053]),
                                  ("chb06", "chb06_04.edf", [327, 347, 6211, 6231])):
        notes = wfdb.rdann(str(realdata(CHBMIT, folder) / name), "seizures")
        assert list(notes.sample / 256) == seconds


def test_every_published_chbmit_name_is_read_and_chb01_is_complete(tmp_path):
    """The 686 EDF files of RECORDS as empty files with chb01's real summary: every name is
    one find_recordings knows (chb17a_03, chb02_16+ ...), chb21 is chb01's patient, chb01's 42
    files are complete, the other folders want their summary."""
    names = realdata(CHBMIT, "RECORDS").read_text().split()
    assert len(names) == 686 == load_config()["datasets"]["chbmit"]["expected_recordings"]
    for name in names:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).touch()
    shutil.copy(realdata(CHBMIT, "chb01", "chb01-summary.txt"), tmp_path / "chb01")
    recordings = chbmit.find_recordings(tmp_path)
    assert len(recordings) == 686
    complete = [r.recording for r in recordings if not r.problem]
    assert len(complete) == 42 and all(r.startswith("chb01_") for r in complete)
    # each of the others names its folder's missing summary
    assert all(f"{r.recording[:5]}-summary.txt" in r.problem for r in recordings
               if not r.recording.startswith("chb01_"))
    by_id = {r.recording: r for r in recordings}
    assert (by_id["chb17a_03"].subject, by_id["chb17a_03"].session) == ("chb17", "a_03")
    assert (by_id["chb02_16+"].subject, by_id["chb02_16+"].session) == ("chb02", "16+")
    assert by_id["chb21_01"].subject == "chb01"
    info = realdata(CHBMIT, "SUBJECT-INFO").read_text().split("\n")
    cases = {line.split()[0] for line in info[1:] if line.strip()}
    assert {r.recording[:5] for r in recordings} == cases | {"chb24"}  # chb24: no entry


# --- Siena: PN01's seizure list --------------------------------------------------------------


@pytest.fixture
def pn01(tmp_path):
    """PN01 with its real list and a stand-in for its one EDF (PN01-1.edf, not here): a 1 Hz
    EDF whose header starts at the list's registration start (19.00.44) and ends at its
    registration end the next morning (08.29.41)."""
    folder = tmp_path / "PN01"
    folder.mkdir()
    shutil.copy(realdata(SIENA, "PN01", "Seizures-list-PN01.txt"), folder)
    seconds = (dt.datetime(2000, 1, 2, 8, 29, 41) - dt.datetime(2000, 1, 1, 19, 0, 44)).seconds
    edfio.Edf([edfio.EdfSignal(np.zeros(seconds), 1, label="EEG Fp1")],
              starttime=dt.time(19, 0, 44)).write(folder / "PN01-1.edf")
    return tmp_path


def test_pn01_list_two_seizures_with_its_quirks(pn01):
    """'File name: PN01.edf' (no file number), 'Start time:' for the seizure start, one time
    with colons (21:51:02) among dots, a registration past midnight."""
    path = pn01 / "PN01" / "Seizures-list-PN01.txt"
    text = path.read_text()
    assert "File name: PN01.edf" in text and "Start time: 21:51:02" in text
    assert "End time: 21.51.56" in text
    seizures = siena.parse_seizure_list(path, {"PN01-1.edf"})
    clock = [(s.file, s.start, s.end) for s in seizures]
    assert clock == [("PN01-1.edf", 21 * 3600 + 51 * 60 + 2, 21 * 3600 + 51 * 60 + 56),
                     ("PN01-1.edf", 7 * 3600 + 53 * 60 + 17, 7 * 3600 + 54 * 60 + 31)]
    recordings = siena.find_recordings(pn01)
    assert [(r.recording, r.subject, r.session, r.problem) for r in recordings] == [
        ("PN01-1", "PN01", "1", "")]
    events = siena.read_events(recordings[0])
    # 21:51:02 is 10,218 s after 19:00:44; 07:53:17 the next morning 46,353 s
    assert [(e.onset, e.duration) for e in events] == [(10218.0, 54.0), (46353.0, 74.0)]


def test_siena_lookalike_writes_pn01s_wording():
    """The look-alike's PN01-style list (every third patient's) as the real one: 'Start
    time:' without 'Seizure', the times in dots but the first start in colons, and a patient
    with one file named without its number."""
    plans = siena_lookalike.plan({"patients": 2, "files_per_patient": 1, "minutes_per_file": 5,
                                  "seed": 0})
    text = siena_lookalike.seizure_list_text([p for p in plans if p.patient == 1])
    real = realdata(SIENA, "PN01", "Seizures-list-PN01.txt").read_text()
    for line in ("File name: PN01.edf", "Registration start time: ", "Start time: ",
                 "End time: "):
        assert ("\n" + line) in real and ("\n" + line) in text
    times = re.findall(r"^(?:Registration )?(?:[Ss]tart|[Ee]nd) time: (\S+)$", text,
                       re.MULTILINE)
    first_start = re.search(r"^Start time: (\S+)$", text, re.MULTILINE)[1]
    assert ":" in first_start and all("." in t for t in times if t != first_start)
    path_names = {p.name for p in plans if p.patient == 1}
    assert path_names == {"PN01-1.edf"}


# --- PhysioNet 2018: tr03-0005's header and annotations, tr03-0029's annotations -------------


@pytest.fixture(scope="module")
def tr03_0005():
    """The record as find_recordings finds it (incomplete: its signal .mat is not here), and
    the same record for the functions that read only the header, .arousal and -arousal.mat."""
    recordings = pn18.find_recordings(realdata(PN18))
    assert [(r.recording, r.problem) for r in recordings] == [
        ("tr03-0005", "tr03-0005 has no tr03-0005.mat beside its header")]
    return dataclasses.replace(recordings[0], problem="")


def test_tr03_0005_header_13_signals_at_200_hz(tr03_0005):
    header = pn18.read_header(tr03_0005)
    assert header.channels == pn18.CHANNELS and len(header.channels) == 13
    assert header.channels[0] == "F3-M2" and header.channels[-2:] == ("SaO2", "ECG")
    assert header.sfreq == 200.0 and header.n_samples == 5147000  # 7 h 8 min 55 s
    raw = wfdb.rdheader(tr03_0005.record_path)
    assert set(raw.file_name) == {"tr03-0005.mat"} and set(raw.fmt) == {"16"}
    assert raw.units == ["uV"] * 11 + ["%", "mV"]


def test_tr03_0005_arousal_notes_and_event_spans(tr03_0005):
    notes = pn18.read_annotations(tr03_0005, 5147000)
    spans = Counter(kind for _, _, kind in notes.events)
    assert spans == {"arousal_rera": 27, "resp_centralapnea": 20, "resp_hypopnea": 14,
                     "resp_obstructiveapnea": 9}
    assert len(notes.stages) + 2 * len(notes.events) == 240  # notes as wfdb reads them
    assert Counter(pn18.STAGES[s] for _, s in notes.stages) == {
        "W": 29, "N1": 37, "N2": 26, "N3": 5, "REM": 3}
    assert notes.stages[0] == (72000, 0)  # the first note: W at 6 min
    events = pn18.read_events(tr03_0005)
    assert Counter(e.description for e in events) == {
        "arousal": 27, "rera": 27, "apnea_central": 20, "hypopnea": 14, "apnea_obstructive": 9}
    assert all(0 < e.duration and e.end <= 5147000 / 200 for e in events)


def mat_stage(path: Path, samples: np.ndarray) -> np.ndarray:
    """The stage the -arousal.mat's per-sample vectors give each sample of the notes (index
    into STAGES, -1 for none): the vectors run one sample ahead, so sample i is their i - 1."""
    names = {"wake": 0, "nonrem1": 1, "nonrem2": 2, "nonrem3": 3, "rem": 4}
    stage = np.full(len(samples), -1)
    with h5py.File(path, "r") as h5:
        for name, index in names.items():
            stage[np.asarray(h5[f"data/sleep_stages/{name}"][0, samples - 1]) == 1] = index
    return stage


def test_tr03_0005_stage_vectors_run_one_sample_ahead_of_the_notes(tr03_0005):
    """Each stage note's sample is where the vectors changed one sample before; the last
    sample of the record is undefined in the vectors, and not in what the reader reads."""
    notes = pn18.read_annotations(tr03_0005, 5147000)
    changes = np.array([sample for sample, _ in notes.stages[1:]])
    before, at = (mat_stage(tr03_0005.arousal_mat, changes + d) for d in (-1, 0))
    assert np.array_equal(at, [stage for _, stage in notes.stages[1:]])
    assert np.array_equal(before, [stage for _, stage in notes.stages[:-1]])
    with h5py.File(tr03_0005.arousal_mat, "r") as h5:
        undefined = h5["data/sleep_stages/undefined"][0, :]
        wake = h5["data/sleep_stages/wake"][0, :]
    # the first note (W) is at sample 72,000: the vectors change at 71,999
    assert (undefined[71998], undefined[71999], wake[71998], wake[71999]) == (1, 0, 0, 1)
    assert undefined[-1] == 1 and int(undefined.sum()) == 72000
    undefined = pn18.read_undefined(tr03_0005, 5147000)
    assert np.flatnonzero(undefined).tolist() == list(range(72000))


def test_tr03_0005_stages_from_the_notes_equal_the_challenges_stage_vectors(tr03_0005):
    counts = Counter()
    starts, labels, sfreq = pn18.read_labels(tr03_0005, None, counts=counts)
    assert sfreq == 200.0 and len(starts) == 845
    assert Counter(pn18.STAGES[i] for i in labels) == {"W": 367, "N1": 58, "N2": 267, "N3": 72,
                                                       "REM": 81}
    assert counts == {("unscored", "undefined"): 12}  # the 6 min before the first note
    for offset in (0, 5999):  # the epoch's first and last samples
        assert np.array_equal(mat_stage(tr03_0005.arousal_mat, starts + offset), labels)


def test_tr03_0029_keeps_the_last_epoch_the_vectors_mark_undefined(tmp_path):
    """tr03-0029's last stage run (N2 from sample 4,710,000) is 10 whole epochs to the
    record's end, whose last sample the vectors call undefined; read one sample later, the
    last epoch stays. Its header is not here: a stand-in gives tr03-0005's signals the
    length of the -arousal.mat (one value a sample)."""
    folder = tmp_path / "training" / "tr03-0029"
    shutil.copytree(realdata(PN18, "training", "tr03-0029"), folder)
    with h5py.File(folder / "tr03-0029-arousal.mat", "r") as h5:
        n_samples = max(h5["data/arousals"].shape)
    assert n_samples == 4770000
    header = realdata(PN18, "training", "tr03-0005", "tr03-0005.hea").read_text()
    (folder / "tr03-0029.hea").write_text(header.replace("tr03-0005", "tr03-0029").replace(
        " 5147000\n", f" {n_samples}\n", 1))
    rec = pn18.Recording("tr03-0029", folder)
    notes = pn18.read_annotations(rec, n_samples)
    assert Counter(kind for _, _, kind in notes.events) == {
        "resp_hypopnea": 85, "resp_obstructiveapnea": 61, "arousal_rera": 44,
        "resp_centralapnea": 7}
    assert len(notes.stages) + 2 * len(notes.events) == 496
    assert notes.stages[-1] == (4710000, 2)
    counts = Counter()
    starts, labels, _ = pn18.read_labels(rec, None, counts=counts)
    assert counts == {("unscored", "undefined"): 18}  # the 9 min before the first note
    assert starts[-1] == n_samples - 6000 and labels[-1] == 2
    for offset in (0, 5999):
        assert np.array_equal(mat_stage(rec.arousal_mat, starts + offset), labels)
