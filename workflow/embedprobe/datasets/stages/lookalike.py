"""A look-alike of STAGES as NSRR serves it (reader.py): site folders under original/STAGES
PSGs/, each EDF with its annotation CSV, in three of the sites' conventions:

- GSBB (Grael): EEG_C3-A2, EEG_C4-A1; stage rows in blocks (one row per run of epochs, its
  duration a multiple of 30 s);
- MSTH: the bare electrodes C3, C4 and mastoids M1, M2; a stage row per epoch of 30 s;
- BOGN: C3M2, C4M1; a stage row per epoch of duration 0.

Settings: `sites` (among those three), `subjects` per site, `repeats` (how many of each site's
subjects also have a repeat night, <id>_1, which the reader leaves out), `hours`, `seed`. Each
night's first epoch is UnknownStage, one later epoch MT; technician notes (Lights Off), an
Awake mark of 5 s and a Hypopnea of 14 s sit between the stage rows, as the real CSVs mix them.
The EEG follows the stage as the NSRR look-alike's does, at 100 Hz, with SpO2 at 1 Hz.
datasets/stages-harmonized-dataset-0.3.0.csv holds a row per participant (subject_code, the
first night's stem; visitcode 1; nsrr_age; nsrr_sex as NSRR spells it, male or female; and
nsrr_bmi), written with the pandas the NSRR look-alike's tables use.
"""

from __future__ import annotations

import csv
import datetime as dt
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from embedprobe.datasets.nsrr.lookalike import SFREQ, SLOW_SFREQ
from embedprobe.datasets.nsrr.reader import EPOCH_SECONDS
from embedprobe.datasets.stages.reader import COLUMNS, PSGS, TABLE_COLUMNS, VISIT
from embedprobe.datasets.synth.files import start_rewrite, with_defaults, write_manifest
from embedprobe.datasets.synth.sleep import cycling_hypnogram, stage_eeg

DEFAULTS = {"sites": ["GSBB", "MSTH", "BOGN"], "subjects": 1, "repeats": 0, "hours": 0.25,
            "seed": 0}
# per site: its EEG labels (electrode, reference or None), the stage rows' encoding
SITE_STYLES = {"GSBB": ((("EEG_C3-A2", None), ("EEG_C4-A1", None)), "blocks"),
               "MSTH": ((("C3", "M2"), ("C4", "M1")), "thirty"),
               "BOGN": ((("C3M2", None), ("C4M1", None)), "zero")}
NAMES = ("Wake", "Stage1", "Stage2", "Stage3", "REM")
START = dt.datetime(2000, 1, 1, 22, 0, 0)
HARMONIZED = "stages-harmonized-dataset-0.3.0.csv"  # the version the reference's loader opens


@dataclass(frozen=True)
class NightPlan:
    site: str
    stem: str
    stages: np.ndarray  # per epoch, -1 unscored (epoch 0 UnknownStage, the movement epoch MT)
    movement: int
    age: float  # the participant's (a repeat night's too)
    sex: str  # "male" or "female"

    @property
    def participant(self) -> str:
        return self.stem.removesuffix("_1")

    @property
    def seconds(self) -> float:
        return len(self.stages) * EPOCH_SECONDS

    @property
    def repeat(self) -> bool:
        return self.stem.endswith("_1")


def plan(settings: dict) -> list[NightPlan]:
    s = with_defaults(settings, DEFAULTS, "the STAGES look-alike")
    rng = np.random.default_rng(s["seed"])
    people = np.random.default_rng([s["seed"], 1])  # ages apart: the stages stay as they were
    n = int(round(s["hours"] * 3600 / EPOCH_SECONDS))
    nights = []
    for site in s["sites"]:
        for k in range(int(s["subjects"])):
            age, sex = float(people.integers(18, 80)), ("male", "female")[int(people.integers(2))]
            for repeat in ("", "_1")[:2 if k < s["repeats"] else 1]:
                stages = cycling_hypnogram(rng, n)
                stages[0] = -1
                stages[n // 2] = -1
                nights.append(NightPlan(site, f"{site}{k + 1:05d}{repeat}", stages, n // 2,
                                        age, sex))
    return nights


def _runs(p: NightPlan) -> list[tuple[int, int, str]]:
    """(first epoch, epochs, CSV name) of each run of one stage."""
    names = ["MT" if k == p.movement else "UnknownStage" if s < 0 else NAMES[s]
             for k, s in enumerate(p.stages)]
    runs: list[tuple[int, int, str]] = []
    for k, name in enumerate(names):
        if runs and runs[-1][2] == name:
            runs[-1] = (runs[-1][0], runs[-1][1] + 1, name)
        else:
            runs.append((k, 1, name))
    return runs


def write_csv(path: Path, p: NightPlan) -> Path:
    style = SITE_STYLES[p.site][1]
    rows = [(0.0, 0.0, "Lights Off")]
    for first, count, name in _runs(p):
        if style == "blocks":
            rows.append((first * EPOCH_SECONDS, count * EPOCH_SECONDS, name))
        else:
            rows += [((first + j) * EPOCH_SECONDS, EPOCH_SECONDS if style == "thirty" else 0.0,
                      name) for j in range(count)]
    rows += [(95.0, 5.0, "Awake"), (183.0, 14.0, "Hypopnea")]
    rows.sort(key=lambda r: r[0])  # notes between the stage rows, by time
    with open(path, "w", newline="") as handle:
        out = csv.writer(handle)
        out.writerow(COLUMNS)
        for at, seconds, name in rows:
            clock = (START + dt.timedelta(seconds=at)).strftime("%H:%M:%S")
            out.writerow([clock, f"{seconds:g}", name])
    return path


def write_night(root: Path, p: NightPlan, seed: int) -> list[Path]:
    from embedprobe.datasets.sleep_edf.lookalike import Channel, write_psg

    rng = np.random.default_rng([seed, int(p.stem[4:9]), p.repeat, ord(p.site[0])])
    pairs, _ = SITE_STYLES[p.site]
    channels = []
    for electrode, _ in pairs:
        eeg = stage_eeg(rng, p.stages, SFREQ, EPOCH_SECONDS, False)
        channels.append(Channel(electrode, eeg, SFREQ, "uV", (-500.0, 500.0)))
    for reference in sorted({r for _, r in pairs if r}):  # bare mastoids: near flat
        eeg = stage_eeg(rng, p.stages, SFREQ, EPOCH_SECONDS, True)
        channels.append(Channel(reference, eeg, SFREQ, "uV", (-500.0, 500.0)))
    spo2 = 95.0 + rng.normal(0, 0.5, int(p.seconds * SLOW_SFREQ))
    channels.append(Channel("SpO2", spo2, SLOW_SFREQ, "%", (0.0, 100.0)))
    folder = root / PSGS / p.site
    folder.mkdir(parents=True, exist_ok=True)
    edf = write_psg(folder / f"{p.stem}.edf", channels, START)
    return [edf, write_csv(folder / f"{p.stem}.csv", p)]


def write_table(root: Path, nights: list[NightPlan]) -> Path:
    """The harmonized dataset CSV: a row per participant."""
    import pandas as pd

    first = [p for p in nights if not p.repeat]
    c = TABLE_COLUMNS
    folder = root / "datasets"
    folder.mkdir(parents=True, exist_ok=True)
    pd.DataFrame({c.id: [p.stem for p in first], c.visit: [VISIT] * len(first),
                  c.age: [p.age for p in first], c.sex: [p.sex for p in first],
                  "nsrr_bmi": [24.5] * len(first)}).to_csv(folder / HARMONIZED, index=False)
    return folder / HARMONIZED


def write_lookalike(root: Path, settings: dict) -> list[Path]:
    root = Path(root)
    nights = plan(settings)
    seed = with_defaults(settings, DEFAULTS, "the STAGES look-alike")["seed"]
    start_rewrite(root, (f"{p.stem}.edf" for p in nights), "*.edf", "EDF",
                  key=lambda f: f.name)
    files = [f for p in nights for f in write_night(root, p, seed)]
    files.append(write_table(root, nights))
    return [*files, write_manifest(root, files)]
