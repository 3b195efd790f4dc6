"""The Haaglanden Medisch Centrum sleep staging database (PhysioNet hmc-sleep-staging 1.1): 151
clinical nights of the HMC sleep centre (The Hague), scored by its technicians to AASM.

Layout as PhysioNet serves it: recordings/SNnnn.edf (the PSG) with recordings/
SNnnn_sleepscoring.edf (an EDF+ of annotations alone; PhysioNet also ships a .txt copy of it,
not read). SN014, SN064 and SN135 are not in version 1.1. A recording, its subject and its id
are the stem (SN001); each subject has one night.

Channels: EEG F4-M1, EEG C4-M1, EEG O2-M1, EEG C3-M2 (the four the reference reads,
kkontras/NeuroAtlas adapters/hmc.py), EOG E1-M2 and E2-M2, EMG chin, ECG, at 256 Hz.

Stages (read through MNE): "Sleep stage W", "Sleep stage N1", "Sleep stage N2", "Sleep stage
N3", "Sleep stage R" of 30 s each; "Lights off", "Lights on" and any other text that is not a
stage are not stages; an unknown "Sleep stage X" is refused. Windows are laid from the first
stage's onset (stage_runs.windows_from_runs), in seconds from the PSG's start (the scoring
file's own start is taken into account); windows past the PSG's end are cut with a warning.
No wake is trimmed by the reference (physioex's trim_excess_wake=False): `trim_wake_minutes:
1440`. Powerline: the Netherlands, 50 Hz. No ages are published per subject: no brain age.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from embedprobe.core.errors import DataError
from embedprobe.datasets.base import (
    Event,
    OneNightPerSubject,
    RecordingHeader,
    Signals,
    one_each,
    present,
)
from embedprobe.datasets.edf import (
    annotation_events,
    read_edf_annotations,
    read_edf_header,
    read_edf_signals,
    require_channels,
)
from embedprobe.datasets.stage_runs import cut_to_signal, stage_of, windows_from_runs
from embedprobe.datasets.walk import find_paths, require_folder

FORMAT = "hmc"
STAGES = ("W", "N1", "N2", "N3", "REM")
EPOCH_SECONDS = 30
EEG_CHANNELS = ("EEG F4-M1", "EEG C4-M1", "EEG O2-M1", "EEG C3-M2")
SCORING = "_sleepscoring.edf"
STAGE_OF_TEXT = {"Sleep stage W": 0, "Sleep stage N1": 1, "Sleep stage N2": 2,
                 "Sleep stage N3": 3, "Sleep stage R": 4}
_NAME = re.compile(r"^SN\d{3}$")


@dataclass(frozen=True)
class Recording(OneNightPerSubject):
    recording: str  # "SN001"
    signal_path: Path
    scoring: Path

    @property
    def files(self) -> tuple[Path, ...]:
        return (self.signal_path, *present(self.scoring))

    @property
    def problem(self) -> str:
        return "" if self.scoring.is_file() else \
            f"{self.signal_path.name} has no {self.scoring.name} beside it"


def find_recordings(root: Path) -> list[Recording]:
    """Every SNnnn.edf under root with its scoring file beside it (a recording without one is
    incomplete), sorted by id."""
    root = require_folder(root, "HMC",
                          fix="embedprobe data download hmc (PhysioNet hmc-sleep-staging 1.1)")
    psgs = one_each(find_paths(root, "SN*.edf"),
                    lambda p: p.stem if _NAME.match(p.stem) else None)
    return [Recording(k, p, p.with_name(f"{k}{SCORING}")) for k, p in sorted(psgs.items())]


def _annotations(rec: Recording):
    if not rec.scoring.is_file():
        raise DataError(f"{rec.signal_path}: {rec.problem}",
                        fix="put the recording's _sleepscoring.edf from PhysioNet beside it; "
                            "allow_partial=true runs without it")
    return read_edf_annotations(rec.scoring, fix="download the scoring file again")


def read_labels(rec: Recording, trim_wake_minutes: float | None = None,
                channels: Sequence[str] = EEG_CHANNELS,
                counts: Counter | None = None) -> tuple[np.ndarray, np.ndarray, float]:
    """(starts: sample of each labelled 30 s window, labels: index into STAGES, sfreq) from the
    headers and the scoring file; `counts` gathers what was left out."""
    from embedprobe.datasets.sleep_edf.reader import trim_wake

    counts = Counter() if counts is None else counts
    header = read_edf_header(rec.signal_path)
    sfreq = require_channels(header, channels)
    scoring_header, annotations = _annotations(rec)
    shift = (scoring_header.start - header.start).total_seconds()
    runs = []
    for onset, duration, text in zip(annotations.onset, annotations.duration,
                                      annotations.description, strict=True):
        stage = stage_of(text, STAGE_OF_TEXT, rec.scoring)
        if stage is None:
            counts[("ignored", str(text).strip()[:40])] += 1
            continue
        runs.append((float(onset) + shift, float(duration), stage))
    seconds, labels = windows_from_runs(runs, EPOCH_SECONDS, counts)
    starts, labels = cut_to_signal(seconds, labels, sfreq, header.n_samples(channels[0]),
                                   EPOCH_SECONDS, counts, rec.signal_path, rec.scoring)
    starts, labels = trim_wake(starts, labels, sfreq, trim_wake_minutes)
    return starts, labels, sfreq


def read_header(rec: Recording) -> RecordingHeader:
    header = read_edf_header(rec.signal_path)
    sfreq = require_channels(header, EEG_CHANNELS)
    return RecordingHeader(header.labels, sfreq, header.n_samples(EEG_CHANNELS[0]))


def read_signals(rec: Recording, channels: Sequence[str], span=None) -> Signals:
    return read_edf_signals(rec.signal_path, channels, span=span)


def read_events(rec: Recording) -> list[Event]:
    """The scoring file's annotations as written (stages are read by read_labels)."""
    _, annotations = _annotations(rec)
    return annotation_events(annotations)
