"""Synthetic scalp EEG with seizures, for the CHB-MIT and Siena look-alikes.

Made to be hard enough that encoders differ: a random encoder's probe finds most seizures but
not all, and raises false alarms on look-alike background (the epilepsy_demo headline of a
random BIOT lands near 0.8, not 1).

Background: each electrode (10-20 names) carries a 1/f background (shared between neighbours in
part) whose level drifts with vigilance over minutes, posterior alpha that comes and goes, eye
blinks, muscle bursts, chewing (rhythmic 1-2 Hz muscle bursts), electrode pops, and patterns
that resemble seizures without being ones: rhythmic theta bursts (4-8 Hz, some sharp, up to
12 s), diffuse beta bursts (14-24 Hz), and the patient's interictal discharges (the seizure's
own waveform at its focus for 0.5-3 s).

Seizures: each patient has one kind, with its own amplitude (0.7-1.8 x the background's RMS at
the focus, each seizure 0.6-1.4 x that):
  spike_wave      sharp spike and slow wave per cycle, 3.5-5 Hz slowing to 2.5-3.5 Hz;
  rhythmic_theta  a rounded rhythm (weak second harmonic), 5-8 Hz slowing to 3-5 Hz;
  fast_onset      low-voltage fast activity (14-22 Hz) that slows within seconds into a 5-8 Hz
                  rhythm, then to 3-5 Hz, gaining amplitude as it slows.
A seizure builds up over 2-12 s (amplitude and spread), waxes and wanes, spreads from its focus
over most of the head or stays focal (40%), reaches far electrodes later, and leaves a short
post-ictal slowing. Seizures last 20-90 s, short ones more often. The signature lies in 2-30 Hz
and survives per-channel amplitude scaling (the spectrum's shape changes, not only its level)
and bipolar derivation (amplitude and timing differ between neighbouring electrodes).

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


SEIZURE_KINDS = ("spike_wave", "rhythmic_theta", "fast_onset")
OWN_KIND_SHARE = 0.6  # of a patient's seizures of its own kind; the others any kind


@dataclass(frozen=True)
class Patient:
    """What stays the same across one patient's files."""

    focus: tuple[float, float]  # where the seizures (and interictal discharges) start
    alpha_hz: float
    background_uv: float  # RMS of the 1/f background per electrode
    seizure_ratio: float  # seizure RMS at the focus / background RMS
    kind: str  # one of SEIZURE_KINDS
    interictal_per_minute: float


def patient_traits(rng: np.random.Generator, seizure_gain: float = 1.0) -> Patient:
    """A patient's traits; its seizures are 1.0-1.5 x `seizure_gain` x the background's RMS at
    the focus (before each seizure's own strength)."""
    names = sorted(POSITIONS)
    focus = POSITIONS[names[rng.integers(len(names))]]
    return Patient(focus, float(rng.uniform(8.8, 11.0)), float(rng.uniform(12.0, 20.0)),
                   seizure_gain * float(rng.uniform(1.0, 1.5)),
                   SEIZURE_KINDS[rng.integers(len(SEIZURE_KINDS))], float(rng.uniform(0.3, 1.5)))


def place_seizures(rng: np.random.Generator, count: int, first: int, last: int
                   ) -> list[Seizure]:
    """Up to `count` seizures of 20-90 s (short ones more often) between `first` and `last`
    (seconds), 20 s apart; shorter (or fewer) where the span is too short for them."""
    room = last - first
    while count > 0 and MIN_SEIZURE_S * count + SEIZURE_GAP_S * (count - 1) > room:
        count -= 1
    if count == 0:
        return []
    spread = MAX_SEIZURE_S - MIN_SEIZURE_S
    durations = np.round(MIN_SEIZURE_S + spread * rng.random(count) ** 2).astype(np.int64)
    free = room - SEIZURE_GAP_S * (count - 1)
    if durations.sum() > free:
        durations = np.maximum(MIN_SEIZURE_S, durations * free // durations.sum())
    if durations.sum() > free:  # the shortest length raised some above the room: all shortest
        durations = np.full(count, MIN_SEIZURE_S, np.int64)
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


def _rounded(cycle: np.ndarray) -> np.ndarray:
    """A rhythmic wave with a weak second harmonic (a little sharp on one side)."""
    return np.sin(2 * np.pi * cycle) + 0.3 * np.sin(4 * np.pi * cycle + 0.8)


_SW = _spike_and_wave(np.linspace(0, 1, 4096, endpoint=False))
_SW_MEAN, _SW_RMS = float(_SW.mean()), float(_SW.std())  # no DC, unit RMS
_ROUNDED_RMS = float(np.sqrt((1 + 0.3**2) / 2))


def _discharge(kind: str, cycle: np.ndarray) -> np.ndarray:
    """The kind's waveform at these phases, zero mean and unit RMS."""
    if kind == "spike_wave":
        return (_spike_and_wave(cycle) - _SW_MEAN) / _SW_RMS
    return _rounded(cycle) / _ROUNDED_RMS


def _seizure_rhythm(rng, kind: str, t: np.ndarray, duration: float
                    ) -> tuple[np.ndarray, np.ndarray]:
    """(rate in Hz, relative amplitude) over the seizure's time t: slowing as it evolves."""
    progress = t / duration
    if kind == "fast_onset":
        fast, mid, end = rng.uniform(14, 22), rng.uniform(5, 8), rng.uniform(3, 5)
        settle = rng.uniform(3, 8)  # seconds of fast activity
        rate = mid + (fast - mid) * np.exp(-t / settle)
        rate += (end - mid) * np.clip((t - settle) / max(duration - settle, 1.0), 0, 1)
        amplitude = 0.45 + 0.55 * (1 - np.exp(-t / settle))  # low voltage while fast
        return rate, amplitude
    start_hz, end_hz = ((rng.uniform(3.5, 5), rng.uniform(2.5, 3.5)) if kind == "spike_wave"
                        else (rng.uniform(5, 8), rng.uniform(3, 5)))
    rate = start_hz + (end_hz - start_hz) * progress
    return rate, 0.8 + 0.2 * progress


def _seizure(rng, seizure: Seizure, sfreq: float, positions: np.ndarray, patient: Patient,
             n: int) -> tuple[np.ndarray, np.ndarray]:
    """(electrodes x n discharge in uV, 0..1 envelope over n) of one seizure."""
    length = int(seizure.duration * sfreq)
    t = np.arange(length) / sfreq
    kind = patient.kind if rng.uniform() < OWN_KIND_SHARE else SEIZURE_KINDS[
        rng.integers(len(SEIZURE_KINDS))]
    rate, grow = _seizure_rhythm(rng, kind, t, seizure.duration)
    rate = rate * (1 + 0.04 * np.sin(2 * np.pi * t / rng.uniform(4, 9)))  # it wanders a little
    cycles = np.cumsum(rate) / sfreq
    # a build-up over 2-12 s (at most 40% of the seizure), a shorter end
    ramp_in = min(rng.uniform(2.0, 12.0), 0.4 * seizure.duration)
    ramp_out = rng.uniform(1.0, 4.0)
    rise = 0.5 - 0.5 * np.cos(np.pi * np.clip(t / ramp_in, 0, 1))
    envelope = rise * np.clip((seizure.duration - t) / ramp_out, 0, 1)
    envelope *= 1 + 0.25 * np.sin(2 * np.pi * t / rng.uniform(5, 12))  # waxing and waning
    focus = np.array(patient.focus) + rng.normal(0, 0.1, 2)
    distance = np.linalg.norm(positions - focus, axis=1)
    widest = rng.uniform(0.45, 0.7) if rng.uniform() < 0.4 else rng.uniform(1.0, 1.4)
    spread = 0.3 + (widest - 0.3) * np.clip(t / max(ramp_in, rng.uniform(3, 15)), 0, 1)
    strength = np.exp(rng.uniform(np.log(0.3), np.log(1.3)))  # some seizures are faint
    amplitude = (patient.seizure_ratio * patient.background_uv * strength
                 * grow * envelope)
    # far electrodes follow the focus, each a little on its own (uneven cortex under the
    # scalp: neighbours differ, so bipolar derivations keep part of a wide discharge)
    delay = 0.04 * distance + rng.normal(0, 0.01, len(positions))  # seconds
    gain = rng.lognormal(0, 0.35, len(positions))
    out = np.zeros((len(positions), n))
    first = int(seizure.onset * sfreq)
    for e in range(len(positions)):
        field = gain[e] * np.exp(-distance[e] ** 2 / (2 * spread**2))
        wave = amplitude * field * _discharge(kind, cycles - delay[e] * rate)
        _add(out[e], first, wave)
    full = np.zeros(n)
    _add(full, first, np.clip(envelope, 0, 1))
    return out, np.clip(full, 0, 1)


def _background(rng, positions: np.ndarray, sfreq: float, n: int, patient: Patient
                ) -> np.ndarray:
    """1/f noise: each electrode's own part plus two broad shared fields, its level drifting
    with vigilance (x0.7-1.4 over minutes)."""
    shared = [_noise(rng, n, sfreq, _pink) for _ in range(2)]
    centres = rng.uniform(-0.8, 0.8, (2, 2))
    eeg = np.empty((len(positions), n))
    for e in range(len(positions)):
        weights = np.exp(-np.sum((positions[e] - centres) ** 2, axis=1) / 0.8)
        eeg[e] = 0.8 * _noise(rng, n, sfreq, _pink) + 0.6 * (weights[0] * shared[0]
                                                            + weights[1] * shared[1])
    drift = _noise(rng, n, sfreq, _band(0.0, 1 / 60))  # one cycle a minute at most
    return eeg * patient.background_uv * np.exp(0.18 * drift)


def _burst_field(rng, positions: np.ndarray, centre=None, width=None) -> np.ndarray:
    """A burst's amplitude per electrode: a bump around `centre` (random) of `width` (0.4-0.9),
    uneven from electrode to electrode, as a seizure's field."""
    centre = np.array(centre if centre is not None else rng.uniform(-0.7, 0.7, 2))
    width = width if width is not None else rng.uniform(0.4, 0.9)
    bump = np.exp(-np.sum((positions - centre) ** 2, axis=1) / (2 * width**2))
    return bump * rng.lognormal(0, 0.35, len(positions))


def _add_burst(eeg: np.ndarray, at: int, field: np.ndarray, burst: np.ndarray) -> None:
    for e in np.flatnonzero(field > 0.02):
        _add(eeg[e], at, field[e] * burst)


def _look_alikes(rng, eeg: np.ndarray, positions: np.ndarray, sfreq: float, seconds: float,
                 patient: Patient) -> None:
    """Background patterns that resemble seizures: rhythmic theta, beta bursts, the patient's
    interictal discharges (its seizure waveform for 0.5-3 s at its focus) and brief rhythmic
    discharges (its seizure rhythm for 3-8 s, too short to be called a seizure)."""
    level = patient.background_uv
    for at in _events(rng, seconds, rng.uniform(1.0, 2.5)):  # rhythmic theta
        t = np.arange(int(rng.uniform(3, 15) * sfreq)) / sfreq
        cycle = rng.uniform(4, 8) * t
        wave = _rounded(cycle) / _ROUNDED_RMS if rng.uniform() < 0.5 else np.sin(
            2 * np.pi * cycle) * np.sqrt(2)
        burst = rng.uniform(0.6, 1.8) * level * np.hanning(len(t)) * wave
        _add_burst(eeg, int(at * sfreq), _burst_field(rng, positions), burst)
    for at in _events(rng, seconds, rng.uniform(0.3, 1.0)):  # diffuse beta
        length = int(rng.uniform(3, 15) * sfreq)
        burst = rng.uniform(0.4, 1.0) * level * np.hanning(length) * _noise(
            rng, length, sfreq, _band(14, 24))
        _add_burst(eeg, int(at * sfreq), _burst_field(rng, positions, (0.0, 0.3), 1.2), burst)
    focal = [(0.5, 3.0, patient.interictal_per_minute), (3.0, 9.0, rng.uniform(0.3, 0.8))]
    for shortest, longest, per_minute in focal:  # interictal, then brief rhythmic discharges
        for at in _events(rng, seconds, per_minute):
            t = np.arange(int(rng.uniform(shortest, longest) * sfreq)) / sfreq
            kind = patient.kind if rng.uniform() < OWN_KIND_SHARE else SEIZURE_KINDS[
                rng.integers(len(SEIZURE_KINDS))]
            rate = rng.uniform(2.5, 5.0) if kind == "spike_wave" else rng.uniform(3, 8)
            burst = (patient.seizure_ratio * level * rng.uniform(0.6, 1.3)
                     * np.hanning(len(t)) * _discharge(kind, rate * t))
            field = _burst_field(rng, positions,
                                 np.array(patient.focus) + rng.normal(0, 0.1, 2),
                                 rng.uniform(0.3, 0.7))
            _add_burst(eeg, int(at * sfreq), field, burst)


def _artefacts(rng, eeg: np.ndarray, positions: np.ndarray, sfreq: float, seconds: float,
               closed: np.ndarray) -> None:
    """Blinks (eyes open), muscle, chewing and electrode pops."""
    x, y = positions[:, 0], positions[:, 1]
    frontal = np.clip(y - 0.2, 0, None) ** 2 / 0.64
    blink_t = np.arange(int(0.6 * sfreq)) / sfreq
    for at in _events(rng, seconds, 10.0):
        if closed[int(at * sfreq)] < 0.5:
            bump = rng.uniform(80, 200) * np.exp(-(((blink_t - 0.25) / rng.uniform(0.07, 0.12))
                                                   ** 2))
            _add_burst(eeg, int(at * sfreq), frontal, bump)
    temporal = np.where(np.abs(x) > 0.7, 1.0, 0.2)
    for at in _events(rng, seconds, 0.7):  # muscle: broadband 20-70 Hz
        length = int(rng.uniform(0.5, 4) * sfreq)
        burst = rng.uniform(10, 40) * np.hanning(length) * _noise(rng, length, sfreq,
                                                                  _band(20, 70))
        _add_burst(eeg, int(at * sfreq), temporal * rng.uniform(0.7, 1.3), burst)
    for at in _events(rng, seconds, 0.3):  # chewing: muscle bursts at 1-2 Hz
        length = int(rng.uniform(3, 8) * sfreq)
        t = np.arange(length) / sfreq
        chew = np.clip(np.sin(2 * np.pi * rng.uniform(1.0, 2.0) * t), 0, None) ** 2
        burst = rng.uniform(15, 40) * chew * _noise(rng, length, sfreq, _band(20, 70))
        _add_burst(eeg, int(at * sfreq), temporal, burst)
    for at in _events(rng, seconds, 0.3):  # electrode pops: a step that decays within 1 s
        t = np.arange(int(sfreq)) / sfreq
        pop = rng.choice([-1, 1]) * rng.uniform(50, 300) * np.exp(-t / rng.uniform(0.1, 0.5))
        _add(eeg[rng.integers(len(eeg))], int(at * sfreq), pop)


def file_seizure_count(rng: np.random.Generator, first_file: bool, seizure_free: bool) -> int:
    """How many seizures a look-alike file of the SeizeIT1 and EPILEPSIAE look-alikes holds:
    1-2 in a patient's first file (every patient has some), else 0-2 (0.3, 0.4, 0.3); none in
    the look-alike's one seizure-free file (drawn all the same, so the draws stay aligned)."""
    count = int(rng.integers(1, 3)) if first_file else int(rng.choice(3, p=[0.3, 0.4, 0.3]))
    return 0 if seizure_free else count


def electrode_signals(rng: np.random.Generator, electrodes: Sequence[str], sfreq: float,
                      seconds: int, seizures: Sequence[Seizure], patient: Patient
                      ) -> np.ndarray:
    """(len(electrodes), seconds * sfreq) float64 microvolts: background, artefacts, seizures."""
    n = int(seconds * sfreq)
    positions = np.stack([_position(e) for e in electrodes])
    eeg = _background(rng, positions, sfreq, n, patient)
    closed = _on_off(rng, n, sfreq, 0.45)  # posterior alpha while the eyes are closed
    ictal = np.zeros(n)
    discharges = np.zeros_like(eeg)
    for seizure in seizures:
        wave, envelope = _seizure(rng, seizure, sfreq, positions, patient, n)
        discharges += wave
        ictal = np.maximum(ictal, envelope)
    alpha = _noise(rng, n, sfreq, _band(patient.alpha_hz - 1.0, patient.alpha_hz + 1.0))
    alpha *= 14.0 * closed * (1 - ictal)  # the seizure blocks the alpha rhythm
    eeg += np.outer(np.clip(0.3 + 0.7 * (0.6 - positions[:, 1]) / 1.6, 0.15, 1.0), alpha)
    _look_alikes(rng, eeg, positions, sfreq, seconds, patient)
    _artefacts(rng, eeg, positions, sfreq, seconds, closed)
    # post-ictal slowing: 1-2 Hz waves that fade over a minute after each seizure
    for seizure in seizures:
        length = int(60 * sfreq)
        t = np.arange(length) / sfreq
        slow = _noise(rng, length, sfreq, _band(1.0, 2.0)) * np.exp(-t / 20)
        _add_burst(eeg, int(seizure.end * sfreq), np.ones(len(positions)),
                   patient.seizure_ratio * patient.background_uv * 0.6 * slow)
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
