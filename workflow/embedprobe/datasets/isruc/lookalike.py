"""An ISRUC-Sleep look-alike in the site's layout (datasets/isruc/reader.py has the layout):

  <root>/subgroupI/<n>/<n>.rec, <n>_1.txt, <n>_2.txt      subjects with a sleep disorder
  <root>/subgroupII/<n>/<s>/<s>.rec, <s>_1.txt, <s>_2.txt  the same, sessions s = 1 and 2
  <root>/subgroupIII/<n>/<n>.rec, <n>_1.txt, <n>_2.txt    healthy subjects
  <root>/Details_subgroup_{I,II,III}_Submission.xlsx       a table per subgroup written
  <root>/MANIFEST.tsv                                      written last: marks completion

Each .rec is plain EDF (no annotation signal) with the six EEG channels at 200 Hz in the real
files' order, F3, C3, O1, F4, C4, O2 against the contralateral mastoid, in uV; every third
recording spells the mastoids A1/A2 ("F3-A2"), the others M1/M2 ("F3-M2"), as the real files
do (the EOG, EMG, ECG, respiration and SaO2 signals of the real files are left out: small);
subgroup I's subject 8 has no F3 and F4, as its real file (NO_FRONTAL), when the settings
reach it.
The stage files hold one code per 30 s epoch of the whole recording (0 W, 1 N1, 2 N2, 3 N3,
5 REM); scorer 2 mostly agrees with scorer 1 (about one epoch in ten differs, mostly next to a
stage change, by one step). The tables: two title rows, the header row Subject, Age, Sex,
Diagnosis, Other problems, Epochs (the columns the reference reads: kkontras/NeuroAtlas
dataio/isruc.py; the title rows' text and the last two columns' names are not documented),
a row per subject ("<n>_Rec.<s>" per recording in subgroup II, the demographics on Rec.1).

Settings (the dataset's `generator:`): subgroup_I (6), subgroup_II (0), subgroup_III (4), hours
(0.5, the sleep period; a few minutes of wake before and after it), seed (0), diagnoses (the
diagnosis texts, as the tables write them, given to the patients of subgroups I and II in
turn; ["SAOS"]). Every recording has the same length.

The stages' EEG is the Sleep-EDF look-alike's (datasets/sleep_edf/lookalike.py: its
hypnogram and its two derivations, upsampled to 200 Hz: frontal to F3/F4, parietal-occipital to
O1/O2, both to C3/C4), plus each channel's own background. Each class adds a whole-night,
broadband signature to every channel: a band (delta for osa, theta, alpha, beta, gamma for the
next classes, and again) and a broadband part (flat for the first five pathologies, steep for
the next five), about as strong as the EEG itself, its strength varying from subject to
subject; healthy subjects have none. Headers carry fixed dates: the same settings write the
same bytes.
"""

from __future__ import annotations

import datetime as dt
import io
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.fft
import scipy.signal

from embedprobe.core.errors import UsageError
from embedprobe.datasets.isruc.reader import (
    CLASSES,
    DIAGNOSES,
    EPOCH_SECONDS,
    STAGE_OF_CODE,
    table_name,
)
from embedprobe.datasets.sleep_edf import lookalike as sleep_edf
from embedprobe.datasets.synth.files import start_rewrite, with_defaults, write_manifest

SFREQ = 200
LAYOUT = ("F3-M2", "C3-M2", "O1-M2", "F4-M1", "C4-M1", "O2-M1")
LAYOUT_A = ("F3-A2", "C3-A2", "O1-A2", "F4-A1", "C4-A1", "O2-A1")
NO_FRONTAL = ("I", 8)  # the real subgroup I subject whose file lacks F3 and F4
PHYSICAL_RANGE = (-1000.0, 1000.0)  # uV
DEFAULTS = {"subgroup_I": 6, "subgroup_II": 0, "subgroup_III": 4, "hours": 0.5, "seed": 0,
            "diagnoses": ["SAOS"]}
SIZES = {"I": 100, "II": 8, "III": 10}  # the real subgroups' subjects
GROUP = {"I": 1, "II": 2, "III": 3}  # a subgroup's part of the random streams' keys
WAKE_BEFORE, WAKE_AFTER = 6, 4  # epochs of wake kept around the sleep period
FIRST_DATE = dt.date(2009, 2, 2)  # fixed dates keep the bytes reproducible
ZIP_TIME = (2016, 1, 1, 0, 0, 0)
STREAM = 7  # this look-alike's random streams, apart from the other look-alikes'
# ISRUC's codes for the Sleep-EDF look-alike's: R&K stage 4 is N3; its unscored and movement
# epochs become wake (the ISRUC stage files have no code for them).
ISRUC_CODE = {"W": 0, "1": 1, "2": 2, "3": 3, "4": 3, "R": 5, "?": 0, "M": 0}
# Scorer 2's stage for an epoch it scores differently: one step away.
NEIGHBOURS = {0: (1,), 1: (0, 2), 2: (1, 3), 3: (2,), 5: (1, 2)}
# Class signatures: a band in uV RMS and a broadband part (exponent of f^-x, uV RMS).
SIGNATURE_BANDS = ((0.5, 4.0), (4.0, 8.0), (8.0, 13.0), (13.0, 30.0), (30.0, 70.0))
BAND_UV, BROAD_UV = 35.0, 15.0
BROAD_EXPONENTS = (0.0, 1.5)
BACKGROUND_UV = 4.0
# How much of the frontal (Fpz-Cz) and parietal-occipital (Pz-Oz) derivations each site gets.
MIX = {"F": (1.0, 0.0), "C": (0.55, 0.55), "O": (0.0, 1.0)}


@dataclass(frozen=True)
class RecordingPlan:
    subgroup: str  # "I", "II", "III"
    number: int  # the subject's number in its subgroup
    night: int  # the session: 1, or 1-2 in subgroup II
    diagnosis: str  # the table's text; "" for a healthy subject
    label: str  # the class (reader.CLASSES)
    age: int
    sex: str  # "M" or "F"
    start: dt.datetime
    layout: tuple[str, ...]  # channel labels as written
    stages: np.ndarray  # the Sleep-EDF look-alike's codes per 30 s epoch (the signal's truth)
    scorer_1: np.ndarray  # ISRUC codes per epoch
    scorer_2: np.ndarray

    @property
    def subject(self) -> str:
        return f"{self.subgroup}-{self.number}"

    @property
    def recording(self) -> str:
        return self.subject + (f"-{self.night}" if self.subgroup == "II" else "")

    @property
    def folder(self) -> str:
        base = f"subgroup{self.subgroup}/{self.number}"
        return f"{base}/{self.night}" if self.subgroup == "II" else base

    @property
    def stem(self) -> str:
        return str(self.night if self.subgroup == "II" else self.number)

    @property
    def names(self) -> tuple[str, str, str]:
        """The .rec file and the two stage files, relative to the root."""
        return (f"{self.folder}/{self.stem}.rec", f"{self.folder}/{self.stem}_1.txt",
                f"{self.folder}/{self.stem}_2.txt")

    @property
    def consensus(self) -> tuple[np.ndarray, np.ndarray]:
        """(epoch indices, stage indices 0-4) of the epochs both scorers score the same."""
        agree = np.flatnonzero(self.scorer_1 == self.scorer_2)
        return agree, np.array([STAGE_OF_CODE[c] for c in self.scorer_1[agree]], np.int64)


def settings_of(settings: dict) -> dict:
    out = with_defaults(settings, DEFAULTS, "ISRUC")
    for group, size in SIZES.items():
        value = out[f"subgroup_{group}"]
        if not (isinstance(value, int) and 0 <= value <= size):
            raise UsageError(f"subgroup_{group}={value}: ISRUC-Sleep's subgroup {group} has "
                             f"{size} subjects", fix=f"choose 0..{size}")
    if not sum(out[f"subgroup_{g}"] for g in SIZES):
        raise UsageError("no subject in any subgroup", fix="set subgroup_I, _II or _III above 0")
    if not 1 / 6 <= out["hours"] <= 12:
        raise UsageError(f"hours={out['hours']}: the sleep period must be 10 min..12 h",
                         fix="e.g. 0.5")
    unknown = [d for d in out["diagnoses"] if d not in DIAGNOSES]
    if not out["diagnoses"] or unknown:
        raise UsageError(f"diagnoses={out['diagnoses']}: not the tables' texts",
                         fix="give one or more of " + ", ".join(DIAGNOSES))
    return out


def _scorer_2(rng: np.random.Generator, scorer_1: np.ndarray) -> np.ndarray:
    """Scorer 1's codes, a few changed by one step: mostly next to a stage change."""
    out = scorer_1.copy()
    change = np.r_[False, scorer_1[1:] != scorer_1[:-1]] | np.r_[scorer_1[:-1] != scorer_1[1:],
                                                                 False]
    differ = rng.uniform(size=len(out)) < np.where(change, 0.25, 0.03)
    for i in np.flatnonzero(differ):
        out[i] = rng.choice(NEIGHBOURS[int(scorer_1[i])])
    return out


def _night(rng: np.random.Generator, hours: float, age: int) -> np.ndarray:
    """The Sleep-EDF look-alike's hypnogram with a few epochs of wake around the sleep period
    (ISRUC records from lights off to lights on): the same length for every night."""
    codes = sleep_edf.simulate_hypnogram(rng, hours, float(age))
    first = int(np.argmax(codes != "W"))
    n_sleep = max(20, round(hours * 3600 / EPOCH_SECONDS))  # simulate_hypnogram's sleep period
    begin = first - WAKE_BEFORE
    return codes[begin: begin + WAKE_BEFORE + n_sleep + WAKE_AFTER]


def _layout(position: int, subject: tuple[str, int]) -> tuple[str, ...]:
    """Every third recording spells the mastoids A1/A2; NO_FRONTAL's file lacks F3 and F4."""
    layout = LAYOUT_A if position % 3 == 2 else LAYOUT
    if subject == NO_FRONTAL:
        return tuple(label for label in layout if label[:2] not in ("F3", "F4"))
    return layout


def plan(settings: dict) -> list[RecordingPlan]:
    """Every recording's names, subject, class, layout and both scorers' stages (no signal)."""
    s = settings_of(settings)
    subjects = [(g, n) for g in ("I", "II", "III") for n in range(1, s[f"subgroup_{g}"] + 1)]
    plans, patient = [], 0
    for subgroup, number in subjects:
        traits = np.random.default_rng([s["seed"], STREAM, 0, GROUP[subgroup], number])
        age, sex = int(traits.integers(25, 76)), str(traits.choice(["M", "F"]))
        diagnosis = "" if subgroup == "III" else s["diagnoses"][patient % len(s["diagnoses"])]
        patient += subgroup != "III"
        for night in (1, 2) if subgroup == "II" else (1,):
            rng = np.random.default_rng([s["seed"], STREAM, 1, GROUP[subgroup], number, night])
            stages = _night(rng, s["hours"], age)
            scorer_1 = np.array([ISRUC_CODE[c] for c in stages], np.int64)
            start = dt.datetime.combine(FIRST_DATE + dt.timedelta(days=int(rng.integers(900))),
                                        dt.time(22, int(rng.integers(60)), int(rng.integers(60))))
            plans.append(RecordingPlan(
                subgroup, number, night, diagnosis, DIAGNOSES.get(diagnosis, CLASSES[0]), age,
                sex, start, _layout(len(plans), (subgroup, number)), stages, scorer_1,
                _scorer_2(rng, scorer_1)))
    return plans


# --- signals --------------------------------------------------------------------------------


def _shaped(rng: np.random.Generator, n: int, amplitude) -> np.ndarray:
    """Gaussian noise of n samples at SFREQ whose amplitude spectrum is amplitude(freqs),
    scaled to RMS 1 before the amplitude's own scale: amplitude gives uV RMS per part."""
    freqs = scipy.fft.rfftfreq(n, 1 / SFREQ)
    spectrum = scipy.fft.rfft(rng.standard_normal(n)) * amplitude(freqs)
    return scipy.fft.irfft(spectrum, n)


def _unit(shape: np.ndarray) -> np.ndarray:
    """An amplitude spectrum scaled so that white noise shaped by it has RMS 1."""
    return shape / np.sqrt(np.mean(shape**2) + 1e-30)


def _band(freqs: np.ndarray, low: float, high: float) -> np.ndarray:
    return _unit(((freqs >= low) & (freqs < high)).astype(float))


def _slope(freqs: np.ndarray, exponent: float) -> np.ndarray:
    inside = (freqs >= 0.5) & (freqs < 70.0)
    return _unit(np.where(inside, np.maximum(freqs, 0.5) ** -exponent, 0.0))


def signature(label: str, traits: np.random.Generator):
    """The class's amplitude spectrum (freqs -> uV per bin) with this subject's strengths;
    None for healthy subjects."""
    band_gain, broad_gain = traits.lognormal(0, 0.25, 2)
    exponent_jitter = traits.normal(0, 0.1)
    if label == CLASSES[0]:
        return None
    k = CLASSES.index(label) - 1
    low, high = SIGNATURE_BANDS[k % len(SIGNATURE_BANDS)]
    exponent = BROAD_EXPONENTS[k // len(SIGNATURE_BANDS)] + exponent_jitter

    def amplitude(freqs):
        band = BAND_UV * band_gain * _band(freqs, low, high)
        broad = BROAD_UV * broad_gain * _slope(freqs, exponent)
        return np.sqrt(band**2 + broad**2)

    return amplitude


def signals(p: RecordingPlan, seed: int) -> dict[str, np.ndarray]:
    """The recording's EEG in uV at SFREQ, by the written label."""
    night = sleep_edf.NightPlan(
        subject=p.number, night=p.night, age=p.age, sex=1 if p.sex == "F" else 2, psg_name="",
        hypnogram_name="", start=p.start, stages=p.stages,
        signal_seed=(seed, STREAM, 2, GROUP[p.subgroup], p.number, p.night))
    derivations = {c.label: c.data for c in sleep_edf.synthesize(night)}
    front, back = (scipy.signal.resample_poly(derivations[k], 2, 1)
                   for k in ("EEG Fpz-Cz", "EEG Pz-Oz"))
    n = len(front)
    traits = np.random.default_rng([seed, STREAM, 3, GROUP[p.subgroup], p.number])
    background_uv = BACKGROUND_UV * traits.lognormal(0, 0.3)
    spectrum = signature(p.label, traits)
    rng = np.random.default_rng([seed, STREAM, 4, GROUP[p.subgroup], p.number, p.night])
    out = {}
    for label in p.layout:
        front_share, back_share = MIX[label[0]]
        eeg = front_share * front + back_share * back
        eeg += _shaped(rng, n, lambda f: background_uv * _slope(f, 1.0))
        if spectrum is not None:
            eeg += _shaped(rng, n, spectrum)
        out[label] = eeg.astype(np.float64)
    return out


# --- files ----------------------------------------------------------------------------------


def write_rec(path: Path, p: RecordingPlan, seed: int) -> Path:
    """The recording as plain EDF (1 s data records), under its .rec name."""
    import edfio

    data = signals(p, seed)
    edf = edfio.Edf(
        [edfio.EdfSignal(np.clip(data[label], *PHYSICAL_RANGE), SFREQ, label=label,
                         physical_dimension="uV", physical_range=PHYSICAL_RANGE)
         for label in p.layout],
        patient=edfio.Patient(), recording=edfio.Recording(startdate=p.start.date()),
        starttime=p.start.time(), data_record_duration=1)
    path.parent.mkdir(parents=True, exist_ok=True)
    edf.write(path)
    return path


def write_stage_file(path: Path, codes: np.ndarray) -> Path:
    path.write_text("".join(f"{int(c)}\n" for c in codes))
    return path


def _table_rows(plans: list[RecordingPlan], subgroup: str) -> list[list]:
    rows = [[f"ISRUC-Sleep, subgroup {subgroup}: details of the subjects"], [],
            ["Subject", "Age", "Sex", "Diagnosis", "Other problems", "Epochs"]]
    for p in plans:
        if p.subgroup != subgroup:
            continue
        if subgroup == "II":
            first = p.night == 1  # the demographics on the subject's first recording's row
            rows.append([f"{p.number}_Rec.{p.night}", p.age if first else None,
                         p.sex if first else None, p.diagnosis if first else None, None,
                         len(p.scorer_1)])
        else:
            rows.append([p.number, p.age, p.sex, p.diagnosis or None, "no problem",
                         len(p.scorer_1)])
    return rows


def write_table(path: Path, rows: list[list]) -> Path:
    """An .xlsx of these rows on its first sheet, byte for byte the same for the same rows
    (fixed document dates and zip entry times)."""
    from openpyxl import Workbook
    from openpyxl.writer.excel import ExcelWriter

    book = Workbook()
    sheet = book.active
    for row in rows:
        sheet.append(row)
    book.properties.created = book.properties.modified = dt.datetime(*ZIP_TIME)
    raw = io.BytesIO()
    with zipfile.ZipFile(raw, "w", zipfile.ZIP_DEFLATED) as archive:
        ExcelWriter(book, archive).write_data()
    fixed = io.BytesIO()
    with zipfile.ZipFile(raw) as source, zipfile.ZipFile(fixed, "w", zipfile.ZIP_DEFLATED) as out:
        for info in source.infolist():
            out.writestr(zipfile.ZipInfo(info.filename, ZIP_TIME), source.read(info.filename),
                         zipfile.ZIP_DEFLATED)
    path.write_bytes(fixed.getvalue())
    return path


def write_lookalike(root: Path, settings: dict) -> list[Path]:
    """Write the look-alike under root; returns the files written, MANIFEST.tsv last."""
    root = Path(root)
    s = settings_of(settings)
    plans = plan(s)
    start_rewrite(root, [p.names[0] for p in plans], "*.rec", "ISRUC recording")
    files: list[Path] = []
    for p in plans:
        rec, first, second = (root / name for name in p.names)
        files += [write_rec(rec, p, s["seed"]), write_stage_file(first, p.scorer_1),
                  write_stage_file(second, p.scorer_2)]
    for subgroup in sorted({p.subgroup for p in plans}):
        files.append(write_table(root / table_name(subgroup), _table_rows(plans, subgroup)))
    return [*files, write_manifest(root, files)]

