"""A Nakanishi 2015 SSVEP look-alike: `s1.mat` ... in the layout of mnakanishi/12JFPM_SSVEP.

    <root>/s1.mat        MATLAB 5 file with one variable `eeg`: double [12 targets, 8 channels,
    <root>/s2.mat        1114 samples, blocks] in microvolts, 256 Hz, channels PO7, PO3, POz,
    ...                  PO4, PO8, O1, Oz, O2; targets in the README's frequency order (9.25,
                         11.25, 13.25, 9.75, ...); stimulus onset at sample 38 (0-based) of each
                         epoch, 4 s of flicker
    <root>/MANIFEST.tsv  file, bytes: written last, so it marks completion

How it is made: per subject one continuous recording, blocks of 12 trials (one per target, in
random order, as the experiment presented them): a 1 s gaze cue, 4 s of flicker, ~0.5 s rest.
The background is synth/motor_imagery.synthesize_run's (1/f, occipital alpha, volume
conduction, per-subject gains); each trial adds an SSVEP (synth/ssvep.py) at its target's
frequency and phase. The recording is band-pass filtered 6-80 Hz with zero phase (the authors'
preprocessing), then each trial's 1114-sample epoch is cut from 38 samples before its onset and
stored at [target, :, :, block]. Settings (config/datasets.yaml `generator:`): subjects (1..10:
s1..sN), blocks (1..15; the real files have 15), seed. scipy writes the time into the MAT
header: it is replaced by a fixed text, so the same settings write the same bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.signal

from embedprobe.core.errors import UsageError
from embedprobe.datasets.nakanishi2015 import reader as nakanishi
from embedprobe.datasets.synth.files import with_defaults, write_flat
from embedprobe.datasets.synth.mat import write_mat
from embedprobe.datasets.synth.motor_imagery import subject_profile, synthesize_run
from embedprobe.datasets.synth.ssvep import ssvep_profile, ssvep_response

SFREQ = nakanishi.SFREQ
CUE_S = 1.0  # the red square that shows the target, before the flicker
REST_S = (0.4, 0.7)  # after the flicker, before the next cue
LEAD_IN_S = 2.0
BAND_HZ = (6.0, 80.0)  # the authors' zero-phase band-pass
MAT_HEADER = b"MATLAB 5.0 MAT-file, written by embedprobe's Nakanishi 2015 look-alike"
DEFAULTS = {"subjects": 10, "blocks": 15, "seed": 0}


@dataclass(frozen=True)
class SubjectPlan:
    number: int  # s{number}.mat
    name: str
    blocks: int
    order: np.ndarray  # (blocks, 12): target indices in the order each block presented them
    onsets: np.ndarray  # (blocks, 12): each presented trial's stimulus onset in the session, s
    n_samples: int  # of the session the epochs are cut from

    @property
    def recording(self) -> str:
        return f"s{self.number:02d}"

    def trials(self) -> list[tuple[float, float, str]]:
        """(onset s, duration s, event name) of every trial as the reader's continuous signal
        holds them: target-major, onset 38 samples into each epoch after MOABB's 50 zeros."""
        return [(nakanishi.trial_onset_sample(target * self.blocks + block) / SFREQ,
                 nakanishi.STIMULUS_SECONDS, nakanishi.EVENT_NAMES[target])
                for target in range(nakanishi.N_TARGETS) for block in range(self.blocks)]


def _settings(settings: dict) -> dict:
    values = with_defaults(settings, DEFAULTS, "the Nakanishi 2015 look-alike")
    if not 1 <= int(values["subjects"]) <= 10:
        raise UsageError(f"subjects={values['subjects']}: Nakanishi 2015 has s1-s10",
                         fix="choose 1..10 subjects")
    if not 1 <= int(values["blocks"]) <= nakanishi.N_BLOCKS:
        raise UsageError(f"blocks={values['blocks']}",
                         fix="choose 1..15 blocks (the real files have 15, 12 trials each)")
    return values


def plan(settings: dict) -> list[SubjectPlan]:
    """File names, presentation order and trial onsets of the look-alike, without signals."""
    values = _settings(settings)
    seed, blocks = int(values["seed"]), int(values["blocks"])
    epoch_lead = nakanishi.ONSET_SAMPLE / SFREQ
    plans = []
    for number in range(1, int(values["subjects"]) + 1):
        rng = np.random.default_rng([seed, 1, number])
        order = np.stack([rng.permutation(nakanishi.N_TARGETS) for _ in range(blocks)])
        n_trials = order.size
        gaps = CUE_S + nakanishi.STIMULUS_SECONDS + rng.uniform(*REST_S, n_trials)
        onsets = LEAD_IN_S + CUE_S + np.concatenate([[0.0], np.cumsum(gaps[:-1])])
        onsets = np.round(onsets * SFREQ) / SFREQ  # on a sample
        assert onsets[0] > epoch_lead
        n_samples = int(round((onsets[-1] + nakanishi.N_SAMPLES / SFREQ + 1.0) * SFREQ))
        plans.append(SubjectPlan(number, f"s{number}.mat", blocks, order,
                                 onsets.reshape(blocks, nakanishi.N_TARGETS), n_samples))
    return plans


def synthesize(subject: SubjectPlan, seed: int) -> np.ndarray:
    """One subject's `eeg`: [12, 8, 1114, blocks] float64 microvolts."""
    channels = nakanishi.CHANNELS
    background = subject_profile(np.random.default_rng([seed, 3, subject.number]))
    response = ssvep_profile(np.random.default_rng([seed, 4, subject.number]))
    rng = np.random.default_rng([seed, 2, subject.number])
    session = synthesize_run(rng, channels, SFREQ, subject.n_samples, [], background)
    lead = nakanishi.ONSET_SAMPLE
    starts = np.round(subject.onsets * SFREQ).astype(int) - lead  # epoch starts, samples
    span = nakanishi.N_SAMPLES + int(SFREQ)  # the epoch and the ramp down after it
    for block in range(subject.blocks):
        for position, target in enumerate(subject.order[block]):
            first = starts[block, position]
            session[:, first:first + span] += ssvep_response(
                rng, channels, SFREQ, span, lead / SFREQ, nakanishi.STIMULUS_SECONDS,
                nakanishi.FREQUENCIES[target], np.pi * nakanishi.PHASES_PI[target], response)
    sos = scipy.signal.butter(4, BAND_HZ, btype="bandpass", fs=SFREQ, output="sos")
    session = scipy.signal.sosfiltfilt(sos, session, axis=1)
    eeg = np.zeros((nakanishi.N_TARGETS, len(channels), nakanishi.N_SAMPLES, subject.blocks))
    for block in range(subject.blocks):
        for position, target in enumerate(subject.order[block]):
            first = starts[block, position]
            eeg[target, :, :, block] = session[:, first:first + nakanishi.N_SAMPLES]
    return eeg


def write_subject(subject: SubjectPlan, path: Path, seed: int) -> Path:
    return write_mat(path, {nakanishi.VARIABLE: synthesize(subject, seed)}, MAT_HEADER,
                     compress=False)


def write_lookalike(root: Path, settings: dict) -> list[Path]:
    """Write the look-alike under root; returns the files written, MANIFEST.tsv last."""
    seed = int(_settings(settings)["seed"])
    return write_flat(root, plan(settings), "s*.mat", ".mat",
                      lambda p, path: write_subject(p, path, seed))
