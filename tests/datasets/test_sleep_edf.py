"""The Sleep-EDF reader on real EDF+ files written by the demo generator and read through MNE."""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import shutil

import numpy as np
import pytest

from embedprobe.datasets.sleep_edf import lookalike as demo_data
from embedprobe.datasets.sleep_edf import reader as sleep_edf
from embedprobe.datasets.sleep_edf.reader import DataError

DEMO = {"n_subjects": 3, "nights": 1, "hours": 1.0, "seed": 7}
EPOCH = 3000  # samples per 30 s epoch at 100 Hz
UV_STEP_V = 1000 / 65535 * 1e-6  # quantization step of the demo's +-500 uV EEG range, in volts


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    root = tmp_path_factory.mktemp("sleep_edf")
    demo_data.generate(root, **DEMO)
    return root, demo_data.plan(**DEMO)


def truth(stages: np.ndarray, trim_epochs: int | None) -> tuple[np.ndarray, np.ndarray]:
    """Expected (starts, labels) from the generator's per-epoch codes, written independently."""
    index = {"W": 0, "1": 1, "2": 2, "3": 3, "4": 3, "R": 4}
    kept = np.array([i for i, code in enumerate(stages) if code in index])
    labels = np.array([index[stages[i]] for i in kept])
    if trim_epochs is not None:
        asleep = kept[labels != 0]
        inside = (kept >= asleep[0] - trim_epochs) & (kept <= asleep[-1] + trim_epochs)
        kept, labels = kept[inside], labels[inside]
    return kept * EPOCH, labels


def copy_recording(rec: sleep_edf.Recording, folder, psg_stem: str, hyp_stem: str | None):
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(rec.psg, folder / f"{psg_stem}-PSG.edf")
    if hyp_stem:
        shutil.copy(rec.hypnogram, folder / f"{hyp_stem}-Hypnogram.edf")
    return sleep_edf.find_recordings(folder)[0]


def test_reader_recovers_every_label_of_the_generated_nights(demo):
    root, plans = demo
    recordings = sleep_edf.find_recordings(root)
    assert [r.recording for r in recordings] == ["SC4001E0", "SC4011E0", "SC4021E0"]
    seen = set()
    for plan, rec in zip(plans, recordings, strict=True):
        assert rec.psg.name == plan.psg_name and rec.hypnogram.name == plan.hypnogram_name
        for minutes, trim_epochs in ((30.0, 60), (10.0, 20), (None, None)):
            starts, labels, sfreq = sleep_edf.read_labels(rec, trim_wake_minutes=minutes)
            want_starts, want_labels = truth(plan.stages, trim_epochs)
            assert sfreq == 100.0
            assert starts.dtype == np.int64 and labels.dtype == np.int8
            np.testing.assert_array_equal(starts, want_starts)
            np.testing.assert_array_equal(labels, want_labels)
        seen |= set(labels.tolist())
    assert seen == {0, 1, 2, 3, 4}


def test_trimming_keeps_30_minutes_of_wake_around_sleep(demo):
    root, plans = demo
    rec = sleep_edf.find_recordings(root)[0]
    starts, labels, _ = sleep_edf.read_labels(rec)
    all_starts, all_labels, _ = sleep_edf.read_labels(rec, trim_wake_minutes=None)
    asleep = np.flatnonzero(labels != 0)
    # exactly 60 wake epochs (30 min) before the first and after the last sleep epoch
    assert asleep[0] == 60 and len(labels) - 1 - asleep[-1] == 60
    assert np.all(labels[:60] == 0) and np.all(labels[-60:] == 0)
    # the demo's 35-50 min of wake on each side means trimming really cut something
    assert 0 < len(all_labels) - len(labels) <= 2 * 40
    assert set(starts) <= set(all_starts)


def test_read_night_returns_the_written_signals_in_volts(demo):
    root, plans = demo
    rec = sleep_edf.find_recordings(root)[1]
    night = sleep_edf.read_night(rec, channels=("EEG Pz-Oz", "EEG Fpz-Cz"))
    written = {c.label: c.data for c in demo_data.synthesize(plans[1])}
    assert night.ch_names == ["EEG Pz-Oz", "EEG Fpz-Cz"] and night.sfreq == 100.0
    assert night.signals.dtype == np.float32
    assert night.signals.shape == (2, len(plans[1].stages) * EPOCH)
    for row, label in enumerate(night.ch_names):
        expected_v = np.clip(written[label], -500, 500) * 1e-6
        assert np.max(np.abs(night.signals[row] - expected_v)) < UV_STEP_V
    # tens of microvolts, as scalp EEG is
    assert 5e-6 < night.signals.std() < 1e-4
    starts, labels, _ = sleep_edf.read_labels(rec)
    np.testing.assert_array_equal(night.starts, starts)
    np.testing.assert_array_equal(night.labels, labels)


def test_a_span_of_samples_reads_those_samples_as_the_whole_file_has_them(demo):
    """Readers read only the stretch the windows need (window_source): the same float32
    values as the whole file's, across MNE's one-hour reading chunks; a span past the end
    stops at the end; a backwards span is refused."""
    from embedprobe.datasets.base import span_within

    root, _plans = demo
    rec = sleep_edf.find_recordings(root)[1]
    channels = ["EEG Fpz-Cz", "EEG Pz-Oz"]
    whole = sleep_edf.read_signals(rec, channels).data
    n = whole.shape[-1]
    for first, stop in [(0, 7), (12_345, 12_345 + 3000), (359_990, 360_020), (n - 5, n + 500),
                        (n + 10, n + 20)]:
        part = sleep_edf.read_signals(rec, channels, span=(first, stop))
        assert part.sfreq == 100.0
        assert part.data.tobytes() == whole[:, first:stop].tobytes(), (first, stop)
    assert span_within(None, 10) == (0, 10) and span_within((3, 99), 10) == (3, 10)
    with pytest.raises(ValueError, match="0 <= first <= stop"):
        span_within((5, 4), 10)


def test_a_thread_opens_a_file_once_for_its_parts_and_again_when_it_changed(demo, tmp_path,
                                                                           monkeypatch):
    """MNE's open reads every annotation record of an EDF+ file: the parts of one recording
    read by one thread share it; a rewritten file (new mtime or size) is opened afresh."""
    import mne

    root, _plans = demo
    rec = sleep_edf.find_recordings(root)[0]
    copy = dataclasses.replace(rec, psg=tmp_path / rec.psg.name)
    shutil.copyfile(rec.psg, copy.psg)
    opened = []
    original = mne.io.read_raw_edf
    monkeypatch.setattr(mne.io, "read_raw_edf",
                        lambda path, **kw: opened.append(path) or original(path, **kw))
    channels = ["EEG Fpz-Cz"]
    first = sleep_edf.read_signals(copy, channels, span=(0, 3000)).data
    sleep_edf.read_signals(copy, channels, span=(3000, 6000))
    assert len(opened) == 1
    sleep_edf.read_signals(copy, ["EEG Fpz-Cz", "EEG Pz-Oz"], span=(0, 10))  # other channels
    assert len(opened) == 2
    other = sleep_edf.find_recordings(root)[1]  # the same file name's content replaced
    shutil.copyfile(other.psg, copy.psg)
    os.utime(copy.psg, ns=(1, 1))
    again = sleep_edf.read_signals(copy, channels, span=(0, 3000)).data
    assert len(opened) == 3 and again.tobytes() != first.tobytes()
    assert again.tobytes() == sleep_edf.read_signals(other, channels, span=(0, 3000)).data.tobytes()


@pytest.mark.parametrize(
    "text, stage",
    [
        ("Sleep stage W", 0),
        ("Sleep stage 1", 1),
        ("Sleep stage 2", 2),
        ("Sleep stage 3", 3),
        ("Sleep stage 4", 3),
        ("Sleep stage R", 4),
        ("Sleep stage ?", None),
        ("Movement time", None),
    ],
)
def test_stage_mapping(text, stage, tmp_path):
    assert sleep_edf.stage_of(text, tmp_path / "x-Hypnogram.edf") == stage
    if stage is not None:
        assert sleep_edf.STAGES[stage] in {"W", "N1", "N2", "N3", "REM"}


def test_unknown_stage_label_is_a_data_error_naming_file_and_label(tmp_path):
    with pytest.raises(DataError) as err:
        sleep_edf.stage_of("Sleep stage 5", tmp_path / "SC4001EC-Hypnogram.edf")
    assert "SC4001EC-Hypnogram.edf" in err.value.message and "Sleep stage 5" in err.value.message
    assert err.value.fix


def test_epochs_split_runs_drop_unscored_and_the_part_past_the_end(tmp_path):
    starts, labels = sleep_edf.epochs_from_annotations(
        onsets=[0, 90, 120, 150, 240],
        durations=[90, 30, 30, 90, 60],
        descriptions=[
            "Sleep stage W",
            "Sleep stage ?",
            "Movement time",
            "Sleep stage 4",
            "Sleep stage R",
        ],
        source=tmp_path / "h.edf",
        sfreq=100,
        n_samples=280 * 100,  # the REM run's second epoch (270-300 s) ends past the signal
    )
    np.testing.assert_array_equal(starts, [0, 3000, 6000, 15000, 18000, 21000, 24000])
    np.testing.assert_array_equal(labels, [0, 0, 0, 3, 3, 3, 4])


def test_overlapping_stage_annotations_are_refused(tmp_path):
    with pytest.raises(DataError, match="overlap"):
        sleep_edf.epochs_from_annotations(
            [0, 30], [60, 30], ["Sleep stage W", "Sleep stage 1"], tmp_path / "h.edf", 100, 9000
        )


@pytest.mark.parametrize(
    "psg, hypnogram, subject, night, cohort",
    [
        ("SC4001E0", "SC4001EC", "SC00", 1, "SC"),
        ("SC4002E0", "SC4002EC", "SC00", 2, "SC"),
        ("SC4011E0", "SC4011EH", "SC01", 1, "SC"),
        ("SC4822G0", "SC4822GC", "SC82", 2, "SC"),
        ("ST7011J0", "ST7011JP", "ST01", 1, "ST"),
        ("ST7242J0", "ST7242JA", "ST24", 2, "ST"),
    ],
)
def test_names_give_subject_night_and_hypnogram(tmp_path, psg, hypnogram, subject, night, cohort):
    (tmp_path / f"{psg}-PSG.edf").touch()
    (tmp_path / f"{hypnogram}-Hypnogram.edf").touch()
    (tmp_path / "SC4991EC-Hypnogram.edf").touch()  # another night's hypnogram must not match
    [rec] = sleep_edf.find_recordings(tmp_path)
    assert rec == sleep_edf.Recording(
        psg,
        tmp_path / f"{psg}-PSG.edf",
        tmp_path / f"{hypnogram}-Hypnogram.edf",
        subject,
        night,
        cohort,
    )


def test_find_recordings_sorts_and_leaves_missing_hypnograms_none(tmp_path):
    cassette, telemetry = tmp_path / "sleep-cassette", tmp_path / "sleep-telemetry"
    cassette.mkdir(), telemetry.mkdir()
    for path in (
        telemetry / "ST7011J0-PSG.edf",
        cassette / "SC4012E0-PSG.edf",
        cassette / "SC4011E0-PSG.edf",
        cassette / "SC4011EH-Hypnogram.edf",
    ):
        path.touch()
    recordings = sleep_edf.find_recordings(tmp_path)
    assert [r.recording for r in recordings] == ["SC4011E0", "SC4012E0", "ST7011J0"]
    assert [r.hypnogram is None for r in recordings] == [False, True, True]
    (tmp_path / "empty").mkdir()
    assert sleep_edf.find_recordings(tmp_path / "empty") == []  # the registry reports "missing"


def test_bad_names_and_missing_root_are_data_errors(tmp_path):
    with pytest.raises(DataError, match="does not exist"):
        sleep_edf.find_recordings(tmp_path / "nowhere")
    (tmp_path / "night1-PSG.edf").touch()
    with pytest.raises(DataError, match="night1-PSG.edf") as err:
        sleep_edf.find_recordings(tmp_path)
    assert "SC4ssNE0-PSG.edf" in err.value.fix


def test_psg_without_hypnogram_names_the_psg_and_the_pattern(demo, tmp_path):
    rec = copy_recording(sleep_edf.find_recordings(demo[0])[0], tmp_path, "SC4001E0", None)
    assert rec.hypnogram is None
    for read in (sleep_edf.read_labels, sleep_edf.read_night):
        with pytest.raises(DataError) as err:
            read(rec)
        assert "SC4001E0-PSG.edf" in err.value.message
        assert "SC4001??-Hypnogram.edf" in err.value.message


def test_hypnogram_with_unknown_label_names_file_and_label(demo, tmp_path):
    root, plans = demo
    rec = copy_recording(sleep_edf.find_recordings(root)[0], tmp_path, "SC4001E0", None)
    bad = tmp_path / "SC4001EC-Hypnogram.edf"
    demo_data.write_hypnogram(
        bad,
        [(0, 600, "Sleep stage W"), (600, 60, "Sleep stage X"), (660, 60, "Sleep stage 2")],
        plans[0].start,
    )
    with pytest.raises(DataError) as err:
        sleep_edf.read_labels(dataclasses.replace(rec, hypnogram=bad))
    assert str(bad) in err.value.message and "Sleep stage X" in err.value.message


def test_hypnogram_starting_later_than_the_psg_shifts_the_epochs(demo, tmp_path):
    root, plans = demo
    rec = copy_recording(sleep_edf.find_recordings(root)[0], tmp_path, "SC4001E0", None)
    late = tmp_path / "SC4001EC-Hypnogram.edf"
    stages = [(0, 60, "Sleep stage W"), (60, 90, "Sleep stage 2")]
    demo_data.write_hypnogram(late, stages, plans[0].start + dt.timedelta(seconds=60))
    starts, labels, _ = sleep_edf.read_labels(dataclasses.replace(rec, hypnogram=late))
    np.testing.assert_array_equal(starts, [6000, 9000, 12000, 15000, 18000])
    np.testing.assert_array_equal(labels, [0, 0, 2, 2, 2])


@pytest.mark.parametrize("which", ["psg", "hypnogram"])
def test_truncated_edf_is_never_silently_read(demo, tmp_path, which):
    rec = copy_recording(sleep_edf.find_recordings(demo[0])[0], tmp_path, "SC4001E0", "SC4001EC")
    path = rec.psg if which == "psg" else rec.hypnogram
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 100])  # MNE alone would read the shorter file
    for read in (sleep_edf.read_labels, sleep_edf.read_night):
        with pytest.raises(DataError, match="truncated") as err:
            read(rec)
        assert str(path) in err.value.message


def test_unknown_record_count_is_taken_from_the_file_size(demo, tmp_path):
    rec = copy_recording(sleep_edf.find_recordings(demo[0])[0], tmp_path, "SC4001E0", "SC4001EC")
    known = sleep_edf.read_edf_header(rec.psg)
    data = bytearray(rec.psg.read_bytes())
    data[236:244] = b"-1      "  # EDF allows -1 while recording
    rec.psg.write_bytes(bytes(data))
    assert sleep_edf.read_edf_header(rec.psg).n_records == known.n_records


def test_garbage_file_is_a_data_error_naming_it(demo, tmp_path):
    rec = copy_recording(sleep_edf.find_recordings(demo[0])[0], tmp_path, "SC4001E0", "SC4001EC")
    rec.psg.write_bytes(b"not an edf file" * 10)
    with pytest.raises(DataError, match="not a readable EDF") as err:
        sleep_edf.read_labels(rec)
    assert "SC4001E0-PSG.edf" in err.value.message


def test_missing_channel_names_the_file_and_lists_its_channels(demo, tmp_path):
    root, plans = demo
    rec = copy_recording(sleep_edf.find_recordings(root)[0], tmp_path, "SC4001E0", "SC4001EC")
    only = [c for c in demo_data.synthesize(plans[0]) if c.label in ("EEG Fpz-Cz", "Temp rectal")]
    demo_data.write_psg(rec.psg, only, plans[0].start)
    for read in (sleep_edf.read_labels, sleep_edf.read_night):
        with pytest.raises(DataError) as err:
            read(rec)
        message = err.value.message
        assert str(rec.psg) in message and "EEG Pz-Oz" in message
        assert "it has EEG Fpz-Cz, Temp rectal" in message


def test_subjects_table_gives_each_subjects_age(demo, tmp_path):
    root, plans = demo
    assert sleep_edf.subjects_table(root) == {f"SC{p.subject:02d}": float(p.age) for p in plans}
    with pytest.raises(DataError, match="SC-subjects.xls") as err:
        sleep_edf.subjects_table(tmp_path)
    assert "SC-subjects.xls" in err.value.fix
