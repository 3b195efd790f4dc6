"""The Montreal Archive of Sleep Studies (MASS, its cohort 1: subsets SS1-SS5, 200 nights of
200 subjects), as the reference reads it (kkontras/NeuroAtlas dataio/mass.py): per subset a
folder of `<id> PSG.edf` files with an `annotations/` folder of `<id> Base.edf`, the EDF+ of
the night's scoring (the reader finds both anywhere under the root and pairs them by id, so
the archives' own folders, "SS1 biosignals" and "SS1 annotations", read too). The id
"01-0s-nnnn" names the subset s; a night, its subject and its id are one.

Channels: the EEG electrodes as the reference takes them, `EEG <electrode>-CLE` (computed
linked ears) or else `EEG <electrode>-LER` (linked-ear reference), named here by the electrode
alone (C3, ...): ELECTRODES, the 19 of the 10-20 system in the reference's order. An
electrode of the 19 that a night lacks is read as zeros, as the reference fills it
(zero_filled names it; the index prints a `note:`); one with none of them is refused.
256 Hz.

Stages (MNE): "Sleep stage W/1/2/3/4/R" (R&K stages 3 and 4 are N3), "Sleep stage ?"
unscored; other texts are not stages, an unknown "Sleep stage X" is refused. SS1 and SS3 are
scored per 30 s, SS2, SS4 and SS5 per 20 s; every subset is cut in 30 s windows from its first
stage annotation, each kept where one stage covers it (stage_runs.windows_from_runs: a window
over two 20 s epochs of two stages is left out), as the reference does. No wake is trimmed.

Events: the micro-arousals of the Base file (annotations whose text holds "MicroArousal", as
the reference matches them) with their durations, kind `arousal`; SS1's are the reference's
sleep_arousal labels, and an SS1 night with none is refused (the reference requires them).
`subsets` (an entry's setting) reads only those subsets (`mass_ss1`: SS1 alone, for arousal).

Folds: the reference's MASS rule (adapters/mass.py _patient_splits): each subset's subjects
shuffled by one RandomState(42) in subset order and cut in 5 chunks; fold k tests chunk k of
every subset (the entry's `fold_strata: '^01-(\\d\\d)-'`). Powerline: Canada, 60 Hz.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from embedprobe.core.errors import DataError
from embedprobe.datasets.base import Event, RecordingHeader, Signals, one_each, span_within
from embedprobe.datasets.edf import (
    ANNOTATIONS,
    read_edf_annotations,
    read_edf_header,
    read_edf_signals,
)
from embedprobe.datasets.stage_runs import (
    UNSCORED,
    cut_to_signal,
    stage_of,
    windows_from_runs,
)
from embedprobe.datasets.walk import find_paths, require_folder

FORMAT = "mass"
READER_SETTINGS = ("subsets",)
STAGES = ("W", "N1", "N2", "N3", "REM")
EPOCH_SECONDS = 30
SUBSETS = (1, 2, 3, 4, 5)
ELECTRODES = ("Fp1", "Fp2", "F7", "F3", "Fz", "F4", "F8", "T3", "C3", "Cz", "C4", "T4", "T5",
              "P3", "Pz", "P4", "T6", "O1", "O2")
REFERENCES = ("-CLE", "-LER")  # in the reference's order of preference
STAGE_OF_TEXT = {"Sleep stage W": 0, "Sleep stage 1": 1, "Sleep stage 2": 2,
                 "Sleep stage 3": 3, "Sleep stage 4": 3, "Sleep stage R": 4,
                 "Sleep stage ?": UNSCORED}
AROUSAL = "MicroArousal"
EVENT_KINDS = ("arousal",)
_ID = re.compile(r"^(?P<id>01-(?P<subset>0[1-5])-\d{4}) (?P<kind>PSG|Base)$")


@dataclass(frozen=True)
class Recording:
    recording: str  # "01-01-0001"
    subset: int
    signal_path: Path
    base: Path | None

    @property
    def subject(self) -> str:
        return self.recording

    @property
    def session(self) -> str:
        return f"SS{self.subset}"

    @property
    def files(self) -> tuple[Path, ...]:
        return (self.signal_path,) if self.base is None else (self.signal_path, self.base)

    @property
    def problem(self) -> str:
        return "" if self.base is not None else \
            f"{self.signal_path.name} has no {self.recording} Base.edf (its annotations)"


def _key(kind: str):
    def key(path: Path) -> str | None:
        match = _ID.match(path.stem)
        return match["id"] if match and match["kind"] == kind else None
    return key


def find_recordings(root: Path, subsets: Sequence[int] | None = None) -> list[Recording]:
    """Every `<id> PSG.edf` of the chosen subsets under root with its `<id> Base.edf`."""
    root = require_folder(root, "MASS",
                          fix="unpack the MASS subsets there (SS1 ... SS5, PSG and annotations)")
    chosen = set(subsets or SUBSETS)
    psgs = one_each(find_paths(root, "* PSG.edf"), _key("PSG"))
    bases = one_each(find_paths(root, "* Base.edf"), _key("Base"))
    found = [Recording(k, int(k[3:5]), p, bases.get(k)) for k, p in sorted(psgs.items())]
    return [r for r in found if r.subset in chosen]


# --- channels --------------------------------------------------------------------------------


def _sources(header) -> dict[str, str]:
    """Electrode -> its label in the file (CLE before LER, any case)."""
    labels = {label.upper(): label for label in header.labels}
    out = {}
    for electrode in ELECTRODES:
        for ref in REFERENCES:
            label = labels.get(f"EEG {electrode}{ref}".upper())
            if label is not None:
                out[electrode] = label
                break
    return out


def _eeg_sources(rec: Recording, header) -> dict[str, str]:
    sources = _sources(header)
    if not sources:
        raise DataError(f"{rec.signal_path}: no EEG electrode labelled 'EEG <electrode>-CLE' "
                        "or '-LER'", fix="use the PSG file as MASS ships it")
    return sources


def read_header(rec: Recording) -> RecordingHeader:
    """The EEG electrodes the file records (by electrode name), then its other signals as
    labelled; rate and length of its first electrode."""
    header = read_edf_header(rec.signal_path)
    sources = _eeg_sources(rec, header)
    others = tuple(c for c in header.labels if c not in sources.values() and c != ANNOTATIONS)
    first = next(iter(sources.values()))
    return RecordingHeader((*sources, *others), header.sfreq(first), header.n_samples(first))


def zero_filled(rec: Recording, channels: Sequence[str]) -> tuple[str, ...]:
    """Those of `channels` that read_signals gives as zeros: electrodes the night lacks."""
    own = _sources(read_edf_header(rec.signal_path))
    return tuple(c for c in channels if c in ELECTRODES and c not in own)


def read_signals(rec: Recording, channels: Sequence[str], span=None) -> Signals:
    """The named channels (electrodes by name, others by label) as float32 volts; an electrode
    of ELECTRODES the file lacks is a row of zeros (see zero_filled)."""
    header = read_edf_header(rec.signal_path)
    sources = _eeg_sources(rec, header)
    labels = {c: sources.get(c, c) for c in channels}
    recorded = [c for c in channels if labels[c] in header.labels]
    if not recorded:  # every one filled: the rate and length of the night's EEG
        eeg = next(iter(sources.values()))
        first, stop = span_within(span, header.n_samples(eeg))
        return Signals(header.sfreq(eeg), list(channels),
                       np.zeros((len(channels), stop - first), np.float32))
    missing = [c for c in channels if c not in recorded and c not in ELECTRODES]
    if missing:
        raise DataError(f"{rec.signal_path}: no channel {', '.join(missing)}",
                        fix="choose channels every night has (config/channel_maps/mass.yaml)")
    read = read_edf_signals(rec.signal_path, [labels[c] for c in recorded], header, span)
    data = np.zeros((len(channels), read.data.shape[1]), np.float32)
    for row, name in enumerate(channels):
        if name in recorded:
            data[row] = read.data[recorded.index(name)]
    return Signals(read.sfreq, list(channels), data)


# --- annotations -----------------------------------------------------------------------------


def _annotations(rec: Recording, header):
    """The Base file's annotations, their onsets shifted to seconds from the PSG's start."""
    if rec.base is None:
        raise DataError(f"{rec.signal_path}: {rec.problem}",
                        fix="put the night's Base.edf from the MASS annotations beside it; "
                            "allow_partial=true runs without it")
    base_header, annotations = read_edf_annotations(rec.base,
                                                    fix="unpack the annotation file again")
    shift = (base_header.start - header.start).total_seconds()
    return [(float(o) + shift, float(d), str(t)) for o, d, t in
            zip(annotations.onset, annotations.duration, annotations.description, strict=True)]


def read_labels(rec: Recording, trim_wake_minutes: float | None = None,
                channels: Sequence[str] | None = None,
                counts: Counter | None = None) -> tuple[np.ndarray, np.ndarray, float]:
    """(starts: sample of each labelled 30 s window, labels: index into STAGES, sfreq)."""
    from embedprobe.datasets.sleep_edf.reader import trim_wake

    counts = Counter() if counts is None else counts
    header = read_edf_header(rec.signal_path)
    first = next(iter(_eeg_sources(rec, header).values()))
    sfreq = header.sfreq(first)
    runs = []
    for onset, duration, text in _annotations(rec, header):
        stage = stage_of(text, STAGE_OF_TEXT, rec.base)
        if stage is None:
            counts[("ignored", text.strip()[:40])] += 1
        else:
            runs.append((onset, duration, stage))
    seconds, labels = windows_from_runs(runs, EPOCH_SECONDS, counts)
    starts, labels = cut_to_signal(seconds, labels, sfreq, header.n_samples(first),
                                   EPOCH_SECONDS, counts, rec.signal_path, rec.base)
    starts, labels = trim_wake(starts, labels, sfreq, trim_wake_minutes)
    return starts, labels, sfreq


def read_events(rec: Recording) -> list[Event]:
    """The night's micro-arousals (kind `arousal`) with their durations, by onset; an SS1
    night without any is refused, as the reference refuses it."""
    header = read_edf_header(rec.signal_path)
    events = sorted((Event(o, d, "arousal") for o, d, t in _annotations(rec, header)
                     if AROUSAL in t), key=lambda e: e.onset)
    if not events and rec.subset == 1:
        raise DataError(f"{rec.base}: no {AROUSAL} annotation, but SS1's arousals are the "
                        "sleep_arousal labels",
                        fix="use the Base.edf of the MASS SS1 release, whose experts scored "
                            "the micro-arousals; allow_partial=true does not skip it: "
                            "leave the night out of the data folder")
    return events
