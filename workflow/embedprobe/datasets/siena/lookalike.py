"""A Siena Scalp EEG look-alike: PNxx/PNxx-N.edf and Seizures-list-PNxx.txt as PhysioNet has them.

  <root>/PNxx/PNxx-N.edf                512 Hz, 1 s records: 29 unipolar EEG channels in the
                                        real files' order ("EEG Fp1", ..., old temporal names
                                        T3-T6, "EEG Fc1" spelling) from synthetic electrodes
                                        (datasets/synth/seizure.py), then "EKG EKG", and "SPO2",
                                        "HR", "MK" (flat, as in the real files); PN02 spells two
                                        electrodes in capitals ("EEG FP2", "EEG CZ")
  <root>/PNxx/Seizures-list-PNxx.txt    "Seizure n K" blocks with clock times hh.mm.ss, in the
                                        wordings the real lists use (PN00, PN03, ...: the usual
                                        block; PN01, PN04, ...: "Start time:"/"End time:" in
                                        dots but the first start in colons, and a patient's
                                        only file named without its number ("PN01.edf"), as
                                        the real PN01 list; PN02, PN05, ...: file name and
                                        registration times once, before that file's seizures)
  <root>/RECORDS, MANIFEST.tsv (last: its presence marks completion)

Every file has one or two seizures of 20-90 s (as in the real set, where each file has at
least one). PN00's last file starts before midnight and runs past it, with a seizure after
00.00.00 (and one before it when the file is long enough), so seizure clock times wrap.
Settings: patients (5), files_per_patient (3), minutes_per_file (60), seed (0). Headers carry
fixed dates: the same settings write the same bytes.
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
    ecg,
    electrode_signals,
    patient_traits,
    place_seizures,
    write_patient_folders,
)

SFREQ = 512
EEG_RANGE = (-3200.0, 3200.0)  # microvolts
FIRST_DATE = dt.date(2016, 1, 4)  # fixed dates keep the bytes reproducible
ELECTRODES = ("Fp1", "F3", "C3", "P3", "O1", "F7", "T3", "T5", "Fc1", "Fc5", "Cp1", "Cp5", "F9",
              "Fz", "Cz", "Pz", "Fp2", "F4", "C4", "P4", "O2", "F8", "T4", "T6", "Fc2", "Fc6",
              "Cp2", "Cp6", "F10")
CAPITALS = {"Fp2": "FP2", "Cz": "CZ"}  # as some real files spell them
DEFAULTS = {"patients": 5, "files_per_patient": 3, "minutes_per_file": 60, "seed": 0}
WORDINGS = ("standard", "colon", "shared")
EDGE_S = 10  # no seizure this close to a file's start or end
STREAM = 2  # the look-alikes of one seed draw different patients
MIDNIGHT_GAP_S = 5  # the seizures of the midnight file keep this far from 00.00.00
# Seizures 12% stronger than the CHB-MIT look-alike's: every Siena file has one or two, so a
# test patient holds 3-4 and a fold is more often imperfect; with this gain a random encoder
# scores about as on the CHB-MIT look-alike (the epilepsy_demo headline near 0.8 on both).
SEIZURE_GAIN = 1.12


@dataclass(frozen=True)
class FilePlan:
    patient: int  # 0-based: PN00, PN01, ...
    number: int  # 1-based file number
    start: dt.datetime
    seconds: int
    seizures: tuple[Seizure, ...]

    @property
    def folder(self) -> str:
        return f"PN{self.patient:02d}"

    @property
    def name(self) -> str:
        return f"{self.folder}-{self.number}.edf"

    @property
    def wording(self) -> str:
        return WORDINGS[self.patient % len(WORDINGS)]

    @property
    def crosses_midnight(self) -> bool:
        return (self.start + dt.timedelta(seconds=self.seconds)).date() != self.start.date()


def settings_of(settings: dict) -> dict:
    out = with_defaults(settings, DEFAULTS, "Siena")
    if not 1 <= out["patients"] <= 100:
        raise UsageError(f"patients={out['patients']}: Siena names hold a 2-digit patient "
                         "number (PN00..PN99)", fix="choose 1..100 patients")
    if not 1 <= out["files_per_patient"] <= 99:
        raise UsageError(f"files_per_patient={out['files_per_patient']}", fix="choose 1..99")
    if not 2 <= out["minutes_per_file"] <= 240:
        raise UsageError(f"minutes_per_file={out['minutes_per_file']}: a file must hold a "
                         "seizure (20-90 s) on each side of midnight in the file that crosses "
                         "it", fix="choose 2..240 minutes")
    return out


def plan(settings: dict) -> list[FilePlan]:
    """Every file's name, start, length and seizures, without signals (cheap)."""
    s = settings_of(settings)
    seconds = int(round(s["minutes_per_file"] * 60))
    plans = []
    for patient in range(s["patients"]):
        rng = np.random.default_rng([s["seed"], STREAM, 0, patient])
        for number in range(1, s["files_per_patient"] + 1):
            day = FIRST_DATE + dt.timedelta(days=7 * patient + number - 1)
            if patient == 0 and number == s["files_per_patient"]:
                midnight = dt.datetime.combine(day + dt.timedelta(days=1), dt.time())
                start = midnight - dt.timedelta(seconds=seconds // 2)
                seizures = (place_seizures(rng, 1, EDGE_S, seconds // 2 - MIDNIGHT_GAP_S)
                            + place_seizures(rng, 1, seconds // 2 + MIDNIGHT_GAP_S,
                                             seconds - EDGE_S))
            else:
                start = dt.datetime.combine(day, dt.time(int(rng.integers(8, 19)),
                                                         int(rng.integers(60)),
                                                         int(rng.integers(60))))
                seizures = place_seizures(rng, int(rng.integers(1, 3)), EDGE_S,
                                          seconds - EDGE_S)
            plans.append(FilePlan(patient, number, start, seconds, tuple(seizures)))
    return plans


def eeg_label(electrode: str, patient: int) -> str:
    return "EEG " + (CAPITALS.get(electrode, electrode) if patient == 2 else electrode)


def signals(p: FilePlan, seed: int) -> list[Signal]:
    traits = patient_traits(np.random.default_rng([seed, STREAM, 1, p.patient]), SEIZURE_GAIN)
    rng = np.random.default_rng([seed, STREAM, 2, p.patient, p.number])
    eeg = electrode_signals(rng, ELECTRODES, SFREQ, p.seconds, p.seizures, traits)
    heart, _ = ecg(rng, SFREQ, p.seconds)
    flat = np.zeros(eeg.shape[1])
    return [*(Signal(eeg_label(e, p.patient), eeg[i], "uV", EEG_RANGE)
              for i, e in enumerate(ELECTRODES)),
            Signal("EKG EKG", heart, "uV", (-5000.0, 5000.0)),
            Signal("SPO2", flat, "%", (0.0, 100.0)),
            Signal("HR", flat, "bpm", (0.0, 250.0)),
            Signal("MK", flat, "", (0.0, 1.0))]


def _clock(moment: dt.datetime, separator: str) -> str:
    return moment.strftime(f"%H{separator}%M{separator}%S")


def seizure_list_text(plans: list[FilePlan]) -> str:
    """A Seizures-list-PNxx.txt for one patient's files, in that patient's wording."""
    folder = plans[0].folder
    lines = [folder, "", f"Data Sampling Rate: {SFREQ} Hz", "", "Channels in EDF files:",
             *(f"Channel {i}: {e}" for i, e in enumerate(ELECTRODES, start=1)),
             f"Channel {len(ELECTRODES) + 1}: EKG", ""]
    number = 0
    for p in plans:
        prefix = "" if p.wording == "colon" else "Seizure "
        end = p.start + dt.timedelta(seconds=p.seconds)
        # the real PN01 list: "File name: PN01.edf" for its one file
        name = f"{folder}.edf" if p.wording == "colon" and len(plans) == 1 else p.name
        registration = [f"File name: {name}",
                        f"Registration start time: {_clock(p.start, '.')}",
                        f"Registration end time: {_clock(end, '.')}"]
        if p.wording == "shared":
            lines += [*registration, ""]
        for seizure in p.seizures:
            number += 1
            onset = p.start + dt.timedelta(seconds=seizure.onset)
            offset = p.start + dt.timedelta(seconds=seizure.end)
            # the real PN01 list writes one time, its first start, with colons
            sep = ":" if p.wording == "colon" and number == 1 else "."
            lines += [f"Seizure n {number}",
                      *(registration if p.wording != "shared" else []),
                      f"{prefix}start time: {_clock(onset, sep)}".capitalize(),
                      f"{prefix}end time: {_clock(offset, '.')}".capitalize(), ""]
    return "\n".join(lines)


def write_lookalike(root: Path, settings: dict) -> list[Path]:
    """Write the look-alike under root; the files written, MANIFEST.tsv last."""
    s = settings_of(settings)
    return write_patient_folders(Path(root), plan(s), SFREQ,
                                 lambda p: signals(p, s["seed"]),
                                 lambda folder: f"Seizures-list-{folder}.txt",
                                 seizure_list_text, with_seizures=False)
