"""A DREAMER look-alike: the release's one `DREAMER.mat`, its struct and field names.

    <root>/DREAMER.mat     MATLAB 5 (zlib-compressed), variable DREAMER: Data (1 x subjects
                           cell of structs: Age, Gender, EEG and ECG {baseline, stimuli: clips
                           x 1 cells}, ScoreValence, ScoreArousal, ScoreDominance: clips x 1),
                           EEG_SamplingRate 128, ECG_SamplingRate 256, EEG_Electrodes (1 x 14
                           cell), noOfSubjects, noOfVideoSequences, Disclaimer, Provider,
                           Version, Acknowledgement
    <root>/MANIFEST.tsv    file, bytes: written last, so it marks completion

EEG (samples x 14, microvolts around the headset's DC offset, ~4200 uV): a 1/f background with
mu, beta and posterior alpha (datasets/synth/motor_imagery.py, without cues), and two effects
of the clip's felt state, each graded by a latent score: the self-report plus noise (SD 0.7
points), so a report and the EEG disagree now and then, as they do. Valence shifts frontal
alpha between the hemispheres (the frontal asymmetry: more alpha over AF4/F4/F8/FC6 and less
over AF3/F3/F7/FC5 as valence rises); arousal raises fronto-temporal beta (16-24 Hz) and lowers
posterior alpha. Effect sizes, rhythm frequencies and gains vary between subjects. Scores are
drawn 1-5 (more often in the middle) so that every subject has low and high clips on both
scales (the reference's cut at 3). ECG: two leads of a heartbeat at 256 Hz. Band powers and a
logistic regression find valence at 0.76 and arousal at 0.85 balanced accuracy across subjects,
CBraMod's random init valence at 0.74 (docs/measurements/2026-12-07-dreamer.md).

Settings (config/datasets.yaml `generator:`): subjects (<= 23), clips (<= 18), seconds (each
clip's stimulus EEG: one number, or [shortest, longest]; the real 65-393), baseline_seconds
(real 61), seed. The file carries a fixed header text, so the same settings write the same
bytes.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from embedprobe.core.errors import UsageError
from embedprobe.datasets.dreamer import reader as dreamer
from embedprobe.datasets.synth.files import start_rewrite, with_defaults, write_manifest
from embedprobe.datasets.synth.mat import write_mat
from embedprobe.datasets.synth.motor_imagery import (
    _band,
    _band_noise,
    _weights,
    scalp_position,
    subject_profile,
    synthesize_run,
)
from embedprobe.datasets.synth.seizure import ecg

SFREQ = 128
ECG_SFREQ = 256
DEFAULTS = {"subjects": dreamer.SUBJECTS, "clips": dreamer.CLIPS, "seconds": [65, 393],
            "baseline_seconds": 61, "seed": 0}
MAT_HEADER = b"MATLAB 5.0 MAT-file, Platform: embedprobe look-alike, Created on: DREAMER"
DC_UV = 4200.0
LSB_UV = 0.51282  # the EPOC's step (its 14-bit samples): the release's values are multiples
LEFT_FRONTAL = ("AF3", "F3", "F7", "FC5")
RIGHT_FRONTAL = ("AF4", "F4", "F8", "FC6")
FRONTAL_ALPHA_UV = 6.0  # RMS at a frontal electrode at neutral valence
BETA_UV = 3.0  # fronto-temporal beta at neutral arousal
REPORT_NOISE = 0.7  # SD (points) between the felt state and the reported score
SCORE_ODDS = (0.12, 0.2, 0.26, 0.24, 0.18)  # scores 1-5


def _settings(settings: dict) -> dict:
    values = with_defaults(settings, DEFAULTS, "the DREAMER look-alike")
    if not 1 <= int(values["subjects"]) <= dreamer.SUBJECTS:
        raise UsageError(f"subjects={values['subjects']}: DREAMER has {dreamer.SUBJECTS}",
                         fix=f"choose 1..{dreamer.SUBJECTS} subjects")
    if not 2 <= int(values["clips"]) <= dreamer.CLIPS:
        raise UsageError(f"clips={values['clips']}: DREAMER played {dreamer.CLIPS} clips",
                         fix=f"choose 2..{dreamer.CLIPS} clips (both labels need two)")
    seconds = values["seconds"]
    seconds = [seconds, seconds] if isinstance(seconds, int | float) else list(seconds)
    if len(seconds) != 2 or not 4 <= seconds[0] <= seconds[1] <= 600:
        raise UsageError(f"seconds={values['seconds']}",
                         fix="give whole seconds 4..600: one number, or [shortest, longest] "
                             "(the real clips: [65, 393])")
    values["seconds"] = (int(seconds[0]), int(seconds[1]))
    return values


def scores(settings: dict) -> dict[str, np.ndarray]:
    """The self-reports written, per scale ("valence", "arousal", "dominance"): (subjects,
    clips) 1-5; each subject has clips below and at or above 3 on valence and arousal."""
    values = _settings(settings)
    seed, clips = int(values["seed"]), int(values["clips"])
    out = {"valence": [], "arousal": [], "dominance": []}
    for s in range(int(values["subjects"])):
        rng = np.random.default_rng([seed, 1, s])
        while True:
            drawn = rng.choice(np.arange(1, 6), size=(3, clips), p=SCORE_ODDS)
            high = drawn[:2] >= dreamer.HIGH_FROM
            if high.any(1).all() and (~high).any(1).all():
                break
        for scale, row in zip(out, drawn, strict=True):
            out[scale].append(row)
    return {k: np.array(v, np.int64) for k, v in out.items()}


def clip_seconds(settings: dict) -> np.ndarray:
    """Each clip's stimulus length in seconds, (clips,): the same for every subject (the
    same films)."""
    values = _settings(settings)
    low, high = values["seconds"]
    rng = np.random.default_rng([int(values["seed"]), 2])
    return rng.integers(low, high + 1, int(values["clips"]))


def synthesize(rng: np.random.Generator, n: int, profile, valence: float, arousal: float,
               effect: float) -> np.ndarray:
    """One clip's EEG, (n, 14) microvolts, for latent valence and arousal in [-1, 1]."""
    names = list(dreamer.ELECTRODES)
    eeg = synthesize_run(rng, names, SFREQ, n, [], profile, alpha_scale=1.0)
    positions = np.array([scalp_position(e) for e in names])
    m = len(names)
    alpha = _band_noise(rng, m, n, SFREQ, _band(profile.alpha_hz - 1, profile.alpha_hz + 1))
    beta = _band_noise(rng, m, n, SFREQ, _band(16.0, 24.0))
    side = np.array([1.0 if e in RIGHT_FRONTAL else -1.0 if e in LEFT_FRONTAL else 0.0
                     for e in names], np.float32)
    frontal = FRONTAL_ALPHA_UV * (1 + 0.7 * effect * valence * side)
    fronto_temporal = _weights(positions, ((-3.5, 3.0), (3.5, 3.0)), 2.0)
    beta_uv = BETA_UV * (1 + 0.8 * effect * arousal) * fronto_temporal
    posterior = _weights(positions, ((0.0, 7.5),), 2.0)
    eeg += (alpha * (frontal * (side != 0))[:, None]
            + beta * beta_uv[:, None].astype(np.float32)
            - 0.35 * effect * arousal * eeg * posterior[:, None].astype(np.float32))
    return eeg.T


def _subject(settings: dict, s: int, reports: dict, lengths: np.ndarray) -> dict:
    values = _settings(settings)
    seed = int(values["seed"])
    rng = np.random.default_rng([seed, 3, s])
    profile = subject_profile(np.random.default_rng([seed, 4, s]))
    effect = float(rng.uniform(0.6, 1.2))
    offsets = DC_UV + rng.normal(0, 150, len(dreamer.ELECTRODES))
    baseline_n = int(values["baseline_seconds"]) * SFREQ
    baselines, stimuli, ecg_base, ecg_stim = [], [], [], []
    for c, seconds in enumerate(lengths):
        felt = {k: (reports[k][s, c] - 3 + rng.normal(0, REPORT_NOISE)) / 2
                for k in ("valence", "arousal")}
        clip_rng = np.random.default_rng([seed, 5, s, c])
        baselines.append(synthesize(clip_rng, baseline_n, profile, 0.0, 0.0, effect) + offsets)
        stimuli.append(synthesize(clip_rng, int(seconds) * SFREQ, profile,
                                  float(np.clip(felt["valence"], -1, 1)),
                                  float(np.clip(felt["arousal"], -1, 1)), effect) + offsets)
        for out, length in ((ecg_base, int(values["baseline_seconds"])), (ecg_stim, seconds)):
            heart, _ = ecg(clip_rng, ECG_SFREQ, int(length))
            out.append(np.stack([heart, 0.8 * heart + clip_rng.normal(0, 10, len(heart))], 1))
    age = int(rng.integers(22, 34))
    return {"Age": str(age), "Gender": str(rng.choice(["male", "female"])),
            "EEG": {"baseline": _cell(baselines), "stimuli": _cell(stimuli)},
            "ECG": {"baseline": _cell(ecg_base), "stimuli": _cell(ecg_stim)},
            "ScoreValence": reports["valence"][s].astype(float)[:, None],
            "ScoreArousal": reports["arousal"][s].astype(float)[:, None],
            "ScoreDominance": reports["dominance"][s].astype(float)[:, None]}


def _cell(arrays: list, row: bool = False) -> np.ndarray:
    """A MATLAB cell (clips x 1, or 1 x n with row) of the given arrays."""
    cell = np.empty((1, len(arrays)) if row else (len(arrays), 1), dtype=object)
    for k, value in enumerate(arrays):
        cell.flat[k] = value if isinstance(value, dict | str) else \
            np.round(np.asarray(value, float) / LSB_UV) * LSB_UV
    return cell


def write_lookalike(root: Path, settings: dict) -> list[Path]:
    """Write the look-alike under root; returns the files written, MANIFEST.tsv last."""
    root = Path(root)
    values = _settings(settings)
    reports, lengths = scores(settings), clip_seconds(settings)
    start_rewrite(root, [dreamer.FILE], "*.mat", "MATLAB")
    root.mkdir(parents=True, exist_ok=True)
    subjects = [_subject(settings, s, reports, lengths) for s in range(int(values["subjects"]))]
    struct = {"Data": _cell(subjects, row=True), "EEG_SamplingRate": float(SFREQ),
              "ECG_SamplingRate": float(ECG_SFREQ),
              "EEG_Electrodes": _cell(list(dreamer.ELECTRODES), row=True),
              "noOfSubjects": float(len(subjects)), "noOfVideoSequences": float(len(lengths)),
              "Disclaimer": "A look-alike written by embedprobe, not the DREAMER recordings.",
              "Provider": "embedprobe", "Version": "1.0.2",
              "Acknowledgement": "Katsigiannis & Ramzan 2018 (the layout imitated)"}
    path = write_mat(root / dreamer.FILE, {dreamer.VARIABLE: struct}, MAT_HEADER, compress=True)
    return [path, write_manifest(root, [path])]
