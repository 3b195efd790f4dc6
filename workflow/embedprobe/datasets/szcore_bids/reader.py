"""Seizure datasets in BIDS as the SzCORE releases lay them out (CHB-MIT, Siena, SeizeIT2).

Layout (EEG-BIDS; the converter is esl-epfl/epilepsy2bids, the releases Zenodo 10259996 for
CHB-MIT, 10640762 for Siena, OpenNeuro ds005873 for SeizeIT2):

    sub-01/ses-01/eeg/sub-01_ses-01_task-szMonitoring_run-00_eeg.edf     the signals
    sub-01/ses-01/eeg/sub-01_ses-01_task-szMonitoring_run-00_eeg.json    its sidecar
    sub-01/ses-01/eeg/sub-01_ses-01_task-szMonitoring_run-00_events.tsv  its events
    participants.tsv, dataset_description.json, events.json

The events file holds one row per event: `onset` and `duration` in seconds from the start of
the EDF file and its label in `eventType` (SzCORE; the HED-SCORE vocabulary of the release's
events.json: `bckg` for background, `sz` or `sz_<type>` such as `sz_foc_ia` for a seizure),
or in `trial_type` (plain BIDS), plus columns the reader does not need (confidence, channels,
dateTime, recordingDuration). A recording without seizures has one `bckg` row over its length.

Files are found and the events read through MNE-BIDS (find_matching_paths,
events_file_to_annotation_kwargs), signals through MNE (datasets/edf.py). A recording is one EDF
file; its subject is `sub-XX` (CHB-MIT's chb21 is sub-01's ses-02 there), its session the
`ses-` and `run-` entities. A recording whose events file is missing is incomplete (`problem`);
an event label outside that vocabulary, an event outside its recording, or a sidecar whose
sampling rate disagrees with the EDF header is refused, naming the file.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from embedprobe.core.errors import DataError
from embedprobe.datasets.base import Event, RecordingHeader, Signals, present, refuse_incomplete
from embedprobe.datasets.edf import (
    SignalsInEdf,
    read_edf_header,
    read_edf_signals,
    recording_header,
)
from embedprobe.datasets.walk import require_folder

FORMAT = "szcore_bids"
SEIZURE = "seizure"
BACKGROUND = "bckg"
SEIZURE_LABEL = "sz"  # the unclassified seizure; a typed one is sz_<type> (HED-SCORE)
LABEL_COLUMNS = ("eventType", "trial_type")  # SzCORE's, then plain BIDS's
# The events file writes seconds to 2 decimals: an event may end that much past the signal.
ROUNDING_S = 0.005


@dataclass(frozen=True)
class Recording(SignalsInEdf):
    recording: str  # the file's name without `_eeg.edf`: "sub-01_ses-01_task-szMonitoring_run-00"
    edf: Path
    events: Path  # its _events.tsv (may not exist)
    sidecar: Path  # its _eeg.json (may not exist)
    subject: str  # "sub-01"
    session: str  # "ses-01_run-00"
    problem: str = ""

    @property
    def files(self) -> tuple[Path, ...]:
        return present(self.edf, self.events, self.sidecar)


def find_recordings(root: Path) -> list[Recording]:
    """Every sub-*/[ses-*/]eeg/*_eeg.edf under root, sorted by id; one without its events file is
    incomplete (its `problem` names the file)."""
    from mne_bids import find_matching_paths

    root = require_folder(root, "BIDS",
                          fix="unpack the SzCORE BIDS release there (the folder that holds "
                              "sub-01/, participants.tsv), or write the look-alike (the "
                              "demo_data rule)")
    recordings: dict[str, Recording] = {}
    for path in find_matching_paths(root, datatypes="eeg", suffixes="eeg", extensions=".edf"):
        edf = Path(path.fpath)
        stem = edf.name.removesuffix("_eeg.edf")
        if stem in recordings:
            raise DataError(f"recording {stem} is there twice: {recordings[stem].edf} and {edf}",
                            fix="keep one copy under the data root")
        events = edf.with_name(f"{stem}_events.tsv")
        session = "_".join(f"{key}-{value}" for key, value in
                           (("ses", path.session), ("run", path.run)) if value is not None)
        problem = "" if events.is_file() else (
            f"no {events.name} beside {edf.name} (it lists the recording's seizures)")
        recordings[stem] = Recording(stem, edf, events, edf.with_name(f"{stem}_eeg.json"),
                                     f"sub-{path.subject}", session or "1", problem)
    return [recordings[k] for k in sorted(recordings)]


def read_header(rec: Recording) -> RecordingHeader:
    """Every channel as MNE names it; rate and length of the first."""
    return recording_header(rec.edf, "use the EDF file of the release")


def read_signals(rec: Recording, channels: Sequence[str], span=None) -> Signals:
    return read_edf_signals(rec.edf, channels, span=span)


def _check_sidecar(rec: Recording, sfreq: float) -> None:
    """The sidecar's SamplingFrequency is the EDF's (a file of another recording beside it
    would put its events on the wrong samples)."""
    if not rec.sidecar.is_file():
        return
    try:
        stated = json.loads(rec.sidecar.read_text())["SamplingFrequency"]
    except (ValueError, KeyError) as error:
        raise DataError(f"{rec.sidecar}: not a BIDS EEG sidecar ({error})",
                        fix=f"restore {rec.sidecar.name} from the release") from None
    if abs(float(stated) - sfreq) > 1e-6:
        raise DataError(f"{rec.sidecar}: SamplingFrequency {stated} but {rec.edf.name} is "
                        f"recorded at {sfreq:g} Hz",
                        fix=f"restore {rec.edf.name} and {rec.sidecar.name} of one recording "
                            "from the release")


def event_labels(rec: Recording) -> list[tuple[float, float, str]]:
    """(onset, duration, label) of every row of the events file, read by MNE-BIDS."""
    from mne_bids import events_file_to_annotation_kwargs

    columns = _header(rec.events)
    if not any(c in columns for c in LABEL_COLUMNS):
        raise DataError(f"{rec.events}: no {' or '.join(LABEL_COLUMNS)} column (its columns: "
                        f"{', '.join(columns)})",
                        fix="write each event's label in an eventType column (bckg, sz, "
                            "sz_<type>), as the SzCORE releases do")
    kwargs = events_file_to_annotation_kwargs(rec.events, verbose="error")
    if LABEL_COLUMNS[0] in columns:  # not a BIDS column: MNE-BIDS keeps it among the extras
        labels = [str(row[LABEL_COLUMNS[0]]) for row in kwargs["extras"] or []]
    else:
        labels = [str(d) for d in kwargs["description"]]
    return [(float(o), float(d), label)
            for o, d, label in zip(kwargs["onset"], kwargs["duration"], labels, strict=True)]


def _header(path: Path) -> list[str]:
    with path.open(encoding="utf-8") as f:
        return f.readline().rstrip("\n").split("\t")


def is_seizure_label(label: str) -> bool:
    return label == SEIZURE_LABEL or label.startswith(SEIZURE_LABEL + "_")


def read_events(rec: Recording) -> list[Event]:
    """The recording's seizures (background rows dropped), in seconds from the start of its EDF
    file. An unknown label or an event outside the recording is refused, naming the file."""
    refuse_incomplete(rec, f"put {rec.events.name} from the release beside {rec.edf}")
    seconds = read_edf_header(rec.edf).seconds
    _check_sidecar(rec, read_header(rec).sfreq)
    events = []
    for onset, duration, label in event_labels(rec):
        if label != BACKGROUND and not is_seizure_label(label):
            raise DataError(f"{rec.events}: unknown event label {label!r} at {onset:g} s",
                            fix=f"label each event {BACKGROUND} (background), {SEIZURE_LABEL} "
                                f"or {SEIZURE_LABEL}_<type> (a seizure; the HED-SCORE types "
                                "of the release's events.json)")
        if onset < 0 or duration < 0 or onset + duration > seconds + ROUNDING_S:
            raise DataError(f"{rec.events}: the {label} event at {onset:g} s lasting "
                            f"{duration:g} s is not within {rec.edf.name} ({seconds:g} s "
                            "long)",
                            fix=f"correct its onset and duration (seconds from the start of "
                                f"{rec.edf.name}), or replace a truncated {rec.edf.name}")
        if label != BACKGROUND:
            events.append(Event(onset, min(duration, seconds - onset), SEIZURE))
    return sorted(events, key=lambda e: e.onset)
