"""An NMT Scalp EEG look-alike: normal and abnormal EEGs in the archive's layout.

    <root>/{normal,abnormal}/{train,eval}/<NNNNNNN>.edf
    <root>/Labels.csv   recordname,label,age,gender,loc: one row per file
    <root>/MANIFEST.tsv (written last: its presence marks completion)

as the reference reads it (datasets/nmt/reader.py). Each EDF holds 1 s records at 200 Hz of the
21 electrodes labelled by their 10-20 names ("FP1", ..., "T3"-"T6", "A1", "A2", in TUH's order),
stored as NMT's are, 100 times too small for the "uV" the header says (the reader scales them
back). File numbers are drawn so that their order does not follow the class or the split; each
file is its own participant.

Signals: the TUAB look-alike's (datasets/tuab/lookalike.py eeg_signals: each participant's
background, and in an abnormal recording generalised slowing, a slower and weaker posterior
rhythm and interictal discharges), drawn for participants of their own.

Settings (the dataset's `generator:` entry): train_normal, train_abnormal, eval_normal,
eval_abnormal (recordings of each split and class, at least 1 each), minutes, seed.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from embedprobe.datasets.nmt import reader as nmt
from embedprobe.datasets.synth.files import with_defaults, write_nested
from embedprobe.datasets.synth.seizure import Signal, write_edf
from embedprobe.datasets.tuab import lookalike as tuab_lookalike
from embedprobe.datasets.tuh import ELECTRODES

DEFAULTS = {"train_normal": 4, "train_abnormal": 4, "eval_normal": 2, "eval_abnormal": 2,
            "minutes": 20, "seed": 0}
SFREQ = 200
EEG_RANGE = (-32.0, 32.0)  # the files' "uV": 1/AMPLITUDE_SCALE of the real microvolts
FIRST_DATE = dt.date(2017, 5, 8)  # fixed dates keep the bytes reproducible
STREAM = 13
SUBJECTS_FROM = 100_000  # the TUAB draws' subject numbers stay below: NMT's participants differ


@dataclass(frozen=True)
class FilePlan:
    split: str
    label: str
    number: int  # the file's 7-digit number
    age: int
    sex: str
    recording_plan: tuab_lookalike.RecordingPlan  # what draws the signals

    @property
    def name(self) -> str:
        return f"{self.number:07d}.edf"

    @property
    def relative(self) -> str:
        return f"{self.label}/{self.split}/{self.name}"


def settings_of(settings: dict) -> dict:
    return tuab_lookalike.settings_of(with_defaults(settings, DEFAULTS, "NMT"))


def plan(settings: dict) -> list[FilePlan]:
    """Every file's split, class, number and participant (no signals: cheap), by number."""
    s = settings_of(settings)
    rows = [(split, label) for split in nmt.SPLITS for label in nmt.CLASSES
            for _ in range(int(s[f"{split}_{label}"]))]
    rng = np.random.default_rng([s["seed"], STREAM, 0])
    numbers = 1 + rng.permutation(len(rows))
    seconds = int(round(float(s["minutes"]) * 60))
    plans = []
    for i, (split, label) in enumerate(rows):
        age, sex = int(rng.integers(1, 90)), str(rng.choice(["F", "M"]))
        start = dt.datetime.combine(FIRST_DATE + dt.timedelta(days=3 * int(numbers[i])),
                                    dt.time(9 + i % 8, int(rng.integers(60))))
        draw = tuab_lookalike.RecordingPlan(split, label, f"{numbers[i]:07d}",
                                            SUBJECTS_FROM + i, 1, 0, SFREQ, start, seconds,
                                            age, sex)
        plans.append(FilePlan(split, label, int(numbers[i]), age, sex, draw))
    return sorted(plans, key=lambda p: p.number)


def signals(p: FilePlan, seed: int) -> list[Signal]:
    eeg = tuab_lookalike.eeg_signals(p.recording_plan, seed) / nmt.AMPLITUDE_SCALE
    return [Signal(e, eeg[i], "uV", EEG_RANGE) for i, e in enumerate(ELECTRODES)]


def labels_text(plans: list[FilePlan]) -> str:
    rows = [",".join(nmt.COLUMNS)] + [
        f"{p.name},{p.label},{p.age},{'male' if p.sex == 'M' else 'female'},{p.split}"
        for p in plans]
    return "\n".join(rows) + "\n"


def write_lookalike(root: Path, settings: dict) -> list[Path]:
    """Write the look-alike under root; the files written, Labels.csv after the EDFs and
    MANIFEST.tsv last."""
    s = settings_of(settings)
    plans = plan(s)

    def write(p: FilePlan, path: Path) -> list[Path]:
        return [write_edf(path, signals(p, s["seed"]), SFREQ, p.recording_plan.start)]

    def table(root: Path) -> list[Path]:
        (root / nmt.LABELS_FILE).write_text(labels_text(plans))
        return [root / nmt.LABELS_FILE]

    return write_nested(root, plans, "*.edf", "EDF", write, table)
