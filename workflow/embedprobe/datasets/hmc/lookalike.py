"""A look-alike of the HMC sleep staging database (reader.py): recordings/SNnnn.edf with the
four EEG derivations and one EOG as HMC labels them, and recordings/SNnnn_sleepscoring.edf, an
EDF+ of annotations alone: "Lights off" at the start, one "Sleep stage ..." per 30 s epoch,
"Lights on" at the end. The scoring starts one epoch after the PSG (its first stage annotation
at 30 s), as a scored night can; the EEG follows the stage at 64 Hz (HMC records at 256 Hz:
the look-alike stays small).

Settings: `subjects`, `hours`, `seed`.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from embedprobe.datasets.hmc.reader import EEG_CHANNELS, EPOCH_SECONDS, SCORING, STAGE_OF_TEXT
from embedprobe.datasets.synth.files import start_rewrite, with_defaults, write_manifest
from embedprobe.datasets.synth.sleep import cycling_hypnogram, stage_eeg

DEFAULTS = {"subjects": 5, "hours": 0.25, "seed": 0}
SFREQ = 64.0
TEXT_OF_STAGE = {v: k for k, v in STAGE_OF_TEXT.items()}
START = dt.datetime(2018, 3, 1, 22, 30, 0)


@dataclass(frozen=True)
class NightPlan:
    name: str  # "SN001"
    stages: np.ndarray  # per scored epoch, from SCORING_OFFSET

    @property
    def seconds(self) -> float:  # the PSG: one epoch before the scoring, one after
        return (len(self.stages) + 2) * EPOCH_SECONDS

    def annotations(self) -> list[tuple[float, float, str]]:
        stages = [(EPOCH_SECONDS * (k + 1), float(EPOCH_SECONDS), TEXT_OF_STAGE[int(s)])
                  for k, s in enumerate(self.stages)]
        return [(0.0, 0.0, "Lights off"), *stages,
                (EPOCH_SECONDS * (len(self.stages) + 1), 0.0, "Lights on")]


def plan(settings: dict) -> list[NightPlan]:
    s = with_defaults(settings, DEFAULTS, "the HMC look-alike")
    rng = np.random.default_rng(s["seed"])
    n = int(round(s["hours"] * 3600 / EPOCH_SECONDS))
    # SN001, SN002, ... skipping SN014 as version 1.1 does
    names = [f"SN{k:03d}" for k in range(1, 200) if k not in (14, 64, 135)]
    return [NightPlan(names[k], cycling_hypnogram(rng, n)) for k in range(int(s["subjects"]))]


def write_night(folder: Path, p: NightPlan, seed: int) -> list[Path]:
    from embedprobe.datasets.sleep_edf.lookalike import Channel, write_hypnogram, write_psg

    rng = np.random.default_rng([seed, int(p.name[2:])])
    # the PSG's epochs: unscored before and after the scoring (wake-like signal)
    stages = np.concatenate([[-1], p.stages, [-1]])
    channels = [Channel(label, stage_eeg(rng, stages, SFREQ, EPOCH_SECONDS), SFREQ, "uV",
                        (-500.0, 500.0)) for label in (*EEG_CHANNELS, "EOG E1-M2")]
    psg = write_psg(folder / f"{p.name}.edf", channels, START)
    scoring = write_hypnogram(folder / f"{p.name}{SCORING}", p.annotations(), START)
    return [psg, scoring]


def write_lookalike(root: Path, settings: dict) -> list[Path]:
    root = Path(root)
    nights = plan(settings)
    seed = with_defaults(settings, DEFAULTS, "the HMC look-alike")["seed"]
    start_rewrite(root, (f"{p.name}.edf" for p in nights), "SN???.edf", "PSG",
                  key=lambda f: f.name)
    folder = root / "recordings"
    folder.mkdir(parents=True, exist_ok=True)
    files = [f for p in nights for f in write_night(folder, p, seed)]
    return [*files, write_manifest(root, files)]
