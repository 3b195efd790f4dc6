"""A Helsinki neonatal look-alike: Zenodo record 2547147's layout, three experts who disagree.

One folder: eeg1.edf ... eegN.edf (19 electrodes "EEG Fp1-Ref", ..., at 256 Hz, 1 s data
records, lengths varying around `minutes` as the release's do), annotations_2017_A.csv, _B.csv
and _C.csv (header 1 ... N, one row per second, 0 or 1, blank past each recording's end),
clinical_information.csv, and MANIFEST.tsv last.

The signals are datasets/synth/seizure.py's, as the CHB-MIT and Siena look-alikes': a 1/f
background with rhythms that resemble seizures without being ones (theta and beta bursts,
interictal discharges, chewing), artefacts, and seizures of one kind per neonate that build up,
stay focal or spread, and leave post-ictal slowing. That is what keeps a random encoder from
scoring it perfectly: a random BIOT's event AUC on helsinki_neonatal_demo is well below 0.95
(docs/measurements/2026-12-07-helsinki-neonatal-demo.md).
The generator draws the true seizures (the first neonate has some, the last none) and each
expert marks each of them with probability 0.85 (0.7 for one under 30 s), its onset and end
each moved by up to 4 s, and with probability 0.15 a stretch of 10-30 s that holds no seizure:
the experts disagree as the release's do, and the consensus (datasets/helsinki/reader.py) is
what a reader must recover. The release's ECG and respiration channels are not written.

Settings: neonates (79), minutes (74, the release's median), seed (0).
"""

from __future__ import annotations

import csv
import datetime as dt
import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from embedprobe.core.errors import UsageError
from embedprobe.datasets.helsinki.reader import CLINICAL, EEG_CHANNELS, ELECTRODES, EXPERTS
from embedprobe.datasets.synth.files import start_rewrite, with_defaults, write_manifest
from embedprobe.datasets.synth.seizure import (
    Seizure,
    Signal,
    electrode_signals,
    patient_traits,
    place_seizures,
    write_edf,
)

SFREQ = 256
PHYSICAL_RANGE = (-3200.0, 3200.0)  # microvolts
DEFAULTS = {"neonates": 79, "minutes": 74, "seed": 0}
FIRST_DATE = dt.date(2010, 1, 4)  # fixed dates keep the bytes reproducible
EDGE_S = 10  # no seizure this close to a recording's start or end
STREAM = 4  # the look-alikes of one seed draw different patients
MARK_P, MARK_SHORT_P, SHORT_S = 0.85, 0.7, 30
JITTER_S = 4  # below half place_seizures' gap: one expert's marks of two seizures never merge
FALSE_MARK_P = 0.15
CLINICAL_COLUMNS = ("ID", "Gender", "BW (g)", "GA (weeks)", "EEG to PMA (weeks)",
                    "Diagnosis", "Neuroimaging Findings", "Primary Localisation")


@dataclass(frozen=True)
class NeonatePlan:
    number: int  # 1-based: eeg1.edf
    seconds: int
    seizures: tuple[Seizure, ...]  # what the signals hold
    marks: tuple[tuple[tuple[int, int], ...], ...]  # per expert, its (onset, end) seconds

    @property
    def name(self) -> str:
        return f"eeg{self.number}.edf"

    def expert_seconds(self, expert: int) -> np.ndarray:
        """The expert's per-second column (True: seizure)."""
        column = np.zeros(self.seconds, bool)
        for onset, end in self.marks[expert]:
            column[onset:end] = True
        return column


def _marks(rng, seizures, seconds: int) -> tuple[tuple[int, int], ...]:
    marks = []
    for s in seizures:
        if rng.random() < (MARK_SHORT_P if s.duration < SHORT_S else MARK_P):
            onset = s.onset + int(rng.integers(-JITTER_S, JITTER_S + 1))
            end = max(onset + 1, s.end + int(rng.integers(-JITTER_S, JITTER_S + 1)))
            marks.append((max(0, onset), min(seconds, end)))
    if rng.random() < FALSE_MARK_P:
        length = int(rng.integers(10, 31))
        onset = int(rng.integers(0, seconds - length))
        marks.append((onset, onset + length))
    return tuple(sorted(marks))


def plan(settings: dict) -> list[NeonatePlan]:
    """Every recording's length, seizures and the experts' marks, without signals (cheap)."""
    s = with_defaults(settings, DEFAULTS, "the Helsinki neonatal look-alike")
    if not 1 <= s["neonates"] <= 99 or not 2 <= s["minutes"] <= 240:
        raise UsageError(f"neonates={s['neonates']}, minutes={s['minutes']}",
                         fix="choose 1..99 neonates of 2..240 minutes (a recording must hold a "
                             "seizure of 20-90 s away from its edges)")
    plans = []
    for number in range(1, s["neonates"] + 1):
        rng = np.random.default_rng([s["seed"], STREAM, 0, number])
        seconds = int(round(s["minutes"] * 60 * rng.uniform(0.85, 1.15)))
        count = int(rng.choice(4, p=[0.3, 0.3, 0.2, 0.2]))
        if number == 1:  # a small look-alike holds seizures, whatever the draws
            count = max(1, count)
        elif number == s["neonates"]:  # and one neonate without any
            count = 0
        seizures = tuple(place_seizures(rng, count, EDGE_S, seconds - EDGE_S))
        marks = tuple(_marks(rng, seizures, seconds) for _ in EXPERTS)
        plans.append(NeonatePlan(number, seconds, seizures, marks))
    return plans


def signals(p: NeonatePlan, seed: int) -> list[Signal]:
    traits = patient_traits(np.random.default_rng([seed, STREAM, 1, p.number]))
    rng = np.random.default_rng([seed, STREAM, 2, p.number])
    eeg = electrode_signals(rng, ELECTRODES, SFREQ, p.seconds, p.seizures, traits)
    return [Signal(label, row, "uV", PHYSICAL_RANGE)
            for label, row in zip(EEG_CHANNELS, eeg, strict=True)]


def annotation_csv(plans: list[NeonatePlan], expert: int) -> str:
    """One expert's file: header 1 ... N, a row per second, blank past a recording's end."""
    columns = [p.expert_seconds(expert) for p in plans]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([p.number for p in plans])
    for second in range(max(p.seconds for p in plans)):
        writer.writerow([int(c[second]) if second < len(c) else "" for c in columns])
    return out.getvalue()


def clinical_csv(plans: list[NeonatePlan], seed: int) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CLINICAL_COLUMNS)
    for p in plans:
        rng = np.random.default_rng([seed, STREAM, 3, p.number])
        writer.writerow([p.number, "mf"[int(rng.integers(2))], int(rng.integers(2500, 4500)),
                         f"{int(rng.integers(36, 42))}", f"{int(rng.integers(38, 44))}",
                         "HIE" if p.seizures else "other", "N/A", "N/A"])
    return out.getvalue()


def write_lookalike(root: Path, settings: dict) -> list[Path]:
    """Write the look-alike under root; the files written, MANIFEST.tsv last."""
    s = with_defaults(settings, DEFAULTS, "the Helsinki neonatal look-alike")
    plans = plan(s)
    root = Path(root)
    start_rewrite(root, (p.name for p in plans), "eeg*.edf", "EDF", key=lambda f: f.name)
    root.mkdir(parents=True, exist_ok=True)
    files = []
    for p in plans:
        start = dt.datetime.combine(FIRST_DATE + dt.timedelta(days=p.number), dt.time(10))
        files.append(write_edf(root / p.name, signals(p, s["seed"]), SFREQ, start))
    for k, expert in enumerate(EXPERTS):
        path = root / f"annotations_2017_{expert}.csv"
        path.write_text(annotation_csv(plans, k))
        files.append(path)
    (root / CLINICAL).write_text(clinical_csv(plans, s["seed"]))
    files.append(root / CLINICAL)
    return [*files, write_manifest(root, files)]
