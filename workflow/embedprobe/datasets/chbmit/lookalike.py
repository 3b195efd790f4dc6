"""A CHB-MIT look-alike: chbNN/chbNN_MM.edf and chbNN-summary.txt as PhysioNet lays them out.

  <root>/chbNN/chbNN_MM.edf        256 Hz, 1 s records, bipolar channels derived from synthetic
                                   electrodes (datasets/synth/seizure.py): the 23-channel layout
                                   with T8-P8 twice; chb02's last file has the 28-channel layout
                                   with five dummy channels "-" (flat), as chb11-chb15 files do
  <root>/chbNN/chbNN-summary.txt   channel list, then per file its name, clock times (hours go
                                   past 24 after midnight) and seizures in whole seconds; odd
                                   patients say "Seizure Start Time:", even ones "Seizure 1
                                   Start Time:"; a "Channels changed:" block before a new layout
  <root>/RECORDS, RECORDS-WITH-SEIZURES, MANIFEST.tsv (last: its presence marks completion)

Settings (the dataset's `generator:` entry): patients (5), files_per_patient (3),
minutes_per_file (60, the real files' hour), seed (0). Every patient's first file has one or
two seizures, later files none (10%), one (45%) or two (45%), the last patient's last file
none (a summary always holds "Number of Seizures in File: 0"): a test patient holds a few
seizures, so that its fold is scored on more than one; seizures last 20-90 s, short ones more
often (datasets/synth/seizure.py: how hard they are to find). Headers carry fixed dates: the
same settings write the same bytes.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from embedprobe.core.errors import UsageError
from embedprobe.datasets.synth.files import with_defaults
from embedprobe.datasets.synth.seizure import (
    Seizure,
    Signal,
    electrode_signals,
    patient_traits,
    place_seizures,
    write_patient_folders,
)

SFREQ = 256
PHYSICAL_RANGE = (-3200.0, 3200.0)  # microvolts
FIRST_DATE = dt.date(2001, 3, 5)  # fixed dates keep the bytes reproducible
DOUBLE_BANANA = ("FP1-F7", "F7-T7", "T7-P7", "P7-O1", "FP1-F3", "F3-C3", "C3-P3", "P3-O1",
                 "FP2-F4", "F4-C4", "C4-P4", "P4-O2", "FP2-F8", "F8-T8", "T8-P8", "P8-O2")
LAYOUT = DOUBLE_BANANA + ("FZ-CZ", "CZ-PZ", "P7-T7", "T7-FT9", "FT9-FT10", "FT10-T8", "T8-P8")
LAYOUT_WITH_DUMMIES = (
    "FP1-F7", "F7-T7", "T7-P7", "P7-O1", "-", "FP1-F3", "F3-C3", "C3-P3", "P3-O1", "-",
    "FZ-CZ", "CZ-PZ", "-", "FP2-F4", "F4-C4", "C4-P4", "P4-O2", "-", "FP2-F8", "F8-T8",
    "T8-P8", "P8-O2", "-", "P7-T7", "T7-FT9", "FT9-FT10", "FT10-T8", "T8-P8")
ELECTRODES = tuple(sorted({e for pair in LAYOUT for e in pair.split("-")}))
DEFAULTS = {"patients": 5, "files_per_patient": 3, "minutes_per_file": 60, "seed": 0}
EDGE_S = 10  # no seizure this close to a file's start or end
STREAM = 1  # the look-alikes of one seed draw different patients


@dataclass(frozen=True)
class FilePlan:
    patient: int  # 1-based: chb01, chb02, ...
    number: int  # 1-based file number
    start: dt.datetime
    seconds: int
    seizures: tuple[Seizure, ...]
    layout: tuple[str, ...]  # channel labels as written

    @property
    def folder(self) -> str:
        return f"chb{self.patient:02d}"

    @property
    def name(self) -> str:
        return f"{self.folder}_{self.number:02d}.edf"

    @property
    def numbered(self) -> bool:
        """Whether the summary says "Seizure 1 Start Time:" (else "Seizure Start Time:")."""
        return self.patient % 2 == 0


def settings_of(settings: dict) -> dict:
    out = with_defaults(settings, DEFAULTS, "CHB-MIT")
    if not 1 <= out["patients"] <= 99:
        raise UsageError(f"patients={out['patients']}: CHB-MIT names hold a 2-digit patient "
                         "number", fix="choose 1..99 patients")
    if not 1 <= out["files_per_patient"] <= 99:
        raise UsageError(f"files_per_patient={out['files_per_patient']}", fix="choose 1..99")
    if not 2 <= out["minutes_per_file"] <= 240:
        raise UsageError(f"minutes_per_file={out['minutes_per_file']}: a file must hold a "
                         "seizure (20-90 s) away from its edges", fix="choose 2..240 minutes")
    return out


def plan(settings: dict) -> list[FilePlan]:
    """Every file's name, start, length, seizures and layout, without signals (cheap)."""
    s = settings_of(settings)
    seconds = int(round(s["minutes_per_file"] * 60))
    plans = []
    for patient in range(1, s["patients"] + 1):
        rng = np.random.default_rng([s["seed"], STREAM, 0, patient])
        start = dt.datetime.combine(FIRST_DATE + dt.timedelta(days=7 * patient),
                                    dt.time(9, int(rng.integers(60)), int(rng.integers(60))))
        for number in range(1, s["files_per_patient"] + 1):
            count = rng.integers(1, 3) if number == 1 else rng.choice(3, p=[0.1, 0.45, 0.45])
            if patient == s["patients"] and number == s["files_per_patient"] > 1:
                count = 0  # one file without seizures, whatever the draws
            seizures = place_seizures(rng, int(count), EDGE_S, seconds - EDGE_S)
            dummies = patient == 2 and number == s["files_per_patient"]
            plans.append(FilePlan(patient, number, start, seconds, tuple(seizures),
                                  LAYOUT_WITH_DUMMIES if dummies else LAYOUT))
            start += dt.timedelta(seconds=seconds + int(rng.integers(2, 30)))
    return plans


def signals(p: FilePlan, seed: int) -> list[Signal]:
    """The file's channels: electrode differences for bipolar labels, zeros for dummies."""
    traits = patient_traits(np.random.default_rng([seed, STREAM, 1, p.patient]))
    rng = np.random.default_rng([seed, STREAM, 2, p.patient, p.number])
    eeg = electrode_signals(rng, ELECTRODES, SFREQ, p.seconds, p.seizures, traits)
    row = {e: i for i, e in enumerate(ELECTRODES)}
    out = []
    for label in p.layout:
        if label == "-":
            data = np.zeros(eeg.shape[1])
        else:
            first, second = label.split("-")
            data = eeg[row[first]] - eeg[row[second]]
        out.append(Signal(label, data, "uV", PHYSICAL_RANGE))
    return out


def _clock(moment: dt.datetime, day: dt.date) -> str:
    """hh:mm:ss counted from midnight of `day` (24:10:00 the next morning, as the summaries)."""
    seconds = int((moment - dt.datetime.combine(day, dt.time())).total_seconds())
    return f"{seconds // 3600:02d}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def _channel_block(layout) -> list[str]:
    return [f"Channel {i}: {label}" for i, label in enumerate(layout, start=1)]


def summary_text(plans: list[FilePlan]) -> str:
    """A chbNN-summary.txt for one patient's files."""
    lines = [f"Data Sampling Rate: {SFREQ} Hz", "*************************", "",
             "Channels in EDF Files:", "**********************", *_channel_block(plans[0].layout),
             ""]
    day, layout = plans[0].start.date(), plans[0].layout
    for p in plans:
        if p.layout != layout:
            lines += ["Channels changed:", "*****************", *_channel_block(p.layout), ""]
            layout = p.layout
        end = p.start + dt.timedelta(seconds=p.seconds)
        lines += [f"File Name: {p.name}", f"File Start Time: {_clock(p.start, day)}",
                  f"File End Time: {_clock(end, day)}",
                  f"Number of Seizures in File: {len(p.seizures)}"]
        for i, seizure in enumerate(p.seizures, start=1):
            tag = f"Seizure {i}" if p.numbered else "Seizure"
            lines += [f"{tag} Start Time: {seizure.onset} seconds",
                      f"{tag} End Time: {seizure.end} seconds"]
        lines.append("")
    return "\n".join(lines)


def write_lookalike(root: Path, settings: dict) -> list[Path]:
    """Write the look-alike under root; the files written, MANIFEST.tsv last."""
    s = settings_of(settings)
    return write_patient_folders(Path(root), plan(s), SFREQ,
                                 lambda p: signals(p, s["seed"]),
                                 lambda folder: f"{folder}-summary.txt",
                                 summary_text, with_seizures=True)
