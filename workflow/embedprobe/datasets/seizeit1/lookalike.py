"""A SeizeIT1 look-alike in the public release's layout (datasets/seizeit1/reader.py):

    <root>/subject_info.csv            one row per patient (subject, sex, age, seizures)
    <root>/P_IDnn/P_IDnn_rk.edf        250 Hz, 1 s records: 19 scalp electrodes ("Fp1", ...,
                                       old temporal names T3-T6), then the behind-the-ear
                                       channels "BTEleft SD", "BTEright SD", "CROSStop SD"
                                       and "ECG SD"
    <root>/P_IDnn/P_IDnn_rk_a1.tsv     the hospital's annotation: `#` comment lines, then a
                                       row per seizure: start, stop (s), type (FIA, FA, F-BTC),
                                       "Lateralization:..., Localization:..."
    <root>/P_IDnn/P_IDnn_rk_a2.tsv     the behind-the-ear annotation: the same seizures, each
                                       kept with probability 0.8 (the reader does not read it)
    <root>/MANIFEST.tsv                last: its presence marks completion

The scalp label spelling and the channel order are this look-alike's choice (no publisher's
page read here lists them); a real file whose labels differ needs config/channel_maps/sz1.yaml
changed, not the reader.

Hard as the CHB-MIT and Siena look-alikes, by the same means: the signals are
datasets/synth/seizure.py's, a 1/f background carrying rhythms that resemble seizures without
being ones (theta and beta bursts, the patient's interictal discharges, chewing), artefacts, and
per patient one kind of seizure that builds up, stays focal or spreads and leaves post-ictal
slowing, at CHB-MIT's strength (1.0-1.5 x the background at the focus). The first recording of
a patient holds one or two seizures, the others zero to two, and the last patient's last
recording none; the annotated stop of one seizure in six is missing, as twelve of the
release's are (the reader gives it 30 s). A random encoder's event AUC on sz1_demo stays below
0.95 (docs/measurements/2026-12-08-seizeit1-epilepsiae-demos.md).

Settings: patients (5), files_per_patient (2), minutes_per_file (6), seed (0).
"""

from __future__ import annotations

import datetime as dt
import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from embedprobe.core.errors import UsageError
from embedprobe.datasets.seizeit1.reader import ANNOTATION, NO_STOP_S, SEIZURE_TYPES
from embedprobe.datasets.synth.files import start_rewrite, with_defaults, write_manifest
from embedprobe.datasets.synth.seizure import (
    Seizure,
    Signal,
    ecg,
    electrode_signals,
    file_seizure_count,
    patient_traits,
    place_seizures,
    write_edf,
)

SFREQ = 250
EEG_RANGE = (-3200.0, 3200.0)  # microvolts
SCALP = ("Fp1", "Fp2", "F3", "F4", "C3", "C4", "P3", "P4", "O1", "O2", "F7", "F8", "T3", "T4",
         "T5", "T6", "Fz", "Cz", "Pz")
# behind-the-ear electrodes sit near FT9 / FT10 (left, right); each channel is a difference
BTE = {"BTEleft SD": ("FT9", "T7"), "BTEright SD": ("FT10", "T8"),
       "CROSStop SD": ("FT9", "FT10")}
HIDDEN = ("FT9", "FT10", "T7", "T8")  # drawn for the behind-the-ear channels, not written
DEFAULTS = {"patients": 5, "files_per_patient": 2, "minutes_per_file": 6, "seed": 0}
FIRST_DATE = dt.date(2017, 3, 6)  # fixed dates keep the bytes reproducible
EDGE_S = 10
STREAM = 21  # the look-alikes of one seed draw different patients
NO_STOP_SHARE = 1 / 6
A2_KEEP = 0.8
SIDES = ("L", "R", "bi")
PLACES = ("temp", "fronto", "par", "occipito", "fronto-temp")


@dataclass(frozen=True)
class FilePlan:
    patient: int  # P_ID number
    number: int  # 1-based: _r1
    start: dt.datetime
    seconds: int
    seizures: tuple[Seizure, ...]
    kinds: tuple[str, ...]  # per seizure, its SeizeIT type
    no_stop: tuple[bool, ...]  # per seizure: its stop is not written

    @property
    def folder(self) -> str:
        return f"P_ID{self.patient}"

    @property
    def stem(self) -> str:
        return f"{self.folder}_r{self.number}"

    @property
    def recording(self) -> str:
        return self.stem

    def annotated(self) -> list[tuple[float, float]]:
        """(onset, duration) of each seizure as the reader reads the _a1.tsv back."""
        return [(float(s.onset), NO_STOP_S if gone else float(s.duration))
                for s, gone in zip(self.seizures, self.no_stop, strict=True)]


def settings_of(settings: dict) -> dict:
    s = with_defaults(settings, DEFAULTS, "the SeizeIT1 look-alike")
    if not 1 <= s["patients"] <= 89 or not 1 <= s["files_per_patient"] <= 9 \
            or not 2 <= s["minutes_per_file"] <= 240:
        raise UsageError(f"patients={s['patients']}, files_per_patient="
                         f"{s['files_per_patient']}, minutes_per_file={s['minutes_per_file']}",
                         fix="choose 1..89 patients, 1..9 files each of 2..240 minutes")
    return s


def plan(settings: dict) -> list[FilePlan]:
    """Every recording's name, length, seizures and their annotation, without signals."""
    s = settings_of(settings)
    seconds = int(round(s["minutes_per_file"] * 60))
    plans = []
    for k in range(s["patients"]):
        rng = np.random.default_rng([s["seed"], STREAM, 0, k])
        for number in range(1, s["files_per_patient"] + 1):
            # one recording without seizures (the last one), whatever the draws
            count = file_seizure_count(rng, number == 1, k == s["patients"] - 1 and number
                                       == s["files_per_patient"] and number > 1)
            seizures = tuple(place_seizures(rng, count, EDGE_S, seconds - EDGE_S))
            kinds = tuple(SEIZURE_TYPES[int(rng.integers(len(SEIZURE_TYPES)))]
                          for _ in seizures)
            # a missing stop only where 30 s stay within the recording
            no_stop = tuple(bool(rng.random() < NO_STOP_SHARE) and z.onset + NO_STOP_S
                            < seconds for z in seizures)
            start = dt.datetime.combine(FIRST_DATE + dt.timedelta(days=3 * k + number),
                                        dt.time(int(rng.integers(8, 20)), int(rng.integers(60))))
            plans.append(FilePlan(10 + k, number, start, seconds, seizures, kinds, no_stop))
    return plans


def signals(p: FilePlan, seed: int) -> list[Signal]:
    traits = patient_traits(np.random.default_rng([seed, STREAM, 1, p.patient]))
    rng = np.random.default_rng([seed, STREAM, 2, p.patient, p.number])
    names = (*SCALP, *HIDDEN)
    eeg = electrode_signals(rng, names, SFREQ, p.seconds, p.seizures, traits)
    row = {name: eeg[i] for i, name in enumerate(names)}
    heart, _ = ecg(rng, SFREQ, p.seconds)
    return [*(Signal(e, row[e], "uV", EEG_RANGE) for e in SCALP),
            *(Signal(label, row[a] - row[b], "uV", EEG_RANGE) for label, (a, b) in BTE.items()),
            Signal("ECG SD", heart, "uV", (-5000.0, 5000.0))]


def annotation_tsv(p: FilePlan, seed: int, keep: float = 1.0) -> str:
    """An annotation file of the recording; `keep` < 1 drops seizures (the _a2 reviewer)."""
    rng = np.random.default_rng([seed, STREAM, 3, p.patient, p.number, int(keep * 100)])
    out = io.StringIO()
    out.write("#########################################\n"
              f"# SeizeIT annotation of {p.stem}.edf\n"
              f"# recording duration = {p.seconds:.2f} seconds\n"
              "# start\tstop\tevent\tcomment\n"
              "#########################################\n")
    for (onset, duration), kind, gone in zip(p.annotated(), p.kinds, p.no_stop, strict=True):
        if rng.random() >= keep:
            continue
        stop = "" if gone else f"{onset + duration:.2f}"
        side, place = SIDES[int(rng.integers(len(SIDES)))], PLACES[int(rng.integers(len(PLACES)))]
        out.write(f"{onset:.2f}\t{stop}\t{kind}\tLateralization:{side}, Localization:{place}\n")
    return out.getvalue()


def subject_info_csv(plans: list[FilePlan], seed: int) -> str:
    lines = ["subject,sex,age,seizures"]
    for patient in sorted({p.patient for p in plans}):
        rng = np.random.default_rng([seed, STREAM, 4, patient])
        count = sum(len(p.seizures) for p in plans if p.patient == patient)
        lines.append(f"P_ID{patient},{'mf'[int(rng.integers(2))]},{int(rng.integers(18, 70))},"
                     f"{count}")
    return "\n".join(lines) + "\n"


def write_lookalike(root: Path, settings: dict) -> list[Path]:
    """Write the look-alike under root; the files written, MANIFEST.tsv last."""
    s = settings_of(settings)
    plans = plan(s)
    root = Path(root)
    start_rewrite(root, (f"{p.folder}/{p.stem}.edf" for p in plans), "*.edf", "EDF")
    root.mkdir(parents=True, exist_ok=True)
    files = []
    for p in plans:
        folder = root / p.folder
        folder.mkdir(exist_ok=True)
        files.append(write_edf(folder / f"{p.stem}.edf", signals(p, s["seed"]), SFREQ, p.start))
        for suffix, keep in ((ANNOTATION, 1.0), ("_a2.tsv", A2_KEEP)):
            path = folder / f"{p.stem}{suffix}"
            path.write_text(annotation_tsv(p, s["seed"], keep))
            files.append(path)
    info = root / "subject_info.csv"
    info.write_text(subject_info_csv(plans, s["seed"]))
    files.append(info)
    return [*files, write_manifest(root, files)]
