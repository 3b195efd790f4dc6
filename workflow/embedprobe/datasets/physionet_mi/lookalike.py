"""A PhysioNet EEG Motor Movement/Imagery look-alike, in eegmmidb 1.0.0's names and EDF+ layout.

    <root>/S001/S001R04.edf   EDF+ (1 s data records), 64 EEG signals at 160 Hz with the
                              dataset's dotted labels, uV, physical and digital range +-8092,
                              and an annotation per period: T0 (rest, 4.2 s) before each cue,
                              T1/T2 (4.1 s) for the cue, meaning by run (physionet_mi.py);
                              equipment and transducer "BCI2000", every run dated 12 Aug 2009
                              16:15:00, as PhysioNet's de-identified headers
    <root>/MANIFEST.tsv       file, bytes: written last, so it marks completion

Settings (config/datasets.yaml `generator:`): subjects (S001...), runs (any of 1-14; default
the imagery runs), trials_per_run (cues per run, 15 as in the real runs: ~125 s), seed. Baseline
runs 1 and 2 are 61 s with a single T0 of 60.2 s, as S001's (it ends before the run does;
eyes closed in run 2: more alpha). Cue classes are
balanced within a run (T1/T2 alternate taking the odd one out). Signals: see
datasets/synth/motor_imagery.py. Fixed header dates, so the same settings write the same bytes.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

import edfio
import numpy as np

from embedprobe.core.errors import UsageError
from embedprobe.datasets.physionet_mi import reader as physionet_mi
from embedprobe.datasets.synth.files import start_rewrite, with_defaults, write_manifest
from embedprobe.datasets.synth.motor_imagery import (
    Cue,
    balanced_classes,
    subject_profile,
    synthesize_run,
)

SFREQ = 160
REST_S, CUE_S = 4.2, 4.1  # T0 and T1/T2 durations in the real runs
BASELINE_S = 61
BASELINE_T0_S = 60.2  # the real baselines' one T0 stops short of the run's end (S002's: 60.1)
PHYSICAL_RANGE = (-8092.0, 8092.0)  # uV; eegmmidb stores whole microvolts
DIGITAL_RANGE = (-8092, 8092)
DATE = dt.date(2009, 8, 12)  # every real run's header date and time (de-identified)
START = dt.time(16, 15, 0)
EQUIPMENT = "BCI2000"  # the real headers' equipment and transducer fields
DEFAULTS = {"subjects": 5, "runs": list(physionet_mi.IMAGERY_RUNS), "trials_per_run": 15,
            "seed": 0}


@dataclass(frozen=True)
class RunPlan:
    """One run as written: its file and every annotation (onset s, duration s, code)."""

    subject: int
    run: int
    path: str  # relative to root
    seconds: int
    annotations: tuple[tuple[float, float, str], ...]
    signal_seed: tuple[int, ...]

    def cues(self) -> list[Cue]:
        codes = physionet_mi.codes_of_run(self.run)
        return [Cue(onset, duration, codes[code]) for onset, duration, code in self.annotations
                if code != "T0"]


def _settings(settings: dict) -> dict:
    values = with_defaults(settings, DEFAULTS, "PhysioNet MI")
    if not 1 <= int(values["subjects"]) <= 109:
        raise UsageError(f"subjects={values['subjects']}: eegmmidb has subjects S001-S109",
                         fix="choose 1..109 subjects")
    if not 2 <= int(values["trials_per_run"]) <= 30:
        raise UsageError(f"trials_per_run={values['trials_per_run']}",
                         fix="choose 2..30 cues per run (the real runs have 15)")
    values["runs"] = physionet_mi.check_runs(values["runs"])
    return values


def plan(settings: dict) -> list[RunPlan]:
    """File names and annotations of the look-alike, without signals (cheap: tests use it)."""
    values = _settings(settings)
    plans = []
    for subject in range(1, int(values["subjects"]) + 1):
        for run in values["runs"]:
            rng = np.random.default_rng([values["seed"], 1, subject, run])
            if run in physionet_mi.BASELINE_RUNS:
                annotations = ((0.0, BASELINE_T0_S, "T0"),)
                seconds = BASELINE_S
            else:
                codes = balanced_classes(rng, ("T1", "T2"), int(values["trials_per_run"]),
                                         extra_first=run)
                annotations, tenths = [], 0  # onsets in tenths of a second: exact decimals
                for code in codes:
                    annotations.append((tenths / 10, REST_S, "T0"))
                    tenths += round(REST_S * 10)
                    annotations.append((tenths / 10, CUE_S, code))
                    tenths += round(CUE_S * 10)
                annotations = tuple(annotations)
                seconds = -(-tenths // 10)  # whole 1 s data records
            stem = f"S{subject:03d}R{run:02d}"
            plans.append(RunPlan(subject, run, f"S{subject:03d}/{stem}.edf", seconds,
                                 annotations, (values["seed"], 2, subject, run)))
    return plans


def synthesize(run_plan: RunPlan, seed: int) -> np.ndarray:
    """The run's 64 channels in microvolts, (64, seconds * 160)."""
    profile = subject_profile(np.random.default_rng([seed, 3, run_plan.subject]))
    rng = np.random.default_rng(run_plan.signal_seed)
    alpha = 1.8 if run_plan.run == 2 else 1.0  # eyes closed
    return synthesize_run(rng, physionet_mi.CHANNELS, SFREQ, run_plan.seconds * SFREQ,
                          run_plan.cues(), profile, alpha_scale=alpha)


def write_run(run_plan: RunPlan, path: Path, seed: int) -> Path:
    data = np.clip(synthesize(run_plan, seed), *PHYSICAL_RANGE)
    signals = [edfio.EdfSignal(row, SFREQ, label=label, physical_dimension="uV",
                               physical_range=PHYSICAL_RANGE, digital_range=DIGITAL_RANGE,
                               transducer_type=EQUIPMENT)
               for label, row in zip(physionet_mi.CHANNELS, data, strict=True)]
    annotations = [edfio.EdfAnnotation(onset, duration, code)
                   for onset, duration, code in run_plan.annotations]
    edf = edfio.Edf(signals, patient=edfio.Patient(), starttime=START,
                    recording=edfio.Recording(startdate=DATE, equipment_code=EQUIPMENT),
                    data_record_duration=1,
                    annotations=annotations)
    path.parent.mkdir(parents=True, exist_ok=True)
    edf.write(path)
    return path


def write_lookalike(root: Path, settings: dict) -> list[Path]:
    """Write the look-alike under root; returns the files written, MANIFEST.tsv last."""
    root = Path(root)
    plans = plan(settings)
    seed = int(_settings(settings)["seed"])
    start_rewrite(root, (p.path for p in plans), "*.edf", "EDF")
    files = [write_run(p, root / p.path, seed) for p in plans]
    return [*files, write_manifest(root, files)]
