"""The PhysioNet/Computing in Cardiology Challenge 2018, "You Snooze You Win" (PhysioNet
`challenge-2018` 1.0.0; Ghassemi et al., CinC 2018): overnight polysomnograms of 1,983 patients
of the Massachusetts General Hospital's sleep laboratory (Boston), 994 of them, the training
set, with their sleep stages, arousals and respiratory events.

Layout as distributed (the challenge page's data description and file list; braindecode's
SleepPhysionetChallenge2018 and a BIDS converter of the release, bomatter/data-PhysioNet, which
read the real files), one folder per record:

  <root>/training/trNN-NNNN/trNN-NNNN.hea          the WFDB header: 13 signals at 200 Hz
  <root>/training/trNN-NNNN/trNN-NNNN.mat          the signals in WFDB's MATLAB-compatible
                                                   format (the header's "16+24": 16-bit samples
                                                   from byte 24, after the header of a MATLAB v4
                                                   int16 matrix `val` of 13 rows)
  <root>/training/trNN-NNNN/trNN-NNNN.arousal      WFDB annotations: stages and events (below)
  <root>/training/trNN-NNNN/trNN-NNNN-arousal.mat  MATLAB v7.3 (HDF5): data/arousals, one
                                                   value per sample (1 target arousal, 0 none,
                                                   -1 not scored), and data/sleep_stages/<stage>
                                                   a 0/1 vector per sample for each of nonrem1,
                                                   nonrem2, nonrem3, rem, undefined and wake
  <root>/test/teNN-NNNN/...                        the test set: no annotations, not read
  <root>/age-sex.csv                               Record, Age, Sex of every record

The header's signal lines (as a public reader of the real files checks them, e.g.
"tr05-1176.mat 16+24 1/uV 16 0 6 -22 0 F3-M2"): F3-M2, F4-M1, C3-M2, C4-M1, O1-M2, O2-M1 (EEG),
E1-M2 (EOG), Chin1-Chin2 (chin EMG), ABD, CHEST and AIRFLOW at 1/uV, SaO2 at 655.35(-32768)/%
and ECG at 1000/mV (the challenge page's signal table: microvolts, SaO2 in percent). Headers,
signals and annotations are read through the `wfdb` package; the .mat's size is checked against
its header first (a cut file would fail inside wfdb with no name). Signals are handed out in
volts; SaO2 is not a voltage and is refused. EEG_CHANNELS are the six EEG derivations.

The .arousal file's aux notes (torch_ecg's CINC2018, and every public reader of the real
files): a sleep stage "W", "N1", "N2", "N3" or "R" at each stage change, and each event as a
pair of notes, "(arousal_rera" where it starts and "arousal_rera)" where it ends, of 13 types:
arousal_bruxism, arousal_noise, arousal_plm, arousal_rera, arousal_snore, arousal_spontaneous,
resp_centralapnea, resp_cheynestokesbreath, resp_hypopnea, resp_hypoventilation,
resp_mixedapnea, resp_obstructiveapnea, resp_partialobstructive. Any other note is refused.

Stages: a stage note starts a run that lasts to the next stage note, the last one to the end of
the signal; each run is cut into whole 30 s epochs from its note. The challenge scores six
stages, the sixth "undefined", which has no note: epochs before the first stage note, and
epochs with a sample the -arousal.mat's sleep_stages/undefined marks, are left out (counted as
("unscored", "undefined")). The -arousal.mat holds one value per sample of the record
(documented, and so in every real file): a vector shorter than the signal means a cut file, a
longer one another record's, and both are refused. Its stage vectors run one sample ahead of
the notes (so in the real tr03-0005 and tr03-0029: each vector changes on the sample before
the note, as if written with MATLAB's 1-based samples), and the last sample of a record is
"undefined": the reader reads sleep_stages/undefined one sample later (the notes' sample i is
the vector's i - 1), else a last run of whole epochs would lose its last epoch to that one
sample (tr03-0029's). The notes are read through wfdb's
annotation parser, not its rdann, which drops every note at sample 0 (taking it for a
time-resolution or label definition): a first stage note at sample 0 is kept.

Events, named by EVENT_KINDS, in seconds from the first sample, in order of onset:
every arousal_* type (spontaneous, bruxism, noise, plm, rera, snore) is an "arousal": each marks
a scored arousal by its cause (the challenge page's list of arousal causes names vocalizations,
which no other type spells, so arousal_noise is taken for those; not documented further), as
the reference's sleep_arousal counts every arousal. arousal_rera is also a "rera" and
arousal_plm also a "limb_movement_periodic": the set scores no leg movements of its own, only
the arousals that periodic leg movements cause, so a PLM event spans that arousal, not the
movement, and there is no "limb_movement" kind. resp_obstructiveapnea, _centralapnea and
_mixedapnea are the three apneas, resp_hypopnea a "hypopnea", resp_cheynestokesbreath
"periodic_breathing". resp_hypoventilation (a ventilation/CO2 event, no apnea or hypopnea) and
resp_partialobstructive (flow limitation short of a hypopnea, which the challenge lists apart
from hypopneas) are no kind's and are left out. An event that ends past the signal's end, or an
opening note without its closing one (or the reverse), is refused (annotation samples count
from the first sample and cannot fall before it).

Ids: recording and subject the record name ("tr03-0005": one night per subject), session "1".
Ages: age-sex.csv (subjects_table). Powerline: 60 Hz (Boston).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from embedprobe.core.errors import DataError
from embedprobe.datasets.base import Event, RecordingHeader, Signals, span_within
from embedprobe.datasets.sleep_edf.reader import trim_wake
from embedprobe.datasets.walk import find_paths, require_folder

FORMAT = "physionet2018"
STAGES = ("W", "N1", "N2", "N3", "REM")  # label index = position
STAGE_OF_NOTE = {"W": 0, "N1": 1, "N2": 2, "N3": 3, "R": 4}
EPOCH_SECONDS = 30
SESSION = "1"
EEG_CHANNELS = ("F3-M2", "F4-M1", "C3-M2", "C4-M1", "O1-M2", "O2-M1")
CHANNELS = (*EEG_CHANNELS, "E1-M2", "Chin1-Chin2", "ABD", "CHEST", "AIRFLOW", "SaO2", "ECG")
TRAINING = "training"
SUBJECTS_TABLE = "age-sex.csv"
ANNOTATION_EXTENSION = "arousal"
# imported by read_signals on first use (wfdb opens files through fsspec, which imports its
# local-file implementation on the first open): a reader thread finds them imported
SIGNAL_IMPORTS = ("wfdb", "fsspec.implementations.local", "fsspec.implementations.chained")
STAGE_VECTORS = ("nonrem1", "nonrem2", "nonrem3", "rem", "undefined", "wake")
UNDEFINED = "undefined"
# Each documented event type -> the kinds it is an event of (none: left out).
KINDS_OF_TYPE = {
    "arousal_bruxism": ("arousal",),
    "arousal_noise": ("arousal",),
    "arousal_plm": ("arousal", "limb_movement_periodic"),
    "arousal_rera": ("arousal", "rera"),
    "arousal_snore": ("arousal",),
    "arousal_spontaneous": ("arousal",),
    "resp_centralapnea": ("apnea_central",),
    "resp_cheynestokesbreath": ("periodic_breathing",),
    "resp_hypopnea": ("hypopnea",),
    "resp_hypoventilation": (),
    "resp_mixedapnea": ("apnea_mixed",),
    "resp_obstructiveapnea": ("apnea_obstructive",),
    "resp_partialobstructive": (),
}
EVENT_KINDS = ("arousal", "apnea_obstructive", "apnea_central", "apnea_mixed", "hypopnea",
               "rera", "periodic_breathing", "limb_movement_periodic")
_NAME = re.compile(r"^tr\d{2}-\d{4}$")
_TEST_NAME = re.compile(r"^te\d{2}-\d{4}$")
_VOLTS_PER_UNIT = {"uv": 1e-6, "µv": 1e-6, "μv": 1e-6, "mv": 1e-3, "v": 1.0}
_FIX_DOWNLOAD = ("download the record's files again from PhysioNet's challenge-2018 1.0.0 "
                 "(training/<record>/: .hea, .mat, .arousal, -arousal.mat)")


@dataclass(frozen=True)
class Recording:
    recording: str  # the record name, "tr03-0005"
    folder: Path  # training/tr03-0005/
    problem: str = ""  # why the recording is incomplete; "" when complete

    # The reader interface's names (datasets/base.py)
    @property
    def subject(self) -> str:
        return self.recording

    @property
    def session(self) -> str:
        return SESSION

    @property
    def signal_path(self) -> Path:
        return self.folder / f"{self.recording}.mat"

    @property
    def files(self) -> tuple[Path, ...]:
        """The header and those of the signal and annotation files that are there."""
        return (self.header_path, *(p for p in (self.signal_path, self.annotation_path,
                                                self.arousal_mat) if p.is_file()))

    # The record's own files
    @property
    def header_path(self) -> Path:
        return self.folder / f"{self.recording}.hea"

    @property
    def annotation_path(self) -> Path:
        return self.folder / f"{self.recording}.{ANNOTATION_EXTENSION}"

    @property
    def arousal_mat(self) -> Path:
        return self.folder / f"{self.recording}-arousal.mat"

    @property
    def record_path(self) -> str:
        """What wfdb takes: the header's path without its extension."""
        return str(self.folder / self.recording)


@dataclass(frozen=True)
class Annotations:
    """A .arousal file's notes as read: stage changes and paired events, in samples."""

    stages: list[tuple[int, int]]  # (sample, index into STAGES) in order
    events: list[tuple[int, int, str]]  # (first sample, end sample, type) in order of onset


# --- finding the records ----------------------------------------------------------------------


def _problem(folder: Path, name: str) -> str:
    wanted = (f"{name}.mat", f"{name}.{ANNOTATION_EXTENSION}", f"{name}-arousal.mat")
    missing = [f for f in wanted if not (folder / f).is_file()]
    return f"{name} has no {' or '.join(missing)} beside its header" if missing else ""


def find_recordings(root: Path) -> list[Recording]:
    """Every training record (trNN-NNNN.hea) under root, sorted by name; the test set's
    (teNN-NNNN) are skipped: they have no annotations. One without its signal or annotation
    files is marked `problem`."""
    root = require_folder(root, "challenge-2018",
                          fix="download PhysioNet's challenge-2018 1.0.0 there (training/, "
                              "age-sex.csv), or write a look-alike: python "
                              f"scripts/make_demo_data.py {root}")
    found: dict[str, Recording] = {}
    for header in find_paths(root, "*.hea"):
        name = header.stem
        if _TEST_NAME.match(name):
            continue
        if not _NAME.match(name):
            raise DataError(f"{header}: not a challenge-2018 record name",
                            fix="keep PhysioNet's names: training/trNN-NNNN/trNN-NNNN.hea, or "
                                "move other WFDB records out of the data folder")
        if name in found:
            raise DataError(f"record {name} is there twice: {found[name].header_path} and "
                            f"{header}", fix="keep one copy under the data root")
        found[name] = Recording(name, header.parent, _problem(header.parent, name))
    return [found[k] for k in sorted(found)]


def _refuse_incomplete(rec: Recording) -> None:
    if rec.problem:
        raise DataError(f"{rec.header_path}: {rec.problem}",
                        fix=f"{_FIX_DOWNLOAD}; allow_partial=true runs without this record")


# --- header and signals -----------------------------------------------------------------------


def _header(rec: Recording):
    import wfdb

    try:
        header = wfdb.rdheader(rec.record_path)
    except Exception as exc:  # wfdb raises many types for a damaged header
        raise DataError(f"{rec.header_path}: not a readable WFDB header "
                        f"({type(exc).__name__}: {exc})", fix=_FIX_DOWNLOAD) from exc
    if not header.sig_len or not header.fs or not header.sig_name:
        raise DataError(f"{rec.header_path}: no signals, rate or length in the header",
                        fix=_FIX_DOWNLOAD)
    return header


def _require_channels(rec: Recording, header, channels: Sequence[str]) -> float:
    missing = [c for c in channels if c not in header.sig_name]
    if missing:
        raise DataError(f"{rec.header_path}: no channel {', '.join(missing)} (it has "
                        f"{', '.join(header.sig_name)})",
                        fix="choose channels the records have: the EEG is "
                            f"{', '.join(EEG_CHANNELS)} (config/channel_maps/physionet2018.yaml)")
    return float(header.fs)


def read_header(rec: Recording) -> RecordingHeader:
    header = _header(rec)
    return RecordingHeader(tuple(header.sig_name), float(header.fs), int(header.sig_len))


def _check_signal_file(rec: Recording, header) -> None:
    """The header points at the record's .mat, which holds every sample the header counts."""
    if set(header.file_name) != {rec.signal_path.name}:
        raise DataError(f"{rec.header_path}: its signals are in {sorted(set(header.file_name))}, "
                        f"not {rec.signal_path.name}", fix=_FIX_DOWNLOAD)
    if set(header.fmt) != {"16"}:
        return  # not the distributed format: wfdb checks what it reads
    offset = max(int(b or 0) for b in (header.byte_offset or [0]))
    needed = offset + 2 * header.n_sig * int(header.sig_len)
    size = rec.signal_path.stat().st_size
    if size < needed:
        raise DataError(f"{rec.signal_path}: {size} bytes, but its header counts "
                        f"{header.sig_len} samples of {header.n_sig} signals ({needed} bytes)",
                        fix=f"the file is cut: {_FIX_DOWNLOAD}")


def _volts_per_unit(rec: Recording, header, channel: str) -> float:
    unit = str(header.units[header.sig_name.index(channel)] or "")
    scale = _VOLTS_PER_UNIT.get(unit.strip().lower())
    if scale is None:
        raise DataError(f"{rec.header_path}: channel {channel} is in {unit!r}, not a voltage",
                        fix="read the EEG, EOG, EMG, effort, airflow or ECG channels "
                            "(SaO2 is in %)")
    return scale


def read_signals(rec: Recording, channels: Sequence[str], span=None) -> Signals:
    """The named channels as float32 volts; with a span only those samples."""
    import wfdb

    header = _header(rec)
    sfreq = _require_channels(rec, header, channels)
    _check_signal_file(rec, header)
    scales = np.array([_volts_per_unit(rec, header, c) for c in channels])
    first, stop = span_within(span, int(header.sig_len))
    data = np.zeros((len(channels), stop - first), np.float32)
    if stop > first and len(channels):
        try:
            record = wfdb.rdrecord(rec.record_path, sampfrom=first, sampto=stop,
                                   channel_names=list(channels))
        except Exception as exc:  # wfdb raises many types for a damaged file
            raise DataError(f"{rec.signal_path}: cannot read the signals "
                            f"({type(exc).__name__}: {exc})", fix=_FIX_DOWNLOAD) from exc
        data[:] = record.p_signal.T * scales[:, None]
    return Signals(sfreq, list(channels), data)


# --- annotations --------------------------------------------------------------------------------


def _notes(rec: Recording) -> tuple[list[int], list[str]]:
    """(sample, aux note) of every annotation of the .arousal file. Read through wfdb's own
    byte parser (wfdb.io.annotation, as rdann does) but without rdann's clean-up, which drops
    every note at sample 0 as a would-be time-resolution or label definition: a stage note at
    sample 0 is kept; only notes at sample 0 that start with "## " (wfdb's definitions) and
    the parser's non-annotations (code 0) are left out."""
    from wfdb.io import annotation

    try:
        filebytes = annotation.load_byte_pairs(rec.record_path, ANNOTATION_EXTENSION, None)
        samples, codes, _, _, _, notes = annotation.proc_ann_bytes(filebytes, None)
    except Exception as exc:  # wfdb raises many types for a damaged file
        raise DataError(f"{rec.annotation_path}: not a readable WFDB annotation file "
                        f"({type(exc).__name__}: {exc})", fix=_FIX_DOWNLOAD) from exc
    kept = [(int(s), str(n or "").strip()) for s, c, n in zip(samples, codes, notes, strict=True)
            if int(c) != 0 and not (int(s) == 0 and str(n or "").startswith("## "))]
    return [s for s, _ in kept], [n for _, n in kept]


def _edge(note: str) -> tuple[str, str] | None:
    """("(", type) for an event's opening note, (")", type) for its closing one; None for a
    note that is neither."""
    if note.startswith("(") and note[1:] in KINDS_OF_TYPE:
        return "(", note[1:]
    if note.endswith(")") and note[:-1] in KINDS_OF_TYPE:
        return ")", note[:-1]
    return None


def _unknown(rec: Recording, sample: int, note: str) -> DataError:
    what = note.strip("()") or "an annotation without a note"
    return DataError(
        f"{rec.annotation_path}: unknown annotation type {what!r} at sample {sample}",
        fix="challenge-2018's .arousal notes are the stages " + ", ".join(STAGE_OF_NOTE)
            + " and the events (<type> ... <type>) of " + ", ".join(KINDS_OF_TYPE)
            + f"; correct {rec.annotation_path.name} or download it again")


def _past_end(rec: Recording, what: str, sample: int, n_samples: int) -> DataError:
    return DataError(f"{rec.annotation_path}: {what} at sample {sample} is past the end of "
                     f"{rec.signal_path.name} ({n_samples} samples)",
                     fix=f"use the .arousal that came with {rec.signal_path.name}: this one is "
                         "cut or from another record")


def read_annotations(rec: Recording, n_samples: int) -> Annotations:
    """The stage changes and the paired events of the record's .arousal file; refuses an
    unknown note, an unpaired one and anything past the signal's end."""
    stages, events, open_at = [], [], {}
    for sample, note in zip(*_notes(rec), strict=True):
        if note in STAGE_OF_NOTE:
            if sample >= n_samples:
                raise _past_end(rec, f"stage {note}", sample, n_samples)
            stages.append((sample, STAGE_OF_NOTE[note]))
            continue
        edge = _edge(note)
        if edge is None:
            raise _unknown(rec, sample, note)
        side, kind = edge
        if side == "(":
            open_at.setdefault(kind, []).append(sample)
            continue
        if not open_at.get(kind):
            raise DataError(f"{rec.annotation_path}: {note!r} at sample {sample} closes no "
                            f"({kind}", fix=f"the file is damaged: {_FIX_DOWNLOAD}")
        start = open_at[kind].pop(0)
        if sample > n_samples:
            raise _past_end(rec, f"{kind} (from sample {start}) ending", sample, n_samples)
        events.append((start, sample, kind))
    unclosed = [(s, k) for k, starts in open_at.items() for s in starts]
    if unclosed:
        sample, kind = min(unclosed)
        raise DataError(f"{rec.annotation_path}: ({kind} at sample {sample} has no closing "
                        f"{kind})", fix=f"the file is cut: {_FIX_DOWNLOAD}")
    return Annotations(stages, sorted(events, key=lambda e: e[0]))


def read_events(rec: Recording) -> list[Event]:
    """Every event of EVENT_KINDS, in seconds from the signal's first sample, by onset."""
    _refuse_incomplete(rec)
    header = _header(rec)
    fs = float(header.fs)
    notes = read_annotations(rec, int(header.sig_len))
    return [Event(start / fs, (end - start) / fs, kind)
            for start, end, kind_type in notes.events for kind in KINDS_OF_TYPE[kind_type]]


# --- stages ------------------------------------------------------------------------------------


def _vector_length(rec: Recording, h5, name: str) -> int:
    dataset = h5.get(name)
    if dataset is None or not hasattr(dataset, "shape"):
        raise DataError(f"{rec.arousal_mat}: no {name} (a challenge -arousal.mat holds "
                        "data/arousals and data/sleep_stages/<stage>)", fix=_FIX_DOWNLOAD)
    shape = tuple(dataset.shape)
    if len(shape) not in (1, 2) or (len(shape) == 2 and min(shape) != 1):
        raise DataError(f"{rec.arousal_mat}: {name} has shape {shape}, not one value per "
                        "sample", fix=_FIX_DOWNLOAD)
    return max(shape)


def read_undefined(rec: Recording, n_samples: int) -> np.ndarray:
    """The -arousal.mat's sleep_stages/undefined as a bool per sample of the notes (one sample
    later than the vector: the module's docstring); refuses vectors that are not one value per
    sample of the record."""
    import h5py

    try:
        h5 = h5py.File(rec.arousal_mat, "r")
    except OSError as exc:
        raise DataError(f"{rec.arousal_mat}: not a MATLAB v7.3 (HDF5) file ({exc})",
                        fix=_FIX_DOWNLOAD) from exc
    with h5:
        vectors = ("data/arousals", f"data/sleep_stages/{UNDEFINED}")
        for name in vectors:
            length = _vector_length(rec, h5, name)
            if length < n_samples:
                raise DataError(
                    f"{rec.arousal_mat}: {name} covers {length} samples, less than the "
                    f"{n_samples} of {rec.signal_path.name} (it holds one per sample)",
                    fix=f"the file is cut or another record's: {_FIX_DOWNLOAD}")
            if length > n_samples:
                raise DataError(f"{rec.arousal_mat}: {name} has {length} samples, more than "
                                f"the {n_samples} of {rec.signal_path.name}",
                                fix=f"it belongs to another record: {_FIX_DOWNLOAD}")
        marked = np.asarray(h5[vectors[1]][()]).reshape(-1) != 0
    # one sample ahead of the notes (the module's docstring): sample i is the vector's i - 1
    return np.concatenate([marked[:1], marked[:-1]])


def stage_epochs(stages: list[tuple[int, int]], n_samples: int,
                 epoch: int) -> tuple[np.ndarray, np.ndarray]:
    """(starts, labels) of the whole epochs of each stage run: from its note to the next
    stage note, the last one to the end of the signal."""
    bounds = [s for s, _ in stages[1:]] + [n_samples]
    starts, labels = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
    for (first, stage), stop in zip(stages, bounds, strict=True):
        count = max(0, (stop - first) // epoch)
        starts.append(first + epoch * np.arange(count, dtype=np.int64))
        labels.append(np.full(count, stage, np.int64))
    return np.concatenate(starts), np.concatenate(labels)


def read_labels(
    rec: Recording,
    trim_wake_minutes: float | None = None,
    channels: Sequence[str] = EEG_CHANNELS,
    counts: Counter | None = None,
) -> tuple[np.ndarray, np.ndarray, float]:
    """(starts: int64 sample of each kept 30 s epoch from the signal's start, labels: int64
    index into STAGES, sfreq); `counts` gathers the epochs left out (("unscored",
    "undefined"))."""
    _refuse_incomplete(rec)
    counts = Counter() if counts is None else counts
    header = _header(rec)
    sfreq = _require_channels(rec, header, channels)
    n_samples = int(header.sig_len)
    epoch = round(EPOCH_SECONDS * sfreq)
    stages = read_annotations(rec, n_samples).stages
    if not stages:
        raise DataError(f"{rec.annotation_path}: no sleep stage note (W, N1, N2, N3, R)",
                        fix=f"the file is cut or damaged: {_FIX_DOWNLOAD}")
    starts, labels = stage_epochs(stages, n_samples, epoch)
    undefined = np.concatenate([[0], np.cumsum(read_undefined(rec, n_samples), dtype=np.int64)])
    scored = undefined[starts + epoch] == undefined[starts]
    unscored = stages[0][0] // epoch + int((~scored).sum())
    if unscored:
        counts[("unscored", UNDEFINED)] += unscored
    starts, labels = trim_wake(starts[scored], labels[scored], sfreq, trim_wake_minutes)
    return starts.astype(np.int64), labels.astype(np.int64), sfreq


# --- the subject table --------------------------------------------------------------------------


def subjects_table(root: Path) -> dict[str, float]:
    """Record ("tr03-0005", the subject) -> age in years, from age-sex.csv (columns Record,
    Age, Sex) as the release ships it; records without an age are left out."""
    import pandas as pd

    root = Path(root)
    found = find_paths(root, SUBJECTS_TABLE) if root.is_dir() else []
    if not found:
        raise DataError(f"no {SUBJECTS_TABLE} under {root} (the records' ages)",
                        fix=f"put {SUBJECTS_TABLE} from PhysioNet's challenge-2018 1.0.0 in "
                            f"{root}")
    path = found[0]
    fix = f"use the {SUBJECTS_TABLE} of challenge-2018 1.0.0 (columns Record, Age, Sex)"
    try:
        table = pd.read_csv(path, dtype={"Record": str})
    except Exception as exc:  # pandas raises several types for a malformed file
        raise DataError(f"{path}: cannot read the table ({type(exc).__name__}: {exc})",
                        fix=fix) from exc
    table.columns = [str(c).strip() for c in table.columns]
    if not {"Record", "Age"} <= set(table.columns):
        raise DataError(f"{path}: no Record and Age columns ({', '.join(table.columns)})",
                        fix=fix)
    ages = pd.to_numeric(table["Age"], errors="coerce")
    bad = table["Age"].notna() & ages.isna()
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        raise DataError(f"{path}: record {table['Record'].iloc[row]} has age "
                        f"{table['Age'].iloc[row]!r}", fix=fix)
    return {str(r).strip(): float(a) for r, a in zip(table["Record"], ages, strict=True)
            if isinstance(r, str) and np.isfinite(a)}
