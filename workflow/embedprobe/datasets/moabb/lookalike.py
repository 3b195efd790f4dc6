"""Look-alikes of MOABB's Graz motor-imagery sets, written where MOABB's own classes find them.

    <root>/MNE-bnci-data/~bci/database/<folder>/<file>.mat
        BNCI2014_001  001-2014/A01T.mat, A01E.mat   22 EEG + 3 EOG, 250 Hz, 4 classes
        BNCI2014_002  002-2014/S01T.mat, S01E.mat   15 EEG (unnamed), 512 Hz, 2 classes
        BNCI2014_004  004-2014/B01T.mat, B01E.mat   C3, Cz, C4 + 3 EOG, 250 Hz, 2 classes
        BNCI2015_001  001-2015/S01A.mat, S01B.mat   13 EEG, 512 Hz, 2 classes
    <root>/MNE-bnci-data/~bci/database/008-2014/A01.mat ...   BNCI2014_008 (ERP)
    <root>/MNE-nakanishi-data/mnakanishi/12JFPM_SSVEP/raw/master/data/s1.mat ...
                                                             Nakanishi2015 (SSVEP)
    <root>/MANIFEST.tsv  file, bytes: written last, so it marks completion

(the BNCI Horizon files' URLs under MNE's download cache, as moabb.datasets.download maps
them). Each file is MATLAB 5 with `data`, a 1 x N cell of run structs: X (samples x channels,
microvolts), trial (1-based trial starts), y (class codes), fs, classes, artifacts, gender,
age: the layout MOABB's BNCI loader parses (and datasets/bnci2014_001/reader.py). MOABB reads
them itself: its class's `interval` places the trial after each marker, and the signal's
imagery follows that window. Settings (`generator:`): moabb_dataset (one of LAYOUTS),
subjects, runs_per_file (each file's runs; default the real count), trials_per_run, seed.

An ERP and an SSVEP set (BNCI2014_008, Nakanishi2015): their hand-read look-alikes already
write the files MOABB fetches (datasets/bnci2014_008, nakanishi2015: their settings, beside
moabb_dataset), into the folder where MOABB's class finds them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from embedprobe.core.errors import UsageError
from embedprobe.datasets.bnci2014_008 import lookalike as bnci2014_008
from embedprobe.datasets.nakanishi2015 import lookalike as nakanishi2015
from embedprobe.datasets.synth.files import (
    MANIFEST,
    start_rewrite,
    with_defaults,
    write_manifest,
)
from embedprobe.datasets.synth.mat import write_mat
from embedprobe.datasets.synth.motor_imagery import (
    Cue,
    balanced_classes,
    subject_profile,
    synthesize_run,
)

CACHE = Path("MNE-bnci-data") / "~bci" / "database"
MAT_HEADER = b"MATLAB 5.0 MAT-file, written by embedprobe's MOABB look-alike"
LEAD_IN_S, BREAK_S = 3.0, (1.5, 2.5)
NAME_OF_TEXT = {"left hand": "left_hand", "right hand": "right_hand", "feet": "feet",
                "tongue": "tongue"}


@dataclass(frozen=True)
class Layout:
    folder: str  # under CACHE
    file: str  # "B{subject:02d}{part}.mat"
    parts: tuple[str, ...]  # the file suffixes (sessions)
    runs: tuple[int, ...]  # runs with trials per file, as in the real files
    channels: tuple[str, ...]  # what the signal is made for (10-10 names; EOG last)
    eog: int  # how many of `channels` are EOG (written as slow noise)
    classes: tuple[str, ...]  # `classes` texts, y = position + 1
    sfreq: int
    interval: tuple[float, float]  # MOABB's trial window after the marker (its class's)
    subjects: int


_BNCI_001_EEG = ("Fz", "FC3", "FC1", "FCz", "FC2", "FC4", "C5", "C3", "C1", "Cz", "C2", "C4",
                 "C6", "CP3", "CP1", "CPz", "CP2", "CP4", "P1", "Pz", "P2", "POz")
_SENSORIMOTOR_13 = ("FC3", "FCz", "FC4", "C5", "C3", "C1", "Cz", "C2", "C4", "C6", "CP3",
                    "CPz", "CP4")
LAYOUTS = {
    "BNCI2014_001": Layout("001-2014", "A{subject:02d}{part}.mat", ("T", "E"), (6, 6),
                           _BNCI_001_EEG + ("EOG1", "EOG2", "EOG3"), 3,
                           ("left hand", "right hand", "feet", "tongue"), 250, (2.0, 6.0), 9),
    # the files name no channels (MOABB calls them EEG1-EEG15): a sensorimotor grid here
    "BNCI2014_002": Layout("002-2014", "S{subject:02d}{part}.mat", ("T", "E"), (5, 3),
                           _SENSORIMOTOR_13 + ("FC1", "FC2"), 0, ("right hand", "feet"), 512,
                           (3.0, 8.0), 14),
    "BNCI2014_004": Layout("004-2014", "B{subject:02d}{part}.mat", ("T", "E"), (3, 2),
                           ("C3", "Cz", "C4", "EOG1", "EOG2", "EOG3"), 3,
                           ("left hand", "right hand"), 250, (3.0, 7.5), 9),
    "BNCI2015_001": Layout("001-2015", "S{subject:02d}{part}.mat", ("A", "B"), (1, 1),
                           _SENSORIMOTOR_13, 0, ("right hand", "feet"), 512, (0.0, 5.0), 12),
}
# MOABB's folder for the sets another look-alike writes, and that writer
OTHER_PARADIGMS = {
    "BNCI2014_008": (CACHE / "008-2014", bnci2014_008.write_lookalike),
    "Nakanishi2015": (Path("MNE-nakanishi-data") / "mnakanishi" / "12JFPM_SSVEP" / "raw"
                      / "master" / "data", nakanishi2015.write_lookalike),
}
DEFAULTS = {"moabb_dataset": "BNCI2014_004", "subjects": 2, "runs_per_file": None,
            "trials_per_run": 20, "seed": 0}


def _settings(settings: dict) -> tuple[dict, Layout]:
    values = with_defaults(settings, DEFAULTS, "the MOABB look-alike")
    layout = LAYOUTS.get(values["moabb_dataset"])
    if layout is None:
        known = ", ".join([*LAYOUTS, *OTHER_PARADIGMS])
        raise UsageError(f"moabb_dataset={values['moabb_dataset']!r}: the MOABB look-alike "
                         f"writes {known}", fix=f"choose one of {known}")
    if not 1 <= int(values["subjects"]) <= layout.subjects:
        raise UsageError(f"subjects={values['subjects']}: {values['moabb_dataset']} has "
                         f"{layout.subjects}", fix=f"choose 1..{layout.subjects} subjects")
    if not 2 <= int(values["trials_per_run"]) <= 200:
        raise UsageError(f"trials_per_run={values['trials_per_run']}", fix="choose 2..200")
    return values, layout


def _run(layout: Layout, rng: np.random.Generator, n: int, k: int) -> dict:
    """One run struct: trial starts, labels, and the signal whose imagery fills each trial
    window."""
    texts = balanced_classes(rng, layout.classes, n, extra_first=k)
    length = layout.interval[1] + rng.uniform(*BREAK_S, n)
    starts = LEAD_IN_S + np.concatenate([[0.0], np.cumsum(length[:-1])])
    trial = (np.round(starts * layout.sfreq) + 1).astype(np.int32)
    y = np.array([layout.classes.index(t) + 1 for t in texts], np.uint8)
    n_samples = int(trial[-1] - 1 + round((layout.interval[1] + BREAK_S[1]) * layout.sfreq))
    span = layout.interval[1] - layout.interval[0]
    cues = [Cue((s - 1) / layout.sfreq + layout.interval[0], span, NAME_OF_TEXT[t])
            for s, t in zip(trial, texts, strict=True)]
    return {"trial": trial, "y": y, "n": n_samples, "cues": cues}


def write_file(layout: Layout, path: Path, subject: int, part: int, values: dict) -> Path:
    seed, n = int(values["seed"]), int(values["trials_per_run"])
    runs = int(values["runs_per_file"] or layout.runs[part])
    profile = subject_profile(np.random.default_rng([seed, 3, subject]))
    person = np.random.default_rng([seed, 0, subject])
    gender, age = str(person.choice(["f", "m"])), float(person.integers(20, 40))
    cell = np.empty((1, runs), dtype=object)
    for k in range(runs):
        rng = np.random.default_rng([seed, 1, subject, part, k])
        plan = _run(layout, rng, n, k)
        x = synthesize_run(rng, layout.channels, layout.sfreq, plan["n"], plan["cues"], profile)
        if layout.eog:  # EOG: slow drift and noise, microvolts
            drift = np.cumsum(rng.normal(0, 0.5, (layout.eog, plan["n"])), axis=1)
            x[-layout.eog:] = drift + rng.normal(0, 3, (layout.eog, plan["n"]))
        cell[0, k] = {"X": x.T, "trial": plan["trial"].reshape(-1, 1),
                      "y": plan["y"].reshape(-1, 1), "fs": float(layout.sfreq),
                      "classes": np.array([layout.classes], dtype=object),
                      "artifacts": np.zeros((n, 1), np.uint8), "gender": gender, "age": age}
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_mat(path, {"data": cell}, MAT_HEADER, compress=True)


def write_lookalike(root: Path, settings: dict) -> list[Path]:
    """Write the look-alike under root; returns the files written, MANIFEST.tsv last."""
    root = Path(root)
    if settings.get("moabb_dataset") in OTHER_PARADIGMS:
        folder, write = OTHER_PARADIGMS[settings["moabb_dataset"]]
        (root / MANIFEST).unlink(missing_ok=True)
        files = write(root / folder, {k: v for k, v in settings.items() if k != "moabb_dataset"})
        return [*files, write_manifest(root, files)]
    values, layout = _settings(settings)
    folder = root / CACHE / layout.folder
    names = [(subject, part, folder / layout.file.format(subject=subject, part=suffix))
             for subject in range(1, int(values["subjects"]) + 1)
             for part, suffix in enumerate(layout.parts)]
    start_rewrite(root, (p.relative_to(root).as_posix() for *_, p in names), "*.mat",
                  "MOABB look-alike")
    files = [write_file(layout, path, subject, part, values) for subject, part, path in names]
    return [*files, write_manifest(root, files)]
