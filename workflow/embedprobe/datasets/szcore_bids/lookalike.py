"""A SzCORE BIDS look-alike: the CHB-MIT or Siena look-alike converted as SzCORE converts them,
or SeizeIT2's behind-the-ear recordings made from the CHB-MIT look-alike's.

The PhysioNet-layout look-alike of `source` (datasets/chbmit, datasets/siena: same settings,
same signals, same seizures) is written to a scratch folder and converted recording by
recording, as esl-epfl/epilepsy2bids converts the real releases:

  CHB-MIT  sub-NN/ses-01 (chb21: sub-01/ses-02), runs numbered from 00 in file order; the 18
           double-banana derivations (FP1-F3, ..., T8-P8 once, ..., P8-O2) at 256 Hz, their
           labels as recorded; every seizure labelled `sz` (the dataset has no types)
  Siena    sub-NN/ses-01, runs from 01; the 19 electrodes of the 10-20 system re-referenced to
           their common average and resampled to 256 Hz, labelled "Fp1-Avg", ..., "T3-Avg";
           each patient's seizures of one type (sz_foc_ia, sz_foc_a or sz_foc_f2b, as the
           release's subject table gives one per patient)
  SeizeIT2 as OpenNeuro ds005873 lays it out: sub-001/ses-01 (three-digit subjects), runs from
           01; two EEG channels at 256 Hz, the behind-the-ear one named after the ear the
           device sat on ("BTEleft SD" for odd-numbered subjects, "BTEright SD" for even ones,
           so a small look-alike has both) and "CROSStop SD". They are the CHB-MIT look-alike's
           T7-FT9 (left) or FT10-T8 (right) and FT9-FT10 (across the head): the same seizures,
           seen by two channels near the ears (the release's ECG, EMG and movement recordings,
           in their own folders, are not written). Seizures sz_foc_a, sz_foc_ia or
           sz_foc_f2b, one type per patient.

Each recording: its EDF, `_eeg.json` sidecar and `_events.tsv` (onset, duration, eventType,
confidence, channels, dateTime, recordingDuration; one `bckg` row over a recording without
seizures); then participants.tsv, dataset_description.json (MNE-BIDS) and events.json, and
MANIFEST.tsv last. MNE-BIDS's write_raw_bids is not used: it writes `trial_type` events and a
channels.tsv, which the releases do not have. How hard the look-alike is to score is its
source's (datasets/synth/seizure.py): the signals are the same.

Settings: source (chbmit), and the source's own: patients (5), files_per_patient (3),
minutes_per_file (60), seed (0). Every source's look-alike is as hard for a random encoder as
the CHB-MIT or Siena one it is made from (datasets/synth/seizure.py: rhythms that resemble
seizures in the background, focal seizures that few channels see); SeizeIT2's two channels
are a subset of what the CHB-MIT look-alike records, so they see no more of each seizure (no
family that reads them has a random-encoder score measured here yet).
"""

from __future__ import annotations

import importlib
import json
import tempfile
from pathlib import Path

import numpy as np

from embedprobe.core.errors import UsageError
from embedprobe.datasets.edf import read_edf_header
from embedprobe.datasets.synth.files import start_rewrite, with_defaults, write_manifest
from embedprobe.datasets.synth.seizure import Signal, write_edf

SFREQ = 256
TASK = "szMonitoring"
DEFAULTS = {"source": "chbmit", "patients": 5, "files_per_patient": 3, "minutes_per_file": 60,
            "seed": 0}
PHYSICAL_RANGE = (-3200.0, 3200.0)  # microvolts
# SzCORE's double banana, parasagittal chains first, in CHB-MIT's spelling; T8-P8 is the first
# of CHB-MIT's two copies (MNE's T8-P8-0)
CHBMIT_CHANNELS = ("FP1-F3", "F3-C3", "C3-P3", "P3-O1", "FP1-F7", "F7-T7", "T7-P7", "P7-O1",
                   "FZ-CZ", "CZ-PZ", "FP2-F4", "F4-C4", "C4-P4", "P4-O2", "FP2-F8", "F8-T8",
                   "T8-P8", "P8-O2")
ELECTRODES_10_20 = ("Fp1", "F3", "C3", "P3", "O1", "F7", "T3", "T5", "Fz", "Cz", "Pz", "Fp2",
                    "F4", "C4", "P4", "O2", "F8", "T4", "T6")
SIENA_TYPES = ("sz_foc_ia", "sz_foc_a", "sz_foc_f2b")  # the release's IAS, WIAS, FBTC
SOURCES = ("chbmit", "siena", "sz2")
# SeizeIT2's channels: (its label, the CHB-MIT look-alike derivation it is made from)
SZ2_LEFT = (("BTEleft SD", "T7-FT9"), ("CROSStop SD", "FT9-FT10"))
SZ2_RIGHT = (("BTEright SD", "FT10-T8"), ("CROSStop SD", "FT9-FT10"))
COLUMNS = ("onset", "duration", "eventType", "confidence", "channels", "dateTime",
           "recordingDuration")


class Source:
    """What the conversion of one PhysioNet layout needs: its reader, the run numbering, the
    channels kept and the seizure label of each patient."""

    def __init__(self, name: str):
        if name not in SOURCES:
            raise UsageError(f"source={name!r}: the SzCORE BIDS look-alike converts "
                             f"{', '.join(SOURCES)}",
                             fix=f"choose source: one of {', '.join(SOURCES)}")
        self.name = name
        made_from = "chbmit" if name == "sz2" else name  # SeizeIT2's channels are CHB-MIT's
        self.reader = importlib.import_module(f"embedprobe.datasets.{made_from}.reader")
        self.lookalike = importlib.import_module(f"embedprobe.datasets.{made_from}.lookalike")
        self.first_run = 0 if name == "chbmit" else 1
        self.line_freq = 60 if name == "chbmit" else 50

    def subject_session(self, folder: str) -> tuple[str, str]:
        """("01", "02") for CHB-MIT's chb21 (chb01's patient again), else (number, "01");
        SeizeIT2 numbers subjects with three digits."""
        if self.name == "sz2":
            return f"{int(folder[3:5]):03d}", "01"
        if self.name == "chbmit":
            return ("01", "02") if folder == "chb21" else (folder[3:5], "01")
        return folder[2:4], "01"

    def sz2_channels(self, subject: str) -> tuple[tuple[str, str], ...]:
        return SZ2_LEFT if int(subject) % 2 else SZ2_RIGHT

    def signals(self, rec, sfreq: float, subject: str) -> list[Signal]:
        if self.name == "sz2":
            pairs = self.sz2_channels(subject)
            data = self.reader.read_signals(rec, [made for _, made in pairs])
            return [Signal(label, row, "uV", PHYSICAL_RANGE) for (label, _), row in
                    zip(pairs, data.data.astype(np.float64) * 1e6, strict=True)]
        if self.name == "chbmit":
            names = ["T8-P8-0" if c == "T8-P8" else c for c in CHBMIT_CHANNELS]
            data = self.reader.read_signals(rec, names).data.astype(np.float64) * 1e6
            return [Signal(label, row, "uV", PHYSICAL_RANGE)
                    for label, row in zip(CHBMIT_CHANNELS, data, strict=True)]
        import scipy.signal

        data = self.reader.read_signals(rec, [f"EEG {e}" for e in ELECTRODES_10_20])
        uv = data.data.astype(np.float64) * 1e6
        uv -= uv.mean(axis=0)  # common average
        uv = scipy.signal.resample_poly(uv, SFREQ, int(round(sfreq)), axis=1)
        return [Signal(f"{e}-Avg", row, "uV", PHYSICAL_RANGE)
                for e, row in zip(ELECTRODES_10_20, uv, strict=True)]

    def seizure_label(self, subject: str) -> str:
        return "sz" if self.name == "chbmit" else SIENA_TYPES[int(subject) % len(SIENA_TYPES)]

    @property
    def reference(self) -> str:
        return {"chbmit": "bipolar", "siena": "Common Average"}.get(self.name, "bipolar")


def _bids_path(root: Path, subject: str, session: str, run: int, suffix: str, extension: str):
    from mne_bids import BIDSPath

    return BIDSPath(root=root, subject=subject, session=session, task=TASK, run=f"{run:02d}",
                    datatype="eeg", suffix=suffix, extension=extension).fpath


def targets(source: Source, edfs: list[Path], out: Path) -> dict[Path, Path]:
    """Each PhysioNet EDF file -> its BIDS EDF file, runs numbered in file order per folder."""
    by_folder: dict[str, list[Path]] = {}
    for edf in sorted(edfs):
        by_folder.setdefault(edf.parent.name, []).append(edf)
    out_paths = {}
    for folder, files in by_folder.items():
        subject, session = source.subject_session(folder)
        for i, edf in enumerate(files):
            out_paths[edf] = Path(_bids_path(out, subject, session, source.first_run + i, "eeg",
                                             ".edf"))
    return out_paths


def _events_tsv(rows: list[tuple]) -> str:
    lines = ["\t".join(COLUMNS)]
    for onset, duration, label, start, seconds in rows:
        lines.append(f"{onset:.2f}\t{duration:.2f}\t{label}\tn/a\tn/a\t"
                     f"{start:%Y-%m-%d %H:%M:%S}\t{seconds:.2f}")
    return "\n".join(lines) + "\n"


def convert(source_root: Path, out: Path, source_name: str) -> dict[str, Path]:
    """Write the BIDS layout of the PhysioNet-layout dataset under source_root into out; the
    source recording id -> its BIDS EDF file. Returns after the per-recording files and the
    dataset's own (participants.tsv, dataset_description.json, events.json)."""
    from mne_bids import make_dataset_description

    source = Source(source_name)
    recordings = source.reader.find_recordings(source_root)
    out_paths = targets(source, [r.edf for r in recordings], out)
    written: dict[str, Path] = {}
    labels = {"bckg"}
    for rec in recordings:
        header = read_edf_header(rec.edf)
        edf = out_paths[rec.edf]
        edf.parent.mkdir(parents=True, exist_ok=True)
        subject = edf.name.split("_")[0].removeprefix("sub-")
        signals = source.signals(rec, source.reader.read_header(rec).sfreq, subject)
        write_edf(edf, signals, SFREQ, header.start)
        seconds = len(signals[0].data) / SFREQ
        label = source.seizure_label(subject)
        rows = [(e.onset, e.duration, label, header.start, seconds)
                for e in source.reader.read_events(rec)] or [
            (0.0, seconds, "bckg", header.start, seconds)]
        labels |= {row[2] for row in rows}
        stem = edf.name.removesuffix("_eeg.edf")
        edf.with_name(f"{stem}_events.tsv").write_text(_events_tsv(rows))
        edf.with_name(f"{stem}_eeg.json").write_text(json.dumps({
            "TaskName": TASK, "SamplingFrequency": SFREQ, "PowerLineFrequency": source.line_freq,
            "EEGReference": source.reference,
            "EEGChannelCount": len(signals),
            "EEGPlacementScheme": "behind the ear" if source.name == "sz2" else "10-20",
            "RecordingDuration": round(seconds, 2), "RecordingType": "continuous"}, indent=2))
        written[rec.recording] = edf
    subjects = sorted({p.name.split("_")[0] for p in written.values()})
    (out / "participants.tsv").write_text("participant_id\n" + "\n".join(subjects) + "\n")
    make_dataset_description(path=out, name=f"{source_name} look-alike (SzCORE BIDS)",
                             dataset_type="raw", overwrite=True, verbose="error")
    (out / "events.json").write_text(json.dumps({"eventType": {
        "Description": "the event's HED-SCORE label",
        "Levels": {label: "background" if label == "bckg" else "seizure"
                   for label in sorted(labels)}}}, indent=2))
    return written


def write_lookalike(root: Path, settings: dict) -> list[Path]:
    """Write the look-alike under root; the files written, MANIFEST.tsv last."""
    s = with_defaults(settings, DEFAULTS, "the SzCORE BIDS look-alike")
    source = Source(s.pop("source"))
    root = Path(root)
    plans = source.lookalike.plan(s)
    out_paths = targets(source, [Path(p.folder, p.name) for p in plans], root)
    start_rewrite(root, (p.relative_to(root).as_posix() for p in out_paths.values()),
                  "*_eeg.edf", "EDF")
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=root, prefix=".physionet-") as scratch:
        source.lookalike.write_lookalike(Path(scratch), s)
        written = convert(Path(scratch), root, source.name)
    files = []
    for edf in sorted(written.values()):
        stem = edf.name.removesuffix("_eeg.edf")
        files += [edf, edf.with_name(f"{stem}_eeg.json"), edf.with_name(f"{stem}_events.tsv")]
    files += [root / "participants.tsv", root / "dataset_description.json", root / "events.json"]
    return [*files, write_manifest(root, files)]
