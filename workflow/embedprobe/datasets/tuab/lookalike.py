"""A TUAB v3.0.x look-alike: normal and abnormal clinical EEGs in the corpus's layout.

    <root>/edf/{train,eval}/{normal,abnormal}/01_tcp_ar/<subject>_sNNN_tNNN.edf
    <root>/MANIFEST.tsv (written last: its presence marks completion)

as the corpus's AAREADME.txt (v3.0.1) describes it (datasets/tuab/reader.py). Each EDF has 1 s
data records, the 21 electrodes of the TCP montage labelled as TUH labels them ("EEG FP1-REF",
..., "EEG T6-REF", "EEG A1-REF", "EEG A2-REF", "EEG FZ-REF", "EEG CZ-REF", "EEG PZ-REF", in
TUH's order), then "EEG EKG1-REF" (an ECG, not a scalp electrode, under an "EEG " label as TUH
writes it); 256 Hz, one file at 250 Hz (TUH's rates vary between files). The patient
field is TUH's ("<subject> <sex> <birth date> <subject> Age:<years>", as in the v2.0.0 headers
braindecode's TUH tests quote); every date is fixed, so the same settings write the same bytes.

Subjects have 8-letter ids ("aaaa" and four random letters, so sorted ids do not follow the
class). One train subject has two sessions, and a train subject has both a normal and an
abnormal recording (v2.0.0's AAREADME counts 54 such patients); eval subjects are their own,
never in train. One recording is token t001 (a session's longest file is not always its first).

Signals (microvolts): each subject's background from datasets/synth/seizure.py (1/f noise,
posterior alpha, blinks, muscle, electrode pops, theta and beta bursts; no seizures), with the
ear electrodes A1, A2 placed at the temporal sites. An abnormal recording carries the usual
finding of an abnormal clinical EEG, generalised slowing: a 1-4 Hz delta component in every
channel, 1.2-1.8 x the background's RMS (normal: 0.3-0.5 x, so the abnormal delta is 2.4-6 x
the normal one), strongest around a subject's focus; a posterior rhythm 1-2 Hz slower and at
0.35-0.6 of its amplitude; the subject's interictal discharges (none in a normal recording).
The amounts are the subject's (within-class spread); every recording has the same length, so
neither length nor file order shows the class.

Settings (the dataset's `generator:` entry): train_normal, train_abnormal, eval_normal,
eval_abnormal (recordings of each split and class, at least 1 each), minutes (each
recording's length, 2 or more; the corpus's are about 20), seed.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.fft

from embedprobe.core.errors import UsageError
from embedprobe.datasets.synth.files import with_defaults, write_nested
from embedprobe.datasets.synth.seizure import (
    OLD_NAMES,
    POSITIONS,
    Signal,
    ecg,
    electrode_signals,
    patient_traits,
)
from embedprobe.datasets.tuab import reader as tuab

DEFAULTS = {"train_normal": 4, "train_abnormal": 4, "eval_normal": 2, "eval_abnormal": 2,
            "minutes": 20, "seed": 0}
COUNTS = ("train_normal", "train_abnormal", "eval_normal", "eval_abnormal")
SFREQ, OTHER_SFREQ = 256, 250
EEG_RANGE = (-3200.0, 3200.0)  # microvolts
EKG_LABEL = "EEG EKG1-REF"
EKG_RANGE = (-5000.0, 5000.0)
FIRST_DATE = dt.date(2009, 3, 2)  # fixed dates keep the bytes reproducible
STREAM = 11  # the look-alikes of one seed draw different signals
ID_PREFIX = "aaaa"
# Where the synthesis places each electrode (seizure.POSITIONS names); the ears sit at the
# temporal sites (T3, T4), the nearest ones it knows.
SITE = {e: e for e in tuab.ELECTRODES} | {"A1": "T3", "A2": "T4"}
DELTA_HZ = (1.0, 4.0)


@dataclass(frozen=True)
class RecordingPlan:
    split: str  # "train" or "eval"
    label: str  # "normal" or "abnormal"
    subject: str  # 8-letter id
    subject_index: int  # draws the subject's traits
    session: int  # 1-based, per subject
    token: int
    sfreq: int
    start: dt.datetime
    seconds: int
    age: int
    sex: str

    @property
    def session_name(self) -> str:
        return f"s{self.session:03d}_t{self.token:03d}"

    @property
    def recording(self) -> str:
        return f"{self.subject}_{self.session_name}"

    @property
    def relative(self) -> str:
        """The file under root, as the reader finds it."""
        return (f"{tuab.EDF_FOLDER}/{self.split}/{self.label}/{tuab.MONTAGE}/"
                f"{self.recording}.edf")


@dataclass(frozen=True)
class Slowing:
    """How a subject's abnormal recordings differ from its normal ones."""

    delta_normal: float  # RMS of the added 1-4 Hz component / background RMS, normal
    delta_abnormal: float  # the same, abnormal
    alpha_gain: float  # abnormal posterior rhythm amplitude / normal
    alpha_drop_hz: float  # how much slower the abnormal posterior rhythm is
    focus: tuple[float, float]  # where the slowing is strongest


def settings_of(settings: dict) -> dict:
    out = with_defaults(settings, DEFAULTS, "TUAB")
    for key in COUNTS:
        if not 1 <= int(out[key]) <= 500:
            raise UsageError(f"{key}={out[key]}: the official split needs both classes in "
                             "train and in eval", fix=f"choose 1..500 {key} recordings")
    if not 2 <= float(out["minutes"]) <= 120:  # the background's level drifts over minutes
        raise UsageError(f"minutes={out['minutes']}", fix="choose 2..120 minutes per recording")
    return out


def subject_ids(rng: np.random.Generator, n: int) -> list[str]:
    """n distinct 8-letter ids, "aaaa" and four random letters (TUH's ids are 8 letters)."""
    ids = []
    for value in rng.choice(26**4, n, replace=False):
        letters = ""
        for _ in range(4):
            value, digit = divmod(int(value), 26)
            letters = chr(ord("a") + digit) + letters
        ids.append(ID_PREFIX + letters)
    return ids


def _subjects_of(s: dict) -> list[tuple[str, str, int]]:
    """(split, class, subject number) of every recording, in plan order: the second train
    normal recording is the first one's subject's second session, and the first train abnormal
    recording belongs to the last train normal recording's subject (both classes)."""
    rows, subject = [], -1
    for split in tuab.SPLITS:
        for label in tuab.CLASSES:
            for i in range(int(s[f"{split}_{label}"])):
                shared = split == "train" and i == 0 and label == "abnormal"
                if not (shared or (split, label, i) == ("train", "normal", 1)):
                    subject += 1
                rows.append((split, label, subject))
    return rows


def plan(settings: dict) -> list[RecordingPlan]:
    """Every recording's split, class, subject, session, rate and start (no signals: cheap),
    sorted by recording id as the reader lists them."""
    s = settings_of(settings)
    rows = _subjects_of(s)
    rng = np.random.default_rng([s["seed"], STREAM, 0])
    n_subjects = rows[-1][2] + 1
    ids = subject_ids(rng, n_subjects)
    ages = rng.integers(18, 90, n_subjects)
    sexes = rng.choice(["F", "M"], n_subjects)
    other_rate = int(rng.integers(len(rows)))
    later_token = int(rng.integers(len(rows)))
    seconds = int(round(float(s["minutes"]) * 60))
    plans, sessions = [], {}
    for i, (split, label, subject) in enumerate(rows):
        sessions[subject] = sessions.get(subject, 0) + 1
        day = FIRST_DATE + dt.timedelta(days=17 * i)
        start = dt.datetime.combine(day, dt.time(int(rng.integers(7, 18)), int(rng.integers(60)),
                                                 int(rng.integers(60))))
        plans.append(RecordingPlan(
            split, label, ids[subject], subject, sessions[subject], int(i == later_token),
            OTHER_SFREQ if i == other_rate else SFREQ, start, seconds, int(ages[subject]),
            str(sexes[subject])))
    return sorted(plans, key=lambda p: p.recording)


def subject_slowing(rng: np.random.Generator) -> Slowing:
    return Slowing(float(rng.uniform(0.3, 0.5)), float(rng.uniform(1.2, 1.8)),
                   float(rng.uniform(0.35, 0.6)), float(rng.uniform(1.0, 2.0)),
                   (float(rng.uniform(-0.6, 0.6)), float(rng.uniform(-0.6, 0.6))))


def _band_noise(rng: np.random.Generator, shape: tuple[int, int], sfreq: float,
                band: tuple[float, float]) -> np.ndarray:
    """Gaussian noise with a flat spectrum within `band`, each row scaled to RMS 1."""
    freqs = scipy.fft.rfftfreq(shape[1], 1 / sfreq)
    inside = (freqs >= band[0]) & (freqs < band[1])
    spectrum = (rng.standard_normal((shape[0], len(freqs)))
                + 1j * rng.standard_normal((shape[0], len(freqs)))) * inside
    out = scipy.fft.irfft(spectrum, shape[1], axis=1)
    return out / np.maximum(out.std(axis=1, keepdims=True), 1e-12)


def _delta(rng: np.random.Generator, positions: np.ndarray, sfreq: float, n: int,
           slowing: Slowing, level: float) -> np.ndarray:
    """The slowing in uV: one generalised 1-4 Hz field with each channel's own part, strongest
    near the focus, waxing and waning over tens of seconds."""
    shared = _band_noise(rng, (1, n), sfreq, DELTA_HZ)
    own = _band_noise(rng, (len(positions), n), sfreq, DELTA_HZ)
    mixed = 0.8 * shared + 0.6 * own
    mixed /= mixed.std(axis=1, keepdims=True)
    near = np.exp(-np.sum((positions - np.array(slowing.focus)) ** 2, axis=1) / 0.8)
    gain = (0.7 + 0.6 * near) * rng.lognormal(0.0, 0.2, len(positions))
    drift = _band_noise(rng, (1, n), sfreq, (0.0, 1 / 30))[0]
    return level * gain[:, None] * mixed * np.exp(0.25 * drift)


def _scale_band(eeg: np.ndarray, sfreq: float, band: tuple[float, float], gain: float
                ) -> np.ndarray:
    """eeg with the part of its spectrum within `band` scaled by `gain`."""
    spectrum = scipy.fft.rfft(eeg, axis=1)
    freqs = scipy.fft.rfftfreq(eeg.shape[1], 1 / sfreq)
    spectrum[:, (freqs >= band[0]) & (freqs < band[1])] *= gain
    return scipy.fft.irfft(spectrum, eeg.shape[1], axis=1)


def eeg_signals(p: RecordingPlan, seed: int) -> np.ndarray:
    """(21, seconds * sfreq) microvolts of the montage's electrodes, in reader.ELECTRODES order."""
    traits = patient_traits(np.random.default_rng([seed, STREAM, 1, p.subject_index]))
    slowing = subject_slowing(np.random.default_rng([seed, STREAM, 2, p.subject_index]))
    rng = np.random.default_rng([seed, STREAM, 3, p.subject_index, p.session])
    abnormal = p.label == "abnormal"
    if abnormal:
        traits = dataclasses.replace(traits, alpha_hz=traits.alpha_hz - slowing.alpha_drop_hz)
    else:  # epileptiform discharges are an abnormal finding
        traits = dataclasses.replace(traits, interictal_per_minute=0.0)
    sites = [SITE[e] for e in tuab.ELECTRODES]
    eeg = electrode_signals(rng, sites, p.sfreq, p.seconds, (), traits)
    if abnormal:
        alpha = (traits.alpha_hz - 1.5, traits.alpha_hz + 1.5)
        eeg = _scale_band(eeg, p.sfreq, alpha, slowing.alpha_gain)
    positions = np.array([POSITIONS[OLD_NAMES.get(site, site)] for site in sites])
    level = slowing.delta_abnormal if abnormal else slowing.delta_normal
    return eeg + _delta(rng, positions, p.sfreq, eeg.shape[1], slowing,
                        level * traits.background_uv)


def signals(p: RecordingPlan, seed: int) -> list[Signal]:
    """Every signal of the recording's EDF, in file order."""
    eeg = eeg_signals(p, seed)
    heart, _ = ecg(np.random.default_rng([seed, STREAM, 4, p.subject_index, p.session]),
                   p.sfreq, p.seconds)
    return [*(Signal(label, eeg[i], "uV", EEG_RANGE)
              for i, label in enumerate(tuab.EEG_CHANNELS)),
            Signal(EKG_LABEL, heart, "uV", EKG_RANGE)]


def write_edf(path: Path, p: RecordingPlan, sigs: list[Signal]) -> Path:
    """The recording's EDF: 1 s records, TUH's patient field, its fixed start."""
    import edfio

    birth = dt.date(p.start.year - p.age, 1, 1)
    edf = edfio.Edf(
        [edfio.EdfSignal(np.clip(s.data, *s.physical_range), p.sfreq, label=s.label,
                         physical_dimension=s.unit, physical_range=s.physical_range)
         for s in sigs],
        patient=edfio.Patient(code=p.subject, sex=p.sex, birthdate=birth, name=p.subject,
                              additional=(f"Age:{p.age}",)),
        recording=edfio.Recording(startdate=p.start.date()),
        starttime=p.start.time(),
        data_record_duration=1,
    )
    edf.write(path)
    return path


def write_lookalike(root: Path, settings: dict) -> list[Path]:
    """Write the look-alike under root; the files written, MANIFEST.tsv last."""
    s = settings_of(settings)
    return write_nested(root, plan(s), "*.edf", "EDF",
                        lambda p, path: [write_edf(path, p, signals(p, s["seed"]))])
