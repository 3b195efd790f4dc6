"""A Dreem Open Datasets look-alike: <root>/dodh/<uuid>.h5 and <root>/dodo/<uuid>.h5 in the
files' HDF5 layout (datasets/dod/reader.py describes it, with its sources):

  hypnogram                 int64, one code per 30 s epoch: -1 not scored, 0 W ... 4 REM;
                            the night starts a few minutes before sleep onset (lights-off)
  signals/eeg/<derivation>  float32 microvolts at 250 Hz: the five derivations both cohorts
                            record (C3_M2, F3_F4, F3_M2, F3_O1, F4_O2) and one of the cohort's
                            own (DOD-H: FP1_F3, DOD-O: O1_M2)
  signals/eog/EOG1          signals/emg/EMG
  signals/<group>.attrs     fs = 250, unit = b"uV"
  attrs                     description (JSON per signal: fs, unit, path, name, domain,
                            default), events_description ("[]"), duration (s), start_time
                            (UTC s); an empty events/ group
  <root>/MANIFEST.tsv       written last: its presence marks a complete look-alike

A subset of the real channels (DOD-H files hold 12 EEG derivations, EOG1, EOG2, EMG and ECG;
DOD-O files 8 EEG): enough for the channel map (the five common derivations) and for the
reader's per-cohort channel sets, small enough to embed quickly. Values are rounded to 1/32 uV
and stored gzip-compressed (the rounding leaves gzip zero bits to find; readers see floats).

Settings (the dataset's `generator:` entry): healthy (5) and osa (5) nights, hours (0.5, every
night the same length, so that length says nothing of the class), seed (0). File names are
UUIDs drawn from the seed: file order says nothing of the class either.

Stages: the Sleep-EDF look-alike's hypnogram and stage synthesis (sleep_edf/lookalike.py:
simulate_hypnogram, synthesize), its Fpz-Cz and Pz-Oz mixed into each derivation and
resampled from 100 to 250 Hz, with independent background per channel. OSA: a whole-night,
broadband signature in every EEG channel: periodic arousal bursts ending the apneas (every
25-50 s of sleep, 6-12 s of 2-40 Hz activity after a slow K-complex-like wave, chin EMG up)
and extra 0.5-4 Hz power; healthy nights have a few spontaneous arousals and little extra slow
power. Each night draws its own rates and amplitudes (within-class spread); ages are drawn
alike for both classes. Fixed dates: the same settings write the same bytes.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.fft
import scipy.signal

from embedprobe.core.errors import UsageError
from embedprobe.datasets.dod.reader import COHORTS, DODH_EEG, DODO_EEG, EPOCH_SECONDS, HYPNOGRAM
from embedprobe.datasets.sleep_edf import lookalike as sleep_edf
from embedprobe.datasets.synth.files import start_rewrite, with_defaults, write_manifest

SFREQ = 250
UP, DOWN = 5, 2  # 100 Hz (the Sleep-EDF look-alike's) * 5 / 2 = 250 Hz
EPOCH_SAMPLES = EPOCH_SECONDS * SFREQ
DEFAULTS = {"healthy": 5, "osa": 5, "hours": 0.5, "seed": 0}
STREAM = 4  # the look-alikes of one seed draw different nights
FIRST_NIGHT = dt.datetime(2018, 3, 5, 22, 30, tzinfo=dt.UTC)  # fixed dates: same bytes
AGES = (25, 65)  # drawn alike for both classes
QUANTUM_UV = 1 / 32
CHUNK = 10 * EPOCH_SAMPLES
UNIT = "uV"
# each cohort the derivations it records (12 and 8), so the reader's zero-filling is tested
EEG_WRITTEN = {"dodh": DODH_EEG, "dodo": DODO_EEG}
OTHER_WRITTEN = {"eog": ("EOG1",), "emg": ("EMG",)}
# Each derivation from the Sleep-EDF look-alike's two: (Fpz-Cz weight, Pz-Oz weight, share of
# the OSA overlay); short bipolar pairs see less of what both electrodes share.
DERIVATION = {
    "C3_M2": (0.8, 0.5, 1.0), "C4_M1": (0.8, 0.5, 1.0), "F3_M2": (1.0, 0.2, 1.0),
    "F4_M1": (1.0, 0.2, 1.0), "FP1_M2": (1.1, 0.1, 1.0), "FP2_M1": (1.1, 0.1, 1.0),
    "O1_M2": (0.3, 1.0, 0.9), "O2_M1": (0.3, 1.0, 0.9), "F3_O1": (0.9, -0.7, 0.8),
    "F4_O2": (0.9, -0.7, 0.8), "FP1_O1": (1.0, -0.7, 0.8), "FP2_O2": (1.0, -0.7, 0.8),
    "F3_F4": (0.35, 0.05, 0.6), "FP1_F3": (0.4, 0.05, 0.6), "FP2_F4": (0.4, 0.05, 0.6),
}
# Sleep-EDF look-alike codes -> DOD hypnogram codes (R&K 3 and 4 are N3; ? and movement: -1)
DOD_CODE = {"W": 0, "1": 1, "2": 2, "3": 3, "4": 3, "R": 4, "?": -1, "M": -1}
SLEEP_CODES = {"1", "2", "3", "4", "R"}


@dataclass(frozen=True)
class Traits:
    """A night's own amplitudes and rates: the class signature, spread within the class."""

    gain: float  # electrode impedance
    slow_uv: float  # RMS of the extra 0.5-4 Hz activity, whole night
    arousal_period_s: float  # mean time between arousal bursts in sleep
    arousal_uv: float  # RMS of a burst's 2-40 Hz activity
    arousal_s: float  # mean burst length


@dataclass(frozen=True)
class NightPlan:
    """One look-alike night: its file, class and true hypnogram (cheap: no signal)."""

    uuid: str
    cohort: str  # "dodh" or "dodo"
    age: int
    start: dt.datetime
    codes: np.ndarray  # DOD hypnogram codes, one per 30 s epoch
    source: sleep_edf.NightPlan  # whose stage synthesis makes the EEG
    traits: Traits
    seed: tuple[int, ...]

    @property
    def label(self) -> str:
        return COHORTS[self.cohort]

    @property
    def relpath(self) -> str:
        return f"{self.cohort}/{self.uuid}.h5"

    @property
    def n_samples(self) -> int:
        return len(self.codes) * EPOCH_SAMPLES


def settings_of(settings: dict) -> dict:
    out = with_defaults(settings, DEFAULTS, "DOD")
    for key in ("healthy", "osa"):
        if not isinstance(out[key], int) or not 1 <= out[key] <= 200:
            raise UsageError(f"{key}={out[key]!r}: a look-alike needs 1..200 nights of each "
                             "class", fix=f"e.g. {key}: 5")
    if not 1 / 6 <= float(out["hours"]) <= 12:
        raise UsageError(f"hours={out['hours']}: a night must last 10 min..12 h",
                         fix="e.g. hours: 0.5")
    return out


def _traits(rng: np.random.Generator, osa: bool) -> Traits:
    if osa:
        return Traits(rng.lognormal(0, 0.1), rng.uniform(15, 25), rng.uniform(25, 50),
                      rng.uniform(15, 30), rng.uniform(6, 12))
    return Traits(rng.lognormal(0, 0.1), rng.uniform(1, 3), rng.uniform(300, 600),
                  rng.uniform(8, 15), rng.uniform(3, 6))


def _hypnogram(rng: np.random.Generator, n_epochs: int, age: int) -> np.ndarray:
    """n_epochs Sleep-EDF look-alike codes from a few minutes before sleep onset (lights-off)."""
    stages = sleep_edf.simulate_hypnogram(rng, n_epochs * EPOCH_SECONDS / 3600, float(age))
    onset = int(np.argmax(stages != "W"))
    first = max(0, onset - int(rng.integers(2, 9)))
    return stages[first:first + n_epochs]


def plan(settings: dict) -> list[NightPlan]:
    """Every night's UUID, cohort, start and hypnogram, sorted by UUID as the reader lists
    them."""
    s = settings_of(settings)
    n_epochs = round(float(s["hours"]) * 3600 / EPOCH_SECONDS)
    cohorts = ["dodh"] * s["healthy"] + ["dodo"] * s["osa"]
    nights = []
    for k, cohort in enumerate(cohorts):
        rng = np.random.default_rng([s["seed"], STREAM, k])
        name = str(uuid.UUID(bytes=rng.bytes(16), version=4))
        age = int(rng.integers(AGES[0], AGES[1] + 1))
        start = FIRST_NIGHT + dt.timedelta(days=k, minutes=int(rng.integers(0, 90)))
        stages = _hypnogram(rng, n_epochs, age)
        source = sleep_edf.NightPlan(
            subject=k, night=1, age=age, sex=int(rng.integers(1, 3)), psg_name="",
            hypnogram_name="", start=start.replace(tzinfo=None), stages=stages,
            signal_seed=(s["seed"], STREAM, 1, k))
        codes = np.array([DOD_CODE[c] for c in stages], np.int64)
        nights.append(NightPlan(name, cohort, age, start, codes, source,
                                _traits(rng, cohort == "dodo"), (s["seed"], STREAM, 2, k)))
    return sorted(nights, key=lambda n: n.uuid)


# --- signals -------------------------------------------------------------------------------


def _band_noise(rng: np.random.Generator, n: int, low: float, high: float) -> np.ndarray:
    """Gaussian noise of RMS 1 in [low, high) Hz."""
    freqs = scipy.fft.rfftfreq(n, 1 / SFREQ)
    spectrum = scipy.fft.rfft(rng.standard_normal(n))
    spectrum[(freqs < low) | (freqs >= high)] = 0
    out = scipy.fft.irfft(spectrum, n)
    return out / np.sqrt(np.mean(out**2))


def _pink(rng: np.random.Generator, n: int) -> np.ndarray:
    """1/f noise of RMS 1 above 0.3 Hz."""
    freqs = scipy.fft.rfftfreq(n, 1 / SFREQ)
    spectrum = scipy.fft.rfft(rng.standard_normal(n))
    spectrum *= np.where(freqs >= 0.3, 1 / np.sqrt(np.maximum(freqs, 0.3)), 0)
    out = scipy.fft.irfft(spectrum, n)
    return out / np.sqrt(np.mean(out**2))


def _arousals(rng: np.random.Generator, night: NightPlan) -> tuple[np.ndarray, np.ndarray]:
    """(EEG overlay in uV, envelope 0..1) of the arousal bursts, in sleep epochs only."""
    n, t = night.n_samples, night.traits
    overlay, envelope = np.zeros(n), np.zeros(n)
    broadband = _band_noise(rng, n, 2.0, 40.0) * t.arousal_uv
    wave = np.arange(SFREQ) / SFREQ
    k_complex = 0.5 * np.exp(-((wave - 0.55) / 0.15) ** 2) - np.exp(-((wave - 0.2) / 0.07) ** 2)
    asleep = np.isin(night.source.stages, list(SLEEP_CODES))
    at = rng.uniform(0, t.arousal_period_s) * SFREQ
    while at < n:
        first = int(at)
        if asleep[first // EPOCH_SAMPLES]:
            length = min(int(t.arousal_s * rng.uniform(0.7, 1.3) * SFREQ), n - first)
            window = np.hanning(length)
            overlay[first:first + length] += window * broadband[first:first + length]
            envelope[first:first + length] = np.maximum(envelope[first:first + length], window)
            stop = min(n, first + SFREQ)
            overlay[first:stop] += 2 * t.arousal_uv * k_complex[:stop - first]
        at += t.arousal_period_s * rng.uniform(0.8, 1.2) * SFREQ
    return overlay, envelope


def _upsampled(data: np.ndarray) -> np.ndarray:
    return scipy.signal.resample_poly(np.asarray(data, np.float64), UP, DOWN)


def _quantized(data: np.ndarray) -> np.ndarray:
    return (np.round(data / QUANTUM_UV) * QUANTUM_UV).astype(np.float32)


def signals(night: NightPlan) -> dict[str, dict[str, np.ndarray]]:
    """The night's channels by group (eeg, eog, emg), float32 microvolts at 250 Hz, exactly
    as written."""
    source = {c.label: c.data for c in sleep_edf.synthesize(night.source)}
    rng = np.random.default_rng(night.seed)
    n, t = night.n_samples, night.traits
    fpz, pz = _upsampled(source["EEG Fpz-Cz"]), _upsampled(source["EEG Pz-Oz"])
    arousal, envelope = _arousals(rng, night)
    overlay = t.slow_uv * _band_noise(rng, n, 0.5, 4.0) + arousal
    eeg = {}
    for name in EEG_WRITTEN[night.cohort]:
        frontal, posterior, share = DERIVATION[name]
        own = 2.0 * _pink(rng, n) + 0.5 * rng.standard_normal(n)
        eeg[name] = _quantized(t.gain * (frontal * fpz + posterior * pz) + share * overlay + own)
    eog = _upsampled(source["EOG horizontal"]) + rng.normal(0, 2.0, n)
    chin = np.repeat(source["EMG submental"], SFREQ)[:n] * (1 + 2 * envelope)
    emg = chin * rng.standard_normal(n)
    return {"eeg": eeg, "eog": {"EOG1": _quantized(eog)}, "emg": {"EMG": _quantized(emg)}}


# --- files ---------------------------------------------------------------------------------


def _text_attribute(h5, name: str, value) -> None:
    """A JSON attribute as a fixed-length byte string (dreem-learning-open's own layout)."""
    h5.attrs.create(name, json.dumps(value), dtype=np.dtype("S32768"))


def write_night(night: NightPlan, path: Path) -> Path:
    import h5py

    description = []
    with h5py.File(path, "w") as h5:
        h5.create_dataset(HYPNOGRAM, data=night.codes, track_times=False)
        for group, channels in signals(night).items():
            folder = h5.create_group(f"signals/{group}")
            folder.attrs["fs"] = SFREQ
            folder.attrs["unit"] = np.bytes_(UNIT.encode())
            for name, data in channels.items():
                folder.create_dataset(name, data=data, chunks=(min(CHUNK, len(data)),),
                                      compression="gzip", compression_opts=1, shuffle=True,
                                      track_times=False)
                description.append({"fs": SFREQ, "unit": UNIT, "path": f"signals/{group}/{name}",
                                    "name": name, "domain": group, "default": True})
        _text_attribute(h5, "description", description)
        h5.create_group("events")
        _text_attribute(h5, "events_description", [])
        h5.attrs["duration"] = night.n_samples // SFREQ
        h5.attrs["start_time"] = int(night.start.timestamp())
    return path


def write_lookalike(root: Path, settings: dict) -> list[Path]:
    """Write the look-alike under root; the files written, MANIFEST.tsv last."""
    root = Path(root)
    nights = plan(settings)
    start_rewrite(root, [n.relpath for n in nights], "*.h5", "DOD .h5")
    files = []
    for night in nights:
        path = root / night.relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        files.append(write_night(night, path))
    return [*files, write_manifest(root, files)]
