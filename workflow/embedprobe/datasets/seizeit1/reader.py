"""SeizeIT1 (the reference's sz1): KU Leuven's wearable-EEG seizure set, its public release.

Publisher: UZ Leuven / KU Leuven, KU Leuven Research Data Repository (RDR),
doi:10.48804/P5Q0OJ (access after a data use agreement); described in Vandecasteele et al.,
"Visual seizure annotation and automated seizure detection using behind-the-ear
electroencephalographic channels", Epilepsia 61(4):766-775, 2020. The release's layout, as
SzCORE's converter of it reads it (esl-epfl/epilepsy2bids, its SeizeIT loader: the folder that
holds subject_info.csv and one folder per patient):

    subject_info.csv
    P_ID10/P_ID10_r1.edf       one recording: full-scalp 10-20 EEG and the behind-the-ear
                               channels ("BTEleft SD", "BTEright SD", "CROSStop SD")
    P_ID10/P_ID10_r1_a1.tsv    the hospital's seizure annotation of it (video-EEG review)
    P_ID10/P_ID10_r1_a2.tsv    the annotation made on the behind-the-ear channels alone

An annotation file holds comment lines starting with `#`, then one tab-separated row per
seizure: start and stop in seconds from the start of the EDF file, the seizure type (FIA:
focal impaired awareness, FA: focal aware, F-BTC: focal to bilateral tonic-clonic) and a
comment ("Lateralization:L, Localization:temp"). Twelve seizures of the release have no stop:
SzCORE's converter gives them 30 s, and so does this reader. No row: no seizure.

Which annotation: the reference suite (kkontras/NeuroAtlas, dataio/sz1_edf.py) reads `_a1.tsv`,
the hospital's; so does this reader (`_a2.tsv` is not needed). The reference reads an internal
release with 19 scalp channels resampled to 256 Hz; this reader takes the public release's EDF
as it is, and the channel maps (config/channel_maps/sz1.yaml) choose the 19 scalp electrodes.

A recording is "P_ID10_r1", its subject the patient folder "P_ID10" (folds go over patients),
its session "r1". Incomplete (`problem`): a recording without its `_a1.tsv`. Refused, naming
the file (DataError): a row whose type is not a SeizeIT seizure type, a seizure outside its
recording or ending before it starts, a row that is not start, stop, type.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from embedprobe.core.errors import DataError
from embedprobe.datasets.base import (
    Event,
    RecordingHeader,
    Signals,
    one_each,
    present,
    refuse_incomplete,
)
from embedprobe.datasets.edf import (
    SignalsInEdf,
    read_edf_header,
    read_edf_signals,
    recording_header,
)
from embedprobe.datasets.walk import find_paths, require_folder

FORMAT = "seizeit1"
SEIZURE = "seizure"
SEIZURE_TYPES = ("FIA", "FA", "F-BTC")  # the release's, as SzCORE's converter maps them
ANNOTATION = "_a1.tsv"  # the hospital's annotation, the one the reference reads
NO_STOP_S = 30.0  # a seizure without its stop lasts this long (SzCORE's converter)
ROUNDING_S = 0.005  # stops are written to the hundredth of a second
_EDF = re.compile(r"^(P_ID\d+)_(r\d+)\.edf$")
_FIX_RECORD = "download the recording again from the KU Leuven RDR (doi:10.48804/P5Q0OJ)"


@dataclass(frozen=True)
class Recording(SignalsInEdf):
    recording: str  # "P_ID10_r1"
    edf: Path
    annotation: Path  # its _a1.tsv (may not exist)
    subject: str  # "P_ID10"
    session: str  # "r1"
    problem: str = ""

    @property
    def files(self) -> tuple[Path, ...]:
        return present(self.edf, self.annotation)


def find_recordings(root: Path) -> list[Recording]:
    """Every P_ID*/P_ID*_r*.edf under root, sorted by id; one without its `_a1.tsv` is
    incomplete (its `problem` names the file)."""
    root = require_folder(root, "SeizeIT1",
                          fix="unpack the KU Leuven RDR release there (the folder that holds "
                              "subject_info.csv and P_ID10/ ...), or write the look-alike (the "
                              "demo_data rule)")
    edfs = one_each(find_paths(root, "P_ID*_r*.edf"),
                    lambda p: p.stem if _EDF.match(p.name) else None)
    out = []
    for stem, edf in sorted(edfs.items()):
        subject, session = _EDF.match(edf.name).groups()
        annotation = edf.with_name(stem + ANNOTATION)
        problem = "" if annotation.is_file() else (
            f"no {annotation.name} beside {edf.name} (the hospital's seizure annotation)")
        out.append(Recording(stem, edf, annotation, subject, session, problem))
    return out


def read_header(rec: Recording) -> RecordingHeader:
    return recording_header(rec.edf, _FIX_RECORD)


def read_signals(rec: Recording, channels: Sequence[str], span=None) -> Signals:
    return read_edf_signals(rec.edf, channels, span=span)


def annotation_rows(path: Path) -> list[tuple[int, float, float | None, str]]:
    """(line number, start, stop or None, type) of every seizure row of an annotation file."""
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        cells = [c.strip() for c in line.split("\t")]
        try:
            start = float(cells[0])
            stop = float(cells[1]) if len(cells) > 1 and cells[1] not in ("", "NaN", "nan") \
                else None
            kind = cells[2]
        except (ValueError, IndexError):
            raise DataError(f"{path}: line {number} reads {line!r}, not start, stop, type "
                            "(tab-separated)", fix=_FIX_RECORD) from None
        rows.append((number, start, stop, kind))
    return rows


def read_events(rec: Recording) -> list[Event]:
    """The seizures of the recording's `_a1.tsv`, in seconds from the start of its EDF file."""
    refuse_incomplete(rec, f"put {rec.annotation.name} from the release beside {rec.edf}")
    seconds = read_edf_header(rec.edf).seconds
    events = []
    for number, start, stop, kind in annotation_rows(rec.annotation):
        if kind not in SEIZURE_TYPES:
            raise DataError(f"{rec.annotation}: line {number}: unknown seizure type {kind!r}",
                            fix=f"label each seizure {', '.join(SEIZURE_TYPES)} (the "
                                "release's types), or restore the file from the release")
        end = start + NO_STOP_S if stop is None else stop
        if start < 0 or end <= start or start >= seconds or (
                stop is not None and end > seconds + ROUNDING_S):
            raise DataError(f"{rec.annotation}: line {number}: the seizure from {start:g} s to "
                            f"{end:g} s is not within {rec.edf.name} ({seconds:g} s long)",
                            fix=f"correct its start and stop (seconds from the start of "
                                f"{rec.edf.name}), or replace a truncated {rec.edf.name}")
        events.append(Event(start, min(end, seconds) - start, SEIZURE))
    return sorted(events, key=lambda e: e.onset)
