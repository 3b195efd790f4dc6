"""An EPILEPSIAE look-alike in the layout datasets/epilepsiae/reader.py reads:

    <root>/Annotation/Seizure_annotations.csv
    <root>/<variant>/pat_<id>/adm_<id>02/rec_<rec>/<rec>_<block>.head    key=value text
    <root>/<variant>/pat_<id>/adm_<id>02/rec_<rec>/<rec>_<block>.data    int16, interleaved
    <root>/MANIFEST.tsv                                                  last: marks completion

Patients cycle through the variants surf30, surfPA, surfCO; each has one recording of
`blocks_per_patient` blocks of `minutes_per_block` minutes, 0-8 s apart (a gap between two
blocks, as the database's recordings have). A block stores 19 scalp electrodes ("FP1", ...,
old temporal names T3-T6, upper case) and "ECG" at 256 Hz in every variant, as int16 with a
per-patient conversion_factor (0.1 or 0.179 microvolts per unit). The rates, the factors and
the electrode order are this look-alike's choices: no publisher's page was read for them.

Seizure_annotations.csv has a row per seizure in the reference's columns, clock times as the
database writes them; one seizure in six has no eeg_onset (its clin_onset is the same time)
and one in six no eeg_offset (clin_offset instead), so the reader's fallbacks are exercised;
classifications CP, SP, SG and NULL (unclassified). Times are exact to the millisecond, so a
reader must recover the planned seizures to the sample.

Hard as the CHB-MIT and Siena look-alikes, by the same means: datasets/synth/seizure.py's
signals (a 1/f background with seizure-like rhythms, interictal discharges, chewing and
artefacts; per patient one seizure kind that builds up, spreads or stays focal, and leaves
post-ictal slowing) at CHB-MIT's strength. The first block of a patient holds one or two
seizures, the others zero to two, the last patient's last block none. A random encoder's event
AUC on epilepsiae_demo stays below 0.95 (docs/measurements/
2026-12-08-seizeit1-epilepsiae-demos.md).

Settings: patients (5), blocks_per_patient (2), minutes_per_block (6), seed (0).
"""

from __future__ import annotations

import csv
import datetime as dt
import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from embedprobe.core.errors import UsageError
from embedprobe.datasets.epilepsiae.reader import ANNOTATIONS, VARIANTS
from embedprobe.datasets.synth.files import start_rewrite, with_defaults, write_manifest
from embedprobe.datasets.synth.seizure import (
    Seizure,
    ecg,
    electrode_signals,
    file_seizure_count,
    patient_traits,
    place_seizures,
)

ELECTRODES = ("FP1", "FP2", "F3", "F4", "C3", "C4", "P3", "P4", "O1", "O2", "F7", "F8", "T3",
              "T4", "T5", "T6", "FZ", "CZ", "PZ")
CHANNELS = (*ELECTRODES, "ECG")
SFREQ = 256  # every variant: a mixed rate would be flagged by the quality scan
FACTORS = (0.1, 0.179)  # microvolts per stored unit
DEFAULTS = {"patients": 5, "blocks_per_patient": 2, "minutes_per_block": 6, "seed": 0}
FIRST = dt.datetime(2008, 11, 4, 8, 40, 22)  # fixed times keep the bytes reproducible
EDGE_S = 10
STREAM = 22  # the look-alikes of one seed draw different patients
CLINICAL_SHARE = 1 / 6
KINDS = ("CP", "SP", "SG", None)
COLUMNS = ("id", "recording", "block", "eeg_onset", "clin_onset", "first_eeg_change",
           "first_clin_sign", "eeg_offset", "clin_offset", "pattern", "classification",
           "vigilance", "focus", "commentary")


@dataclass(frozen=True)
class BlockPlan:
    patient: int  # the pat_ number: 1001, 1002, ...
    number: int  # 0-based block number
    variant: str
    start: dt.datetime
    seconds: int
    seizures: tuple[Seizure, ...]

    @property
    def rec_id(self) -> str:
        return f"{self.patient}0102"

    @property
    def recording(self) -> str:
        return f"{self.rec_id}_{self.number:04d}"

    @property
    def sfreq(self) -> int:
        return SFREQ

    @property
    def folder(self) -> Path:
        return Path(self.variant, f"pat_{self.patient}", f"adm_{self.patient}02",
                    f"rec_{self.rec_id}")


def settings_of(settings: dict) -> dict:
    s = with_defaults(settings, DEFAULTS, "the EPILEPSIAE look-alike")
    if not 1 <= s["patients"] <= 99 or not 1 <= s["blocks_per_patient"] <= 99 \
            or not 2 <= s["minutes_per_block"] <= 240:
        raise UsageError(f"patients={s['patients']}, blocks_per_patient="
                         f"{s['blocks_per_patient']}, minutes_per_block="
                         f"{s['minutes_per_block']}",
                         fix="choose 1..99 patients, 1..99 blocks each of 2..240 minutes")
    return s


def plan(settings: dict) -> list[BlockPlan]:
    """Every block's name, start, length and seizures, without signals (cheap)."""
    s = settings_of(settings)
    seconds = int(round(s["minutes_per_block"] * 60))
    plans = []
    for k in range(s["patients"]):
        rng = np.random.default_rng([s["seed"], STREAM, 0, k])
        start = FIRST + dt.timedelta(days=5 * k, seconds=int(rng.integers(3600)))
        for number in range(s["blocks_per_patient"]):
            # one block without seizures (the last one), whatever the draws
            count = file_seizure_count(rng, number == 0, k == s["patients"] - 1 and number
                                       == s["blocks_per_patient"] - 1 and number > 0)
            seizures = tuple(place_seizures(rng, count, EDGE_S, seconds - EDGE_S))
            plans.append(BlockPlan(1001 + k, number, VARIANTS[k % len(VARIANTS)], start,
                                   seconds, seizures))
            start += dt.timedelta(seconds=seconds + int(rng.integers(0, 9)))
    return plans


def head_text(p: BlockPlan, factor: float) -> str:
    return "\n".join([
        f"start_ts={p.start:%Y-%m-%d %H:%M:%S}.000", f"num_samples={p.seconds * p.sfreq}",
        f"sample_freq={p.sfreq}", f"conversion_factor={factor:.6f}",
        f"num_channels={len(CHANNELS)}", f"elec_names=[{','.join(CHANNELS)}]",
        f"pat_id={p.patient}", f"adm_id={p.patient}02", f"rec_id={p.rec_id}",
        f"duration_in_sec={p.seconds}", "sample_bytes=2"]) + "\n"


def stored(p: BlockPlan, seed: int) -> tuple[np.ndarray, float]:
    """(samples x channels int16, the block's conversion factor)."""
    traits = patient_traits(np.random.default_rng([seed, STREAM, 1, p.patient]))
    rng = np.random.default_rng([seed, STREAM, 2, p.patient, p.number])
    eeg = electrode_signals(rng, ELECTRODES, p.sfreq, p.seconds, p.seizures, traits)
    heart, _ = ecg(rng, p.sfreq, p.seconds)
    factor = FACTORS[p.patient % len(FACTORS)]
    units = np.round(np.vstack([eeg, heart]) / factor)
    return np.clip(units, -32768, 32767).astype("<i2").T, factor


def _clock(moment: dt.datetime) -> str:
    return f"{moment:%Y-%m-%d %H:%M:%S}.{moment.microsecond // 1000:03d}"


def annotations_csv(plans: list[BlockPlan], seed: int) -> str:
    out = io.StringIO()
    writer = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    writer.writerow(COLUMNS)
    for p in plans:
        rng = np.random.default_rng([seed, STREAM, 3, p.patient, p.number])
        for n, s in enumerate(p.seizures):
            onset = _clock(p.start + dt.timedelta(seconds=s.onset))
            offset = _clock(p.start + dt.timedelta(seconds=s.end))
            clinical_onset = rng.random() < CLINICAL_SHARE
            clinical_offset = rng.random() < CLINICAL_SHARE
            kind = KINDS[int(rng.integers(len(KINDS)))]
            writer.writerow([f"{p.rec_id}{p.number:02d}{n}", p.rec_id, f"{p.number}",
                             "NULL" if clinical_onset else onset, onset, "NULL", "NULL",
                             "NULL" if clinical_offset else offset, offset, "t", kind or "NULL",
                             "A", "NULL", "NULL"])
    return out.getvalue()


def write_lookalike(root: Path, settings: dict) -> list[Path]:
    """Write the look-alike under root; the files written, MANIFEST.tsv last."""
    s = settings_of(settings)
    plans = plan(s)
    root = Path(root)
    start_rewrite(root, ((p.folder / f"{p.recording}.data").as_posix() for p in plans),
                  "*.data", "EPILEPSIAE .data")
    files = []
    for p in plans:
        folder = root / p.folder
        folder.mkdir(parents=True, exist_ok=True)
        samples, factor = stored(p, s["seed"])
        head = folder / f"{p.recording}.head"
        head.write_text(head_text(p, factor))
        data = folder / f"{p.recording}.data"
        data.write_bytes(samples.tobytes())
        files += [head, data]
    table = root / ANNOTATIONS
    table.parent.mkdir(parents=True, exist_ok=True)
    table.write_text(annotations_csv(plans, s["seed"]))
    return [*files, table, write_manifest(root, [*files, table])]
