"""A look-alike of MASS (reader.py) in the reference's layout: SS0s/<id> PSG.edf and
SS0s/annotations/<id> Base.edf per subset. SS1 nights are scored per 30 s and carry
micro-arousals with their durations; SS2 nights per 20 s, their EEG referenced `-LER` and
lacking F3 and F4 (read as zeros), as MASS's subsets differ. Each Base file starts with a
"Sleep stage ?" epoch and holds a free-text annotation (not a stage). The EEG follows the stage
at 64 Hz (MASS records at 256 Hz: the look-alike stays small).

Settings: `subsets` (which, of 1 and 2), `subjects` (per subset), `hours`, `seed`.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from embedprobe.datasets.mass.reader import AROUSAL, STAGE_OF_TEXT
from embedprobe.datasets.synth.files import start_rewrite, with_defaults, write_manifest
from embedprobe.datasets.synth.sleep import cycling_hypnogram, stage_eeg

DEFAULTS = {"subsets": [1, 2], "subjects": 3, "hours": 0.25, "seed": 0}
SFREQ = 64.0
SCORED_SECONDS = {1: 30, 2: 20}  # the subset's scoring epoch
ELECTRODES = {1: ("F3", "F4", "C3", "C4", "O1", "O2"), 2: ("C3", "C4", "O1", "O2")}
REFERENCE = {1: "-CLE", 2: "-LER"}
TEXT_OF_STAGE = {0: "Sleep stage W", 1: "Sleep stage 1", 2: "Sleep stage 2",
                 3: "Sleep stage 3", 4: "Sleep stage R", -1: "Sleep stage ?"}
AROUSAL_TEXT = f'<Event channel="EEG C3-CLE" groupName="{AROUSAL}" name="{AROUSAL}" />'
AROUSALS = ((3.0, 4.5), (7.0, 11.0), (12.0, 2.0))  # (at this share of the night, seconds)
START = dt.datetime(2004, 5, 3, 23, 0, 0)
PSG_SECONDS_BEFORE = 10.0  # the scoring starts 10 s into the PSG


@dataclass(frozen=True)
class NightPlan:
    recording: str  # "01-01-0001"
    subset: int
    stages: np.ndarray  # per scoring epoch of the subset; epoch 0 "Sleep stage ?"
    arousals: tuple[tuple[float, float], ...]  # (onset s from the PSG's start, duration)

    @property
    def epoch(self) -> int:
        return SCORED_SECONDS[self.subset]

    @property
    def seconds(self) -> float:  # the PSG: 10 s before the scoring, whole 30 s records
        scored = PSG_SECONDS_BEFORE + len(self.stages) * self.epoch
        return float(np.ceil(scored / 30.0) * 30.0)

    def annotations(self) -> list[tuple[float, float, str]]:
        out = [(PSG_SECONDS_BEFORE + k * self.epoch, float(self.epoch), TEXT_OF_STAGE[int(s)])
               for k, s in enumerate(self.stages)]
        out += [(onset, duration, AROUSAL_TEXT) for onset, duration in self.arousals]
        return sorted([*out, (PSG_SECONDS_BEFORE + 1.0, 0.0, "Lights off comment")])


def plan(settings: dict) -> list[NightPlan]:
    s = with_defaults(settings, DEFAULTS, "the MASS look-alike")
    rng = np.random.default_rng(s["seed"])
    nights = []
    for subset in s["subsets"]:
        if subset not in SCORED_SECONDS:
            raise ValueError(f"the MASS look-alike writes subsets 1 and 2, not {subset}")
        n = int(round(s["hours"] * 3600 / SCORED_SECONDS[subset]))
        for k in range(int(s["subjects"])):
            stages = cycling_hypnogram(rng, n)
            stages[0] = -1
            arousals = () if subset != 1 else tuple(
                (PSG_SECONDS_BEFORE + round(n * SCORED_SECONDS[1] * at / 15.0) + 0.25, dur)
                for at, dur in AROUSALS)
            nights.append(NightPlan(f"01-0{subset}-{k + 1:04d}", subset, stages, arousals))
    return nights


def write_night(root: Path, p: NightPlan, seed: int) -> list[Path]:
    from embedprobe.datasets.sleep_edf.lookalike import Channel, write_hypnogram, write_psg

    rng = np.random.default_rng([seed, p.subset, int(p.recording[-4:])])
    per_second = np.repeat(p.stages, p.epoch)
    per_second = np.concatenate([np.full(int(PSG_SECONDS_BEFORE), -1), per_second])
    per_second = np.concatenate([per_second, np.full(int(p.seconds) - len(per_second), -1)])
    eeg_by_second = [stage_eeg(rng, per_second, SFREQ, 1.0) for _ in ELECTRODES[p.subset]]
    channels = [Channel(f"EEG {e}{REFERENCE[p.subset]}", x, SFREQ, "uV", (-500.0, 500.0))
                for e, x in zip(ELECTRODES[p.subset], eeg_by_second, strict=True)]
    channels.append(Channel("EOG Left Horiz", stage_eeg(rng, per_second, SFREQ, 1.0), SFREQ,
                            "uV", (-500.0, 500.0)))
    folder = root / f"SS0{p.subset}"
    (folder / "annotations").mkdir(parents=True, exist_ok=True)
    psg = write_psg(folder / f"{p.recording} PSG.edf", channels, START)
    base = write_hypnogram(folder / "annotations" / f"{p.recording} Base.edf",
                           p.annotations(), START)
    return [psg, base]


def write_lookalike(root: Path, settings: dict) -> list[Path]:
    root = Path(root)
    nights = plan(settings)
    seed = with_defaults(settings, DEFAULTS, "the MASS look-alike")["seed"]
    start_rewrite(root, (f"{p.recording} PSG.edf" for p in nights), "* PSG.edf", "PSG",
                  key=lambda f: f.name)
    files = [f for p in nights for f in write_night(root, p, seed)]
    return [*files, write_manifest(root, files)]


assert set(TEXT_OF_STAGE.values()) <= set(STAGE_OF_TEXT)
