"""A PhysioNet/CinC Challenge 2018 look-alike: the release's layout and file formats, as
datasets/physionet2018/reader.py describes them, with short nights and many events.

  <root>/training/trNN-NNNN/trNN-NNNN.hea          WFDB header: 13 signals at 200 Hz, the real
                                                   names, units and gains ("16+24" lines with
                                                   initial values and checksums)
  <root>/training/trNN-NNNN/trNN-NNNN.mat          a MATLAB v4 int16 matrix `val` (13 rows, one
                                                   column per sample): WFDB format 16 from byte 24
  <root>/training/trNN-NNNN/trNN-NNNN.arousal      WFDB annotations (written by wfdb.wrann):
                                                   NOTE annotations whose aux notes are the stage
                                                   changes (W, N1, N2, N3, R) and each event's
                                                   "(type" and "type)" notes
  <root>/training/trNN-NNNN/trNN-NNNN-arousal.mat  MATLAB v7.3: HDF5 after a 512-byte userblock
                                                   holding MATLAB's text header; data/arousals
                                                   (double: 1 target arousal, -1 apnea or
                                                   hypopnea, 0 otherwise) and
                                                   data/sleep_stages/<stage> (logical), each a
                                                   1 x samples row, gzip-compressed; the stage
                                                   vectors one sample ahead of the notes and
                                                   the last sample undefined, as the real ones
  <root>/age-sex.csv                               Record, Age, Sex
  <root>/MANIFEST.tsv                              written last: the look-alike is complete

No test set is written (the reader skips it). Record names follow the release's pattern
(tr03-0005, tr03-0012, ...; made up past the first).

Settings (the dataset's `generator:`): subjects (5, at most 994), hours (0.75: the sleep
period; a few minutes of wake before and after), seed (0).

The hypnogram has several cycles whatever the length (at least three: N1, N2, N3 shrinking
and REM growing from cycle to cycle, brief awakenings); each record's first stage note falls
at sample 0 (the first, third, ... record) or one to three epochs in (the others; the
epochs before it are undefined, as the -arousal.mat marks them), and one or two epochs inside
the night are undefined (no note: the -arousal.mat marks them). The stages' EEG is the
Sleep-EDF look-alike's (its two derivations, resampled to 200 Hz and mixed into the six
channels, plus each channel's own background).

Events, in samples (not whole seconds), come in two independent streams through the sleep
period: respiratory events (obstructive, central and mixed apnea, hypopnea 10-40 s;
Cheyne-Stokes breathing 30-90 s; hypoventilation and partial obstruction, which no kind counts)
one every 25-130 s, and arousals (spontaneous, RERA, PLM, snore, bruxism, noise; 3-15 s) one
every 25-110 s, so arousals and respiratory events sometimes overlap. Each kind adds its own
broadband signature to every EEG channel over its span, above the 0.5 Hz high-pass every
model's input gets (pipeline/protocol.py), away from the 60 Hz line: an event carries each of
its kinds' (an arousal_rera the arousal's and the RERA's). The same settings write the same
bytes.
"""

from __future__ import annotations

import datetime as dt
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.fft
import scipy.signal

from embedprobe.core.errors import UsageError
from embedprobe.datasets.physionet2018.reader import (
    ANNOTATION_EXTENSION,
    CHANNELS,
    EPOCH_SECONDS,
    KINDS_OF_TYPE,
    STAGE_VECTORS,
    SUBJECTS_TABLE,
    TRAINING,
)
from embedprobe.datasets.sleep_edf import lookalike as sleep_edf
from embedprobe.datasets.synth.files import start_rewrite, with_defaults, write_manifest

SFREQ = 200
N_RECORDS = 994  # the training set's
DEFAULTS = {"subjects": 5, "hours": 0.75, "seed": 0}
STREAM = 19  # this look-alike's random streams, apart from the other look-alikes'
WAKE_BEFORE, WAKE_AFTER = (4, 9), (2, 5)  # epochs of wake around the sleep period (ranges)
# Each channel's header: (gain text, units), as the release's headers write them.
GAIN = {name: ("1", "uV") for name in CHANNELS} | {"SaO2": ("655.35(-32768)", "%"),
                                                    "ECG": ("1000", "mV")}
# The stages, as the notes write them; "U" (undefined) has no note.
NOTES = ("W", "N1", "N2", "N3", "R")
UNDEFINED = "U"
VECTOR_OF = {"W": "wake", "N1": "nonrem1", "N2": "nonrem2", "N3": "nonrem3", "R": "rem",
             UNDEFINED: "undefined"}
SLEEP_EDF_CODE = {"W": "W", "N1": "1", "N2": "2", "N3": "3", "R": "R", UNDEFINED: "?"}
# Event types, their shares and durations (s) in each stream.
RESPIRATORY = {"resp_obstructiveapnea": (0.24, 10, 40), "resp_centralapnea": (0.12, 10, 40),
               "resp_mixedapnea": (0.08, 10, 40), "resp_hypopnea": (0.30, 10, 40),
               "resp_cheynestokesbreath": (0.10, 30, 90),
               "resp_hypoventilation": (0.07, 20, 60), "resp_partialobstructive": (0.09, 10, 40)}
AROUSALS = {"arousal_spontaneous": (0.35, 3, 15), "arousal_rera": (0.25, 3, 15),
            "arousal_plm": (0.15, 3, 15), "arousal_snore": (0.10, 3, 15),
            "arousal_bruxism": (0.08, 3, 15), "arousal_noise": (0.07, 3, 15)}
GAPS = {"respiratory": (15, 91), "arousal": (20, 96)}  # seconds between events of a stream
NOT_SCORED = ("resp_obstructiveapnea", "resp_centralapnea", "resp_mixedapnea", "resp_hypopnea")
# Each kind's EEG signature: (low Hz, high Hz, RMS uV) band-limited parts.
SIGNATURES = {"arousal": ((8.0, 12.0, 70.0), (16.0, 24.0, 40.0)),
              "rera": ((2.5, 3.5, 50.0),),
              "limb_movement_periodic": ((4.0, 5.0, 50.0), (26.0, 30.0, 20.0)),
              "apnea_obstructive": ((0.7, 1.0, 80.0), (18.0, 25.0, 20.0)),
              "apnea_central": ((1.5, 2.0, 80.0),),
              "apnea_mixed": ((0.7, 1.0, 57.0), (1.5, 2.0, 57.0)),
              "hypopnea": ((1.0, 1.4, 55.0), (30.0, 40.0, 15.0)),
              "periodic_breathing": ((5.0, 7.0, 40.0), (0.7, 2.0, 40.0))}
EEG_MIX = {"F3-M2": (0.8, 0.3, 1.0), "F4-M1": (0.75, 0.35, 0.95), "C3-M2": (0.6, 0.6, 0.9),
           "C4-M1": (0.5, 0.7, 0.9), "O1-M2": (0.3, 0.8, 0.8), "O2-M1": (0.25, 0.85, 0.8)}
BACKGROUND_UV = 4.0
MAT_HEADER = "MATLAB 7.3 MAT-file, Platform: GLNXA64, Created on: Wed Feb 21 10:00:00 2018 " \
             "HDF5 schema 1.00 ."


@dataclass(frozen=True)
class EventPlan:
    """One event as its notes write it: first and end sample (the closing note's)."""

    start: int
    end: int
    type: str

    @property
    def kinds(self) -> tuple[str, ...]:
        return KINDS_OF_TYPE[self.type]


@dataclass(frozen=True)
class RecordPlan:
    index: int
    age: int
    sex: str  # "M" or "F"
    stages: np.ndarray  # a NOTES entry or "U" per 30 s epoch (the signal's truth)
    tail: int  # samples of signal past the last whole epoch
    events: tuple[EventPlan, ...]  # in order of onset

    @property
    def record(self) -> str:
        return record_name(self.index)

    @property
    def folder(self) -> str:
        return f"{TRAINING}/{self.record}"

    @property
    def names(self) -> tuple[str, str, str, str]:
        """The .hea, .mat, .arousal and -arousal.mat, relative to the root."""
        r = f"{self.folder}/{self.record}"
        return f"{r}.hea", f"{r}.mat", f"{r}.{ANNOTATION_EXTENSION}", f"{r}-arousal.mat"

    @property
    def n_samples(self) -> int:
        return len(self.stages) * EPOCH_SECONDS * SFREQ + self.tail

    @property
    def notes(self) -> list[tuple[int, str]]:
        """(sample, aux note) of every annotation, in order of sample: a stage note where a
        defined stage starts a run, an event's two notes."""
        epoch = EPOCH_SECONDS * SFREQ
        out = [(i * epoch, s) for i, s in enumerate(self.stages)
               if s != UNDEFINED and (i == 0 or self.stages[i - 1] != s)]
        for e in self.events:
            out += [(e.start, f"({e.type}"), (e.end, f"{e.type})")]
        return sorted(out, key=lambda n: n[0])

    @property
    def scored(self) -> tuple[np.ndarray, np.ndarray]:
        """(epoch indices, stage indices 0-4) of the epochs with a stage."""
        keep = np.flatnonzero(self.stages != UNDEFINED)
        return keep, np.array([NOTES.index(s) for s in self.stages[keep]], np.int64)

    @property
    def kind_events(self) -> list[tuple[float, float, str]]:
        """(onset s, duration s, kind) of every event of a kind, in order of onset."""
        return [(e.start / SFREQ, (e.end - e.start) / SFREQ, kind) for e in self.events
                for kind in e.kinds]


def record_name(index: int) -> str:
    return f"tr{3 + index // 100:02d}-{5 + 7 * index:04d}"


def settings_of(settings: dict) -> dict:
    out = with_defaults(settings, DEFAULTS, "the challenge-2018 look-alike")
    if not (isinstance(out["subjects"], int) and 1 <= out["subjects"] <= N_RECORDS):
        raise UsageError(f"subjects={out['subjects']}: the challenge's training set has "
                         f"{N_RECORDS} records", fix=f"choose 1..{N_RECORDS}")
    if not 1 / 6 <= out["hours"] <= 12:
        raise UsageError(f"hours={out['hours']}: the sleep period must be 10 min..12 h",
                         fix="e.g. 0.75")
    return out


def _night(rng: np.random.Generator, hours: float, age: int, lead: bool) -> np.ndarray:
    """A stage per 30 s epoch: wake, at least three cycles N1 -> N2 -> N3 -> N2 -> REM (N3
    shrinking, REM growing), brief awakenings, an undefined epoch or two, wake; with `lead`
    one to three undefined epochs before it all (the first stage note comes after them)."""
    n_sleep = max(30, round(hours * 3600 / EPOCH_SECONDS))
    n_cycles = max(3, round(hours / 1.5))
    bounds = np.linspace(0, n_sleep, n_cycles + 1).round().astype(int)
    deep = max(0.08, 0.35 - 0.003 * (age - 20))
    sleep: list[str] = []
    for cycle in range(n_cycles):
        length = int(bounds[cycle + 1] - bounds[cycle])
        n3, rem = deep * 0.6**cycle, min(0.4, 0.15 + 0.08 * cycle)
        means = np.array([0.08, 0.55 * (0.92 - n3 - rem), n3, 0.45 * (0.92 - n3 - rem), rem])
        runs = np.maximum(1, np.round(rng.dirichlet(means * 60) * length)).astype(int)
        runs[1] += length - runs.sum()
        runs[1] = max(runs[1], 1)
        sleep += ["N1"] * runs[0] + ["N2"] * runs[1] + ["N3"] * runs[2] + ["N2"] * runs[3] \
            + ["R"] * runs[4]
    stages = np.array(sleep[:n_sleep], dtype="<U2")
    inner = np.arange(3, len(stages) - 3)
    for pos in rng.choice(inner, rng.poisson(len(stages) / 45) + 1, replace=False):
        stages[pos: pos + int(rng.integers(1, 3))] = "W"
    stages[rng.choice(inner, int(rng.integers(1, 3)), replace=False)] = UNDEFINED
    before, after = (int(rng.integers(*r)) for r in (WAKE_BEFORE, WAKE_AFTER))
    undefined = int(rng.integers(1, 4)) if lead else 0  # epochs before the first note
    return np.concatenate([[UNDEFINED] * undefined, ["W"] * before, stages, ["W"] * after])


def _stream(rng: np.random.Generator, table: dict, gaps: tuple[int, int], first: int,
            end: int) -> list[EventPlan]:
    """Events of one stream one after another from sample `first`, all ending by `end`."""
    types = list(table)
    shares = np.array([table[t][0] for t in types])
    events, t = [], first
    while True:
        kind = str(rng.choice(types, p=shares / shares.sum()))
        _, low, high = table[kind]
        start = t + int(rng.integers(0, 30 * SFREQ))
        stop = start + int(rng.integers(low * SFREQ, high * SFREQ + 1))
        if stop > end:
            return events
        events.append(EventPlan(start, stop, kind))
        t = stop + SFREQ * int(rng.integers(*gaps))


def plan(settings: dict) -> list[RecordPlan]:
    """Every record's name, age, stages and events (no signal)."""
    s = settings_of(settings)
    plans = []
    for index in range(s["subjects"]):
        rng = np.random.default_rng([s["seed"], STREAM, 0, index])
        age, sex = int(rng.integers(20, 86)), str(rng.choice(["M", "F"], p=[0.65, 0.35]))
        stages = _night(rng, s["hours"], age, lead=index % 2 == 1)
        sleep = np.flatnonzero(~np.isin(stages, ["W", UNDEFINED]))
        first = int(sleep[0]) * EPOCH_SECONDS * SFREQ
        end = (int(sleep[-1]) + 1) * EPOCH_SECONDS * SFREQ
        events = _stream(rng, RESPIRATORY, GAPS["respiratory"], first, end) \
            + _stream(rng, AROUSALS, GAPS["arousal"], first, end)
        plans.append(RecordPlan(index, age, sex, stages,
                                int(rng.integers(1, EPOCH_SECONDS * SFREQ)),
                                tuple(sorted(events, key=lambda e: (e.start, e.type)))))
    return plans


# --- signals --------------------------------------------------------------------------------


def _band(rng: np.random.Generator, n: int, low: float, high: float, rms: float) -> np.ndarray:
    """Gaussian noise of n samples whose spectrum is flat in [low, high) Hz, RMS `rms`."""
    freqs = scipy.fft.rfftfreq(n, 1 / SFREQ)
    spectrum = scipy.fft.rfft(rng.standard_normal(n)) * ((freqs >= low) & (freqs < high))
    wave = scipy.fft.irfft(spectrum, n)
    return wave * rms / max(float(np.sqrt(np.mean(wave**2))), 1e-12)


def _pink(rng: np.random.Generator, n: int, rms: float) -> np.ndarray:
    """1/f noise above 0.5 Hz of n samples, RMS `rms` (made at a fast FFT length, cut)."""
    m = scipy.fft.next_fast_len(n, real=True)
    freqs = scipy.fft.rfftfreq(m, 1 / SFREQ)
    shape = np.where(freqs >= 0.5, 1 / np.sqrt(np.maximum(freqs, 0.5)), 0.0)
    wave = scipy.fft.irfft(scipy.fft.rfft(rng.standard_normal(m)) * shape, m)[:n]
    return wave * rms / float(np.sqrt(np.mean(wave**2)))


def event_signature(p: RecordPlan, seed: int) -> np.ndarray:
    """Every event's EEG signature over its span (uV at SFREQ), tapered at both ends."""
    rng = np.random.default_rng([seed, STREAM, 1, p.index])
    out = np.zeros(p.n_samples)
    for e in p.events:
        n = e.end - e.start
        parts = [part for kind in e.kinds for part in SIGNATURES[kind]]
        if parts:
            wave = sum(_band(rng, n, lo, hi, rms) for lo, hi, rms in parts)
            out[e.start: e.end] += wave * scipy.signal.windows.tukey(n, 0.2)
    return out


def _respiration(p: RecordPlan, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Airflow and effort (uV), SaO2 (%): breathing at ~0.25 Hz, flow gone in apneas and
    halved in hypopneas, effort gone in central apneas, a desaturation after each."""
    t = np.arange(p.n_samples) / SFREQ
    breath = np.sin(2 * np.pi * 0.25 * t + 0.3 * np.sin(2 * np.pi * 0.01 * t))
    flow, effort = np.ones_like(t), np.ones_like(t)
    sao2 = 96.0 + 0.2 * np.sin(2 * np.pi * t / 97)
    for e in p.events:
        if not e.type.startswith("resp_"):
            continue
        span = slice(e.start, e.end)
        flow[span] = 0.05 if e.type.endswith("apnea") and e.type != "resp_hypopnea" else 0.5
        effort[span] = 0.1 if e.type == "resp_centralapnea" else 1.0
        after = slice(e.start + 10 * SFREQ, e.end + 10 * SFREQ)
        sao2[after] -= float(rng.uniform(3, 8)) * np.hanning(len(sao2[after]))
    return {"AIRFLOW": 150 * flow * breath, "CHEST": 300 * effort * breath,
            "ABD": 250 * effort * np.roll(breath, SFREQ // 2), "SaO2": np.clip(sao2, 50, 100)}


def _ecg(rng: np.random.Generator, n: int) -> np.ndarray:
    """R waves of ~1 mV at 60-70 beats a minute (in mV)."""
    out = np.zeros(n)
    beat = np.exp(-((np.arange(-12, 13) / 4.0) ** 2))
    at = 10
    while at + len(beat) < n:
        out[at: at + len(beat)] += beat
        at += int(SFREQ * rng.uniform(0.85, 1.0))
    return out


def signals(p: RecordPlan, seed: int) -> dict[str, np.ndarray]:
    """Every channel in its unit (GAIN) at SFREQ, by name."""
    night = sleep_edf.NightPlan(
        subject=p.index, night=1, age=p.age, sex=1 if p.sex == "F" else 2, psg_name="",
        hypnogram_name="", start=dt.datetime(2018, 1, 1),
        stages=np.array([SLEEP_EDF_CODE[s] for s in np.append(p.stages, "W")]),
        signal_seed=(seed, STREAM, 2, p.index))
    derived = {c.label: c.data for c in sleep_edf.synthesize(night)}
    n = p.n_samples
    front, back, eog = (scipy.signal.resample_poly(derived[k], 2, 1)[:n]
                        for k in ("EEG Fpz-Cz", "EEG Pz-Oz", "EOG horizontal"))
    rng = np.random.default_rng([seed, STREAM, 3, p.index])
    events = event_signature(p, seed)
    out = {name: a * front + b * back + _pink(rng, n, BACKGROUND_UV) + g * events
           for name, (a, b, g) in EEG_MIX.items()}
    emg_uv = np.repeat([{"W": 20.0, "R": 3.0}.get(s, 8.0) for s in np.append(p.stages, "W")],
                       EPOCH_SECONDS * SFREQ)[:n]
    out |= {"E1-M2": eog + 0.2 * front, "Chin1-Chin2": emg_uv * rng.standard_normal(n),
            "ECG": _ecg(rng, n)}
    return out | _respiration(p, rng)


def _gain(name: str) -> tuple[float, float]:
    """(gain, baseline) of a channel's header: digital = gain * physical + baseline."""
    text = GAIN[name][0]
    gain, _, baseline = text.partition("(")
    return float(gain), float(baseline.rstrip(")") or 0)


def digital(p: RecordPlan, seed: int) -> np.ndarray:
    """The int16 samples (13 x n) as the .mat holds them (-32768 is WFDB's missing value)."""
    data = signals(p, seed)
    out = np.empty((len(CHANNELS), p.n_samples), np.int16)
    for row, name in enumerate(CHANNELS):
        gain, baseline = _gain(name)
        out[row] = np.clip(np.round(data[name] * gain + baseline), -32767, 32767)
    return out


# --- files ----------------------------------------------------------------------------------


def write_record(root: Path, p: RecordPlan, seed: int) -> list[Path]:
    """The header and the .mat: MATLAB v4's 20-byte matrix header and the name `val`, then
    the samples column by column (one column per sample: WFDB's interleaved format 16)."""
    hea, mat = (root / name for name in p.names[:2])
    hea.parent.mkdir(parents=True, exist_ok=True)
    samples = digital(p, seed)
    n_sig, n = samples.shape
    with open(mat, "wb") as f:
        f.write(struct.pack("<5i", 30, n_sig, n, 0, 4) + b"val\x00")  # type 30: int16
        f.write(samples.T.astype("<i2").tobytes())
    lines = [f"{p.record} {n_sig} {SFREQ} {n}"]
    for row, name in enumerate(CHANNELS):
        gain, unit = GAIN[name]
        checksum = int(samples[row].astype(np.int64).sum()) & 0xFFFF
        checksum -= 65536 if checksum >= 32768 else 0
        lines.append(f"{mat.name} 16+24 {gain}/{unit} 16 0 {int(samples[row, 0])} {checksum} 0 "
                     f"{name}")
    hea.write_text("\n".join(lines) + "\n")
    return [hea, mat]


def write_annotations(path: Path, p: RecordPlan) -> Path:
    """The .arousal file through wfdb.wrann: every note a NOTE annotation ('"')."""
    import wfdb

    samples, notes = zip(*p.notes, strict=True)
    wfdb.wrann(p.record, ANNOTATION_EXTENSION, np.array(samples, np.int64),
               symbol=['"'] * len(notes), aux_note=list(notes), write_dir=str(path.parent))
    return path


def write_arousal_mat(path: Path, p: RecordPlan) -> Path:
    """The -arousal.mat as MATLAB v7.3 writes it: HDF5 after a 512-byte userblock holding
    MATLAB's 128-byte text header; every vector a 1 x samples row."""
    import h5py

    n = p.n_samples
    arousals = np.zeros(n)
    for value, wanted in ((-1.0, NOT_SCORED), (1.0, tuple(AROUSALS))):
        for e in p.events:
            if e.type in wanted:
                arousals[e.start: e.end] = value
    stage_of_sample = np.append(np.repeat(p.stages, EPOCH_SECONDS * SFREQ),
                                [p.stages[-1]] * p.tail)
    # as the real files: one sample ahead of the notes, the last sample undefined
    stage_of_sample = np.append(stage_of_sample[1:], UNDEFINED)
    with h5py.File(path, "w", userblock_size=512) as h5:
        data = h5.create_group("data")
        data.attrs["MATLAB_class"] = np.bytes_("struct")
        stages = data.create_group("sleep_stages")
        stages.attrs["MATLAB_class"] = np.bytes_("struct")
        vectors = [(data, "arousals", arousals[None, :], "double")] + [
            (stages, v, (stage_of_sample == s)[None, :].astype(np.uint8), "logical")
            for s, v in VECTOR_OF.items()]
        for group, name, values, matlab_class in vectors:
            dataset = group.create_dataset(name, data=values, compression="gzip",
                                           compression_opts=1, chunks=(1, min(n, 65536)))
            dataset.attrs["MATLAB_class"] = np.bytes_(matlab_class)
            if matlab_class == "logical":
                dataset.attrs["MATLAB_int_decode"] = np.int32(1)
    assert sorted(VECTOR_OF.values()) == sorted(STAGE_VECTORS)
    header = MAT_HEADER.encode("ascii").ljust(116) + b"\x00" * 8 + b"\x00\x02IM"
    with open(path, "r+b") as f:
        f.write(header.ljust(512, b"\x00"))
    return path


def write_subjects_table(path: Path, plans: list[RecordPlan]) -> Path:
    path.write_text("Record,Age,Sex\n" + "".join(f"{p.record},{p.age},{p.sex}\n"
                                                  for p in plans))
    return path


def write_lookalike(root: Path, settings: dict) -> list[Path]:
    """Write the look-alike under root; returns the files written, MANIFEST.tsv last."""
    root = Path(root)
    s = settings_of(settings)
    plans = plan(s)
    start_rewrite(root, [p.names[0] for p in plans], "*.hea", "challenge-2018 record")
    root.mkdir(parents=True, exist_ok=True)
    files: list[Path] = []
    for p in plans:
        files += write_record(root, p, s["seed"])
        files.append(write_annotations(root / p.names[2], p))
        files.append(write_arousal_mat(root / p.names[3], p))
    files.append(write_subjects_table(root / SUBJECTS_TABLE, plans))
    return [*files, write_manifest(root, files)]

