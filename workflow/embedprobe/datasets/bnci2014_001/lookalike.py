"""A BNCI 2014-001 look-alike: `A01T.mat` ... in the layout MOABB's loader reads.

    <root>/A01T.mat      MATLAB 5 file (zlib-compressed, as MATLAB's -v7 default) with `data`,
    <root>/A01E.mat      a 1 x N cell of run structs: X (samples x 25 double, microvolts, in
                         the amplifier's 100/32768 uV steps), trial (int32 column, 1-based
                         trial starts), y (uint8 column, codes 1-4), fs (250), classes (1 x 4
                         cell: 'left hand', 'right hand', 'feet', 'tongue'), artifacts (uint8
                         column), gender ('f'/'m'), age. The first `eog_runs` runs are the EOG
                         calibration (eyes open, closed, movements): empty trial, y, classes,
                         artifacts.
    <root>/MANIFEST.tsv  file, bytes: written last, so it marks completion

A trial: fixation cross and beep at t = 0 (the `trial` sample), cue at t = 2 s, imagery until
t = 6 s, then a 1.5-2.5 s break. Each run holds trials_per_run trials, balanced over the four
classes in random order; ~4% are marked in `artifacts` and carry a blink burst. Settings
(config/datasets.yaml `generator:`): subjects (A01..A09), sessions ([T, E]), runs_per_session
(6 in the real files), trials_per_run (48), eog_runs (3), eog_run_seconds ([120, 60, 60]),
seed. scipy writes the time into the MAT header: it is replaced by a fixed text, so the same
settings write the same bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from embedprobe.core.errors import UsageError
from embedprobe.datasets.bnci2014_001 import reader as bnci2014_001
from embedprobe.datasets.synth.files import with_defaults, write_flat
from embedprobe.datasets.synth.mat import write_mat
from embedprobe.datasets.synth.motor_imagery import (
    Cue,
    balanced_classes,
    subject_profile,
    synthesize_run,
)

SFREQ = 250
CLASS_TEXTS = ("left hand", "right hand", "feet", "tongue")  # y = position + 1
CLASS_OF_TEXT = {"left hand": "left_hand", "right hand": "right_hand", "feet": "feet",
                 "tongue": "tongue"}
UV_STEP = 100 / 32768  # a 16-bit amplifier at +-100 uV sensitivity
LEAD_IN_S = 5.0  # before the first trial of a run
TRIAL_S = 6.0  # trial start to fixation cross off
BREAK_S = (1.5, 2.5)
ARTIFACT_SHARE = 0.04
MAT_HEADER = b"MATLAB 5.0 MAT-file, written by embedprobe's BNCI 2014-001 look-alike"
DEFAULTS = {"subjects": 9, "sessions": ["T", "E"], "runs_per_session": 6, "trials_per_run": 48,
            "eog_runs": 3, "eog_run_seconds": [120, 60, 60], "seed": 0}


@dataclass(frozen=True)
class RunPlan:
    n_samples: int
    trial: np.ndarray  # 1-based trial starts (empty for calibration runs)
    y: np.ndarray  # codes 1-4
    artifacts: np.ndarray
    seed: tuple[int, ...]

    def cues(self) -> list[Cue]:
        return [Cue((start - 1) / SFREQ + bnci2014_001.CUE_SECONDS, bnci2014_001.IMAGERY_SECONDS,
                    CLASS_OF_TEXT[CLASS_TEXTS[code - 1]])
                for start, code in zip(self.trial, self.y, strict=True)]


@dataclass(frozen=True)
class SessionPlan:
    subject: int
    session: str
    name: str  # "A01T.mat"
    gender: str
    age: float
    runs: tuple[RunPlan, ...]


def _settings(settings: dict) -> dict:
    values = with_defaults(settings, DEFAULTS, "BNCI 2014-001")
    values["sessions"] = bnci2014_001.check_sessions(values["sessions"])
    if not 1 <= int(values["subjects"]) <= 9:
        raise UsageError(f"subjects={values['subjects']}: BNCI 2014-001 has A01-A09",
                         fix="choose 1..9 subjects")
    if not 1 <= int(values["runs_per_session"]) <= 6:
        raise UsageError(f"runs_per_session={values['runs_per_session']}",
                         fix="choose 1..6 (the real sessions have 6)")
    if not 4 <= int(values["trials_per_run"]) <= 96:
        raise UsageError(f"trials_per_run={values['trials_per_run']}",
                         fix="choose 4..96 (the real runs have 48)")
    if len(values["eog_run_seconds"]) != int(values["eog_runs"]) or \
            any(s < 1 for s in values["eog_run_seconds"]):
        raise UsageError(f"eog_run_seconds={values['eog_run_seconds']} for eog_runs="
                         f"{values['eog_runs']}", fix="give one length (>= 1 s) per EOG run")
    return values


def plan(settings: dict) -> list[SessionPlan]:
    """File names, trial starts and labels of the look-alike, without signals."""
    values = _settings(settings)
    seed = int(values["seed"])
    plans = []
    for subject in range(1, int(values["subjects"]) + 1):
        person = np.random.default_rng([seed, 0, subject])
        gender, age = str(person.choice(["f", "m"])), float(person.integers(20, 40))
        for session in values["sessions"]:
            runs = [RunPlan(int(seconds * SFREQ), np.zeros(0, np.int32), np.zeros(0, np.uint8),
                            np.zeros(0, np.uint8), (seed, 2, subject, ord(session), k))
                    for k, seconds in enumerate(values["eog_run_seconds"])]
            for k in range(int(values["runs_per_session"])):
                rng = np.random.default_rng([seed, 1, subject, ord(session), k])
                n = int(values["trials_per_run"])
                names = balanced_classes(rng, CLASS_TEXTS, n, extra_first=k)
                gaps = TRIAL_S + rng.uniform(*BREAK_S, n)
                starts = LEAD_IN_S + np.concatenate([[0.0], np.cumsum(gaps[:-1])])
                trial = (np.round(starts * SFREQ) + 1).astype(np.int32)
                y = np.array([CLASS_TEXTS.index(c) + 1 for c in names], np.uint8)
                artifacts = (rng.uniform(size=n) < ARTIFACT_SHARE).astype(np.uint8)
                n_samples = int(trial[-1] - 1 + round((TRIAL_S + BREAK_S[1]) * SFREQ))
                runs.append(RunPlan(n_samples, trial, y, artifacts,
                                    (seed, 2, subject, ord(session), len(runs))))
            plans.append(SessionPlan(subject, session, f"A{subject:02d}{session}.mat", gender,
                                     age, tuple(runs)))
    return plans


def _eog(rng: np.random.Generator, n: int, blinks_per_s: float) -> np.ndarray:
    """Three EOG channels: blinks, saccades and drift, in microvolts."""
    t = np.arange(int(0.4 * SFREQ)) / SFREQ
    blink = 150 * np.exp(-(((t - 0.2) / 0.06) ** 2))
    out = np.zeros((3, n))
    for at in rng.integers(0, max(1, n - len(t)), rng.poisson(blinks_per_s * n / SFREQ)):
        out[:, at:at + len(t)] += blink * np.array([1.0, 0.6, 0.8])[:, None]
    drift = np.cumsum(rng.normal(0, 0.5, (3, n)), axis=1)
    drift -= np.linspace(drift[:, :1], drift[:, -1:], n, axis=1).reshape(3, n)
    return out + drift + rng.normal(0, 3, (3, n))


def synthesize(session: SessionPlan, run: RunPlan, seed: int) -> np.ndarray:
    """One run's X: (samples, 25) microvolts, 22 EEG then 3 EOG."""
    profile = subject_profile(np.random.default_rng([seed, 3, session.subject]))
    rng = np.random.default_rng(run.seed)
    eyes_closed = len(run.trial) == 0 and run.seed[-1] == 1  # the second calibration run
    data = synthesize_run(rng, bnci2014_001.CHANNELS, SFREQ, run.n_samples, run.cues(),
                          profile, alpha_scale=1.8 if eyes_closed else 1.0)
    eog = _eog(rng, run.n_samples, 0.0 if eyes_closed else 0.3)
    for start, marked in zip(run.trial, run.artifacts, strict=True):
        if marked:  # the experts' mark: a burst of blinks inside the trial
            burst = _eog(rng, int(3 * SFREQ), 2.0)
            at = int(start - 1 + 2.5 * SFREQ)
            eog[:, at:at + burst.shape[1]] += burst[:, : run.n_samples - at]
    data[len(bnci2014_001.EEG_CHANNELS):] = eog
    data[0] += 0.1 * eog[0]  # Fz sees the eyes
    return np.round(data.T / UV_STEP) * UV_STEP


def _run_struct(session: SessionPlan, run: RunPlan, seed: int) -> dict:
    calibration = len(run.trial) == 0

    def column(values: np.ndarray) -> np.ndarray:  # MATLAB's [] (0 x 0) when empty
        return values.reshape(-1, 1) if len(values) else np.zeros((0, 0), values.dtype)

    return {
        "X": synthesize(session, run, seed),
        "trial": column(run.trial),
        "y": column(run.y),
        "fs": float(SFREQ),
        "classes": np.zeros((0, 0)) if calibration else np.array([CLASS_TEXTS], dtype=object),
        "artifacts": column(run.artifacts),
        "gender": session.gender,
        "age": session.age,
    }


def write_session(session: SessionPlan, path: Path, seed: int) -> Path:
    cell = np.empty((1, len(session.runs)), dtype=object)
    for k, run in enumerate(session.runs):
        cell[0, k] = _run_struct(session, run, seed)
    return write_mat(path, {"data": cell}, MAT_HEADER, compress=True)


def write_lookalike(root: Path, settings: dict) -> list[Path]:
    """Write the look-alike under root; returns the files written, MANIFEST.tsv last."""
    seed = int(_settings(settings)["seed"])
    return write_flat(root, plan(settings), "*.mat", ".mat",
                      lambda p, path: write_session(p, path, seed))
