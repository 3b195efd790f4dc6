"""Any MOABB dataset, read through MOABB's own loading from the local MNE data folder.

An entry names the class (`moabb_dataset: BNCI2014_004`) and, optionally, how MOABB's event
names become the project's (`moabb_events: {MOABB name: class name}`; without it MOABB's names
are kept, which are the project's for motor imagery, "Target"/"NonTarget" for ERP). MOABB
knows each set's files, channels, sessions and runs; what happens after loading is the
project's protocol, as for the hand-read sets (pipeline/preprocess.py).

A recording is one run as MOABB's get_data hands it over: id "sub-001_0train_0" (subject,
session, run as MOABB names them), subject "sub-001" (MOABB's subject number), session
"0train_0". The signals are the raw's channels in volts (MOABB converts); the events are its
trial markers (its stim channel, else its annotations) named by the class's `event_id`,
moved to the start of MOABB's trial window (`interval[0]` after the marker) and lasting the
window (`interval`), so a trial's onset is where MOABB's epochs start: BNCI 2014-001's is the
cue, as the hand-written reader has it.

Files: each subject's files are what the class's data_path returns, found offline
(offline.reading): a subject whose files are not all there is a placeholder recording whose
`problem` gives the command that fetches it. A subject's runs are loaded once and kept for the
next call (its header, events and signals are read one after another).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from embedprobe.core.errors import DataError, UsageError
from embedprobe.datasets.base import Event, RecordingHeader, Signals, span_within
from embedprobe.datasets.moabb import offline
from embedprobe.datasets.walk import require_folder

FORMAT = "moabb"
READER_SETTINGS = ("moabb_dataset", "moabb_events", "moabb_subjects", "path")
# what a reader thread would import on its first read (core/thread_imports.py)
SIGNAL_IMPORTS = ("mne", "moabb.datasets")
# Read in the embed process's threads, not reader processes: `import moabb` imports its
# benchmark, pyriemann and so torch (docs/measurements/2026-12-07-moabb-format.md)
READER_KIND = "threads"


@dataclass(frozen=True)
class Recording:
    recording: str  # "sub-001_0train_0"
    dataset: str  # the MOABB class
    folder: Path  # the MNE data folder MOABB reads
    pinned: bool  # the entry names the folder (else MOABB resolves it)
    number: int  # MOABB's subject number
    session_name: str  # MOABB's session ("0train")
    run: str  # MOABB's run ("0")
    files: tuple[Path, ...] = ()
    events: tuple[tuple[str, str], ...] = ()  # (MOABB name, class name), from moabb_events
    problem: str = field(default="")

    @property
    def subject(self) -> str:
        return subject_id(self.number)

    @property
    def session(self) -> str:
        return f"{self.session_name}_{self.run}"

    @property
    def signal_path(self) -> Path:
        return self.files[0] if self.files else self.folder


def subject_id(number: int) -> str:
    return f"sub-{number:03d}"


def entry_root(data_root: Path, path: str) -> Path:
    """The folder of an entry's `path` (registry.entry_root asks the format): MOABB's own for
    `MNE_DATA`, else the path under data_root."""
    return offline.default_folder() if path == offline.MNE_DATA else Path(data_root) / path


@functools.lru_cache(maxsize=1)
def _subject_runs(name: str, folder: Path, pinned: bool, number: int) -> dict:
    """{(session, run): raw} of one subject, as MOABB's get_data loads it."""
    with offline.reading(folder, pinned):
        data = offline.dataset(name).get_data(subjects=[number])
    return {(session, run): raw for session, runs in data[number].items()
            for run, raw in runs.items()}


def _subject_files(name: str, folder: Path, pinned: bool, number: int) -> tuple[Path, ...]:
    """The subject's files as the class's data_path finds them; Offline where one is not
    there (MOABB would download it)."""
    with offline.reading(folder, pinned):
        paths = offline.dataset(name).data_path(number)
    paths = [paths] if isinstance(paths, str | Path) else paths
    return tuple(Path(p) for p in paths if Path(p).is_file())


def _fetch(name: str, number: int, root: Path, pinned: bool) -> str:
    return offline.fetch_command(name, [number], root if pinned else None)


def find_recordings(root: Path, moabb_dataset: str, moabb_events: dict | None = None,
                    moabb_subjects: Sequence[int] | None = None,
                    path: str = "") -> list[Recording]:
    """One recording per run of every subject of the class (of `moabb_subjects`, when the
    entry names some) whose files are in `root`; a subject with a file missing is a
    placeholder naming the command that fetches it."""
    pinned = path != offline.MNE_DATA
    root = require_folder(root, f"MOABB's {moabb_dataset}", fix=(
        f"fetch it on a login node: {offline.fetch_command(moabb_dataset, None, root)}"
        if pinned else "create it, or set MNE_DATA to the folder that holds MOABB's data"))
    dataset = offline.dataset(moabb_dataset)
    events = tuple((str(k), str(v)) for k, v in (moabb_events or {}).items())
    subjects = list(dataset.subject_list)
    unknown = sorted(set(moabb_subjects or ()) - set(subjects))
    if unknown:
        raise UsageError(f"moabb_subjects: MOABB's {moabb_dataset} has no subject "
                         f"{', '.join(map(str, unknown))} (it has {subjects[0]}-{subjects[-1]})",
                         fix="list subjects of the dataset, or leave moabb_subjects out")
    recordings = []
    for number in (sorted(moabb_subjects) if moabb_subjects else subjects):
        try:
            files = _subject_files(moabb_dataset, root, pinned, number)
        except offline.Offline:
            fetch = _fetch(moabb_dataset, number, root, pinned)
            recordings.append(Recording(
                f"{subject_id(number)}_missing", moabb_dataset, root, pinned, number, "", "",
                events=events, problem=f"subject {number} of MOABB's {moabb_dataset} is not "
                f"(all) in {root}: fetch it on a login node: {fetch}"))
            continue
        runs = _subject_runs(moabb_dataset, root, pinned, number)
        for session, run in runs:
            recordings.append(Recording(f"{subject_id(number)}_{session}_{run}", moabb_dataset,
                                        root, pinned, number, session, run, files, events))
    return sorted(recordings, key=lambda r: r.recording)


def eeg_channels(entry: dict, root: Path) -> tuple[str, ...]:
    """The EEG channels (MNE's type eeg) of the entry's dataset as MOABB loads it, from the
    first of its subjects whose files are there: the channels the BCI protocol's average
    reference is taken over (pipeline/protocol.py)."""
    pinned = entry["path"] != offline.MNE_DATA
    name = entry["moabb_dataset"]
    for number in entry.get("moabb_subjects") or offline.dataset(name).subject_list:
        try:
            _subject_files(name, Path(root), pinned, number)
        except offline.Offline:
            continue
        raw = next(iter(_subject_runs(name, Path(root), pinned, number).values()))
        return tuple(raw.ch_names[i] for i in _eeg_picks(raw))
    raise DataError(f"MOABB's {name} has no subject in {root}", fix=fetch_fix(entry, root))


def _eeg_picks(raw):
    import mne

    return mne.pick_types(raw.info, meg=False, eeg=True)


def fetch_fix(entry: dict, root: Path) -> str:
    """What fetches the entry's dataset (registry.entry_fix): MOABB's own download."""
    pinned = entry["path"] != offline.MNE_DATA
    fetch = offline.fetch_command(entry["moabb_dataset"], entry.get("moabb_subjects"),
                                  Path(root) if pinned else None)
    return f"on a login node: {fetch}; or point MNE_DATA at the folder that holds MOABB's copy"


def _raw(rec: Recording):
    if rec.problem:
        raise DataError(rec.problem, fix=_fetch(rec.dataset, rec.number, rec.folder, rec.pinned))
    runs = _subject_runs(rec.dataset, rec.folder, rec.pinned, rec.number)
    if (rec.session_name, rec.run) not in runs:
        raise DataError(f"MOABB's {rec.dataset} has no session {rec.session_name} run "
                        f"{rec.run} of subject {rec.number} in {rec.folder}",
                        fix="the files changed since they were listed; run again")
    return runs[(rec.session_name, rec.run)]


# The reader interface (datasets/base.py) --------------------------------------------------


def read_header(rec: Recording) -> RecordingHeader:
    raw = _raw(rec)
    return RecordingHeader(tuple(raw.ch_names), float(raw.info["sfreq"]), int(raw.n_times))


def read_signals(rec: Recording, channels: Sequence[str], span=None) -> Signals:
    """The named channels as float32 volts, as MOABB hands them over."""
    raw = _raw(rec)
    absent = [c for c in channels if c not in raw.ch_names]
    if absent:
        raise DataError(f"{rec.signal_path}: MOABB's {rec.dataset} has no channel "
                        f"{', '.join(absent)} (it has {', '.join(raw.ch_names)})",
                        fix="name the dataset's channels in its channel map")
    first, stop = span_within(span, raw.n_times)
    data = raw.get_data(picks=list(channels), start=first, stop=stop)
    return Signals(float(raw.info["sfreq"]), list(channels), data.astype(np.float32))


def read_events(rec: Recording) -> list[Event]:
    """One event per trial marker: onset at the start of MOABB's trial window (`interval[0]`
    after the marker), lasting the window; named by the class's event_id, then
    moabb_events."""
    import mne

    raw = _raw(rec)
    dataset = offline.dataset(rec.dataset)
    names = {code: name for name, code in dataset.event_id.items()}
    if len(mne.pick_types(raw.info, meg=False, stim=True)):
        found = mne.find_events(raw, shortest_event=0, verbose=False)
    else:
        found, _ = mne.events_from_annotations(raw, event_id=dataset.event_id, verbose=False)
    start, stop = (float(v) for v in dataset.interval)
    rename = dict(rec.events)
    sfreq = float(raw.info["sfreq"])
    return [Event(float((sample - raw.first_samp) / sfreq + start), stop - start,
                  rename.get(names[code], names[code]))
            for sample, _, code in found if code in names]
