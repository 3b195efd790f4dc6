"""A look-alike of one NSRR study (reader.py): its folders, EDF names and channel labels, both
XML annotation files written by annotations.py (the module the reader parses them with), and
its harmonized dataset CSV.

Settings: `study` (reader.STUDIES), `participants`, `second_visits` (how many of them also
have the study's second visit, where it has one), `hours` per night, `seed`. Each night: a
hypnogram of 30 s epochs whose first epoch is unscored (`Unscored|9`) and one later epoch a
movement (`Movement|6`); arousals, apneas, hypopneas, limb and periodic limb movements with
their durations, and a desaturation (read, of no kind). The EEG follows the stage (alpha in
wake, theta in N1 and REM, spindle-band in N2, delta in N3) at 100 Hz (the real studies record
at 125-256 Hz: the look-alike stays small), with one slow channel (SpO2, 1 Hz) beside it, as the
real EDFs mix rates. CFS's EEG is in millivolts, as its EDFs are. The harmonized CSV holds
`nsrrid`, `visitnumber` (SHHS's, the one table of two visits), `nsrr_age`, `nsrr_sex`; MrOS has
one table per visit (the visit in its name), MESA's ids are unpadded numbers and MrOS's upper
case, as theirs are.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from embedprobe.datasets.nsrr import annotations as xml
from embedprobe.datasets.nsrr.reader import (
    AGE,
    EPOCH_SECONDS,
    ID,
    SEX,
    STUDIES,
    VISIT,
    Visit,
    annotation_file,
)
from embedprobe.datasets.synth.files import start_rewrite, with_defaults, write_manifest
from embedprobe.datasets.synth.sleep import cycling_hypnogram, stage_eeg

DEFAULTS = {"study": "shhs", "participants": 3, "second_visits": 1, "hours": 0.25, "seed": 0}
SFREQ = 100.0
SLOW_SFREQ = 1.0
# The harmonized CSVs' names (the reference's loaders open these versions)
TABLES = {"shhs": ["shhs-harmonized-dataset-0.21.0.csv"],
          "mesa": ["mesa-sleep-harmonized-dataset-0.8.0.csv"],
          "mros": ["mros-visit1-harmonized-0.6.0.csv", "mros-visit2-harmonized-0.6.0.csv"],
          "cfs": ["cfs-visit5-harmonized-dataset-0.7.0.csv"],
          "homepap": ["homepap-baseline-harmonized-dataset-0.2.0.csv"]}
# (EEG labels, their unit) per study; the mastoids of the referential montages are flat-ish
CHANNELS = {"shhs": (("EEG(sec)", "EEG"), "uV"), "mesa": (("EEG1", "EEG2", "EEG3"), "uV"),
            "mros": (("C3", "C4", "A1", "A2"), "uV"), "cfs": (("C3", "C4", "M1", "M2"), "mV"),
            "homepap": (("C3", "C4", "M1", "M2"), "uV")}
# Event names written (annotations.EVENTS keys) and their durations in seconds
EVENT_PLAN = (("Arousal (ASDA)", 8.0), ("Hypopnea", 14.0), ("Obstructive Apnea", 21.0),
              ("PLM (Left)", 2.5), ("Limb Movement (Right)", 1.5), ("SpO2 desaturation", 12.0),
              ("Central Apnea", 11.0))


@dataclass(frozen=True)
class NightPlan:
    study: str
    visit: Visit
    participant: str  # as the EDF names it
    age: float
    sex: str
    stages: np.ndarray  # per epoch, -1 unscored (epoch 0: Unscored|9, one Movement|6)
    movement: int  # the epoch scored Movement|6
    events: tuple[xml.Scored, ...]

    @property
    def stem(self) -> str:
        return {"shhs": f"shhs{self.visit.number}-{self.participant}",
                "mesa": f"mesa-sleep-{self.participant}",
                "mros": f"mros-visit{self.visit.number}-{self.participant}",
                "cfs": f"cfs-visit5-{self.participant}",
                "homepap": f"homepap-lab-full-{self.participant}"}[self.study]

    @property
    def seconds(self) -> float:
        return len(self.stages) * EPOCH_SECONDS

    def stage_events(self) -> list[tuple[float, float, str]]:
        """The NSRR stage runs, the movement epoch spelled Movement|6."""
        runs = xml.stage_runs(self.stages, EPOCH_SECONDS)
        return [(s, d, "Movement|6" if s == self.movement * EPOCH_SECONDS else c)
                for s, d, c in runs]


def _participant(study: str, k: int) -> str:
    return {"shhs": f"{200001 + k}", "mesa": f"{k + 1:04d}", "mros": f"aa{k + 1:04d}",
            "cfs": f"{800002 + k}", "homepap": f"{1600001 + k}"}[study]


def plan(settings: dict) -> list[NightPlan]:
    s = with_defaults(settings, DEFAULTS, "the NSRR look-alike")
    study = s["study"]
    visits = STUDIES[study].visits
    rng = np.random.default_rng(s["seed"])
    n = int(round(s["hours"] * 3600 / EPOCH_SECONDS))
    nights = []
    for k in range(int(s["participants"])):
        age = float(rng.integers(40, 80))
        sex = ("male", "female")[k % 2] if study != "mros" else "male"  # MrOS: men
        for v, visit in enumerate(visits[:2 if k < s["second_visits"] else 1]):
            stages = cycling_hypnogram(rng, n)
            stages[0] = -1  # the first epoch unscored
            movement = n // 2
            stages[movement] = -1
            onsets = np.sort(rng.choice(np.arange(2, n - 2), len(EVENT_PLAN), replace=False))
            events = tuple(xml.Scored(float(o * EPOCH_SECONDS + 3.5), dur, name)
                           for o, (name, dur) in zip(onsets, EVENT_PLAN, strict=True))
            nights.append(NightPlan(study, visit, _participant(study, k), age + 4.0 * v, sex,
                                    stages, movement, events))
    return nights


def write_night(root: Path, p: NightPlan, seed: int) -> list[Path]:
    from embedprobe.datasets.sleep_edf.lookalike import Channel, write_psg

    rng = np.random.default_rng([seed, int(p.participant.strip("a") or 0), p.visit.number])
    labels, unit = CHANNELS[p.study]
    scale = 1e-3 if unit == "mV" else 1.0
    limit = 500.0 * scale
    channels = [Channel(label, stage_eeg(rng, p.stages, SFREQ, EPOCH_SECONDS,
                                         label in ("A1", "A2", "M1", "M2")) * scale,
                        SFREQ, unit, (-limit, limit)) for label in labels]
    spo2 = 95.0 + rng.normal(0, 0.5, int(p.seconds * SLOW_SFREQ))
    channels.append(Channel("SpO2", spo2, SLOW_SFREQ, "%", (0.0, 100.0)))
    edf = root / "polysomnography" / "edfs" / p.visit.folder / f"{p.stem}.edf"
    edf.parent.mkdir(parents=True, exist_ok=True)
    write_psg(edf, channels, dt.datetime(2000, 1, 1, 22, 0, 0))
    nsrr = annotation_file(root, p.visit, p.stem, "nsrr")
    profusion = annotation_file(root, p.visit, p.stem, "profusion")
    for path in (nsrr, profusion):
        path.parent.mkdir(parents=True, exist_ok=True)
    xml.write_nsrr(nsrr, EPOCH_SECONDS, p.seconds, p.stages, p.events, p.stage_events())
    xml.write_profusion(profusion, EPOCH_SECONDS, p.stages, p.events, (p.movement,))
    return [edf, nsrr, profusion]


def write_tables(root: Path, nights: list[NightPlan]) -> list[Path]:
    import pandas as pd

    study = nights[0].study
    folder = root / "datasets"
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name in TABLES[study]:
        rows = [p for p in nights if study != "mros" or f"visit{p.visit.number}-" in name]
        table = pd.DataFrame({
            ID: [p.participant.upper() if study == "mros" else
                 str(int(p.participant)) for p in rows],
            VISIT: [p.visit.number for p in rows], AGE: [p.age for p in rows],
            SEX: [p.sex for p in rows]})
        if study != "shhs":  # one visit per table: the column is SHHS's alone here
            table = table.drop(columns=[VISIT])
        table.to_csv(folder / name, index=False)
        written.append(folder / name)
    return written


def write_lookalike(root: Path, settings: dict) -> list[Path]:
    root = Path(root)
    nights = plan(settings)
    seed = with_defaults(settings, DEFAULTS, "the NSRR look-alike")["seed"]
    start_rewrite(root, (f"{p.stem}.edf" for p in nights), "*.edf", "EDF",
                  key=lambda f: f.name)
    files = [f for p in nights for f in write_night(root, p, seed)]
    files += write_tables(root, nights)
    return [*files, write_manifest(root, files)]


def write_fold_manifest(path: Path, recordings: list[str], n_folds: int, seed: int) -> Path:
    """A partition manifest of the reference's shape (its configs/folds/shhs_v1.json: dataset,
    n_subjects, n_folds, seed, folds "0".. each the recordings fold k tests), the recordings
    shuffled by RandomState(seed) and cut into n_folds chunks."""
    import json

    order = np.random.RandomState(seed).permutation(len(recordings))
    chunks = np.array_split(np.array(sorted(recordings))[order], n_folds)
    payload = {"dataset": path.stem, "n_subjects": len(recordings), "n_folds": n_folds,
               "seed": seed, "folds": {str(k): sorted(c.tolist()) for k, c in enumerate(chunks)}}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2))
    return path
