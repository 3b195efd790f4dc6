"""A BNCI 2014-008 look-alike: `A01.mat` ... in the layout MOABB's loader reads.

    <root>/A01.mat       MATLAB 5 file (zlib-compressed, MATLAB's -v7 default) with `data`, a
                         1 x 1 struct: channels (1 x 8 cell), X (samples x 8 double,
                         microvolts, 256 Hz), y (samples x 1 uint8: 0 / 1 NonTarget /
                         2 Target, held for the 32 samples a flash is on), y_stim (samples x 1
                         uint8: 0 / flashed row 1-6 or column 7-12), trial (1 x selections
                         double, the 1-based sample of each character's first flash), classes
                         ({'NonTarget', 'Target'}), classes_stim ({'Row1' ... 'Col6'}),
                         gender, age, ALSfrs, onsetALS (texts)
    <root>/MANIFEST.tsv  file, bytes: written last, so it marks completion

A character (selection): a pause (5 s lead-in, then 6-9 s between characters: the real files'
~8.8 s per character), then `repetitions` rounds of the 12 rows and columns in random order,
each flash 125 ms on and 125 ms off (250 ms apart), never two target flashes in a row; the
target's row and column are the 2 of every 12 flashes that are Target (1:5). The EEG is the
ERP generator's (synth/erp.py), low-passed at 30 Hz as the amplifier's 0.1-30 Hz band.
Settings (config/datasets.yaml `generator:`): subjects (1-8), selections (35 in the real
files), repetitions (10), seed. The MAT header text is fixed, so the same settings write the
same bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.signal

from embedprobe.core.errors import UsageError
from embedprobe.datasets.bnci2014_008 import reader as bnci2014_008
from embedprobe.datasets.synth.erp import Flash, flash_order, synthesize_erp_run
from embedprobe.datasets.synth.files import with_defaults, write_flat
from embedprobe.datasets.synth.mat import write_mat

SFREQ = 256
FLASH_SAMPLES = 32  # 125 ms on
SOA_SAMPLES = 64  # 250 ms from one flash onset to the next
ITEMS = 12  # rows 1-6, columns 7-12 (y_stim)
LEAD_IN_S = 5.0
PAUSE_S = (6.0, 9.0)
TAIL_S = 2.0
LOWPASS_HZ = 30.0
MAT_HEADER = b"MATLAB 5.0 MAT-file, written by embedprobe's BNCI 2014-008 look-alike"
DEFAULTS = {"subjects": 8, "selections": 35, "repetitions": 10, "seed": 0}


@dataclass(frozen=True)
class SubjectPlan:
    subject: int
    name: str  # "A01.mat"
    n_samples: int
    onsets: np.ndarray  # 0-based flash onsets
    stim: np.ndarray  # y_stim code of each flash (1-12)
    target: np.ndarray  # bool per flash
    trial: np.ndarray  # 1-based first flash of each selection
    about: dict  # gender, age, ALSfrs, onsetALS

    def flashes(self) -> list[Flash]:
        return [Flash(k / SFREQ, bool(t)) for k, t in zip(self.onsets, self.target, strict=True)]


def _settings(settings: dict) -> dict:
    values = with_defaults(settings, DEFAULTS, "BNCI 2014-008")
    if not 1 <= int(values["subjects"]) <= 8:
        raise UsageError(f"subjects={values['subjects']}: BNCI 2014-008 has A01-A08",
                         fix="choose 1..8 subjects")
    if not 1 <= int(values["selections"]) <= 35:
        raise UsageError(f"selections={values['selections']}",
                         fix="choose 1..35 characters (the real files have 35)")
    if not 1 <= int(values["repetitions"]) <= 15:
        raise UsageError(f"repetitions={values['repetitions']}",
                         fix="choose 1..15 rounds of 12 flashes per character (the real files "
                             "have 10)")
    return values


def plan(settings: dict) -> list[SubjectPlan]:
    """File names, flash onsets and classes of the look-alike, without signals."""
    values = _settings(settings)
    seed = int(values["seed"])
    plans = []
    for subject in range(1, int(values["subjects"]) + 1):
        rng = np.random.default_rng([seed, 0, subject])
        about = {"gender": str(rng.choice(["M", "F"])), "age": str(int(rng.integers(40, 75))),
                 "ALSfrs": str(int(rng.integers(20, 45))),
                 "onsetALS": str(int(rng.integers(2005, 2012)))}
        at = int(LEAD_IN_S * SFREQ)
        onsets, stim, target, trial = [], [], [], []
        for k in range(int(values["selections"])):
            if k:
                at += int(rng.uniform(*PAUSE_S) * SFREQ)
            targets = (int(rng.integers(1, 7)), int(rng.integers(7, 13)))  # row, column
            trial.append(at + 1)
            for _ in range(int(values["repetitions"])):
                for item in flash_order(rng, ITEMS, [t - 1 for t in targets]):
                    onsets.append(at)
                    stim.append(item + 1)
                    target.append(item + 1 in targets)
                    at += SOA_SAMPLES
        plans.append(SubjectPlan(subject, f"A{subject:02d}.mat", at + int(TAIL_S * SFREQ),
                                 np.array(onsets), np.array(stim), np.array(target),
                                 np.array(trial, float), about))
    return plans


def synthesize(plan: SubjectPlan, seed: int) -> np.ndarray:
    """The subject's X: (samples, 8) microvolts."""
    data = synthesize_erp_run(np.random.default_rng([seed, 1, plan.subject]),
                              bnci2014_008.CHANNELS, SFREQ, plan.n_samples, plan.flashes(),
                              np.random.default_rng([seed, 2, plan.subject]))
    sos = scipy.signal.butter(4, LOWPASS_HZ, fs=SFREQ, output="sos")
    return scipy.signal.sosfilt(sos, data, axis=1).T


def markers(plan: SubjectPlan) -> tuple[np.ndarray, np.ndarray]:
    """y and y_stim, one value per sample (samples x 1 uint8)."""
    y = np.zeros((plan.n_samples, 1), np.uint8)
    y_stim = np.zeros((plan.n_samples, 1), np.uint8)
    for start, code, is_target in zip(plan.onsets, plan.stim, plan.target, strict=True):
        y[start:start + FLASH_SAMPLES] = 2 if is_target else 1
        y_stim[start:start + FLASH_SAMPLES] = code
    return y, y_stim


def _cell(texts) -> np.ndarray:
    cell = np.empty((1, len(texts)), dtype=object)
    cell[0, :] = list(texts)
    return cell


def write_subject(plan: SubjectPlan, path: Path, seed: int) -> Path:
    y, y_stim = markers(plan)
    struct = {
        "channels": _cell(bnci2014_008.CHANNELS),
        "X": synthesize(plan, seed),
        "y": y,
        "y_stim": y_stim,
        "trial": plan.trial.reshape(1, -1),
        "classes": _cell(["NonTarget", "Target"]),
        "classes_stim": _cell([f"Row{k}" for k in range(1, 7)] + [f"Col{k}" for k in range(1, 7)]),
        **plan.about,
    }
    return write_mat(path, {"data": struct}, MAT_HEADER, compress=True)


def write_lookalike(root: Path, settings: dict) -> list[Path]:
    """Write the look-alike under root; returns the files written, MANIFEST.tsv last."""
    seed = int(_settings(settings)["seed"])
    return write_flat(root, plan(settings), "A*.mat", ".mat",
                      lambda p, path: write_subject(p, path, seed))
