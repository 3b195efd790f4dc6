"""An EEGMAT look-alike: PhysioNet eegmat 1.0.0's files, names and EDF layout.

    <root>/Subject00_1.edf     EDF+ (1 s data records) at 500 Hz, the 21 signals of the real
    <root>/Subject00_2.edf     files in their order and labels ("EEG Fp1" ... "EEG Pz",
    ...                        "EEG A2-A1", "ECG ECG"), microvolts; _1 rest (eyes closed),
                               _2 serial subtraction
    <root>/subject-info.csv    Subject, Age, Gender, Recording year, Number of subtractions,
                               Count quality (one row per subject)
    <root>/RECORDS             one file name per line
    <root>/MANIFEST.tsv        file, bytes: written last, so it marks completion

Signals (microvolts): a 1/f background with sensorimotor mu and beta (datasets/synth/
motor_imagery.py, without cues), a posterior alpha rhythm (strong: eyes closed) and a
frontal-midline theta rhythm (around Fz), each waxing and waning over seconds. The class
signature is the classic workload effect: during the arithmetic posterior alpha drops (to
40-60% of its rest amplitude) and frontal-midline theta (4-7 Hz) rises (1.8-2.6x); subjects of
group "B" (Count quality 0: fewer subtractions) show a weaker effect. Alpha and theta
frequencies, the alpha level and the gain vary between subjects. The change is one of spectral
shape at fixed places, so it survives per-channel amplitude scaling. "EEG A2-A1" carries a low
background, "ECG ECG" a heartbeat (datasets/synth/seizure.py's ecg).

Settings (config/datasets.yaml `generator:`): subjects (Subject00...), seconds (both files' length,
or [rest, arithmetic]; default the real [182, 62]), seed. Headers carry fixed dates (the
subject's recording year), so the same settings write the same bytes.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from embedprobe.core.errors import UsageError
from embedprobe.datasets.eegmat import reader as eegmat
from embedprobe.datasets.synth.files import start_rewrite, with_defaults, write_manifest
from embedprobe.datasets.synth.motor_imagery import (
    _band,
    _band_noise,
    _pink,
    _weights,
    scalp_position,
    subject_profile,
    synthesize_run,
)
from embedprobe.datasets.synth.seizure import Signal, ecg, write_edf

SFREQ = 500
EEG_RANGE = (-3000.0, 3000.0)  # microvolts
ECG_RANGE = (-5000.0, 5000.0)
DEFAULTS = {"subjects": 36, "seconds": [eegmat.REAL_SECONDS["1"], eegmat.REAL_SECONDS["2"]],
            "seed": 0}
# 10-10 names of the old temporal electrodes, for their scalp positions.
NEW_NAMES = {"T3": "T7", "T4": "T8", "T5": "P7", "T6": "P8"}
ALPHA_AT = ((0.0, 7.5),)  # grid (x, row) of motor_imagery.scalp_position: over Pz-O1/O2
THETA_AT = ((0.0, 2.0),)  # Fz
ALPHA_REST_UV = 13.0  # RMS at the focus, eyes closed
THETA_REST_UV = 3.0
GAP_S = 30  # from the end of the rest file to the start of the arithmetic file


@dataclass(frozen=True)
class SubjectPlan:
    number: int  # 0 for Subject00
    age: int
    gender: str  # "F" / "M"
    year: int
    subtractions: float
    good: bool  # Count quality 1 (group "G")

    @property
    def name(self) -> str:
        return f"Subject{self.number:02d}"


@dataclass(frozen=True)
class FilePlan:
    """One file as written: its name, length and condition, from plan() (no signals)."""

    subject: SubjectPlan
    session: str  # "1" rest, "2" arithmetic
    seconds: int
    start: dt.datetime
    signal_seed: tuple[int, ...]

    @property
    def name(self) -> str:
        return f"{self.subject.name}_{self.session}.edf"

    @property
    def condition(self) -> str:
        return eegmat.CONDITIONS[self.session]


def _settings(settings: dict) -> dict:
    values = with_defaults(settings, DEFAULTS, "the EEGMAT look-alike")
    if not 1 <= int(values["subjects"]) <= 36:
        raise UsageError(f"subjects={values['subjects']}: EEGMAT has Subject00-Subject35",
                         fix="choose 1..36 subjects")
    seconds = values["seconds"]
    seconds = [seconds, seconds] if isinstance(seconds, int | float) else list(seconds)
    if len(seconds) != 2 or any(int(s) != s or not 8 <= s <= 600 for s in seconds):
        raise UsageError(f"seconds={values['seconds']}",
                         fix="give whole seconds 8..600, one number for both files or "
                             "[rest, arithmetic] (the real files: [182, 62])")
    values["seconds"] = {"1": int(seconds[0]), "2": int(seconds[1])}
    return values


def plan(settings: dict) -> list[FilePlan]:
    """Every file of the look-alike (both files of each subject), without signals."""
    values = _settings(settings)
    seed = int(values["seed"])
    plans = []
    for number in range(int(values["subjects"])):
        rng = np.random.default_rng([seed, 1, number])
        # 24 of the 36 real subjects are group "G": one in each three here is group "B"
        good = number % 3 != int(np.random.default_rng([seed, 0, number // 3]).integers(3))
        subtractions = float(np.round(max(1.0, rng.normal(21, 7.4) if good
                                          else rng.normal(7, 3.6)), 1))
        subject = SubjectPlan(number, int(rng.integers(18, 27)), str(rng.choice(["F", "M"])),
                              int(rng.choice([2011, 2012])), subtractions, good)
        first = dt.datetime(subject.year, 1 + number % 12, 1 + number % 28, 10, 0, 0)
        second = first + dt.timedelta(seconds=values["seconds"]["1"] + GAP_S)
        for session, start in (("1", first), ("2", second)):
            plans.append(FilePlan(subject, session, values["seconds"][session], start,
                                  (seed, 2, number, int(session))))
    return plans


def _position(electrode: str) -> tuple[float, float]:
    return scalp_position(NEW_NAMES.get(electrode, electrode))


def _slow_envelope(rng: np.random.Generator, n: int, depth: float) -> np.ndarray:
    """1 +- depth, wandering over a few seconds (a rhythm waxing and waning), (n,)."""
    wander = _band_noise(rng, 1, n, SFREQ, _band(0.05, 0.4))[0]
    return np.clip(1 + depth * wander, 0.2, None).astype(np.float32)


@dataclass(frozen=True)
class Traits:
    """The subject's rhythms and how much the arithmetic changes them."""

    alpha_hz: float
    theta_hz: float
    alpha_uv: float
    alpha_kept: float  # share of the rest alpha left during the arithmetic
    theta_gain: float  # theta amplitude during the arithmetic over rest
    gain: float


def traits(subject: SubjectPlan, seed: int) -> Traits:
    rng = np.random.default_rng([seed, 3, subject.number])
    effect = 1.0 if subject.good else 0.7  # group "B" engages less
    return Traits(alpha_hz=float(rng.uniform(9.0, 11.0)), theta_hz=float(rng.uniform(5.0, 6.5)),
                  alpha_uv=ALPHA_REST_UV * float(rng.lognormal(0.0, 0.2)),
                  alpha_kept=1 - effect * float(rng.uniform(0.4, 0.6)),
                  theta_gain=1 + effect * float(rng.uniform(0.8, 1.6)),
                  gain=float(rng.lognormal(0.0, 0.15)))


def synthesize(p: FilePlan, seed: int) -> np.ndarray:
    """The file's 21 signals in microvolts, (21, seconds * 500): 19 EEG, A2-A1, ECG."""
    n = p.seconds * SFREQ
    rng = np.random.default_rng(p.signal_seed)
    profile = subject_profile(np.random.default_rng([seed, 4, p.subject.number]))
    t = traits(p.subject, seed)
    names = [NEW_NAMES.get(e, e) for e in eegmat.ELECTRODES]
    eeg = synthesize_run(rng, names, SFREQ, n, [], profile, alpha_scale=0.0)
    positions = np.array([_position(e) for e in eegmat.ELECTRODES])
    m = len(positions)
    task = p.session == "2"
    alpha_where = _weights(positions, ALPHA_AT, 2.0).astype(np.float32)
    theta_where = _weights(positions, THETA_AT, 1.6).astype(np.float32)
    alpha = _band_noise(rng, m, n, SFREQ, _band(t.alpha_hz - 1, t.alpha_hz + 1))
    theta = _band_noise(rng, m, n, SFREQ, _band(t.theta_hz - 1, t.theta_hz + 1))
    # a rhythm shared by neighbouring electrodes: each channel mixes its own with a common one
    alpha = 0.5 * alpha + 0.85 * alpha[[int(np.argmax(alpha_where))]]
    theta = 0.5 * theta + 0.85 * theta[[int(np.argmax(theta_where))]]
    alpha_uv = t.alpha_uv * (t.alpha_kept if task else 1.0)
    theta_uv = THETA_REST_UV * (t.theta_gain if task else 1.0)
    eeg += t.gain * (alpha * (alpha_uv * alpha_where)[:, None] * _slow_envelope(rng, n, 0.35)
                     + theta * (theta_uv * theta_where)[:, None] * _slow_envelope(rng, n, 0.35))
    heart, _ = ecg(rng, SFREQ, p.seconds)
    ear = 4.0 * _band_noise(rng, 1, n, SFREQ, _pink)[0] + 0.02 * heart
    return np.vstack([eeg, ear[None], heart[None]])


def signals(p: FilePlan, seed: int) -> list[Signal]:
    data = synthesize(p, seed)
    ranges = [EEG_RANGE] * (len(eegmat.EEG_CHANNELS) + 1) + [ECG_RANGE]
    return [Signal(label, row, "uV", r)
            for label, row, r in zip(eegmat.CHANNELS, data, ranges, strict=True)]


def subject_info_text(plans: list[FilePlan]) -> str:
    subjects = sorted({p.subject for p in plans}, key=lambda s: s.number)
    lines = [",".join(eegmat.SUBJECT_INFO_COLUMNS)]
    lines += [f"{s.name},{s.age},{s.gender},{s.year},{s.subtractions:g},{int(s.good)}"
              for s in subjects]
    return "\n".join(lines) + "\n"


def write_lookalike(root: Path, settings: dict) -> list[Path]:
    """Write the look-alike under root; returns the files written, MANIFEST.tsv last."""
    root = Path(root)
    plans = plan(settings)
    seed = int(_settings(settings)["seed"])
    start_rewrite(root, (p.name for p in plans), "*.edf", "EDF")
    root.mkdir(parents=True, exist_ok=True)
    files = [write_edf(root / p.name, signals(p, seed), SFREQ, p.start) for p in plans]
    info = root / eegmat.SUBJECT_INFO
    info.write_text(subject_info_text(plans))
    records = root / "RECORDS"
    records.write_text("".join(f"{p.name}\n" for p in plans))
    files += [info, records]
    return [*files, write_manifest(root, files)]
