"""What every dataset reader promises (datasets/base.py), checked for each format the registry
knows on a small look-alike of its own, and on the publishers' files where ../shared/realdata
has whole recordings (PhysioNet MMI's S001, Sleep-EDF's first 5 minutes of SC4001E0).

The per-format test files keep what is particular to each format: its layout, its quirks, its
bad files and what its look-alike holds.
"""

from __future__ import annotations

import importlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from embedprobe.core.config import load_config
from embedprobe.core.errors import DataError
from embedprobe.datasets.base import Event, RecordingHeader, Signals
from embedprobe.datasets.registry import FORMATS, find_dataset_recordings
from embedprobe.pipeline.channel_maps import mapped_channels
from embedprobe.tasks.registry import TASKS, task_for

from helpers.realdata import realdata

CONFIG = load_config()
# Each format's smallest look-alike that still holds two labels (seconds each to write): its
# dataset entry is the shipped demo's, so these settings match the entry's reader settings
# (runs, sessions, run types).
SMALL = {
    "sleep_edf": {"subjects": 2, "nights": 1, "hours": 0.25, "seed": 0},
    "chbmit": {"patients": 2, "files_per_patient": 1, "minutes_per_file": 2, "seed": 0},
    "siena": {"patients": 2, "files_per_patient": 1, "minutes_per_file": 2, "seed": 0},
    "szcore_bids": {"source": "chbmit", "patients": 2, "files_per_patient": 1,
                    "minutes_per_file": 2, "seed": 0},
    "physionet_mi": {"subjects": 1, "runs": [4, 6], "trials_per_run": 6, "seed": 0},
    "bnci2014_001": {"subjects": 1, "sessions": ["T"], "runs_per_session": 1,
                     "trials_per_run": 8, "seed": 0},
    "bnci2014_008": {"subjects": 1, "selections": 1, "repetitions": 2, "seed": 0},
    "bi2013a": {"subjects": 1, "sessions": 1, "training_repetitions": 2,
                "online_repetitions": 1, "seed": 0},
    "tuab": {"train_normal": 1, "train_abnormal": 1, "eval_normal": 1, "eval_abnormal": 1,
             "minutes": 2, "seed": 0},
    "isruc": {"subgroup_I": 1, "subgroup_II": 0, "subgroup_III": 1, "hours": 1 / 6, "seed": 0},
    "bonn": {"clips_per_set": 1, "seed": 0},
    "dod": {"healthy": 1, "osa": 1, "hours": 1 / 6, "seed": 0},
    "ucddb": {"subjects": 2, "hours": 1 / 6, "seed": 0},
    "physionet2018": {"subjects": 2, "hours": 1 / 6, "seed": 0},
    "nakanishi2015": {"subjects": 1, "blocks": 1, "seed": 0},
    "eegmat": {"subjects": 1, "seconds": 20, "seed": 0},
    "dreamer": {"subjects": 1, "clips": 2, "seconds": 12, "baseline_seconds": 2, "seed": 0},
    "nsrr": {"study": "shhs", "participants": 2, "second_visits": 1, "hours": 0.25, "seed": 0},
    "wsc": {"participants": 2, "second_visits": 1, "hours": 0.25, "seed": 0},
    "stages": {"sites": ["GSBB", "MSTH"], "subjects": 1, "repeats": 1, "hours": 0.25,
               "seed": 0},
    "hmc": {"subjects": 2, "hours": 1 / 6, "seed": 0},
    "dcsm": {"subjects": 2, "hours": 1 / 6, "seed": 0},
    "mass": {"subsets": [1, 2], "subjects": 1, "hours": 1 / 6, "seed": 0},
    "tusz": {"train": 1, "dev": 1, "eval": 1, "files_per_subject": 1, "minutes": 2, "seed": 0},
    "nmt": {"train_normal": 1, "train_abnormal": 1, "eval_normal": 1, "eval_abnormal": 1,
            "minutes": 2, "seed": 0},
    "moabb": {"moabb_dataset": "BNCI2014_004", "subjects": 4, "trials_per_run": 2, "seed": 0},
    "helsinki": {"neonates": 2, "minutes": 2, "seed": 0},
    "seizeit1": {"patients": 2, "files_per_patient": 1, "minutes_per_file": 2, "seed": 0},
    "epilepsiae": {"patients": 2, "blocks_per_patient": 1, "minutes_per_block": 2, "seed": 0},
}
# format -> the realdata folder that holds whole recordings of it
REAL = {"physionet_mi": "eeg-motor-movementimagery-dataset-1.0.0/files",
        "sleep_edf": "sleep-edf-first-5-minutes"}


def demo_dataset(fmt: str) -> str | None:
    """The shipped demo dataset of the format (its entry: reader settings, units, channel map);
    None where it has none."""
    return next((name for name, entry in CONFIG["datasets"].items()
                 if entry["format"] == fmt and "generator" in entry), None)


@dataclass
class Source:
    fmt: str
    dataset: str  # its entry in the shipped config
    root: Path
    written: list[Path] | None  # what the look-alike wrote; None for the publishers' files

    @property
    def reader(self):
        return FORMATS[self.fmt].reader

    @property
    def entry(self) -> dict:
        return CONFIG["datasets"][self.dataset]

    def recordings(self) -> list:
        return find_dataset_recordings(CONFIG, {}, self.dataset, self.root)


CASES = [*((fmt, "lookalike") for fmt in FORMATS), *((fmt, "real") for fmt in REAL)]


@pytest.fixture(scope="module", params=CASES, ids=[f"{f}-{kind}" for f, kind in CASES])
def source(request, tmp_path_factory) -> Source:
    """The format's files: a look-alike written once for this module, or the real ones."""
    fmt, kind = request.param
    if kind == "real":
        return Source(fmt, demo_dataset(fmt), realdata(REAL[fmt]), None)
    root = tmp_path_factory.mktemp(fmt)
    lookalike = importlib.import_module(FORMATS[fmt].lookalike)
    return Source(fmt, demo_dataset(fmt), root, lookalike.write_lookalike(root, SMALL[fmt]))


def test_every_format_has_a_small_lookalike_and_a_demo_entry():
    assert set(SMALL) == set(FORMATS) and set(REAL) <= set(FORMATS)
    for fmt in FORMATS:
        assert demo_dataset(fmt) is not None, f"no demo entry (one with a generator) of {fmt}"


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_the_registry_names_the_reader_its_lookalike_writer_and_its_task(fmt):
    assert FORMATS[fmt].reader.FORMAT == fmt
    assert callable(importlib.import_module(FORMATS[fmt].lookalike).write_lookalike)
    assert FORMATS[fmt].task in TASKS


def test_recordings_are_found_sorted_unique_and_complete(source):
    if source.written is not None:  # MANIFEST.tsv last: its presence marks a whole dataset
        assert source.written[-1] == source.root / "MANIFEST.tsv"
        assert all(p.is_file() for p in source.written)
    recordings = source.recordings()
    ids = [r.recording for r in recordings]
    assert ids and ids == sorted(ids) and len(set(ids)) == len(ids)
    for rec in recordings:
        assert rec.problem == "", rec.recording
        assert all(isinstance(v, str) and v for v in (rec.recording, rec.subject)), rec
        assert isinstance(rec.session, str), rec.recording
        assert isinstance(rec.files, tuple) and all(p.is_file() for p in rec.files), rec.files
        assert rec.signal_path in rec.files, rec.recording
        if source.written is not None:
            assert set(rec.files) <= set(source.written), rec.recording


def test_headers_promise_unique_channels_a_rate_and_a_length(source):
    for rec in source.recordings():
        header = source.reader.read_header(rec)
        assert isinstance(header, RecordingHeader)
        assert isinstance(header.channels, tuple) and header.channels
        assert all(isinstance(c, str) and c for c in header.channels)
        assert len(set(header.channels)) == len(header.channels), rec.recording
        assert header.sfreq > 0 and isinstance(header.n_samples, int) and header.n_samples > 0


def read_channels(source: Source, header: RecordingHeader) -> list[str]:
    """The recording's channels a model family reads (the dataset's channel map), in the
    header's order."""
    mapped = set(mapped_channels(CONFIG, source.dataset))
    return [c for c in header.channels if c in mapped]


def test_signals_come_as_the_header_promises_in_volts(source):
    rec = source.recordings()[0]
    header = source.reader.read_header(rec)
    channels = read_channels(source, header)
    assert channels, f"no channel of {rec.recording} is in the channel map"
    signals = source.reader.read_signals(rec, channels)
    assert isinstance(signals, Signals)
    assert signals.ch_names == channels and signals.sfreq == header.sfreq
    assert signals.data.dtype == np.float32
    assert signals.data.shape == (len(channels), header.n_samples)
    assert np.isfinite(signals.data).all()
    # EEG in volts: tens of microvolts, not microvolts' numbers; some channel not flat
    spread = signals.data.std(axis=1)
    assert spread.max() > 1e-7 and np.median(np.abs(signals.data)) < 1e-3, spread
    # the rows follow the order asked for, not the file's
    backwards = source.reader.read_signals(rec, channels[::-1])
    assert backwards.ch_names == channels[::-1]
    np.testing.assert_array_equal(backwards.data, signals.data[::-1])


def test_a_span_reads_those_samples_and_stops_at_the_recordings_end(source):
    rec = source.recordings()[0]
    header = source.reader.read_header(rec)
    channels = read_channels(source, header)[:2]
    whole = source.reader.read_signals(rec, channels).data
    n = header.n_samples
    first, stop = n // 3, n // 3 + min(500, n // 3)
    part = source.reader.read_signals(rec, channels, (first, stop))
    assert part.ch_names == channels and part.sfreq == header.sfreq
    np.testing.assert_array_equal(part.data, whole[:, first:stop])
    tail = source.reader.read_signals(rec, channels, (n - 10, n + 100)).data
    np.testing.assert_array_equal(tail, whole[:, n - 10:])


def test_events_are_annotations_in_seconds_from_the_signals_start(source):
    for rec in source.recordings():
        events = source.reader.read_events(rec)
        assert isinstance(events, list) and all(isinstance(e, Event) for e in events)
        assert all(e.onset >= 0 and e.duration >= 0 and np.isfinite(e.end) for e in events)
        assert all(isinstance(e.description, str) and e.description for e in events)


def test_the_labelling_tasks_units_lie_within_each_recording(source):
    """The index's units (the format's labelling task over the reader): whole units inside
    the signal, at the header's rate, labels that name a class; a look-alike holds two."""
    task = task_for(FORMATS[source.fmt].task)
    classes = task.classes or source.reader.CLASSES  # a recording-level task: the reader's
    seconds = source.entry["epoch_seconds"]
    seen = Counter()
    for rec in source.recordings():
        header = source.reader.read_header(rec)
        units = task.units(source.reader, rec, source.entry, Counter())
        assert units.sfreq == header.sfreq and len(units.starts) == len(units.labels) > 0
        length = round(seconds * units.sfreq)
        assert units.starts.min() >= 0 and units.starts.max() + length <= header.n_samples
        assert 0 <= units.labels.min() and units.labels.max() < len(classes), rec.recording
        seen.update(units.labels.tolist())
    if source.written is not None:
        assert len(seen) >= 2, seen


def test_the_optional_tables_cover_every_recording(source):
    """subjects_table (brain age): an age for every subject found, where the reader has one;
    recording_label (recording-level tasks): one of the reader's CLASSES for each recording."""
    reader, recordings = source.reader, source.recordings()
    if hasattr(reader, "subjects_table"):
        ages = reader.subjects_table(source.root)
        assert {r.subject for r in recordings} <= set(ages)
        assert all(isinstance(age, float) and 0 < age < 120 for age in ages.values())
    if hasattr(reader, "recording_label"):
        assert {reader.recording_label(r) for r in recordings} <= set(reader.CLASSES)


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_a_missing_folder_is_refused_naming_it_with_a_fix(fmt, tmp_path):
    absent = tmp_path / "not here"
    with pytest.raises(DataError) as refused:
        find_dataset_recordings(CONFIG, {}, demo_dataset(fmt), absent)
    assert str(absent) in str(refused.value) and refused.value.fix
    assert not absent.exists()
