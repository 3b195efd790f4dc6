"""Siena Scalp EEG (PhysioNet siena-scalp-eeg 1.0.0): recordings, signals, seizure intervals.

Layout: `PNxx/PNxx-N.edf` at 512 Hz with unipolar channels "EEG Fp1", "EEG T3", ... (old
temporal names) plus "EKG EKG", "SPO2", "HR", ..., and `PNxx/Seizures-list-PNxx.txt` giving
each seizure as wall-clock times hh.mm.ss:

    Seizure n 1
    File name: PN00-1.edf
    Registration start time: 19.39.33
    Registration end time: 20.22.58
    Seizure start time: 19.58.36
    Seizure end time: 19.59.46

The lists are hand-written and vary; this reader takes what the published ones hold:
"Start time:" / "End time:" without "Seizure"; ':' as the separator (also mixed, 16:13.23);
the file name and registration times written once before the seizure blocks of that file
(PN01) or a block that repeats only the file name (PN12), so lines are read in order, each
seizure belonging to the last file named; a note in parentheses after a time; two readings on
one line (PN10: a clinical and an electric onset; "oppure", Italian for "or", between two ends):
the seizure then covers both (earliest start, latest end); file names with the letter O for a
zero (PNO6-1.edf) or without the file number where the patient has one file (PN01.edf,
PN11-.edf; with that file absent, the name is its -1: PN01-1.edf, PhysioNet's name).

A file the list names that is not there is an incomplete recording (`problem`, naming it): the
index leaves it out with a `warning:` and runs on the others; `strict: true` refuses the
dataset instead (registry.partial_allowed).

Onsets count from the EDF header's start time (the first sample), not the list's registration
time (they disagree for a few files): onset = seizure clock time - header clock time, modulo
24 h, so a seizure after midnight in a file that started before it lands where it belongs.
A file the list does not name has no seizure. Some files spell an electrode in capitals
("EEG FP2", "EEG CZ"); channel names are given in one spelling ("EEG Fp2", "EEG Cz") so that a
channel map fits every file. A recording is one EDF file; subject = patient; session = N.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from embedprobe.core.errors import DataError
from embedprobe.datasets.base import Event, RecordingHeader, Signals
from embedprobe.datasets.edf import ANNOTATIONS, EdfHeader, read_edf_header, read_edf_signals
from embedprobe.datasets.listed import ListedRecording
from embedprobe.datasets.walk import find_paths, require_folder

FORMAT = "siena"
SEIZURE = "seizure"
DAY_SECONDS = 86400
EEG_PREFIX = "EEG "
# Electrode names in the spelling of most Siena files; any other case maps onto these.
ELECTRODES = ("Fp1", "Fp2", "Fpz", "F3", "F4", "F7", "F8", "F9", "F10", "Fz", "Fc1", "Fc2",
              "Fc5", "Fc6", "C3", "C4", "Cz", "T3", "T4", "T5", "T6", "Cp1", "Cp2", "Cp5", "Cp6",
              "P3", "P4", "P9", "P10", "Pz", "O1", "O2")
_SPELLING = {f"{EEG_PREFIX}{e}".upper(): f"{EEG_PREFIX}{e}" for e in ELECTRODES}
_FILE = re.compile(r"^(?P<patient>PN\d{2})-(?P<number>\d+)\.edf$")
_FOLDER = re.compile(r"^PN\d{2}$")
_FILE_NAME = re.compile(r"^File\s*name\s*:\s*(?P<name>\S+)", re.IGNORECASE)
_SEIZURE_TIME = re.compile(r"^(?:Seizure\s+)?(?P<which>start|end)\s+time\s*:?\s*(?P<value>.*)$",
                           re.IGNORECASE)
_CLOCK = re.compile(r"(?<!\d)(?P<h>\d{1,2})[.:](?P<m>\d{2})[.:](?P<s>\d{2})(?!\d)")
_NOTE = re.compile(r"\([^)]*\)|\b(?:op+ure|or)\b|[;,]", re.IGNORECASE)
_FIX_NAME = "keep PhysioNet's names: PNxx/PNxx-N.edf with Seizures-list-PNxx.txt beside them"


class Recording(ListedRecording):
    """recording "PN00-1", subject the patient, session the file's number ("1");
    the listing is the folder's Seizures-list-PNxx.txt."""

    @property
    def seizure_list(self) -> Path:
        return self.listing


@dataclass(frozen=True)
class ListedSeizure:
    file: str  # "PN00-1.edf"
    start: int  # clock time, seconds after midnight
    end: int
    line: int  # of the start time in the list (1-based)


def seizure_list_path(folder: Path) -> Path:
    return folder / f"Seizures-list-{folder.name}.txt"


def clock_seconds(value: str, where: str) -> list[int]:
    """The clock times (seconds after midnight) on one line of a list. Notes in parentheses,
    'oppure'/'or' and separators may surround them; any other digit means a damaged time, which
    is refused rather than half-read."""
    times = []
    for match in _CLOCK.finditer(value):
        h, m, s = int(match["h"]), int(match["m"]), int(match["s"])
        if h > 23 or m > 59 or s > 59:
            raise DataError(f"{where}: {match[0]!r} is not a clock time",
                            fix="write the time as hh.mm.ss")
        times.append(3600 * h + 60 * m + s)
    rest = _NOTE.sub("", _CLOCK.sub("", value))
    if not times or re.search(r"\d", rest):
        raise DataError(f"{where}: cannot read a clock time from {value.strip()!r}",
                        fix="write the time as hh.mm.ss (a note may follow in parentheses)")
    return times


def _resolve_name(name: str, patient: str, patient_files: set[str]) -> str | None:
    """The listed name as this patient's file name, after the typos the published lists hold;
    None when it names no file of this patient."""
    name = re.sub(r"^PNO", "PN0", name.strip(), flags=re.IGNORECASE)
    name = name[:2].upper() + name[2:]
    if _FILE.match(name):
        return name if name.startswith(patient + "-") else None
    if re.fullmatch(rf"{patient}-?\.edf", name, re.IGNORECASE) and len(patient_files) <= 1:
        # the number left out: the patient's only file; where it is absent, the only file such
        # a list names is its -1 (PN01-1.edf, PN11-1.edf), so it is reported missing by name
        return next(iter(patient_files), f"{patient}-1.edf")
    return None


def parse_seizure_list(path: Path, patient_files: set[str] = frozenset()) -> list[ListedSeizure]:
    """Every seizure of a Seizures-list-PNxx.txt, in order. `patient_files` (the EDF names in
    the folder) resolves a name written without its file number."""
    patient = path.stem.removeprefix("Seizures-list-")
    seizures: list[ListedSeizure] = []
    current: str | None = None
    start: tuple[int, int] | None = None  # (clock, line)
    for line_no, raw in enumerate(path.read_text(encoding="latin-1").splitlines(), start=1):
        line = raw.strip()
        where = f"{path}, line {line_no}"
        if match := _FILE_NAME.match(line):
            current = _resolve_name(match["name"], patient, patient_files)
            if current is None:
                raise DataError(f"{where}: unknown file {match['name']!r}: not a file of "
                                f"{patient}", fix=f"name {patient}'s files as {patient}-N.edf")
        elif match := _SEIZURE_TIME.match(line):
            times = clock_seconds(match["value"], where)
            if current is None:
                raise DataError(f"{where}: a seizure time before any 'File name:' line",
                                fix="put a File name: line before each file's seizures")
            if match["which"].lower() == "start":
                if start is not None:
                    raise DataError(f"{where}: a second start time before an end time",
                                    fix="give each seizure a start and an end time")
                start = (min(times), line_no)
            else:
                if start is None:
                    raise DataError(f"{where}: an end time without a start time",
                                    fix="give each seizure a start and an end time")
                seizures.append(ListedSeizure(current, start[0], max(times), start[1]))
                start = None
    if start is not None:
        raise DataError(f"{path}, line {start[1]}: a seizure without an end time",
                        fix="give each seizure a start and an end time")
    return seizures


def find_recordings(root: Path) -> list[Recording]:
    """Every PNxx-N.edf under root and every file its seizure list names, sorted by id. A
    folder without its seizure list, or a listed file that is not there, makes an incomplete
    recording (its `problem` says which)."""
    root = require_folder(root, "Siena",
                          fix="download Siena Scalp EEG (physionet.org/content/siena-scalp-eeg) "
                              "there, or write the look-alike (the demo_data rule)")
    folders: dict[Path, set[str]] = {}
    for edf in find_paths(root, "*.edf"):
        match = _FILE.match(edf.name)
        if not match:
            raise DataError(f"{edf}: not a Siena file name", fix=_FIX_NAME)
        if edf.parent.name != match["patient"]:
            raise DataError(f"{edf}: a {match['patient']} file in folder {edf.parent.name}",
                            fix=f"move it to {match['patient']}/")
        folders.setdefault(edf.parent, set()).add(edf.name)
    for listing in find_paths(root, "Seizures-list-*.txt"):  # a folder whose files are all missing
        if _FOLDER.match(listing.parent.name):
            folders.setdefault(listing.parent, set())
    recordings: dict[str, Recording] = {}
    for folder, names in folders.items():
        listing = seizure_list_path(folder)
        listed = ({s.file for s in parse_seizure_list(listing, names)}
                  if listing.is_file() else None)
        for name in sorted(names | (listed or set())):
            stem = name.removesuffix(".edf")
            if stem in recordings:
                raise DataError(f"recording {stem} is there twice: {recordings[stem].edf} and "
                                f"{folder / name}", fix="keep one copy under the data root")
            if listed is None:
                problem = f"no {listing.name} in {folder} (it lists the seizures)"
            elif name not in names:
                problem = f"{name} is listed in {listing} but is not in {folder}"
            else:
                problem = ""
            match = _FILE.match(name)
            recordings[stem] = Recording(stem, folder / name, listing, match["patient"],
                                         match["number"], problem)
    return [recordings[k] for k in sorted(recordings)]


def channel_name(label: str) -> str:
    """A label in the one spelling channel maps use ("EEG FP2" -> "EEG Fp2")."""
    return _SPELLING.get(label.upper(), label)


def _labels_by_name(header: EdfHeader) -> dict[str, str]:
    return {channel_name(label): label for label in header.labels if label != ANNOTATIONS}


def read_header(rec: Recording) -> RecordingHeader:
    """Every channel (EEG electrodes in one spelling); rate and length of the EEG channels."""
    header = read_edf_header(rec.edf)
    names = _labels_by_name(header)
    eeg = [label for name, label in names.items() if name.startswith(EEG_PREFIX)]
    if not eeg:
        raise DataError(f"{rec.edf}: no 'EEG ...' channel (it has {', '.join(names)})",
                        fix="use the Siena file as downloaded")
    return RecordingHeader(tuple(names), header.sfreq(eeg[0]), header.n_samples(eeg[0]))


def read_signals(rec: Recording, channels: Sequence[str], span=None) -> Signals:
    header = read_edf_header(rec.edf)
    labels = _labels_by_name(header)
    signals = read_edf_signals(rec.edf, [labels.get(c, c) for c in channels], header, span)
    signals.ch_names = list(channels)
    return signals


def _clock(seconds: int) -> str:
    return f"{seconds // 3600:02d}.{seconds % 3600 // 60:02d}.{seconds % 60:02d}"


def read_events(rec: Recording) -> list[Event]:
    """The file's seizures from the list, in seconds from the start of the EDF file; a seizure
    outside the file is refused."""
    if rec.problem:
        raise DataError(f"{rec.recording}: {rec.problem}",
                        fix=f"put {rec.edf.name} and {rec.seizure_list.name} from Siena Scalp "
                            f"EEG in {rec.edf.parent} (or allow_partial=true to leave this "
                            "recording out)")
    names = {p.name for p in rec.edf.parent.glob("*.edf")}
    header = read_edf_header(rec.edf)
    seconds = header.n_records * header.record_seconds
    begin = header.start.hour * 3600 + header.start.minute * 60 + header.start.second
    events = []
    for seizure in parse_seizure_list(rec.seizure_list, names):
        if seizure.file != rec.edf.name:
            continue
        onset = (seizure.start - begin) % DAY_SECONDS
        duration = (seizure.end - seizure.start) % DAY_SECONDS
        if duration == 0 or onset + duration > seconds:
            raise DataError(
                f"{rec.seizure_list}, line {seizure.line}: the seizure of {rec.edf.name} at "
                f"{_clock(seizure.start)}-{_clock(seizure.end)} is not within the file (its "
                f"header starts at {_clock(begin)}, {seconds:g} s long)",
                fix=f"correct the clock times in {rec.seizure_list.name} (hh.mm.ss, the same "
                    f"clock as the EDF header's start time), or replace a truncated "
                    f"{rec.edf.name}")
        events.append(Event(float(onset), float(duration), SEIZURE))
    return sorted(events, key=lambda e: e.onset)
