"""A TUSZ v2.0.x look-alike: sessions with seizures in the corpus's layout and annotation files.

    <root>/edf/{train,dev,eval}/<subject>/sNNN_YYYY_MM_DD/<configuration>/
        <subject>_sNNN_tNNN.edf      1 s records; the montage's electrodes as TUH labels them
                                     ("EEG FP1-REF" in the averaged-reference configurations,
                                     "EEG FP1-LE" in the linked-ears ones; no A1, A2 in the
                                     "_a" ones), then an ECG; 256 Hz, one file at 250 Hz;
                                     TUH's patient field (datasets/tuab/lookalike.write_edf)
        <subject>_sNNN_tNNN.csv_bi   NEDC's csv_v1.0.0: the header lines (version, bname,
                                     duration, montage_file), the column line, then TERM rows
                                     of bckg and seiz covering the file
        <subject>_sNNN_tNNN.csv      the same header, then per TCP channel ("FP1-F7", ...;
                                     "A1-T3", "T4-A2" only where the ears are recorded) rows of
                                     bckg and the seizure's type (fnsz, gnsz, cpsz)
    <root>/MANIFEST.tsv (written last: its presence marks completion)

as TUSZ's AAREADME.txt (v2.0.3) and its csv files have them (datasets/tusz/reader.py). The
subjects cycle through the four configurations (01_tcp_ar, 02_tcp_le, 03_tcp_ar_a,
04_tcp_le_a), so both label forms and the ear-less files are read. Each subject has one session
of `files_per_subject` tokens; the last subject of a split with two or more has no seizure (TUSZ
adds seizure-free sessions "to test the false alarm performance"); the others' first file has
one or two seizures and later ones none, one or two.

Hard on purpose, as the CHB-MIT and Siena look-alikes: the signals are datasets/synth/seizure.py's
(each subject's 1/f background drifting with vigilance, alpha, blinks, muscle, chewing,
electrode pops; seizure-like bursts that are not seizures: rhythmic theta, diffuse beta, the
subject's own interictal discharges and 3-9 s rhythmic discharges in its seizure waveform;
seizures of 20-90 s, 0.3-1.3 x the subject's 1.0-1.5 x background amplitude at the focus, often
focal, a third of another kind than the subject's usual one), so a random encoder's probe
finds many seizures but raises false alarms on the look-alike bursts and misses faint ones:
its event AUC is not near 1, as on the CHB-MIT and Siena demos (docs/measurements/).

Settings (the dataset's `generator:` entry): train, dev, eval (subjects of each split, at least
1 each), files_per_subject, minutes (each file's length), seed.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from embedprobe.core.errors import UsageError
from embedprobe.datasets.synth.files import with_defaults, write_nested
from embedprobe.datasets.synth.seizure import (
    Seizure,
    Signal,
    ecg,
    electrode_signals,
    patient_traits,
    place_seizures,
)
from embedprobe.datasets.tuab.lookalike import SITE, subject_ids, write_edf
from embedprobe.datasets.tuh import CONFIGURATIONS, electrodes_of, label
from embedprobe.datasets.tusz import reader as tusz

DEFAULTS = {"train": 4, "dev": 2, "eval": 2, "files_per_subject": 2, "minutes": 10, "seed": 0}
SFREQ, OTHER_SFREQ = 256, 250
EEG_RANGE = (-3200.0, 3200.0)  # microvolts
EKG_RANGE = (-5000.0, 5000.0)
FIRST_DATE = dt.date(2003, 1, 6)  # fixed dates keep the bytes reproducible
STREAM = 12  # the look-alikes of one seed draw different signals
EDGE_S = 10  # no seizure this close to a file's start or end
SEIZURE_TYPES = ("fnsz", "gnsz", "cpsz")
MONTAGE_FILE = "$NEDC_NFC/lib/nedc_eas_default_montage.txt"
# The TCP montage's channels, as the per-channel .csv files name them (the reference's
# TCP_MONTAGE_CHANNELS)
TCP = ("FP1-F7", "F7-T3", "T3-T5", "T5-O1", "FP2-F8", "F8-T4", "T4-T6", "T6-O2", "A1-T3",
       "T3-C3", "C3-CZ", "CZ-C4", "C4-T4", "T4-A2", "FP1-F3", "F3-C3", "C3-P3", "P3-O1",
       "FP2-F4", "F4-C4", "C4-P4", "P4-O2")


@dataclass(frozen=True)
class FilePlan:
    split: str
    subject: str  # 8-letter id
    subject_index: int  # draws the subject's traits
    session: int
    token: int
    configuration: str
    sfreq: int
    start: dt.datetime
    seconds: int
    seizures: tuple[Seizure, ...]
    kinds: tuple[str, ...]  # each seizure's type in the .csv
    age: int
    sex: str

    @property
    def recording(self) -> str:
        return f"{self.subject}_s{self.session:03d}_t{self.token:03d}"

    @property
    def folder(self) -> str:
        """The file's folder under root."""
        day = self.start.date()
        return (f"{tusz.EDF_FOLDER}/{self.split}/{self.subject}/s{self.session:03d}_"
                f"{day:%Y_%m_%d}/{self.configuration}")

    @property
    def relative(self) -> str:
        return f"{self.folder}/{self.recording}.edf"

    @property
    def reference(self) -> str:
        return CONFIGURATIONS[self.configuration]


def settings_of(settings: dict) -> dict:
    out = with_defaults(settings, DEFAULTS, "TUSZ")
    for key in tusz.SPLITS:
        if not 1 <= int(out[key]) <= 200:
            raise UsageError(f"{key}={out[key]}: the official split needs subjects in train, "
                             "dev and eval", fix=f"choose 1..200 {key} subjects")
    if not 1 <= int(out["files_per_subject"]) <= 20:
        raise UsageError(f"files_per_subject={out['files_per_subject']}", fix="choose 1..20")
    if not 2 <= float(out["minutes"]) <= 120:
        raise UsageError(f"minutes={out['minutes']}: a file must hold a seizure (20-90 s) away "
                         "from its edges", fix="choose 2..120 minutes per file")
    return out


def plan(settings: dict) -> list[FilePlan]:
    """Every file's split, subject, session, configuration, rate, start and seizures (no
    signals: cheap), sorted by recording id as the reader lists them."""
    s = settings_of(settings)
    rng = np.random.default_rng([s["seed"], STREAM, 0])
    splits = [split for split in tusz.SPLITS for _ in range(int(s[split]))]
    ids = subject_ids(rng, len(splits))
    configurations = list(CONFIGURATIONS)
    seconds = int(round(float(s["minutes"]) * 60))
    n_files = len(splits) * int(s["files_per_subject"])
    other_rate = int(rng.integers(n_files))
    plans = []
    for i, split in enumerate(splits):
        last_of_split = int(s[split]) > 1 and (i + 1 == len(splits) or splits[i + 1] != split)
        start = dt.datetime.combine(FIRST_DATE + dt.timedelta(days=23 * i),
                                    dt.time(int(rng.integers(7, 18)), int(rng.integers(60))))
        age, sex = int(rng.integers(1, 90)), str(rng.choice(["F", "M"]))
        for token in range(int(s["files_per_subject"])):
            count = (0 if last_of_split else rng.integers(1, 3) if token == 0
                     else rng.choice(3, p=[0.3, 0.4, 0.3]))
            seizures = tuple(place_seizures(rng, int(count), EDGE_S, seconds - EDGE_S))
            kinds = tuple(str(rng.choice(SEIZURE_TYPES)) for _ in seizures)
            number = len(plans)
            plans.append(FilePlan(split, ids[i], i, 1, token, configurations[i % 4],
                                  OTHER_SFREQ if number == other_rate else SFREQ, start,
                                  seconds, seizures, kinds, age, sex))
            start += dt.timedelta(seconds=seconds + int(rng.integers(5, 60)))
    return sorted(plans, key=lambda p: p.recording)


def signals(p: FilePlan, seed: int) -> list[Signal]:
    """The file's channels: its configuration's electrodes, then an ECG."""
    traits = patient_traits(np.random.default_rng([seed, STREAM, 1, p.subject_index]))
    rng = np.random.default_rng([seed, STREAM, 2, p.subject_index, p.token])
    electrodes = electrodes_of(p.configuration)
    eeg = electrode_signals(rng, [SITE[e] for e in electrodes], p.sfreq, p.seconds,
                            p.seizures, traits)
    heart, _ = ecg(rng, p.sfreq, p.seconds)
    return [*(Signal(label(e, p.reference), eeg[i], "uV", EEG_RANGE)
              for i, e in enumerate(electrodes)),
            Signal(label("EKG1", p.reference), heart, "uV", EKG_RANGE)]


def _header(p: FilePlan) -> list[str]:
    return [f"# version = {tusz.CSV_VERSION}", f"# bname = {p.recording}",
            f"# duration = {p.seconds:.2f} secs", f"# montage_file = {MONTAGE_FILE}", "#",
            tusz.COLUMNS]


def _segments(p: FilePlan, labels: tuple[str, ...]) -> list[tuple[float, float, str]]:
    """(start, stop, label) covering the file: background between the seizures."""
    out, at = [], 0.0
    for seizure, name in zip(p.seizures, labels, strict=True):
        if seizure.onset > at:
            out.append((at, float(seizure.onset), tusz.BACKGROUND))
        out.append((float(seizure.onset), float(seizure.end), name))
        at = float(seizure.end)
    if at < p.seconds:
        out.append((at, float(p.seconds), tusz.BACKGROUND))
    return out


def csv_bi_text(p: FilePlan) -> str:
    rows = [f"{tusz.TERM},{a:.4f},{b:.4f},{name},1.0000"
            for a, b, name in _segments(p, ("seiz",) * len(p.seizures))]
    return "\n".join(_header(p) + rows) + "\n"


def csv_text(p: FilePlan) -> str:
    recorded = set(electrodes_of(p.configuration))
    channels = [c for c in TCP if set(c.split("-")) <= recorded]
    rows = [f"{channel},{a:.4f},{b:.4f},{name},1.0000" for channel in channels
            for a, b, name in _segments(p, p.kinds)]
    return "\n".join(_header(p) + rows) + "\n"


def write_files(p: FilePlan, path: Path, seed: int) -> list[Path]:
    """The recording's EDF and its two annotation files beside it."""
    written = [write_edf(path, p, signals(p, seed))]
    for suffix, text in ((".csv_bi", csv_bi_text(p)), (".csv", csv_text(p))):
        written.append(path.with_suffix(suffix))
        written[-1].write_text(text)
    return written


def write_lookalike(root: Path, settings: dict) -> list[Path]:
    """Write the look-alike under root; the files written, MANIFEST.tsv last."""
    s = settings_of(settings)
    return write_nested(root, plan(s), "*.edf", "EDF",
                        lambda p, path: write_files(p, path, s["seed"]))
