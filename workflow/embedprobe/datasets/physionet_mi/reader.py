"""PhysioNet EEG Motor Movement/Imagery (eegmmidb 1.0.0): one recording per run, through MNE.

Files: `S001/S001R01.edf` ... `S109/S109R14.edf`, EDF+ at 160 Hz (a few subjects at 128 Hz:
the header says which), 64 EEG channels with the dataset's dotted names ("Fc5.", "C3..",
"T10."), annotations T0/T1/T2 whose meaning depends on the run (PhysioNet's description):

    runs 1, 2          baseline, eyes open / eyes closed (T0 only)
    runs 3, 7, 11      executed left / right fist      T1 left_hand, T2 right_hand
    runs 4, 8, 12      imagined left / right fist      T1 left_hand, T2 right_hand
    runs 5, 9, 13      executed both fists / feet      T1 hands,     T2 feet
    runs 6, 10, 14     imagined both fists / feet      T1 hands,     T2 feet

T0 (rest between cues) is reported as "rest": a task keeps the classes it wants (MOABB's
PhysionetMI also names T0 "rest"). Class names are MOABB's. Which runs are read is a reader
setting, `runs` (default the imagery runs 4, 6, 8, 10, 12, 14, as MOABB's
`PhysionetMI(imagined=True, executed=False)`); files of other runs are left alone.

A recording is one run: id "S001R04", subject "S001", session "R04". Event onsets are the
annotation onsets: seconds from the start of the run's file (the cue, when the target appears).
A subject with some of the configured runs but not all gets a placeholder recording whose
`problem` names the missing file, so a partial download is reported, not silently used.

This is what MOABB's PhysionetMI does (MNE's EDF reader, T0/T1/T2 renamed by run), without
MOABB itself: moabb 1.7.2 installs beside the pinned requirements, and it reads these files
offline (tests/datasets/test_physionet_mi.py cross-checks it, opt-in), but only from MNE's download
cache layout (MNE-eegbci-data/files/eegmmidb/1.0.0/S001/...) under a process-wide MNE_DATA
path, after ~40 s of NEMAR retries per call unless MOABB_DOWNLOAD_PROVIDER=upstream, loading
all six imagery runs of a subject at once, and it downloads a missing run instead of naming it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from embedprobe.core.errors import DataError, UsageError
from embedprobe.datasets.base import Event, RecordingHeader, Signals
from embedprobe.datasets.edf import (
    read_edf_annotations,
    read_edf_header,
    read_edf_signals,
    require_channels,
)
from embedprobe.datasets.walk import find_paths, require_folder

FORMAT = "physionet_mi"
READER_SETTINGS = ("runs", "exclude_subjects")  # dataset entry keys passed to find_recordings
SFREQ = 160.0
# The 64 channel labels as eegmmidb's EDF headers write them (dots pad each name to 4).
CHANNELS = (
    "Fc5.", "Fc3.", "Fc1.", "Fcz.", "Fc2.", "Fc4.", "Fc6.",
    "C5..", "C3..", "C1..", "Cz..", "C2..", "C4..", "C6..",
    "Cp5.", "Cp3.", "Cp1.", "Cpz.", "Cp2.", "Cp4.", "Cp6.",
    "Fp1.", "Fpz.", "Fp2.",
    "Af7.", "Af3.", "Afz.", "Af4.", "Af8.",
    "F7..", "F5..", "F3..", "F1..", "Fz..", "F2..", "F4..", "F6..", "F8..",
    "Ft7.", "Ft8.", "T7..", "T8..", "T9..", "T10.", "Tp7.", "Tp8.",
    "P7..", "P5..", "P3..", "P1..", "Pz..", "P2..", "P4..", "P6..", "P8..",
    "Po7.", "Po3.", "Poz.", "Po4.", "Po8.",
    "O1..", "Oz..", "O2..", "Iz..",
)  # fmt: skip
BASELINE_RUNS = (1, 2)
LEFT_RIGHT_RUNS = (3, 4, 7, 8, 11, 12)  # executed 3, 7, 11; imagined 4, 8, 12
HANDS_FEET_RUNS = (5, 6, 9, 10, 13, 14)  # executed 5, 9, 13; imagined 6, 10, 14
IMAGERY_RUNS = (4, 6, 8, 10, 12, 14)
# The subjects the reference leaves out (its dataio/bci.py SUBJECTS_PHYSIONET_MI, as the
# EEGMMIDB loaders of the field do): their runs are at 128 Hz or their trials timed unlike the
# rest. `exclude_subjects: []` on the dataset's entry reads all 109.
REFERENCE_EXCLUDED = ("S088", "S090", "S092", "S100", "S104", "S106")
REST = "rest"
_CODES = {
    "baseline": {"T0": REST},
    "left_right": {"T0": REST, "T1": "left_hand", "T2": "right_hand"},
    "hands_feet": {"T0": REST, "T1": "hands", "T2": "feet"},
}
_NAME = re.compile(r"^S(?P<subject>\d{3})R(?P<run>\d{2})\.edf$")
_FIX_DOWNLOAD = "download the run again from PhysioNet (eegmmidb 1.0.0)"


def codes_of_run(run: int) -> dict[str, str]:
    """Annotation code -> class name for one run number."""
    if run in BASELINE_RUNS:
        return _CODES["baseline"]
    if run in LEFT_RIGHT_RUNS:
        return _CODES["left_right"]
    if run in HANDS_FEET_RUNS:
        return _CODES["hands_feet"]
    raise UsageError(f"run {run}: eegmmidb has runs 1-14", fix="choose runs between 1 and 14")


def check_runs(runs: Sequence[int]) -> tuple[int, ...]:
    runs = tuple(sorted({int(r) for r in runs}))
    if not runs or any(not 1 <= r <= 14 for r in runs):
        raise UsageError(f"runs {list(runs)}: eegmmidb has runs 1-14",
                         fix=f"e.g. runs: {list(IMAGERY_RUNS)} (the imagery runs)")
    return runs


@dataclass(frozen=True)
class Recording:
    recording: str  # "S001R04"
    edf: Path
    subject: str  # "S001"
    run: int
    missing: bool = False  # a placeholder for a configured run whose file is not there

    # The reader interface's names (datasets/base.py)
    @property
    def session(self) -> str:
        return f"R{self.run:02d}"

    @property
    def signal_path(self) -> Path:
        return self.edf

    @property
    def files(self) -> tuple[Path, ...]:
        return () if self.missing else (self.edf,)

    @property
    def problem(self) -> str:
        return f"{self.edf.name} (run {self.run} of {self.subject}) is missing" \
            if self.missing else ""


def find_recordings(root: Path, runs: Sequence[int] = IMAGERY_RUNS,
                    exclude_subjects: Sequence[str] = REFERENCE_EXCLUDED) -> list[Recording]:
    """Every `SxxxRyy.edf` under root whose run is in `runs` and whose subject is not in
    `exclude_subjects`, sorted by id; a subject that has some of those runs but not all gets
    a placeholder (with a `problem`) for each missing one."""
    root = Path(root)
    wanted = check_runs(runs)
    excluded = {str(s) for s in exclude_subjects}
    require_folder(root, "PhysioNet motor imagery",
                   fix="download eegmmidb 1.0.0 from PhysioNet there (S001/S001R01.edf ...), "
                       "or let the demo_data rule write a look-alike")
    found: dict[str, Recording] = {}
    for path in find_paths(root, "S*R*.edf"):
        match = _NAME.match(path.name)
        if not match:
            continue  # not an eegmmidb run name (the folder may hold other files)
        run = int(match["run"])
        if not 1 <= run <= 14:
            raise DataError(f"{path}: eegmmidb has runs R01-R14, not R{run:02d}",
                            fix="keep PhysioNet's names SxxxRyy.edf with yy = 01..14")
        if run not in wanted or f"S{match['subject']}" in excluded:
            continue
        stem = path.name.removesuffix(".edf")
        if stem in found:
            raise DataError(f"run {stem} is there twice: {found[stem].edf} and {path}",
                            fix="keep one copy under the data root")
        found[stem] = Recording(stem, path, f"S{match['subject']}", run)
    for subject in sorted({r.subject for r in found.values()}):
        folder = next(r.edf.parent for r in found.values() if r.subject == subject)
        for run in wanted:
            stem = f"{subject}R{run:02d}"
            if stem not in found:
                found[stem] = Recording(stem, folder / f"{stem}.edf", subject, run, missing=True)
    return [found[k] for k in sorted(found)]


# The reader interface (datasets/base.py) --------------------------------------------------


def read_header(rec: Recording) -> RecordingHeader:
    header = read_edf_header(rec.edf)
    sfreq = require_channels(header, CHANNELS)
    labels = tuple(label for label in header.labels if label != "EDF Annotations")
    return RecordingHeader(labels, sfreq, header.n_samples(CHANNELS[0]))


def read_signals(rec: Recording, channels: Sequence[str], span=None) -> Signals:
    return read_edf_signals(rec.edf, channels, span=span)


def read_events(rec: Recording) -> list[Event]:
    """One event per annotation (cues and the rest periods between them), class names by run."""
    _, annotations = read_edf_annotations(rec.edf, fix=_FIX_DOWNLOAD)
    if len(annotations) == 0:
        raise DataError(
            f"{rec.edf}: no annotations (eegmmidb runs mark each cue with T0/T1/T2)",
            fix=f"{_FIX_DOWNLOAD}; a copy converted without its EDF+ annotations has lost "
                "the trials",
        )
    codes = codes_of_run(rec.run)
    events = []
    for onset, duration, code in zip(annotations.onset, annotations.duration,
                                     annotations.description, strict=True):
        code = str(code).strip()
        if code not in codes:
            known = ", ".join(f"{k} {v}" for k, v in codes.items())
            raise DataError(
                f"{rec.edf}: unknown event code {code!r} at {float(onset):.1f} s "
                f"(run {rec.run} has {known})",
                fix=f"{_FIX_DOWNLOAD}, or correct the annotation",
            )
        events.append(Event(float(onset), float(duration), codes[code]))
    return sorted(events, key=lambda e: e.onset)
