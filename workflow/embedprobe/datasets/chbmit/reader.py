"""CHB-MIT Scalp EEG (PhysioNet chbmit 1.0.0): recordings, bipolar signals, seizure intervals.

Layout: `chbNN/chbNN_MM.edf` (also `chb17a_03.edf`, `chb02_16+.edf`), mostly one-hour files
at 256 Hz with bipolar channels named like FP1-F7, and `chbNN/chbNN-summary.txt` listing every
file with its seizures in seconds from the file's start, in two phrasings:

    File Name: chb01_03.edf                    File Name: chb06_01.edf
    File Start Time: 13:43:04                  ...
    File End Time: 14:43:04                    Number of Seizures in File: 3
    Number of Seizures in File: 1              Seizure 1 Start Time: 1724 seconds
    Seizure Start Time: 2996 seconds           Seizure 1 End Time: 1738 seconds
    Seizure End Time: 3036 seconds             ...

A "Channels changed:" block can come between files; clock times past midnight read 24:xx:xx or
more (they are not used: the seconds are). Starts and ends pair by position, since the printed
number can be wrong (chb09_08 prints "Seizure 1 End Time" for its second seizure).

Channels go by MNE's names: T8-P8 is recorded twice ("T8-P8-0", "T8-P8-1") and some files
carry dummy channels "-" ("--0", "--1", ...). A recording is one EDF file; its subject is the
patient (chb21 is chb01 again, 1.5 years later, so both are subject chb01); its session is the
file's number.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from embedprobe.core.errors import DataError
from embedprobe.datasets.base import Event, RecordingHeader, Signals
from embedprobe.datasets.edf import ANNOTATIONS, read_edf_header, read_edf_signals
from embedprobe.datasets.listed import ListedRecording
from embedprobe.datasets.walk import find_paths, require_folder

FORMAT = "chbmit"
SEIZURE = "seizure"
SAME_PATIENT = {"chb21": "chb01"}  # PhysioNet: chb21 is chb01's patient, recorded later
_FILE = re.compile(r"^(?P<patient>chb\d{2})(?P<part>[a-z]?)_(?P<number>\d{2,3}\+?)\.edf$")
_FOLDER = re.compile(r"^chb\d{2}$")
_FILE_NAME = re.compile(r"^File\s+Name\s*:\s*(?P<name>\S+)", re.IGNORECASE)
_COUNT = re.compile(r"^Number\s+of\s+Seizures\s+in\s+File\s*:\s*(?P<n>\d+)", re.IGNORECASE)
_TIME = re.compile(r"^Seizure\s*(?:\d+\s*)?(?P<which>Start|End)\s+Time\s*:\s*"
                   r"(?P<seconds>\d+(?:\.\d+)?)\s*(?:seconds?|s)?\s*$", re.IGNORECASE)
_BIPOLAR = re.compile(r"^[A-Z0-9]+-[A-Z0-9]+$", re.IGNORECASE)
_FIX_NAME = "keep PhysioNet's names: chbNN/chbNN_MM.edf with chbNN-summary.txt beside them"


class Recording(ListedRecording):
    """recording "chb01_03", subject the patient, session the file's number ("03", "b_69"
    for chb17b_69); the listing is the folder's chbNN-summary.txt."""

    @property
    def summary(self) -> Path:
        return self.listing


@dataclass(frozen=True)
class SummaryEntry:
    name: str  # "chb01_03.edf"
    seizures: tuple[tuple[float, float], ...]  # (start s, end s) from the file's start
    line: int  # where the entry starts in the summary (1-based)


def summary_path(folder: Path) -> Path:
    return folder / f"{folder.name}-summary.txt"


def parse_summary(path: Path) -> dict[str, SummaryEntry]:
    """File name -> its entry, from a chbNN-summary.txt. A count that disagrees with the listed
    seizures, an end not after its start, a file listed twice, or a name that is not one of this
    patient's files is refused, naming the line."""
    patient = path.name.removesuffix("-summary.txt")
    entries: dict[str, SummaryEntry] = {}
    current: dict | None = None

    def refuse(line_no: int, what: str, fix: str) -> DataError:
        return DataError(f"{path}, line {line_no}: {what}", fix=fix)

    def close() -> None:
        if current is None:
            return
        starts, ends, name = current["starts"], current["ends"], current["name"]
        if len(starts) != len(ends):
            raise refuse(current["line"], f"{name} lists {len(starts)} seizure start(s) but "
                         f"{len(ends)} end(s)", "give every seizure a start and an end line")
        if current["count"] is not None and current["count"] != len(starts):
            raise refuse(current["line"], f"{name}: 'Number of Seizures in File: "
                         f"{current['count']}' but {len(starts)} seizure(s) are listed",
                         "make the count match the listed seizures")
        for start, end in zip(starts, ends, strict=True):
            if end <= start:
                raise refuse(current["line"], f"{name}: a seizure ends ({end:g} s) before it "
                             f"starts ({start:g} s)", "correct its start and end seconds")
        entries[name] = SummaryEntry(name, tuple(zip(starts, ends, strict=True)),
                                     current["line"])

    for line_no, raw in enumerate(path.read_text(encoding="latin-1").splitlines(), start=1):
        line = raw.strip()
        if match := _FILE_NAME.match(line):
            close()
            name = match["name"]
            file = _FILE.match(name)
            if not file or file["patient"] != patient:
                raise refuse(line_no, f"unknown file {name!r}: not a file of {patient}",
                             f"list {patient}'s files as {patient}_MM.edf ({_FIX_NAME})")
            if name in entries:
                raise refuse(line_no, f"{name} is listed twice", "keep one entry per file")
            current = {"name": name, "line": line_no, "count": None, "starts": [], "ends": []}
        elif match := _COUNT.match(line):
            if current is not None:
                current["count"] = int(match["n"])
        elif match := _TIME.match(line):
            if current is None:
                raise refuse(line_no, f"a seizure time before any 'File Name:' line: {line!r}",
                             "put each seizure under the File Name: line of its file")
            key = "starts" if match["which"].lower() == "start" else "ends"
            current[key].append(float(match["seconds"]))
    close()
    return entries


def find_recordings(root: Path) -> list[Recording]:
    """Every chbNN*.edf under root and every file its summary lists, sorted by id. A file the
    summary does not list, a listed file that is not there, or a folder without its summary
    makes an incomplete recording (its `problem` says which)."""
    root = require_folder(root, "CHB-MIT",
                          fix="download CHB-MIT (physionet.org/content/chbmit) there, or write "
                              "the look-alike (the demo_data rule)")
    folders: dict[Path, list[Path]] = {}
    for edf in find_paths(root, "*.edf"):
        match = _FILE.match(edf.name)
        if not match:
            raise DataError(f"{edf}: not a CHB-MIT file name", fix=_FIX_NAME)
        if edf.parent.name != match["patient"]:
            raise DataError(f"{edf}: a {match['patient']} file in folder {edf.parent.name}",
                            fix=f"move it to {match['patient']}/")
        folders.setdefault(edf.parent, []).append(edf)
    for summary in find_paths(root, "chb*-summary.txt"):  # a folder whose files are all missing
        if _FOLDER.match(summary.parent.name):
            folders.setdefault(summary.parent, [])
    recordings: dict[str, Recording] = {}
    for folder, edfs in folders.items():
        summary = summary_path(folder)
        listed = parse_summary(summary) if summary.is_file() else None
        names = {edf.name for edf in edfs} | set(listed or ())
        for name in names:
            stem = name.removesuffix(".edf")
            if stem in recordings:
                raise DataError(f"recording {stem} is there twice: {recordings[stem].edf} and "
                                f"{folder / name}", fix="keep one copy under the data root")
            match = _FILE.match(name)
            part = f"{match['part']}_" if match["part"] else ""
            edf = folder / name
            if listed is None:
                problem = f"no {summary.name} in {folder} (it lists the seizures)"
            elif name not in listed:
                problem = f"{name} is not listed in {summary}"
            elif not edf.is_file():
                problem = f"{name} is listed in {summary} but is not in {folder}"
            else:
                problem = ""
            recordings[stem] = Recording(
                stem, edf, summary, SAME_PATIENT.get(match["patient"], match["patient"]),
                part + match["number"], problem)
    return [recordings[k] for k in sorted(recordings)]


def _refuse_incomplete(rec: Recording) -> None:
    if rec.problem:
        raise DataError(f"{rec.recording}: {rec.problem}",
                        fix=f"put {rec.edf.name} and {rec.summary.name} from CHB-MIT in "
                            f"{rec.edf.parent}, each file listed in the summary "
                            "(or allow_partial=true to leave this recording out)")


def read_header(rec: Recording) -> RecordingHeader:
    """Every channel by MNE's name; rate and length of the bipolar EEG channels."""
    header = read_edf_header(rec.edf)
    channels = tuple(label for label in header.labels if label != ANNOTATIONS)
    eeg = [c for c in channels if _BIPOLAR.match(c)]
    if not eeg:
        raise DataError(f"{rec.edf}: no bipolar EEG channel (it has {', '.join(channels)})",
                        fix="use the CHB-MIT file as downloaded")
    return RecordingHeader(channels, header.sfreq(eeg[0]), header.n_samples(eeg[0]))


def read_signals(rec: Recording, channels: Sequence[str], span=None) -> Signals:
    return read_edf_signals(rec.edf, channels, span=span)


def read_events(rec: Recording) -> list[Event]:
    """The file's seizures from its summary, in seconds from the start of the EDF file; a
    seizure that ends after the file does is refused."""
    _refuse_incomplete(rec)
    entry = parse_summary(rec.summary)[rec.edf.name]
    header = read_edf_header(rec.edf)
    seconds = header.n_records * header.record_seconds
    for start, end in entry.seizures:
        if end > seconds:
            raise DataError(
                f"{rec.summary}, line {entry.line}: a seizure of {rec.edf.name} at "
                f"{start:g}-{end:g} s ends after the file ({seconds:g} s long)",
                fix=f"correct the seizure's seconds in {rec.summary.name} (seconds from the "
                    f"start of {rec.edf.name}), or replace a truncated {rec.edf.name}")
    return [Event(start, end - start, SEIZURE) for start, end in sorted(entry.seizures)]
