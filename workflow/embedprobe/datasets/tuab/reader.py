"""TUH EEG Abnormal Corpus (TUAB) v3.0.x: recordings, their class and official split, signals.

Layout (the corpus's AAREADME.txt, v3.0.1, "FILENAME STRUCTURE"):

    edf/{train,eval}/{normal,abnormal}/01_tcp_ar/<subject>_s<session>_t<token>.edf

e.g. edf/eval/abnormal/01_tcp_ar/aaaaamye_s001_t000.edf: the split ("train" or "eval", the
corpus's own partition), the class the EEG was read as (clinically "normal" or "abnormal"),
the channel configuration (01_tcp_ar, an averaged-reference recording; "in this corpus there is
only one type of configuration used"), then the file: an 8-letter anonymised subject id, the
session number and the token (the part of the pruned session; one file per session, usually
the longest). v3.0.0 flattened v2.0.0's edf/train/normal/01_tcp_ar/101/00010194/
s001_2013_01_09/00010194_s001_t001.edf (a 3-digit group, an 8-digit patient number, a session
folder with its archive date) to the layout above, with new 8-letter subject ids and no report
files; v3.0.1 changed the EDF headers only ("no change to the signal data"). This reader takes
v3.0.x only and names the v2 layout when it finds it.

A subject may have several sessions (several recordings), and the class belongs to the
recording: some train subjects have both normal and abnormal recordings (v2.0.0's AAREADME: 54
of them, "a conscious design decision"). The train and eval subjects are disjoint (the same
AAREADME: "there is no overlap between patients in the evaluation and training sets"; the BIDS
conversion bomatter/data-TUAB of v3.0.1 keeps one split per subject and its per-split counts,
276 eval and 2,717 train recordings, match the corpus's), so a subject in both is refused.

Files hold about 20 minutes (16 min to 5.5 h) of unipolar EEG, labelled "EEG FP1-REF", "EEG
F7-REF", ..., "EEG A1-REF", "EEG A2-REF" (old temporal names T3-T6), among other channels that
vary by file ("EEG EKG1-REF", "EEG ROC-REF", "PHOTIC-REF", "IBI", ...; not every "EEG " label is
a scalp electrode). Rates vary between files (250 Hz, 256 Hz, ...): each recording reports its
own. The 21 electrodes of the TCP montage (the 19 of the 10-20 system and the ear
electrodes A1, A2) are EEG_CHANNELS; a recording without one of them is refused. The corpus has
no events: read_events gives []. Recording id = file stem (aaaaamye_s001_t000); patient = the
8-letter id; session = the split and the file's session and token, "train/s001_t000" (the
index keeps the session, so the abnormal-EEG folds read the corpus's split from it:
probing/folds.official_plan); split_of(rec) = "train" or "eval".

Subject (the unit folds are drawn over): the file, as the reference's reader has it
(`dataio/tuab.py` `discover_tuab_recordings` takes the path part after the montage folder as
the subject, written for v2's `<montage>/<patient>/<session>/` folders; in v3.0.1's flat layout
that part is the file name), so a patient's sessions are separate subjects and can fall in
training and validation of one fold (the test set, TUAB's eval patients, shares no patient with
training either way). `subject_id: patient` on the dataset's entry makes the 8-letter patient
the subject, so validation is patient-disjoint too.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from embedprobe.core.errors import DataError, UsageError
from embedprobe.datasets import tuh
from embedprobe.datasets.base import Event, RecordingHeader, Signals
from embedprobe.datasets.edf import OneEdfFile, montage_header, read_edf_signals
from embedprobe.datasets.tuh import ELECTRODES, label
from embedprobe.datasets.walk import find_paths

FORMAT = "tuab"
# The corpus's files come at several rates (250, 256, ... Hz); each recording is read and
# resampled at its own, so the index's scan does not flag the minority rates.
RATES_VARY = True
CLASSES = ("normal", "abnormal")  # label index = position
SPLITS = ("train", "eval")
MONTAGE = "01_tcp_ar"
EDF_FOLDER = tuh.EDF_FOLDER
# The TCP montage's electrodes (datasets/tuh.py), averaged reference: "EEG FP1-REF", ...
EEG_CHANNELS = tuple(label(e) for e in ELECTRODES)

_NAME = re.compile(r"^(?P<subject>[a-z]{8})_(?P<session>s\d{3})_(?P<token>t\d{3})\.edf$")
_LAYOUT = f"{EDF_FOLDER}/{{train,eval}}/{{normal,abnormal}}/{MONTAGE}/<subject>_sNNN_tNNN.edf"
_FIX_LAYOUT = f"keep TUAB v3.0.x's layout: {_LAYOUT}"
SUBJECT_IDS = ("file", "patient")  # a recording's subject: the first is the reference's
READER_SETTINGS = ("subject_id",)  # dataset entry keys passed to find_recordings


@dataclass(frozen=True)
class Recording(OneEdfFile):
    recording: str  # file stem, e.g. "aaaaamye_s001_t000"
    edf: Path
    subject: str  # the file stem (the reference's) or, under subject_id: patient, "aaaaamye"
    session: str  # "train/s001_t000": the split, then the file's session and token
    split: str  # "train" or "eval"
    label: str  # "normal" or "abnormal"
    patient: str  # "aaaaamye"
    problem: str = ""  # a TUAB recording is one file: never incomplete


def edf_folder(root: Path) -> Path:
    """The corpus's edf/ folder under root, or root itself (tuh.edf_folder)."""
    return tuh.edf_folder(root, "TUAB v3.0.1")


def _recording(path: Path, folder: Path, subject_id: str) -> Recording:
    """One file's recording, its place in the layout checked (a DataError names the file)."""
    parts = path.relative_to(folder).parts
    if len(parts) > 4 and parts[2] == MONTAGE:
        raise DataError(f"{path}: TUAB v2's layout (subject and session folders under "
                        f"{MONTAGE}/); this reader reads v3.0.x", fix="download TUAB v3.0.1")
    if parts[0] not in SPLITS:
        raise DataError(f"{path}: not in a split folder ({' or '.join(SPLITS)})", fix=_FIX_LAYOUT)
    if len(parts) < 3 or parts[1] not in CLASSES:
        where = "directly in" if len(parts) == 2 else f"in {parts[1]}/, not a class folder, under"
        raise DataError(f"{path}: {where} {EDF_FOLDER}/{parts[0]}/: its class (normal or "
                        "abnormal) is the folder it is in", fix=_FIX_LAYOUT)
    if len(parts) != 4 or parts[2] != MONTAGE:
        raise DataError(f"{path}: not in {EDF_FOLDER}/{parts[0]}/{parts[1]}/{MONTAGE}/ (TUAB "
                        f"has one channel configuration, {MONTAGE})", fix=_FIX_LAYOUT)
    match = _NAME.match(parts[3])
    if not match:
        raise DataError(f"{path}: not a TUAB file name (<subject>_sNNN_tNNN.edf, an 8-letter "
                        "subject id, e.g. aaaaamye_s001_t000.edf)", fix=_FIX_LAYOUT)
    patient = match["subject"]
    return Recording(path.stem, path, patient if subject_id == "patient" else path.stem,
                     f"{parts[0]}/{match['session']}_{match['token']}", parts[0], parts[1],
                     patient)


def find_recordings(root: Path, subject_id: str = SUBJECT_IDS[0]) -> list[Recording]:
    """Every recording under root's edf/ folder, sorted by id, its subject as `subject_id`
    says (the module's docstring). A file outside the layout, a name not in the pattern, a
    recording there twice or a patient in both splits is refused."""
    if subject_id not in SUBJECT_IDS:
        raise UsageError(f"subject_id: {subject_id} is not one of {', '.join(SUBJECT_IDS)}",
                         fix="write subject_id: file (the reference's) or patient in the TUAB "
                             "dataset's entry (config/datasets.yaml)")
    folder = edf_folder(root)
    recordings: dict[str, Recording] = {}
    for path in find_paths(folder, "*.edf"):
        rec = _recording(path, folder, subject_id)
        if rec.recording in recordings:
            raise DataError(f"recording {rec.recording} is there twice: "
                            f"{recordings[rec.recording].edf} and {path}",
                            fix="keep the one copy TUAB has (one class, one split)")
        recordings[rec.recording] = rec
    if not recordings:
        raise DataError(f"no TUAB recording under {folder}", fix=_FIX_LAYOUT)
    _check_subjects_in_one_split(recordings.values())
    return [recordings[k] for k in sorted(recordings)]


def _check_subjects_in_one_split(recordings) -> None:
    """TUAB keeps every patient in one split: eval patients never train."""
    first: dict[str, Recording] = {}
    for rec in recordings:
        seen = first.setdefault(rec.patient, rec)
        if seen.split != rec.split:
            raise DataError(f"subject {rec.patient} is in both TUAB splits: {seen.edf} and "
                            f"{rec.edf}", fix="TUAB's train and eval subjects are disjoint: "
                            "remove the file that is not TUAB's, or download TUAB v3.0.1 again")


def split_of(rec: Recording) -> str:
    """The corpus's official split of the recording: "train" or "eval" (the test set)."""
    return rec.split


def recording_label(rec: Recording) -> str:
    """The recording's class, from its class folder: "normal" or "abnormal"."""
    return rec.label


def read_header(rec: Recording) -> RecordingHeader:
    """Every channel as recorded; rate and length of the montage's EEG channels, which must all
    be there (at one rate)."""
    return montage_header(rec.edf, EEG_CHANNELS,
                          f"the {MONTAGE} montage needs all {len(EEG_CHANNELS)} electrodes "
                          f"({', '.join(ELECTRODES)})",
                          "replace the file with TUAB v3.0.1's copy, or remove the recording")


def read_signals(rec: Recording, channels: Sequence[str], span=None) -> Signals:
    return read_edf_signals(rec.edf, channels, span=span)


def read_events(rec: Recording) -> list[Event]:
    """TUAB has no events: a recording's class is its folder (recording_label)."""
    return []
