"""Synthetic scalp EEG with seizures, for the CHB-MIT and Siena look-alikes.

Each electrode (10-20 names) carries a 1/f background (shared between neighbours in part),
posterior alpha that comes and goes, short rhythmic theta bursts, eye blinks, muscle bursts
and electrode pops. A seizure is a rhythmic spike-and-wave discharge: a sharp spike and a slow
wave per cycle, so strong harmonics; its rate slows from 4-5 Hz to about 3 Hz; it starts at a
focus and spreads over most of the head within its first seconds (5 s at most), later at
electrodes far from the focus, and leaves a short post-ictal slowing. The signature survives
any per-window, per-channel amplitude scaling (the spectrum's shape changes, not only its
level) and bipolar derivation (amplitude and timing differ between neighbouring electrodes).

Amplitudes are in microvolts; everything derives from the generator passed in, so the same
seed gives the same samples. Files are written with edfio, one 1 s data record at a time;
write_patient_folders lays out the per-patient folders, listings and RECORDS both share.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import scipy.fft

from embedprobe.datasets.synth.files import start_rewrite, write_manifest

MIN_SEIZURE_S, MAX_SEIZURE_S = 20, 90
SEIZURE_GAP_S = 20  # between two seizures of one file

# Approximate 2-D scalp positions (x: left -> right, y: back -> front, the 10-20 circle has
# radius 1); the old temporal names are the same places as the new ones.
POSITIONS = {
    "FP1": (-0.31, 0.95), "FPZ": (0.0, 1.0), "FP2": (0.31, 0.95),
    "F9": (-1.0, 0.72), "F7": (-0.81, 0.59), "F3": (-0.42, 0.52), "FZ": (0.0, 0.5),
    "F4": (0.42, 0.52), "F8": (0.81, 0.59), "F10": (1.0, 0.72),
    "FT9": (-1.1, 0.33), "FC5": (-0.7, 0.3), "FC1": (-0.22, 0.26), "FC2": (0.22, 0.26),
    "FC6": (0.7, 0.3), "FT10": (1.1, 0.33),
    "T7": (-1.0, 0.0), "C3": (-0.5, 0.0), "CZ": (0.0, 0.0), "C4": (0.5, 0.0), "T8": (1.0, 0.0),
    "CP5": (-0.7, -0.3), "CP1": (-0.22, -0.26), "CP2": (0.22, -0.26), "CP6": (0.7, -0.3),
    "P7": (-0.81, -0.59), "P3": (-0.42, -0.52), "PZ": (0.0, -0.5), "P4": (0.42, -0.52),
    "P8": (0.81, -0.59), "O1": (-0.31, -0.95), "O2": (0.31, -0.95),
}
OLD_NAMES = {"T3": "T7", "T4": "T8", "T5": "P7", "T6": "P8"}


@dataclass(frozen=True)
class Seizure:
    onset: int  # seconds from the start of the file
    duration: int  # seconds

    @property
    def end(self) -> int:
        return self.onset + self.duration


@dataclass(frozen=True)
class Patient:
    """What stays the same across one patient's files."""

    focus: tuple[float, float]  # where the seizures start
    alpha_hz: float
    background_uv: float  # RMS of the 1/f background per electrode
    seizure_uv: float  # typical discharge amplitude at the focus


def patient_traits(rng: np.random.Generator) -> Patient:
    names = sorted(POSITIONS)
    focus = POSITIONS[names[rng.integers(len(names))]]
    return Patient(focus, float(rng.uniform(8.8, 11.0)), float(rng.uniform(12.0, 20.0)),
                   float(rng.uniform(100.0, 170.0)))


def place_seizures(rng: np.random.Generator, count: int, first: int, last: int
                   ) -> list[Seizure]:
    """Up to `count` seizures of 20-90 s between `first` and `last` (seconds), 20 s apart;
    shorter (or fewer) where the span is too short for them."""
    room = last - first
    while count > 0 and MIN_SEIZURE_S * count + SEIZURE_GAP_S * (count - 1) > room:
        count -= 1
    if count == 0:
        return []
    durations = rng.integers(MIN_SEIZURE_S, MAX_SEIZURE_S + 1, count)
    free = room - SEIZURE_GAP_S * (count - 1)
    if durations.sum() > free:
        durations = np.maximum(MIN_SEIZURE_S, durations * free // durations.sum())
    cuts = np.sort(rng.integers(0, free - durations.sum() + 1, count))
    before = np.concatenate([[0], np.cumsum(durations)[:-1]])
    return [Seizure(int(first + cuts[i] + before[i] + SEIZURE_GAP_S * i), int(durations[i]))
            for i in range(count)]


def _position(name: str) -> np.ndarray:
    name = name.upper()
    return np.array(POSITIONS[OLD_NAMES.get(name, name)])


def _noise(rng, n: int, sfreq: float, shape) -> np.ndarray:
    """Gaussian noise of n samples with amplitude spectrum shape(freqs), scaled to RMS 1."""
    freqs = scipy.fft.rfftfreq(n, 1 / sfreq)
    spectrum = rng.standard_normal(len(freqs)) + 1j * rng.standard_normal(len(freqs))
    out = scipy.fft.irfft(spectrum * shape(freqs), n)
    return out / max(float(out.std()), 1e-12)


def _pink(freqs):
    with np.errstate(divide="ignore"):
        return np.where(freqs >= 0.5, freqs ** -0.5, 0.0)


def _band(low, high):
    return lambda freqs: ((freqs >= low) & (freqs < high)).astype(float)


def _on_off(rng, n: int, sfreq: float, share: float, ramp_s: float = 2.0) -> np.ndarray:
    """A 0..1 envelope that switches on for about `share` of the time in 10-60 s stretches."""
    out, at = np.zeros(n), 0
    while at < n:
        length = int(rng.uniform(10, 60) * sfreq)
        out[at:at + length] = float(rng.uniform() < share)
        at += length
    ramp = np.hanning(max(3, int(ramp_s * sfreq)))
    return np.convolve(out, ramp / ramp.sum(), mode="same")


def _events(rng, seconds: float, per_minute: float) -> np.ndarray:
    return np.sort(rng.uniform(0, seconds, rng.poisson(per_minute * seconds / 60)))


def _add(signal: np.ndarray, at: int, wave: np.ndarray) -> None:
    at = max(0, at)
    stop = min(len(signal), at + len(wave))
    if stop > at:
        signal[at:stop] += wave[: stop - at]


def _spike_and_wave(cycle: np.ndarray) -> np.ndarray:
    """One discharge per cycle (phase in cycles): a sharp negative spike, then a slow wave."""
    phase = np.mod(cycle, 1.0)
    return (-np.exp(-(((phase - 0.12) / 0.035) ** 2))
            + 0.55 * np.exp(-(((phase - 0.55) / 0.16) ** 2)))


_SW_MEAN = float(_spike_and_wave(np.linspace(0, 1, 4096, endpoint=False)).mean())  # no DC


def _seizure(rng, seizure: Seizure, sfreq: float, positions: np.ndarray, patient: Patient,
             n: int) -> tuple[np.ndarray, np.ndarray]:
    """(electrodes x n discharge in uV, 0..1 envelope over n) of one seizure."""
    length = int(seizure.duration * sfreq)
    t = np.arange(length) / sfreq
    start_hz, end_hz = rng.uniform(4.2, 5.2), rng.uniform(2.6, 3.4)
    rate = start_hz + (end_hz - start_hz) * t / seizure.duration
    rate *= 1 + 0.04 * np.sin(2 * np.pi * t / rng.uniform(4, 9))  # the rhythm wanders a little
    cycles = np.cumsum(rate) / sfreq
    ramp_in, ramp_out = rng.uniform(0.5, 1.2), rng.uniform(0.8, 2.0)  # abrupt, as most are
    envelope = np.clip(t / ramp_in, 0, 1) * np.clip((seizure.duration - t) / ramp_out, 0, 1)
    envelope *= 1 + 0.15 * np.sin(2 * np.pi * t / rng.uniform(5, 12))
    focus = np.array(patient.focus) + rng.normal(0, 0.1, 2)
    distance = np.linalg.norm(positions - focus, axis=1)
    spread = 0.35 + 0.95 * np.clip(t / min(5.0, 0.25 * seizure.duration), 0, 1)  # focal, wide
    amplitude = patient.seizure_uv * rng.uniform(0.8, 1.25)
    delay = 0.025 * distance  # seconds: far electrodes follow the focus
    out = np.zeros((len(positions), n))
    first = int(seizure.onset * sfreq)
    for e in range(len(positions)):
        field = np.exp(-distance[e] ** 2 / (2 * spread**2))
        lagged = cycles - delay[e] * rate
        wave = amplitude * field * envelope * (_spike_and_wave(lagged) - _SW_MEAN)
        _add(out[e], first, wave)
    full = np.zeros(n)
    _add(full, first, envelope)
    return out, np.clip(full, 0, 1)


def electrode_signals(rng: np.random.Generator, electrodes: Sequence[str], sfreq: float,
                      seconds: int, seizures: Sequence[Seizure], patient: Patient
                      ) -> np.ndarray:
    """(len(electrodes), seconds * sfreq) float64 microvolts: background, artefacts, seizures."""
    n = int(seconds * sfreq)
    positions = np.stack([_position(e) for e in electrodes])
    x, y = positions[:, 0], positions[:, 1]
    # 1/f background: each electrode's own part plus two broad fields its neighbours share
    shared = [_noise(rng, n, sfreq, _pink) for _ in range(2)]
    centres = rng.uniform(-0.8, 0.8, (2, 2))
    eeg = np.empty((len(electrodes), n))
    for e in range(len(electrodes)):
        weights = np.exp(-np.sum((positions[e] - centres) ** 2, axis=1) / 0.8)
        eeg[e] = patient.background_uv * (0.8 * _noise(rng, n, sfreq, _pink)
                                          + 0.6 * (weights[0] * shared[0]
                                                   + weights[1] * shared[1]))
    # posterior alpha while the eyes are closed; blinks while they are open
    closed = _on_off(rng, n, sfreq, 0.45)
    ictal = np.zeros(n)
    discharges = np.zeros_like(eeg)
    for seizure in seizures:
        wave, envelope = _seizure(rng, seizure, sfreq, positions, patient, n)
        discharges += wave
        ictal = np.maximum(ictal, envelope)
    alpha = _noise(rng, n, sfreq, _band(patient.alpha_hz - 1.0, patient.alpha_hz + 1.0))
    alpha *= 14.0 * closed * (1 - ictal)  # the seizure blocks the alpha rhythm
    eeg += np.outer(np.clip(0.3 + 0.7 * (0.6 - y) / 1.6, 0.15, 1.0), alpha)
    frontal = np.clip(y - 0.2, 0, None) ** 2 / 0.64
    blink_t = np.arange(int(0.6 * sfreq)) / sfreq
    for at in _events(rng, seconds, 10.0):
        if closed[int(at * sfreq)] < 0.5:
            bump = rng.uniform(80, 200) * np.exp(-(((blink_t - 0.25) / rng.uniform(0.07, 0.12))
                                                   ** 2))
            for e in np.flatnonzero(frontal):
                _add(eeg[e], int(at * sfreq), frontal[e] * bump)
    # rhythmic theta bursts (drowsiness): rhythmic but sinusoidal, short and fronto-central
    central = np.exp(-(x**2 + (y - 0.2) ** 2) / 0.5)
    for at in _events(rng, seconds, 1.0):
        t = np.arange(int(rng.uniform(2, 6) * sfreq)) / sfreq
        burst = rng.uniform(10, 25) * np.hanning(len(t)) * np.sin(2 * np.pi * rng.uniform(5, 7)
                                                                   * t)
        for e in range(len(electrodes)):
            _add(eeg[e], int(at * sfreq), central[e] * burst)
    # muscle: broadband 20-70 Hz bursts over the temporal muscles
    temporal = np.where(np.abs(x) > 0.7, 1.0, 0.2)
    for at in _events(rng, seconds, 0.7):
        length = int(rng.uniform(0.5, 4) * sfreq)
        burst = rng.uniform(10, 40) * np.hanning(length) * _noise(rng, length, sfreq,
                                                                  _band(20, 70))
        for e in range(len(electrodes)):
            _add(eeg[e], int(at * sfreq), temporal[e] * burst * rng.uniform(0.7, 1.3))
    # electrode pops: a step on one electrode that decays within a second
    for at in _events(rng, seconds, 0.3):
        t = np.arange(int(sfreq)) / sfreq
        pop = rng.choice([-1, 1]) * rng.uniform(50, 300) * np.exp(-t / rng.uniform(0.1, 0.5))
        _add(eeg[rng.integers(len(electrodes))], int(at * sfreq), pop)
    # post-ictal slowing: 1-2 Hz waves that fade over a minute after each seizure
    for seizure in seizures:
        length = int(60 * sfreq)
        t = np.arange(length) / sfreq
        slow = _noise(rng, length, sfreq, _band(1.0, 2.0)) * np.exp(-t / 20) * 0.3
        for e in range(len(electrodes)):
            _add(eeg[e], int(seizure.end * sfreq), patient.seizure_uv * slow)
    return eeg + discharges


def ecg(rng: np.random.Generator, sfreq: float, seconds: int) -> tuple[np.ndarray, np.ndarray]:
    """(an ECG trace in uV, the heart rate in beats per minute per sample)."""
    n = int(seconds * sfreq)
    bpm = 70 + 8 * np.sin(2 * np.pi * np.arange(n) / sfreq / rng.uniform(60, 180))
    trace = rng.normal(0, 20, n)
    t = np.arange(int(0.6 * sfreq)) / sfreq
    beat = (1000 * np.exp(-(((t - 0.2) / 0.012) ** 2)) - 150 * np.exp(-(((t - 0.23) / 0.02)
                                                                         ** 2))
            + 200 * np.exp(-(((t - 0.45) / 0.05) ** 2)))
    at = rng.uniform(0, 1)
    while at < seconds:
        _add(trace, int(at * sfreq), beat)
        at += 60 / bpm[min(n - 1, int(at * sfreq))]
    return trace, bpm


@dataclass(frozen=True)
class Signal:
    label: str
    data: np.ndarray
    unit: str
    physical_range: tuple[float, float]


def write_edf(path: Path, signals: Sequence[Signal], sfreq: float, start: dt.datetime
              ) -> Path:
    """An EDF file with every signal at `sfreq`, in 1 s data records, starting at `start`."""
    import edfio

    edf = edfio.Edf(
        [edfio.EdfSignal(np.clip(s.data, *s.physical_range), sfreq, label=s.label,
                         physical_dimension=s.unit, physical_range=s.physical_range)
         for s in signals],
        patient=edfio.Patient(),
        recording=edfio.Recording(startdate=start.date()),
        starttime=start.time(),
        data_record_duration=1,
    )
    edf.write(path)
    return path


class _Planned(Protocol):
    patient: int
    seizures: Sequence[Seizure]
    start: dt.datetime

    @property
    def folder(self) -> str: ...

    @property
    def name(self) -> str: ...


def write_patient_folders(root: Path, plans: Sequence[_Planned], sfreq: float,
                          signals: Callable[[Any], Sequence[Signal]],
                          listing_name: Callable[[str], str],
                          listing_text: Callable[[list], str],
                          with_seizures: bool) -> list[Path]:
    """The CHB-MIT and Siena layout under root: per patient a folder of EDFs and one listing
    text file, then RECORDS (and RECORDS-WITH-SEIZURES when asked), then MANIFEST.tsv last.

    listing_name(folder) names the patient's listing, listing_text(its plans) writes it."""
    root.mkdir(parents=True, exist_ok=True)
    start_rewrite(root, (f"{p.folder}/{p.name}" for p in plans), "*.edf", "EDF")
    files: list[Path] = []
    for patient in sorted({p.patient for p in plans}):
        mine = [p for p in plans if p.patient == patient]
        folder = root / mine[0].folder
        folder.mkdir(exist_ok=True)
        for p in mine:
            files.append(write_edf(folder / p.name, signals(p), sfreq, p.start))
        listing = folder / listing_name(mine[0].folder)
        listing.write_text(listing_text(mine))
        files.append(listing)
    records = root / "RECORDS"
    records.write_text("".join(f"{p.folder}/{p.name}\n" for p in plans))
    files.append(records)
    if with_seizures:
        seizure_records = root / "RECORDS-WITH-SEIZURES"
        seizure_records.write_text("".join(f"{p.folder}/{p.name}\n" for p in plans
                                           if p.seizures))
        files.append(seizure_records)
    return [*files, write_manifest(root, files)]
