"""A Brain Invaders 2013a look-alike, in the unzipped layout MOABB's BI2013a reads.

    <root>/subject_01/meta.yml              runs: four entries {filename: run_N.gdf,
                                            experimental_condition, type}: run_1 adaptive
                                            training, run_2 adaptive online, run_3 nonadaptive
                                            training, run_4 nonadaptive online
    <root>/subject_01/Session1/run_N.mat    `data`: samples x 17 double, 16 EEG columns in
    ...                                     volts (512 Hz), then the stimulation column: 33285
                                            (Target) or 33286 (NonTarget) on each flash's onset
                                            sample, 0 elsewhere
    <root>/MANIFEST.tsv                     file, bytes: written last, so it marks completion

Subjects 1-7 get `sessions` session folders (8 in the real data), subjects 8-24 one. A run
phase: a 3 s lead-in, then repetitions of the 12 flash groups in random order, flash onsets
200-300 ms apart, never two target flashes in a row, 2 of 12 Target (1:5); the training phases
have `training_repetitions` (40 in the real data: 80 Target, 400 NonTarget), the online phases
`online_repetitions` (the real number varies with the player's success). The EEG is the ERP
generator's (synth/erp.py). What the real run files are named is not in MOABB's loader (it
takes the names from meta.yml); `run_N` is this look-alike's choice, with MOABB's "_N" run
number. Settings (config/datasets.yaml `generator:`): subjects (1-24), sessions (1-8),
training_repetitions, online_repetitions, seed. The MAT header text is fixed, so the same
settings write the same bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from embedprobe.core.errors import UsageError
from embedprobe.datasets.bi2013a import reader as bi2013a
from embedprobe.datasets.synth.erp import Flash, flash_order, synthesize_erp_run
from embedprobe.datasets.synth.files import start_rewrite, with_defaults, write_manifest
from embedprobe.datasets.synth.mat import write_mat

SFREQ = 512
ITEMS = 12
SOA_S = (0.2, 0.3)
LEAD_IN_S = 3.0
TAIL_S = 1.5
# run_N, in the meta's order: (experimental_condition, type)
RUNS = (("adaptive", "training"), ("adaptive", "online"), ("nonadaptive", "training"),
        ("nonadaptive", "online"))
TARGET, NONTARGET = 33285, 33286
MAT_HEADER = b"MATLAB 5.0 MAT-file, written by embedprobe's Brain Invaders 2013a look-alike"
DEFAULTS = {"subjects": 24, "sessions": 8, "training_repetitions": 40, "online_repetitions": 40,
            "seed": 0}


@dataclass(frozen=True)
class RunPlan:
    subject: int
    session: int
    number: int  # N of run_N
    path: str  # relative to root: "subject_01/Session1/run_3.mat"
    n_samples: int
    onsets: np.ndarray  # 0-based flash onsets
    target: np.ndarray  # bool per flash

    @property
    def run_type(self) -> str:
        return "_".join(RUNS[self.number - 1])

    def flashes(self) -> list[Flash]:
        return [Flash(k / SFREQ, bool(t)) for k, t in zip(self.onsets, self.target, strict=True)]


def _settings(settings: dict) -> dict:
    values = with_defaults(settings, DEFAULTS, "Brain Invaders 2013a")
    if not 1 <= int(values["subjects"]) <= 24:
        raise UsageError(f"subjects={values['subjects']}: Brain Invaders 2013a has 1-24",
                         fix="choose 1..24 subjects")
    if not 1 <= int(values["sessions"]) <= 8:
        raise UsageError(f"sessions={values['sessions']}",
                         fix="choose 1..8 (subjects 1-7 have 8 sessions, the others 1)")
    for key in ("training_repetitions", "online_repetitions"):
        if not 1 <= int(values[key]) <= 80:
            raise UsageError(f"{key}={values[key]}",
                             fix="choose 1..80 repetitions of 12 flashes (training: 40 in the "
                                 "real data)")
    return values


def _flashes(rng: np.random.Generator, repetitions: int) -> tuple[int, np.ndarray, np.ndarray]:
    at = LEAD_IN_S
    onsets, target = [], []
    targets = list(rng.choice(ITEMS, 2, replace=False))
    for _ in range(repetitions):
        for item in flash_order(rng, ITEMS, targets):
            onsets.append(int(round(at * SFREQ)))
            target.append(item in targets)
            at += rng.uniform(*SOA_S)
    return int((at + TAIL_S) * SFREQ), np.array(onsets), np.array(target)


def plan(settings: dict) -> list[RunPlan]:
    """File paths, flash onsets and classes of the look-alike, without signals."""
    values = _settings(settings)
    seed = int(values["seed"])
    plans = []
    for subject in range(1, int(values["subjects"]) + 1):
        sessions = int(values["sessions"]) if subject <= 7 else 1
        for session in range(1, sessions + 1):
            for number, (_, phase) in enumerate(RUNS, start=1):
                rng = np.random.default_rng([seed, 0, subject, session, number])
                n, onsets, target = _flashes(rng, int(values[f"{phase}_repetitions"]))
                plans.append(RunPlan(subject, session, number,
                                     f"subject_{subject:02d}/Session{session}/run_{number}.mat",
                                     n, onsets, target))
    return plans


def synthesize(run: RunPlan, seed: int) -> np.ndarray:
    """The run's `data`: (samples, 17), 16 EEG columns in volts and the stimulation column."""
    eeg = synthesize_erp_run(np.random.default_rng([seed, 1, run.subject, run.session,
                                                    run.number]),
                             bi2013a.CHANNELS, SFREQ, run.n_samples, run.flashes(),
                             np.random.default_rng([seed, 2, run.subject]))
    stim = np.zeros(run.n_samples)
    stim[run.onsets] = np.where(run.target, TARGET, NONTARGET)
    return np.column_stack([eeg.T * 1e-6, stim])


def _meta(subject: int) -> str:
    lines = [f"subject: {subject}", "runs:"]
    for number, (condition, phase) in enumerate(RUNS, start=1):
        lines += [f"- filename: run_{number}.gdf", f"  experimental_condition: {condition}",
                  f"  type: {phase}"]
    return "\n".join(lines) + "\n"


def write_lookalike(root: Path, settings: dict) -> list[Path]:
    """Write the look-alike under root; returns the files written, MANIFEST.tsv last."""
    root = Path(root)
    plans = plan(settings)
    seed = int(_settings(settings)["seed"])
    start_rewrite(root, (p.path for p in plans), "*.mat", ".mat")
    files = []
    for subject in sorted({p.subject for p in plans}):
        folder = root / f"subject_{subject:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        meta = folder / "meta.yml"
        meta.write_text(_meta(subject))
        files.append(meta)
        for run in (p for p in plans if p.subject == subject):
            path = root / run.path
            path.parent.mkdir(parents=True, exist_ok=True)
            files.append(write_mat(path, {"data": synthesize(run, seed)}, MAT_HEADER,
                                   compress=False))
    return [*files, write_manifest(root, files)]
