"""Synthetic Sleep-EDF expanded nights, written in the real file names and EDF+ formats.

The demo stands in for the real download (which cannot be fetched at run time), so every file
goes through the same MNE path a real file takes:

  <root>/sleep-cassette/SC4ssNE0-PSG.edf        EEG Fpz-Cz, EEG Pz-Oz, EOG horizontal (100 Hz),
                                               EMG submental, Temp rectal (1 Hz), as in SC files
  <root>/sleep-cassette/SC4ssNEx-Hypnogram.edf  EDF+ annotations only: merged runs of
                                               "Sleep stage W/1/2/3/4/R/?" and "Movement time"
  <root>/SC-subjects.xls                       subject, night, age, sex (F=1), LightsOff
  <root>/MANIFEST.tsv                          file, bytes: written last, so it marks completion

`hours` is the length of the sleep period; every night adds 35-50 min of wake before and after
it (so the usual 30-min wake trimming has something to cut) and a short unscored tail.

The EEG is a 1/f background plus stage-dependent parts whose amplitudes vary from epoch to
epoch: alpha in W, theta and vertex waves in N1, spindles and K-complexes in N2, high-amplitude
delta in N3, low-voltage theta with sawtooth waves and rapid eye movements in REM. Slow-wave and
spindle amplitude, alpha frequency and the amount of N3 fall with age, so a brain-age probe has
something to find. Everything derives from the seed; headers carry fixed dates, so the same
seed writes byte-identical files.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import edfio
import numpy as np
import scipy.fft

from embedprobe.core.errors import UsageError
from embedprobe.datasets.synth.files import MANIFEST, write_manifest

SFREQ = 100  # Hz, the EEG/EOG rate of the real files
SLOW_SFREQ = 1  # Hz, EMG submental and Temp rectal in the real cassette files
EPOCH_SECONDS = 30
EPOCH_SAMPLES = EPOCH_SECONDS * SFREQ
CASSETTE_DIR = "sleep-cassette"
SUBJECTS_TABLE = "SC-subjects.xls"
AGE_RANGE = (25.0, 95.0)
FIRST_NIGHT_DATE = dt.date(1989, 4, 24)  # fixed dates keep the bytes reproducible
RECORDING_START = dt.time(22, 0, 0)

# Hypnogram codes (one per 30 s epoch) and their annotation texts in real hypnogram files.
ANNOTATION_TEXT = {
    "W": "Sleep stage W",
    "1": "Sleep stage 1",
    "2": "Sleep stage 2",
    "3": "Sleep stage 3",
    "4": "Sleep stage 4",
    "R": "Sleep stage R",
    "?": "Sleep stage ?",
    "M": "Movement time",
}

# RMS amplitude in microvolts of the rhythmic parts per stage: delta, theta, alpha, beta.
_RHYTHM_UV = {
    "W": (5.0, 4.0, 11.0, 6.0),
    "1": (9.0, 9.0, 4.0, 3.0),
    "2": (17.0, 7.0, 2.5, 2.0),
    "3": (34.0, 7.0, 2.0, 1.5),
    "4": (46.0, 7.0, 2.0, 1.5),
    "R": (8.0, 8.0, 4.5, 3.5),
    "?": (6.0, 5.0, 8.0, 5.0),
    "M": (40.0, 10.0, 8.0, 30.0),
}
_EPOCH_JITTER = 0.45  # log-sd of each part's amplitude from one epoch to the next
_EYES_OPEN = 0.4  # share of wake epochs with eyes open
_BACKGROUND_UV = 7.0  # 1/f background RMS
# How strongly each rhythm shows on each derivation (Fpz-Cz is frontal, Pz-Oz occipital).
_CHANNEL_WEIGHTS = {"EEG Fpz-Cz": (1.0, 0.8, 0.5, 1.0), "EEG Pz-Oz": (0.6, 0.7, 1.0, 0.6)}
_TRANSIENT_WEIGHTS = {"EEG Fpz-Cz": 0.9, "EEG Pz-Oz": 0.6}
# Mean events per 30 s epoch.
_SPINDLES = {"2": 2.0, "3": 0.7, "4": 0.4}
_K_COMPLEXES = {"2": 0.8, "3": 0.3}
_VERTEX_WAVES = {"1": 1.2, "2": 0.2}
_SAWTOOTH = {"R": 0.8}
_BLINKS = {"W": 4.0, "?": 2.0}
_RAPID_EYE = {"R": 3.0, "W": 1.0}
_EMG_UV = {"W": 20.0, "1": 12.0, "2": 8.0, "3": 7.0, "4": 7.0, "R": 2.5, "?": 15.0, "M": 60.0}


@dataclass(frozen=True)
class NightPlan:
    """One demo night: its file names, the subject's data and the true hypnogram."""

    subject: int
    night: int
    age: int
    sex: int  # 1 = female, 2 = male, as in SC-subjects.xls
    psg_name: str
    hypnogram_name: str
    start: dt.datetime
    stages: np.ndarray  # one hypnogram code per 30 s epoch (keys of ANNOTATION_TEXT)
    signal_seed: tuple[int, ...]

    @property
    def lights_off(self) -> dt.datetime:
        pre_wake = int(np.argmax(self.stages != "W"))
        return self.start + dt.timedelta(seconds=EPOCH_SECONDS * max(0, pre_wake - 20))


@dataclass(frozen=True)
class Channel:
    """One EDF signal in physical units."""

    label: str
    data: np.ndarray
    sfreq: float
    unit: str
    physical_range: tuple[float, float]


def plan(
    n_subjects: int = 10, nights: int = 2, hours: float = 1.0, seed: int = 0
) -> list[NightPlan]:
    """Names, ages and true hypnograms of a demo, without any signal (cheap: tests use it)."""
    if not 1 <= n_subjects <= 100:
        raise UsageError(
            f"n_subjects={n_subjects}: Sleep-EDF names hold a 2-digit subject number",
            fix="choose 1..100 subjects",
        )
    if nights not in (1, 2):
        raise UsageError(
            f"nights={nights}: Sleep-EDF has 1 or 2 nights per subject", fix="use 1 or 2"
        )
    if not 1 / 6 <= hours <= 24:
        raise UsageError(f"hours={hours}: the sleep period must be 10 min..24 h", fix="e.g. 1.0")
    rng = np.random.default_rng([seed, 0])
    # Evenly spread ages (jittered), in random subject order, so even 3 subjects span the range.
    low, high = AGE_RANGE
    slots = rng.permutation(n_subjects) + rng.uniform(0, 1, n_subjects)
    ages = np.round(low + (high - low) * slots / n_subjects).astype(int)
    sexes = rng.integers(1, 3, n_subjects)
    plans = []
    for subject in range(n_subjects):
        for night in range(1, nights + 1):
            night_rng = np.random.default_rng([seed, 1, subject, night])
            scorer = "CHJMPVW"[night_rng.integers(7)]  # real hypnogram names vary here
            stem = f"SC4{subject:02d}{night}E"
            date = FIRST_NIGHT_DATE + dt.timedelta(days=3 * subject + night - 1)
            plans.append(
                NightPlan(
                    subject=subject,
                    night=night,
                    age=int(ages[subject]),
                    sex=int(sexes[subject]),
                    psg_name=f"{stem}0-PSG.edf",
                    hypnogram_name=f"{stem}{scorer}-Hypnogram.edf",
                    start=dt.datetime.combine(date, RECORDING_START),
                    stages=simulate_hypnogram(night_rng, hours, float(ages[subject])),
                    signal_seed=(seed, 2, subject, night),
                )
            )
    return plans


def simulate_hypnogram(rng: np.random.Generator, hours: float, age: float) -> np.ndarray:
    """Per-epoch codes: wake, sleep cycles W->N1->N2->N3->N2->REM with arousals, wake, unscored."""
    n_sleep = max(20, round(hours * 3600 / EPOCH_SECONDS))
    n_cycles = max(1, round(hours * 60 / 90))
    bounds = np.linspace(0, n_sleep, n_cycles + 1).round().astype(int)
    deep = max(0.06, 0.32 - 0.003 * (age - AGE_RANGE[0]))  # less N3 with age
    sleep: list[str] = []
    for cycle in range(n_cycles):
        length = int(bounds[cycle + 1] - bounds[cycle])
        n3 = deep * 0.65**cycle
        rem = min(0.35, 0.15 + 0.06 * cycle)
        means = np.array([0.08, 0.6 * (0.92 - n3 - rem), n3, 0.4 * (0.92 - n3 - rem), rem])
        fractions = rng.dirichlet(means * 60)
        runs = np.maximum(1, np.round(fractions * length)).astype(int)
        runs[1] += length - runs.sum()  # the first N2 run absorbs rounding
        n3_run = int(runs[2])
        n4 = n3_run // 2 if n3_run >= 6 else 0  # R&K stage 4 in the middle of deep sleep
        n3_before = (n3_run - n4) // 2
        sleep += ["1"] * runs[0] + ["2"] * max(runs[1], 1)
        sleep += ["3"] * n3_before + ["4"] * n4 + ["3"] * (n3_run - n4 - n3_before)
        sleep += ["2"] * runs[3] + ["R"] * runs[4]
    sleep = np.array(sleep[:n_sleep])
    inner = np.arange(2, len(sleep) - 2)  # arousals never replace the first or last epochs
    for pos in rng.choice(inner, rng.poisson(len(sleep) / 60) + 1, replace=False):
        length = rng.integers(1, 4)
        sleep[pos : pos + length] = "W"
        sleep[min(pos + length, len(sleep) - 2)] = "1"  # back to sleep through N1
    for pos in rng.choice(inner, rng.poisson(len(sleep) / 120) + 1, replace=False):
        sleep[pos] = "M"
    sleep[rng.choice(inner)] = "?"
    pre, post = rng.integers(70, 101, 2)  # 35-50 min of wake on each side
    tail = rng.integers(2, 5)
    return np.concatenate([["W"] * pre, sleep, ["W"] * post, ["?"] * tail]).astype("<U1")


def hypnogram_annotations(stages: np.ndarray) -> list[tuple[float, float, str]]:
    """Merge equal neighbouring epochs into (onset s, duration s, text) runs, as real files do."""
    change = np.flatnonzero(stages[1:] != stages[:-1]) + 1
    starts = np.concatenate([[0], change])
    ends = np.concatenate([change, [len(stages)]])
    return [
        (float(a * EPOCH_SECONDS), float((b - a) * EPOCH_SECONDS), ANNOTATION_TEXT[stages[a]])
        for a, b in zip(starts, ends, strict=True)
    ]


_FADE = 2 * SFREQ  # each epoch's noise fades into the next over 2 s (no steps at boundaries)
_SEGMENT = EPOCH_SAMPLES + _FADE
_SEGMENT_FREQS = scipy.fft.rfftfreq(_SEGMENT, 1 / SFREQ).astype(np.float32)


def _unit_rms(amplitude: np.ndarray) -> np.ndarray:
    """Scale a one-sided amplitude spectrum so that white noise shaped by it has RMS 1."""
    return amplitude / np.sqrt(2 * np.sum(amplitude**2) / _SEGMENT)


def _band(low: float, high: float) -> np.ndarray:
    return _unit_rms(((_SEGMENT_FREQS >= low) & (_SEGMENT_FREQS < high)).astype(np.float32))


def _shaped_noise(rng: np.random.Generator, amplitude: np.ndarray) -> np.ndarray:
    """Gaussian noise with one amplitude spectrum per epoch (rows), cross-faded epoch to epoch.

    One batched inverse FFT over 32 s segments is several times cheaper than filtering the
    whole night once per band, which keeps the default demo within a few seconds.
    """
    n_epochs = len(amplitude)
    white = rng.standard_normal((n_epochs, len(_SEGMENT_FREQS), 2), dtype=np.float32)
    scale = (amplitude * np.float32(np.sqrt(_SEGMENT / 2))).astype(np.float32)
    spectrum = np.empty(white.shape[:2], np.complex64)
    spectrum.real = scale * white[..., 0]
    spectrum.imag = scale * white[..., 1]
    segments = scipy.fft.irfft(spectrum, _SEGMENT, axis=-1)
    ramp = np.sin(np.linspace(0, np.pi / 2, _FADE, dtype=np.float32))
    out = segments[:, :EPOCH_SAMPLES].copy()
    # sin^2 + cos^2 = 1: the overlap of two independent segments keeps the power constant
    out[1:, :_FADE] = out[1:, :_FADE] * ramp + segments[:-1, EPOCH_SAMPLES:] * ramp[::-1]
    return out.reshape(-1)


def _event_positions(rng, stages: np.ndarray, rates: dict[str, float]) -> np.ndarray:
    counts = rng.poisson([rates.get(s, 0.0) for s in stages])
    epochs = np.repeat(np.arange(len(stages)), counts)
    return epochs * EPOCH_SAMPLES + rng.integers(0, EPOCH_SAMPLES, len(epochs))


def _add(signal: np.ndarray, at: int, wave: np.ndarray) -> None:
    stop = min(len(signal), at + len(wave))
    signal[at:stop] += wave[: stop - at]


def _bump(t: np.ndarray, centre: float, width: float) -> np.ndarray:
    return np.exp(-(((t - centre) / width) ** 2))


def _transients(rng, stages: np.ndarray, n: int, age_factor: float) -> np.ndarray:
    """Spindles, K-complexes, vertex waves and sawtooth waves (shared by both derivations)."""
    out = np.zeros(n, np.float32)
    for at in _event_positions(rng, stages, _SPINDLES):
        t = np.arange(int(rng.uniform(0.5, 1.5) * SFREQ)) / SFREQ
        freq, amp = rng.uniform(12, 14), rng.uniform(15, 30) * (0.5 + 0.5 * age_factor)
        _add(out, at, amp * np.hanning(len(t)) * np.sin(2 * np.pi * freq * t))
    t = np.arange(SFREQ) / SFREQ
    for at in _event_positions(rng, stages, _K_COMPLEXES):
        amp = rng.uniform(50, 90) * age_factor
        # a sharp negative wave, then a slower positive one
        _add(out, at, amp * (0.5 * _bump(t, 0.55, 0.15) - _bump(t, 0.2, 0.07)))
    for at in _event_positions(rng, stages, _VERTEX_WAVES):
        _add(out, at, -rng.uniform(25, 45) * _bump(t[:40], 0.1, 0.04))
    for at in _event_positions(rng, stages, _SAWTOOTH):
        t_burst = np.arange(int(rng.uniform(1, 3) * SFREQ)) / SFREQ
        phase = (rng.uniform(2, 3) * t_burst) % 1.0
        _add(out, at, rng.uniform(10, 20) * np.hanning(len(t_burst)) * (2 * phase - 1))
    return out


def _eye_movements(rng, stages: np.ndarray, n: int) -> np.ndarray:
    """Blinks (W), rapid eye movements (REM, some W) and slow rolling movements (N1)."""
    out = np.zeros(n, np.float32)
    t = np.arange(int(1.5 * SFREQ)) / SFREQ
    for at in _event_positions(rng, stages, _BLINKS):
        _add(out, at, rng.uniform(80, 200) * _bump(t[:40], 0.15, 0.06))
    saccade = (np.tanh((t - 0.05) / 0.02) + 1) / 2 * np.exp(-t / 0.7)
    for at in _event_positions(rng, stages, _RAPID_EYE):
        _add(out, at, rng.choice([-1, 1]) * rng.uniform(50, 150) * saccade)
    rolling_uv = np.where(stages == "1", 40.0, 3.0).astype(np.float32)[:, None]
    return out + _shaped_noise(rng, rolling_uv * _band(0.15, 0.6))


def synthesize(plan_: NightPlan) -> list[Channel]:
    """The night's PSG channels in physical units (EEG/EOG in microvolts)."""
    rng = np.random.default_rng(plan_.signal_seed)
    stages = plan_.stages
    n = len(stages) * EPOCH_SAMPLES
    older = (plan_.age - AGE_RANGE[0]) / (AGE_RANGE[1] - AGE_RANGE[0])  # 0 at 25 y, 1 at 95 y
    age_factor = 1.3 - 0.6 * older  # slow waves and spindles shrink with age
    alpha_peak = 10.3 - 1.3 * older + rng.normal(0, 0.25)  # alpha slows with age
    alpha = _band(alpha_peak - 1.2, min(12.0, alpha_peak + 1.2))  # below the spindle band
    bands = np.stack([_band(0.5, 2.0), _band(4.0, 7.0), alpha, _band(15.0, 30.0)])
    with np.errstate(divide="ignore"):
        pink = _unit_rms(np.where(_SEGMENT_FREQS >= 0.3, _SEGMENT_FREQS**-0.5, 0))
    levels = np.array([_RHYTHM_UV[s] for s in stages], np.float32)
    levels *= rng.lognormal(0, _EPOCH_JITTER, levels.shape).astype(np.float32)
    levels[:, 0] *= age_factor
    # Eyes open in wake: little alpha, more muscle; such epochs resemble N1 and REM, as in real data
    eyes_open = (stages == "W") & (rng.uniform(size=len(stages)) < _EYES_OPEN)
    levels[eyes_open, 2] *= 0.3
    levels[eyes_open, 3] *= 1.5
    transients = _transients(rng, stages, n, age_factor)
    eye = _eye_movements(rng, stages, n)
    gain = rng.lognormal(0, 0.1)  # electrode impedance differs between subjects
    eeg = {}
    for label, weights in _CHANNEL_WEIGHTS.items():
        power = (levels * np.float32(weights)) ** 2 @ bands**2 + (_BACKGROUND_UV * pink) ** 2
        rhythms = _shaped_noise(rng, np.sqrt(power))
        eeg[label] = gain * rhythms + _TRANSIENT_WEIGHTS[label] * transients
    eeg["EEG Fpz-Cz"] += 0.08 * eye  # the frontal electrode sees the eyes
    eog = eye + 0.3 * eeg["EEG Fpz-Cz"] + rng.normal(0, 3, n).astype(np.float32)
    emg_levels = np.array([_EMG_UV[s] for s in stages]) * rng.lognormal(0, 0.2, len(stages))
    seconds = len(stages) * EPOCH_SECONDS
    emg = np.repeat(emg_levels, EPOCH_SECONDS) * rng.lognormal(0, 0.1, seconds)
    temperature = 37.2 - 0.5 * np.sin(np.pi * np.arange(seconds) / seconds)
    temperature += rng.normal(0, 0.01, seconds)
    return [
        *(Channel(label, data, SFREQ, "uV", (-500.0, 500.0)) for label, data in eeg.items()),
        Channel("EOG horizontal", eog, SFREQ, "uV", (-1000.0, 1000.0)),
        Channel("EMG submental", emg, SLOW_SFREQ, "uV", (0.0, 500.0)),
        Channel("Temp rectal", temperature, SLOW_SFREQ, "DegC", (34.0, 40.0)),
    ]


def _edf_header(start: dt.datetime, patient: edfio.Patient | None = None) -> dict:
    return {
        "patient": patient or edfio.Patient(),
        "recording": edfio.Recording(startdate=start.date()),
        "starttime": start.time(),
    }


def write_psg(path: Path, channels: Sequence[Channel], start: dt.datetime, patient=None) -> Path:
    """Write an EDF+ PSG file (one 30 s data record per epoch; signals clipped to their range)."""
    signals = [
        edfio.EdfSignal(
            np.clip(c.data, *c.physical_range).astype(np.float64),
            c.sfreq,
            label=c.label,
            physical_dimension=c.unit,
            physical_range=c.physical_range,
        )
        for c in channels
    ]
    edf = edfio.Edf(signals, data_record_duration=EPOCH_SECONDS, **_edf_header(start, patient))
    edf.write(path)
    return path


def write_hypnogram(
    path: Path, annotations: Sequence[tuple[float, float, str]], start: dt.datetime
) -> Path:
    """Write an annotations-only EDF+ hypnogram with (onset s, duration s, text) entries."""
    entries = [edfio.EdfAnnotation(onset, duration, text) for onset, duration, text in annotations]
    edfio.Edf([], annotations=entries, **_edf_header(start)).write(path)
    return path


def write_night(plan_: NightPlan, folder: Path) -> tuple[Path, Path]:
    """Write one night's PSG and hypnogram into `folder`."""
    sex = {1: "F", 2: "M"}[plan_.sex]
    patient = edfio.Patient(
        sex=sex, additional=[f"{'Female' if sex == 'F' else 'Male'}_{plan_.age}yr"]
    )
    psg = write_psg(folder / plan_.psg_name, synthesize(plan_), plan_.start, patient)
    hypnogram = write_hypnogram(
        folder / plan_.hypnogram_name, hypnogram_annotations(plan_.stages), plan_.start
    )
    return psg, hypnogram


def write_subjects_table(path: Path, plans: Sequence[NightPlan]) -> Path:
    """SC-subjects.xls as the real download has it: subject, night, age, sex (F=1), LightsOff."""
    import xlwt  # only the demo writes .xls

    book = xlwt.Workbook()
    sheet = book.add_sheet("Sheet1")
    time_style = xlwt.easyxf(num_format_str="hh:mm")
    for col, name in enumerate(("subject", "night", "age", "sex (F=1)", "LightsOff")):
        sheet.write(0, col, name)
    for row, p in enumerate(plans, start=1):
        for col, value in enumerate((p.subject, p.night, p.age, p.sex)):
            sheet.write(row, col, value)
        off = p.lights_off.time()
        sheet.write(row, 4, (off.hour * 3600 + off.minute * 60 + off.second) / 86400, time_style)
    book.save(str(path))
    return path


def _refuse_other_recordings(folder: Path, plans: Sequence[NightPlan]) -> None:
    """Readers take every EDF in the folder: a smaller demo over a bigger one would mix them."""
    ours = {name for p in plans for name in (p.psg_name, p.hypnogram_name)}
    others = sorted(p.name for p in folder.glob("*.edf") if p.name not in ours)
    if others:
        raise UsageError(
            f"{folder} holds {len(others)} EDF files this demo would not write ({others[0]}, ...)",
            fix=f"delete {folder} or write the demo into an empty folder",
        )


def generate(
    root: Path, n_subjects: int = 10, nights: int = 2, hours: float = 1.0, seed: int = 0
) -> list[Path]:
    """Write a complete demo under `root`; returns the files written, MANIFEST.tsv last."""
    root = Path(root)
    plans = plan(n_subjects, nights, hours, seed)
    (root / MANIFEST).unlink(missing_ok=True)  # an interrupted rewrite must not look complete
    folder = root / CASSETTE_DIR
    _refuse_other_recordings(folder, plans)
    folder.mkdir(parents=True, exist_ok=True)
    files: list[Path] = []
    for p in plans:
        files += write_night(p, folder)
    files.append(write_subjects_table(root / SUBJECTS_TABLE, plans))
    return [*files, write_manifest(root, files)]


def write_lookalike(root: Path, settings: dict) -> list[Path]:
    """The demo from a dataset's `generator:` settings (datasets/registry.FORMATS)."""
    return generate(root, settings.get("subjects", 10), settings.get("nights", 2),
                    settings.get("hours", 1.0), settings.get("seed", 0))
