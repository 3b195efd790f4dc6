"""Brain Invaders 2013a (Vaineau et al. 2019; Zenodo 2669187) in its distributed layout, as
MOABB's BI2013a reads it after unzipping.

    <root>/subject_01/meta.yml            runs: a list of {filename: <name>.gdf,
                                          experimental_condition: adaptive | nonadaptive,
                                          type: training | online}
    <root>/subject_01/Session1/<name>.mat one per run: variable `data`, samples x 17 double:
    ...                                   16 EEG columns (Fp1, Fp2, F5, AFz, F6, T7, Cz, T8, P7,
    <root>/subject_01/Session8/...        P3, Pz, P4, P8, O1, Oz, O2) then the stimulation
                                          column (OpenViBE codes: 33285 Target flash, 33286
                                          NonTarget flash; other codes are other markers)

Subjects 1-7 have eight sessions (subjectNN_sessionMM.zip), subjects 8-24 one (subjectNN.zip);
each session has a non-adaptive and an adaptive run, each a training then an online phase.
MOABB's BI2013a() (NonAdaptive=True, Adaptive=False, Training=True, Online=False) reads, per
session, the file the meta names for the non-adaptive training phase: 80 Target and 400
NonTarget flashes (40 repetitions of 12 flashes, 2 of them Target, 1:5). The rate is 512 Hz
(not in the files). MOABB takes the 16 EEG columns as volts as they are (it scales none of
BI2013a's columns, unlike BI2014a/2015a's microvolts): so does this reader.

`run_types` (the dataset entry's setting) picks the phases, MOABB's four flags as names:
nonadaptive_training (default, MOABB's default), nonadaptive_online, adaptive_training,
adaptive_online. A recording is one run file: id "subject_01_Session1_<name>", subject
"subject_01", session "Session1_<condition>_<type>". A session folder without a file the meta
names gets a placeholder recording whose `problem` names it.

Events: one per flash, where the stimulation column steps up to 33285 or 33286 (MOABB finds
them with mne.find_events, consecutive="increasing", and keeps its event_id
{"Target": 33285, "NonTarget": 33286}): onset = that 0-based sample / 512 s, description
"Target" or "NonTarget", duration 1.0 s (MOABB's interval [0, 1]).

MOABB itself takes no folder argument: BI2013a.data_path asks its downloader for each of the
subject's zips (Zenodo's record/2669187/files/ URLs) in its cache,
<MNE_DATASETS_BRAININVADERS2013_PATH or MNE_DATA>/MNE-braininvaders2013-data/zenodo/2669187/
subjectNN_sessionMM.zip (all eight for subjects 1-7) or subjectNN.zip, downloads a missing one, and
unzips each whose subject_NN/SessionM folder is missing there, copying the zip's top folder
(subjectNN_sessionMM/ with meta.yml and SessionM/) into zenodo/2669187/subject_NN/: the layout read
here. A folder unzipped elsewhere is not looked at. Cross-checked offline with moabb 1.7.2
(tests/datasets/test_bi2013a.py, EMBEDPROBE_TRY_MOABB=1; MOABB_DOWNLOAD_PROVIDER=upstream, sockets
refused): from eight zips of the look-alike's subject_01, get_data unzipped and read sessions
"0"-"7", run "2" (run_3, the non-adaptive training phase); its stim-channel events (RawToEvents) and
annotations are this reader's 24 flashes (4 Target) per session, same onsets and classes.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from embedprobe.core.errors import DataError, UsageError
from embedprobe.datasets.base import Event, RecordingHeader, Signals, one_each, span_within
from embedprobe.datasets.mat import channel_columns, file_key, loadmat
from embedprobe.datasets.walk import find_paths, require_folder

FORMAT = "bi2013a"
READER_SETTINGS = ("run_types",)  # dataset entry keys passed to find_recordings
CHANNELS = ("Fp1", "Fp2", "F5", "AFz", "F6", "T7", "Cz", "T8", "P7", "P3", "Pz", "P4", "P8",
            "O1", "Oz", "O2")
SFREQ = 512.0  # not in the files: MOABB sets it
CODES = {33285: "Target", 33286: "NonTarget"}  # OpenViBE's OVTK_StimulationId_(Non)Target
EPOCH_SECONDS = 1.0  # MOABB's interval [0, 1] after each flash onset
RUN_TYPES = ("nonadaptive_training", "nonadaptive_online", "adaptive_training",
             "adaptive_online")
_SUBJECT = re.compile(r"^subject_(\d{2})$")
_SESSION = re.compile(r"^Session(\d+)$")
_FIX_DOWNLOAD = ("unzip the subject's files again (Zenodo record 2669187: subjectNN.zip or "
                 "subjectNN_sessionMM.zip)")


@dataclass(frozen=True)
class Recording:
    recording: str  # "subject_01_Session1_run_3"
    mat: Path
    subject: str  # "subject_01"
    session_folder: str  # "Session1"
    run_type: str  # "nonadaptive_training"
    present: bool = True

    # The reader interface's names (datasets/base.py)
    @property
    def session(self) -> str:
        return f"{self.session_folder}_{self.run_type}"

    @property
    def signal_path(self) -> Path:
        return self.mat

    @property
    def files(self) -> tuple[Path, ...]:
        return (self.mat,) if self.present else ()

    @property
    def problem(self) -> str:
        return "" if self.present else (f"{self.session_folder}/{self.mat.name} ({self.subject}, "
                                        f"{self.run_type.replace('_', ' ')}) is missing")


def check_run_types(run_types: Sequence[str]) -> tuple[str, ...]:
    chosen = tuple(t for t in RUN_TYPES if t in set(run_types))
    if not chosen or set(run_types) - set(RUN_TYPES):
        raise UsageError(f"run_types {list(run_types)}: Brain Invaders 2013a has "
                         f"{', '.join(RUN_TYPES)}",
                         fix="use run_types: [nonadaptive_training] (MOABB's default) or others "
                             "of those")
    return chosen


def read_meta(folder: Path) -> dict[str, str]:
    """run type -> the .mat name the subject's meta.yml gives it."""
    import yaml

    path = folder / "meta.yml"
    if not path.is_file():
        raise DataError(f"{folder}: no meta.yml (it names each session's run files and their "
                        "condition and phase)", fix=_FIX_DOWNLOAD)
    try:
        meta = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise DataError(f"{path}: not readable YAML ({exc})", fix=_FIX_DOWNLOAD) from exc
    runs = meta.get("runs") if isinstance(meta, dict) else None
    if not isinstance(runs, list) or not runs:
        raise DataError(f"{path}: no `runs` list (filename, experimental_condition, type)",
                        fix=_FIX_DOWNLOAD)
    names = {}
    for k, run in enumerate(runs, start=1):
        if not isinstance(run, dict) or not {"filename", "experimental_condition",
                                             "type"} <= set(run):
            raise DataError(f"{path}: run {k} lacks filename, experimental_condition or type "
                            f"({run!r})", fix=_FIX_DOWNLOAD)
        kind = f"{str(run['experimental_condition']).lower()}_{str(run['type']).lower()}"
        if kind not in RUN_TYPES:
            raise DataError(f"{path}: run {k} is {kind!r}, not one of {', '.join(RUN_TYPES)}",
                            fix=_FIX_DOWNLOAD)
        names[kind] = str(run["filename"]).replace(".gdf", ".mat")  # as MOABB
    return names


def find_recordings(root: Path, run_types: Sequence[str] = ("nonadaptive_training",)
                    ) -> list[Recording]:
    """One recording per chosen run of every session folder of every subject_NN under root,
    sorted by id."""
    root = Path(root)
    wanted = check_run_types(run_types)
    require_folder(root, "Brain Invaders 2013a",
                   fix="unzip subject01_session01.zip ... subject24.zip there (Zenodo "
                       "record 2669187), or let the demo_data rule write a look-alike")
    subjects = one_each(sorted(p for p in find_paths(root, "subject_*") if p.is_dir()),
                        lambda f: f.name if _SUBJECT.match(f.name) else None)
    recordings = []
    for subject, folder in sorted(subjects.items()):
        names = read_meta(folder)
        sessions = sorted((p for p in folder.iterdir() if p.is_dir() and _SESSION.match(p.name)),
                          key=lambda p: int(_SESSION.match(p.name)[1]))
        if not sessions:
            raise DataError(f"{folder}: no Session1 ... folder (each holds a session's run "
                            "files)", fix=_FIX_DOWNLOAD)
        for session in sessions:
            for kind in wanted:
                if kind not in names:
                    raise DataError(f"{folder / 'meta.yml'}: names no {kind.replace('_', ' ')} "
                                    "run", fix=f"{_FIX_DOWNLOAD}; or choose other run_types")
                mat = session / names[kind]
                recordings.append(Recording(f"{subject}_{session.name}_{mat.stem}", mat,
                                            subject, session.name, kind, mat.is_file()))
    return sorted(recordings, key=lambda r: r.recording)


def _parse(content: dict, path: Path) -> np.ndarray:
    if "data" not in content:
        held = ", ".join(sorted(k for k in content if not k.startswith("__"))) or "no variable"
        raise DataError(f"{path}: no variable `data` (samples x 17: 16 EEG, then the "
                        f"stimulations); it holds {held}", fix=_FIX_DOWNLOAD)
    data = np.asarray(content["data"])
    if data.ndim != 2 or not np.issubdtype(data.dtype, np.number):
        raise DataError(f"{path}: `data` has shape {data.shape} ({data.dtype}), expected "
                        "samples x 17 numbers", fix=_FIX_DOWNLOAD)
    if data.shape[1] == len(CHANNELS):
        raise DataError(f"{path}: `data` has {data.shape[1]} columns, the EEG only: the 17th, "
                        "the stimulation column with the trial markers (33285 Target, 33286 "
                        "NonTarget), is missing", fix=_FIX_DOWNLOAD)
    if data.shape[1] != len(CHANNELS) + 1:
        raise DataError(f"{path}: `data` has shape {data.shape}, expected samples x 17 (16 EEG "
                        f"then the stimulations; {data.shape[0]} x {data.shape[1]} may be "
                        "transposed)", fix=_FIX_DOWNLOAD)
    if not np.isin(data[:, -1], list(CODES)).any():
        raise DataError(f"{path}: its stimulation column (the 17th) holds no trial marker "
                        "(33285 Target, 33286 NonTarget flash): no flash can be labelled",
                        fix=f"{_FIX_DOWNLOAD}; a copy converted elsewhere may have dropped the "
                            "markers")
    return data


@functools.lru_cache(maxsize=2)
def _load(path: str, size: int, mtime_ns: int) -> np.ndarray:
    return _parse(loadmat(path, _FIX_DOWNLOAD), Path(path))


def read_data(rec: Recording) -> np.ndarray:
    """The run's `data`, samples x 17."""
    if not rec.present:
        raise DataError(rec.problem, fix=_FIX_DOWNLOAD)
    return _load(*file_key(rec.mat, _FIX_DOWNLOAD))


# The reader interface (datasets/base.py) --------------------------------------------------


def read_header(rec: Recording) -> RecordingHeader:
    return RecordingHeader(CHANNELS, SFREQ, read_data(rec).shape[0])


def read_signals(rec: Recording, channels: Sequence[str], span=None) -> Signals:
    """The named EEG channels as float32 volts (the files' values, as MOABB takes them)."""
    columns = channel_columns(rec.mat, CHANNELS, channels)
    data = read_data(rec)
    first, stop = span_within(span, len(data))
    return Signals(SFREQ, list(channels), data[first:stop, columns].T.astype(np.float32))


def read_events(rec: Recording) -> list[Event]:
    """One event per flash: "Target" or "NonTarget" at its onset, lasting 1.0 s."""
    stim = np.rint(read_data(rec)[:, -1]).astype(np.int64)
    previous = np.concatenate([[0], stim[:-1]])
    steps = np.flatnonzero((stim > previous) & np.isin(stim, list(CODES)))
    return [Event(float(k / SFREQ), EPOCH_SECONDS, CODES[int(stim[k])]) for k in steps]
