"""A UCDDB look-alike: PhysioNet's flat layout and file formats, as datasets/ucddb/reader.py
describes them, with short nights and many respiratory events.

  <root>/ucddbNNN.rec          EDF (1 s data records, start date and clock time in the header):
                               Lefteye, RightEye, C3A2, C4A1, EMG, ECG at 128 Hz; SpO2, Sound,
                               Flow, Sum, ribcage, abdo, BodyPos, Pulse at 8 Hz (the EEG, ECG,
                               SpO2, flow and effort rates as public readers of the real files
                               report them; the others' are not documented), a few seconds
                               past its last whole epoch
  <root>/ucddbNNN_stage.txt    one code per 30 s epoch (0 Wake, 1 REM, 2-5 Stage 1-4,
                               6 Artifact, 7 Indeterminate), DOS line ends
  <root>/ucddbNNN_respevt.txt  three header lines, then the fixed-width event rows (Time,
                               Type, PB/CS, Duration, Low, %Drop, Snore, Arousal, B/T Rate,
                               B/T Change), DOS line ends and a closing 0x1A
  <root>/SubjectDetails.xls    the real table's columns, a row per subject
  <root>/MANIFEST.tsv          written last: the look-alike is complete

NNN are the real database's numbers in order (002, 003, 005, ...). The Holter files
(ucddbNNN_lifecard.edf) are not written: no reader reads them.

Settings (the dataset's `generator:`): subjects (5, at most 25), hours (0.75: the sleep period;
a few minutes of wake before and after it), seed (0). Recordings start between 23:00 and
00:15, so most of their events are timed past midnight.

The stages' EEG is the Sleep-EDF look-alike's (its hypnogram and its two derivations, resampled
to 128 Hz and mixed into C3A2 and C4A1, plus each channel's own background). The events are
placed through the whole sleep period, whatever the stage, one every 25-130 s, 10-40 s long
(periodic breathing 20-60 s): about a third of the epochs overlap one by more than 10 s. Each
kind adds its own broadband signature to both EEG channels over its span, several times the
EEG's amplitude, above the 0.5 Hz high-pass every model's input gets (pipeline/protocol.py):
a 0.7-1 Hz swing and a 18-25 Hz burst (obstructive apnea), a 1.5-2 Hz swing (central), both
swings (mixed), a 1-1.4 Hz swing and a 30-40 Hz burst (hypopnea), 5-7 Hz and 0.7-2 Hz waves
(periodic breathing); a row flagged PB or CS carries its type's and periodic breathing's.
Headers carry fixed dates: the same settings write the same bytes.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.fft
import scipy.signal

from embedprobe.core.errors import UsageError
from embedprobe.datasets.sleep_edf import lookalike as sleep_edf
from embedprobe.datasets.synth.files import start_rewrite, with_defaults, write_manifest
from embedprobe.datasets.ucddb.reader import (
    EPOCH_SECONDS,
    STAGE_OF_CODE,
    SUBJECTS_TABLE,
    row_kinds,
)

SFREQ, SLOW_SFREQ = 128, 8
FAST = ("Lefteye", "RightEye", "C3A2", "C4A1", "EMG")
LAYOUT = ("Lefteye", "RightEye", "C3A2", "C4A1", "EMG", "SpO2", "Sound", "Flow", "Sum",
          "ribcage", "abdo", "BodyPos", "ECG", "Pulse")
RATES = {label: SFREQ if label in (*FAST, "ECG") else SLOW_SFREQ for label in LAYOUT}
UNITS = {"SpO2": ("%", (0.0, 100.0)), "BodyPos": ("", (0.0, 10.0)),
         "Pulse": ("bpm", (0.0, 250.0)), "ECG": ("uV", (-3000.0, 3000.0))}
EEG_RANGE = ("uV", (-1000.0, 1000.0))
NUMBERS = (2, 3, *range(5, 16), *range(17, 29))  # the real database's 25 subjects
DEFAULTS = {"subjects": 5, "hours": 0.75, "seed": 0}
WAKE_BEFORE, WAKE_AFTER = 6, 4  # epochs of wake kept around the sleep period
FIRST_DATE = dt.date(2002, 9, 2)  # the database's recordings: September 2002 - February 2003
STREAM = 17  # this look-alike's random streams, apart from the other look-alikes'
# The stage file's code of each Sleep-EDF look-alike code.
UCDDB_CODE = {"W": 0, "R": 1, "1": 2, "2": 3, "3": 4, "4": 5, "M": 6, "?": 7}
# Event types and their shares; periodic breathing is written as a public test of the real
# files writes it: Type "PB EVENT" with the PB flag.
TYPES = ("APNEA-O", "APNEA-C", "APNEA-M", "HYP-O", "HYP-C", "HYP-M", "PB EVENT")
SHARES = (0.25, 0.16, 0.12, 0.21, 0.11, 0.06, 0.09)
FLAGGED_SHARE = 0.3  # of central apneas and hypopneas, flagged PB or CS
HEADER = ("                              Respiratory Event List",
          "        Respiratory Event           Desaturation   Snore Arousal     B/T",
          " Time       Type   PB/CS  Duration  Low    %Drop                 Rate  Change")
# Each kind's EEG signature: (low Hz, high Hz, RMS uV) band-limited parts.
SIGNATURES = {"apnea_obstructive": ((0.7, 1.0, 80.0), (18.0, 25.0, 20.0)),
              "apnea_central": ((1.5, 2.0, 80.0),),
              "apnea_mixed": ((0.7, 1.0, 57.0), (1.5, 2.0, 57.0)),
              "hypopnea": ((1.0, 1.4, 55.0), (30.0, 40.0, 15.0)),
              "periodic_breathing": ((5.0, 7.0, 40.0), (0.7, 2.0, 40.0))}
BACKGROUND_UV = 4.0


@dataclass(frozen=True)
class RowPlan:
    """One event-list row: onset in seconds from the recording's start, as written."""

    onset: int
    duration: int
    type: str
    flag: str  # "PB", "CS" or ""
    low: float | None  # SpO2 low (%), drop (%): None for periodic breathing
    drop: float | None
    snore: str
    arousal: str
    rate: float
    change: float


@dataclass(frozen=True)
class RecordingPlan:
    number: int
    age: int
    sex: str  # "M" or "F"
    height: int  # cm
    weight: float  # kg
    epworth: int
    start: dt.datetime
    stages: np.ndarray  # the Sleep-EDF look-alike's code per 30 s epoch (the signal's truth)
    tail: int  # seconds of signal past the last whole epoch
    rows: tuple[RowPlan, ...]

    @property
    def recording(self) -> str:
        return f"ucddb{self.number:03d}"

    @property
    def names(self) -> tuple[str, str, str]:
        """The .rec file, the stage file and the event list, relative to the root."""
        return (f"{self.recording}.rec", f"{self.recording}_stage.txt",
                f"{self.recording}_respevt.txt")

    @property
    def codes(self) -> np.ndarray:
        return np.array([UCDDB_CODE[c] for c in self.stages], np.int64)

    @property
    def seconds(self) -> int:
        return len(self.stages) * EPOCH_SECONDS + self.tail

    @property
    def scored(self) -> tuple[np.ndarray, np.ndarray]:
        """(epoch indices, stage indices 0-4) of the epochs with a stage (not 6 or 7)."""
        codes = self.codes
        keep = np.flatnonzero(np.isin(codes, list(STAGE_OF_CODE)))
        return keep, np.array([STAGE_OF_CODE[int(c)] for c in codes[keep]], np.int64)

    @property
    def events(self) -> list[tuple[int, int, str]]:
        """(onset s, duration s, kind) of every event, in order of onset."""
        return [(r.onset, r.duration, kind) for r in self.rows for kind in row_kinds(r.type,
                                                                                     r.flag)]

    def clock(self, onset: int) -> str:
        return (self.start + dt.timedelta(seconds=onset)).strftime("%H:%M:%S")

    @property
    def ahi(self) -> float:
        sleep_hours = np.isin(self.stages, list("1234R")).sum() * EPOCH_SECONDS / 3600
        events = sum(r.type != "PB EVENT" for r in self.rows)
        return round(events / max(sleep_hours, 1e-9), 1)


def settings_of(settings: dict) -> dict:
    out = with_defaults(settings, DEFAULTS, "the UCDDB look-alike")
    if not (isinstance(out["subjects"], int) and 1 <= out["subjects"] <= len(NUMBERS)):
        raise UsageError(f"subjects={out['subjects']}: UCDDB has {len(NUMBERS)} subjects",
                         fix=f"choose 1..{len(NUMBERS)}")
    if not 1 / 6 <= out["hours"] <= 12:
        raise UsageError(f"hours={out['hours']}: the sleep period must be 10 min..12 h",
                         fix="e.g. 0.75")
    return out


def _night(rng: np.random.Generator, hours: float, age: int) -> np.ndarray:
    """The Sleep-EDF look-alike's hypnogram with a few epochs of wake around the sleep period
    (UCDDB records from lights off to lights on)."""
    codes = sleep_edf.simulate_hypnogram(rng, hours, float(age))
    first = int(np.argmax(codes != "W"))
    n_sleep = max(20, round(hours * 3600 / EPOCH_SECONDS))  # simulate_hypnogram's sleep period
    begin = first - WAKE_BEFORE
    return codes[begin: begin + WAKE_BEFORE + n_sleep + WAKE_AFTER]


def _row(rng: np.random.Generator, onset: int, kind: str) -> RowPlan:
    periodic = kind == "PB EVENT"
    duration = int(rng.integers(20, 61) if periodic else rng.integers(10, 41))
    flag = "PB" if periodic else ""
    if kind in ("APNEA-C", "HYP-C") and rng.uniform() < FLAGGED_SHARE:
        flag = str(rng.choice(["PB", "CS"]))
    drop = None if periodic else round(float(rng.uniform(3, 12 if "APNEA" in kind else 6)), 1)
    low = None if drop is None else round(96.0 - drop, 1)
    snore = "+" if kind.endswith("-O") and rng.uniform() < 0.5 else "-"
    return RowPlan(onset, duration, kind, flag, low, drop, snore,
                   "+" if rng.uniform() < 0.3 else "-", round(float(rng.uniform(55, 80)), 1),
                   round(float(rng.uniform(-8, 8)), 1))


def _rows(rng: np.random.Generator, stages: np.ndarray) -> tuple[RowPlan, ...]:
    """Events one after another through the sleep period, whatever the stage."""
    sleep = np.flatnonzero(stages != "W")
    t, end = int(sleep[0]) * EPOCH_SECONDS, (int(sleep[-1]) + 1) * EPOCH_SECONDS
    rows = []
    while True:
        row = _row(rng, t + int(rng.integers(0, 30)), str(rng.choice(TYPES, p=SHARES)))
        if row.onset + row.duration > end:
            return tuple(rows)
        rows.append(row)
        t = row.onset + row.duration + int(rng.integers(15, 91))


def plan(settings: dict) -> list[RecordingPlan]:
    """Every recording's names, subject details, stages and event rows (no signal)."""
    s = settings_of(settings)
    plans = []
    for index, number in enumerate(NUMBERS[:s["subjects"]]):
        rng = np.random.default_rng([s["seed"], STREAM, number])
        age, sex = int(rng.integers(28, 69)), str(rng.choice(["M", "F"], p=[0.8, 0.2]))
        height = int(rng.integers(160, 191))
        weight = round(float(rng.uniform(25, 40)) * (height / 100) ** 2, 1)
        start = dt.datetime.combine(FIRST_DATE + dt.timedelta(days=7 * index),
                                    dt.time(23)) + dt.timedelta(seconds=int(rng.integers(4500)))
        stages = _night(rng, s["hours"], age)
        plans.append(RecordingPlan(number, age, sex, height, weight, int(rng.integers(2, 21)),
                                   start, stages, int(rng.integers(1, EPOCH_SECONDS)),
                                   _rows(rng, stages)))
    return plans


# --- signals --------------------------------------------------------------------------------


def _band(rng: np.random.Generator, n: int, sfreq: float, low: float, high: float,
          rms: float) -> np.ndarray:
    """Gaussian noise of n samples whose spectrum is flat in [low, high) Hz, RMS `rms`."""
    freqs = scipy.fft.rfftfreq(n, 1 / sfreq)
    spectrum = scipy.fft.rfft(rng.standard_normal(n)) * ((freqs >= low) & (freqs < high))
    wave = scipy.fft.irfft(spectrum, n)
    return wave * rms / max(float(np.sqrt(np.mean(wave**2))), 1e-12)


def _pink(rng: np.random.Generator, n: int, rms: float) -> np.ndarray:
    freqs = scipy.fft.rfftfreq(n, 1 / SFREQ)
    shape = np.where(freqs >= 0.5, 1 / np.sqrt(np.maximum(freqs, 0.5)), 0.0)
    wave = scipy.fft.irfft(scipy.fft.rfft(rng.standard_normal(n)) * shape, n)
    return wave * rms / float(np.sqrt(np.mean(wave**2)))


def event_signature(p: RecordingPlan, seed: int) -> np.ndarray:
    """Every event's EEG signature over its span (uV at SFREQ), tapered at both ends."""
    rng = np.random.default_rng([seed, STREAM, p.number, 1])
    out = np.zeros(p.seconds * SFREQ)
    for onset, duration, kind in p.events:
        n = duration * SFREQ
        wave = sum(_band(rng, n, SFREQ, lo, hi, rms) for lo, hi, rms in SIGNATURES[kind])
        out[onset * SFREQ: onset * SFREQ + n] += wave * scipy.signal.windows.tukey(n, 0.2)
    return out


def _respiration(p: RecordingPlan, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Airflow, effort, SpO2, sound, position and pulse at SLOW_SFREQ: breathing at ~0.25 Hz,
    flow gone in apneas and halved in hypopneas, effort gone in central events."""
    t = np.arange(p.seconds * SLOW_SFREQ) / SLOW_SFREQ
    breath = np.sin(2 * np.pi * 0.25 * t + 0.3 * np.sin(2 * np.pi * 0.01 * t))
    flow, effort = np.ones_like(t), np.ones_like(t)
    spo2 = 96.0 + rng.normal(0, 0.3, len(t))
    sound = rng.normal(0, 5, len(t))
    for r in p.rows:
        span = slice(r.onset * SLOW_SFREQ, (r.onset + r.duration) * SLOW_SFREQ)
        flow[span] = 0.05 if "APNEA" in r.type else 0.5
        effort[span] = 0.1 if r.type.endswith("-C") else 1.0
        sound[span] *= 6 if r.snore == "+" else 1
        if r.drop is not None:  # the desaturation follows the event by ~10 s
            after = slice((r.onset + 10) * SLOW_SFREQ, (r.onset + r.duration + 10) * SLOW_SFREQ)
            spo2[after] -= r.drop * np.hanning(len(spo2[after]))
    ribcage, abdo = 300 * effort * breath, 250 * effort * np.roll(breath, 3)
    return {"Flow": 400 * flow * breath, "ribcage": ribcage, "abdo": abdo,
            "Sum": ribcage + abdo, "SpO2": np.clip(spo2, 50, 100), "Sound": sound,
            "BodyPos": np.full(len(t), 2.0), "Pulse": 65 + 4 * np.sin(2 * np.pi * t / 300)}


def _ecg(rng: np.random.Generator, n: int) -> np.ndarray:
    """R waves of ~1 mV at 60-70 beats a minute."""
    out = np.zeros(n)
    beat = 1000 * np.exp(-((np.arange(-8, 9) / 2.5) ** 2))
    at = 10
    while at + len(beat) < n:
        out[at: at + len(beat)] += beat
        at += int(SFREQ * rng.uniform(0.85, 1.0))
    return out


def signals(p: RecordingPlan, seed: int) -> dict[str, np.ndarray]:
    """Every channel in its unit at its rate (RATES), by label."""
    night = sleep_edf.NightPlan(
        subject=p.number, night=1, age=p.age, sex=1 if p.sex == "F" else 2, psg_name="",
        hypnogram_name="", start=p.start, stages=np.append(p.stages, "W"),
        signal_seed=(seed, STREAM, p.number, 2))
    derived = {c.label: c.data for c in sleep_edf.synthesize(night)}
    n = p.seconds * SFREQ
    front, back, eog = (scipy.signal.resample_poly(derived[k], 32, 25)[:n]
                        for k in ("EEG Fpz-Cz", "EEG Pz-Oz", "EOG horizontal"))
    rng = np.random.default_rng([seed, STREAM, p.number, 3])
    events = event_signature(p, seed)
    emg_uv = np.repeat([{"W": 20.0, "R": 3.0}.get(c, 8.0) for c in np.append(p.stages, "W")],
                       EPOCH_SECONDS * SFREQ)[:n]
    out = {"C3A2": 0.6 * front + 0.6 * back + _pink(rng, n, BACKGROUND_UV) + events,
           "C4A1": 0.5 * front + 0.7 * back + _pink(rng, n, BACKGROUND_UV) + 0.9 * events,
           "Lefteye": eog + 0.2 * front, "RightEye": -eog + 0.2 * front + rng.normal(0, 3, n),
           "EMG": emg_uv * rng.standard_normal(n), "ECG": _ecg(rng, n)}
    return out | _respiration(p, rng)


# --- files ----------------------------------------------------------------------------------


def write_rec(path: Path, p: RecordingPlan, seed: int) -> Path:
    """The polysomnogram as plain EDF (1 s data records) under its .rec name."""
    import edfio

    data = signals(p, seed)
    edf_signals = []
    for label in LAYOUT:
        unit, physical = UNITS.get(label, EEG_RANGE)
        edf_signals.append(edfio.EdfSignal(np.clip(data[label], *physical), RATES[label],
                                           label=label, physical_dimension=unit,
                                           physical_range=physical))
    edf = edfio.Edf(edf_signals, patient=edfio.Patient(),
                    recording=edfio.Recording(startdate=p.start.date()),
                    starttime=p.start.time(), data_record_duration=1)
    edf.write(path)
    return path


def write_stage_file(path: Path, codes: np.ndarray) -> Path:
    path.write_bytes("".join(f"{int(c)}\r\n" for c in codes).encode("ascii"))
    return path


def row_text(p: RecordingPlan, r: RowPlan) -> str:
    """A row in the event list's fixed columns (time 1-10, type 11-20, flag 21-25, duration
    to 30, SpO2 low to 41, % drop from 46, snore to 54, arousal to 60, B/T rate to 70, B/T
    change to 77)."""
    low = "" if r.low is None else f"{r.low:.1f}"
    drop = "" if r.drop is None else f"{r.drop:g}"
    return (f"{p.clock(r.onset):<10}{r.type:<10}{r.flag:<5}{r.duration:>5}{low:>11}    "
            f"{drop:<4}{r.snore:>5}{r.arousal:>6}{r.rate:>10.1f}{r.change:>7.1f}")


def write_event_list(path: Path, p: RecordingPlan) -> Path:
    lines = [*HEADER, *(row_text(p, r) for r in p.rows)]
    path.write_bytes(("\r\n".join(lines) + "\r\n\x1a").encode("ascii"))
    return path


def write_subject_table(path: Path, plans: list[RecordingPlan]) -> Path:
    """SubjectDetails.xls: the real table's columns, a row per subject."""
    import xlwt  # only the look-alikes write .xls

    columns = ("S/No", "Study Number", "Height (cm)", "Weight (kg)", "Gender", "PSG Start Time",
               "PSG AHI", "BMI", "Age", "Epworth Sleepiness Score", "Study Duration (hr)",
               "Sleep Efficiency (%)", "No of data blocks in EDF")
    book = xlwt.Workbook()
    sheet = book.add_sheet("Sheet1")
    for col, name in enumerate(columns):
        sheet.write(0, col, name)
    for row, p in enumerate(plans, start=1):
        sleep = np.isin(p.stages, list("1234R")).mean()
        values = (row, p.recording.upper(), p.height, p.weight, p.sex,
                  p.start.strftime("%H:%M:%S"), p.ahi, round(p.weight / (p.height / 100) ** 2, 1),
                  p.age, p.epworth, round(p.seconds / 3600, 2), round(100 * float(sleep), 1),
                  p.seconds)
        for col, value in enumerate(values):
            sheet.write(row, col, value)
    book.save(str(path))
    return path


def write_lookalike(root: Path, settings: dict) -> list[Path]:
    """Write the look-alike under root; returns the files written, MANIFEST.tsv last."""
    root = Path(root)
    s = settings_of(settings)
    plans = plan(s)
    start_rewrite(root, [p.names[0] for p in plans], "*.rec", "UCDDB recording")
    root.mkdir(parents=True, exist_ok=True)
    files: list[Path] = []
    for p in plans:
        rec, stage_file, event_list = (root / name for name in p.names)
        files += [write_rec(rec, p, s["seed"]), write_stage_file(stage_file, p.codes),
                  write_event_list(event_list, p)]
    files.append(write_subject_table(root / SUBJECTS_TABLE, plans))
    return [*files, write_manifest(root, files)]
