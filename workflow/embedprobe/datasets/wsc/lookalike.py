"""A look-alike of the Wisconsin Sleep Cohort as NSRR serves it (reader.py): the flat
polysomnography/ folder of wsc-visit<N>-<id>-nsrr.edf files, each with its stage file, and the
cohort's dataset CSV (wsc_id, wsc_vst, age, sex).

Settings: `participants`, `second_visits` (how many of them also have visit 2), `hours`, `seed`.
The first participant's first visit is scored in an .allscore.txt (its recording starts at
23:50, so its stage marks cross midnight; a NO STAGE first epoch, an MVT epoch, a technician
note and END RECORDING last), every other visit in a .stg.txt (a header line; stage 4 written
for some N3 epochs, code 7 for the first epoch, 6 for the movement epoch). The EEG (C3_M2,
O1_M2 at 100 Hz, SpO2 at 1 Hz) follows the stage as the NSRR look-alike's does.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from embedprobe.datasets.nsrr.lookalike import SFREQ, SLOW_SFREQ
from embedprobe.datasets.nsrr.reader import EPOCH_SECONDS
from embedprobe.datasets.synth.files import start_rewrite, with_defaults, write_manifest
from embedprobe.datasets.synth.sleep import cycling_hypnogram, stage_eeg
from embedprobe.datasets.wsc.reader import COLUMNS

DEFAULTS = {"participants": 3, "second_visits": 1, "hours": 0.25, "seed": 0}
TABLE = "wsc-dataset-0.8.0.csv"  # the version the reference's loader opens
CHANNELS = ("C3_M2", "O1_M2")
ALLSCORE_NAMES = ("W", "N1", "N2", "N3", "R")


@dataclass(frozen=True)
class VisitPlan:
    participant: str  # the wsc_id
    visit: int
    age: float
    sex: str  # "M" or "F", as the CSV holds it
    stages: np.ndarray  # per epoch, -1 unscored (epoch 0 and the movement epoch)
    movement: int
    allscore: bool  # scored in an .allscore.txt (else a .stg.txt)
    start: dt.datetime

    @property
    def stem(self) -> str:
        return f"wsc-visit{self.visit}-{self.participant}-nsrr"

    @property
    def recording(self) -> str:
        return f"{self.participant}_visit{self.visit}"

    @property
    def seconds(self) -> float:
        return len(self.stages) * EPOCH_SECONDS


def plan(settings: dict) -> list[VisitPlan]:
    s = with_defaults(settings, DEFAULTS, "the WSC look-alike")
    rng = np.random.default_rng(s["seed"])
    n = int(round(s["hours"] * 3600 / EPOCH_SECONDS))
    visits = []
    for k in range(int(s["participants"])):
        age = float(rng.integers(35, 65))
        for v in range(2 if k < s["second_visits"] else 1):
            stages = cycling_hypnogram(rng, n)
            stages[0] = -1
            stages[n // 2] = -1
            first = k == 0 and v == 0
            start = dt.datetime(2000, 1, 1, 23, 50) if first else dt.datetime(2000, 1, 1, 22)
            visits.append(VisitPlan(f"{10001 + k}", v + 1, age + 4.0 * v, "MF"[k % 2], stages,
                                    n // 2, first, start))
    return visits


def _clock(at: dt.datetime) -> str:
    return at.strftime("%H:%M:%S.") + f"{at.microsecond // 1000:03d}"


def write_allscore(path: Path, p: VisitPlan) -> Path:
    """Timed lines: START RECORDING, a STAGE - mark at each change of stage (NO STAGE for the
    unscored first epoch, MVT for the movement epoch), a note, END RECORDING."""
    lines = [f"{_clock(p.start)}\tSTART RECORDING", f"{_clock(p.start)}\tLIGHTS OUT"]
    previous = None
    for k, stage in enumerate(p.stages):
        name = ("MVT" if k == p.movement else "NO STAGE") if stage < 0 else \
            ALLSCORE_NAMES[stage]
        if name != previous:
            at = p.start + dt.timedelta(seconds=k * EPOCH_SECONDS)
            lines.append(f"{_clock(at)}\tSTAGE - {name}")
            previous = name
    lines.append(f"{_clock(p.start + dt.timedelta(seconds=p.seconds))}\tEND RECORDING")
    path.write_text("\n".join(lines) + "\n", encoding="latin-1")
    return path


def write_stg(path: Path, p: VisitPlan) -> Path:
    """One line per epoch: its number, the stage code (N3 alternately 3 and 4, REM 5, 7 the
    unscored first epoch, 6 the movement epoch)."""
    lines = ["Epoch\tUser-Defined Stage\tCAST-Defined Stage"]
    for k, stage in enumerate(p.stages):
        code = (6 if k == p.movement else 7) if stage < 0 else \
            (3 + k % 2 if stage == 3 else 5 if stage == 4 else int(stage))
        lines.append(f"{k + 1}\t{code}\t{code}")
    path.write_text("\n".join(lines) + "\n", encoding="latin-1")
    return path


def write_visit(root: Path, p: VisitPlan, seed: int) -> list[Path]:
    from embedprobe.datasets.sleep_edf.lookalike import Channel, write_psg

    rng = np.random.default_rng([seed, int(p.participant), p.visit])
    channels = [Channel(label, stage_eeg(rng, p.stages, SFREQ, EPOCH_SECONDS), SFREQ, "uV",
                        (-500.0, 500.0)) for label in CHANNELS]
    spo2 = 95.0 + rng.normal(0, 0.5, int(p.seconds * SLOW_SFREQ))
    channels.append(Channel("SpO2", spo2, SLOW_SFREQ, "%", (0.0, 100.0)))
    folder = root / "polysomnography"
    folder.mkdir(parents=True, exist_ok=True)
    edf = write_psg(folder / f"{p.stem}.edf", channels, p.start)
    note = (write_allscore(folder / f"{p.stem}.allscore.txt", p) if p.allscore else
            write_stg(folder / f"{p.stem}.stg.txt", p))
    return [edf, note]


def write_table(root: Path, visits: list[VisitPlan]) -> Path:
    import pandas as pd

    folder = root / "datasets"
    folder.mkdir(parents=True, exist_ok=True)
    pd.DataFrame({COLUMNS.id: [int(p.participant) for p in visits],
                  COLUMNS.visit: [p.visit for p in visits],
                  COLUMNS.age: [p.age for p in visits],
                  COLUMNS.sex: [p.sex for p in visits]}).to_csv(folder / TABLE, index=False)
    return folder / TABLE


def write_lookalike(root: Path, settings: dict) -> list[Path]:
    root = Path(root)
    visits = plan(settings)
    seed = with_defaults(settings, DEFAULTS, "the WSC look-alike")["seed"]
    start_rewrite(root, (f"{p.stem}.edf" for p in visits), "*.edf", "EDF",
                  key=lambda f: f.name)
    files = [f for p in visits for f in write_visit(root, p, seed)]
    files.append(write_table(root, visits))
    return [*files, write_manifest(root, files)]
