"""DREAMER (Katsigiannis & Ramzan 2018; Zenodo record 546113, access on request): one file,
`DREAMER.mat`, MATLAB 5 (scipy.io reads it).

It holds one variable `DREAMER`, a 1 x 1 struct with fields Data (1 x 23 cell, one struct per
subject), EEG_SamplingRate (128), ECG_SamplingRate (256), EEG_Electrodes (1 x 14 cell: AF3,
F7, F3, FC5, T7, P7, O1, O2, P8, T8, FC6, F4, F8, AF4: the Emotiv EPOC's), noOfSubjects (23),
noOfVideoSequences (18), Disclaimer, Provider, Version, Acknowledgement. Each subject's struct:
Age, Gender (texts), EEG and ECG (structs of two 18 x 1 cells, `baseline`: the 61 s before
each clip, `stimuli`: the EEG while the clip played, samples x 14 at 128 Hz, 65-393 s; ECG
samples x 2 at 256 Hz), ScoreValence, ScoreArousal, ScoreDominance (18 x 1, self-assessed
1-5 after each clip). The EEG values are the headset's microvolts with its DC offset (~4200),
which the reader removes (each channel's mean over the clip).

A recording is one subject's EEG during one clip: id "S01_clip01", subject "S01" (the
struct's position in Data, 1-based), session "01" (the clip). Its one event covers the
clip's stimulus EEG, described by the entry's `dreamer_scale` (valence or arousal) binarised
at 3 as the reference does (its DreamerValence/ArousalBenchmarkDataModule: "binarised at 3
on the 1-5 self-report scale"): "high_valence" for a score of 3 or more, else
"low_valence" (arousal alike). The baselines and the ECG are not read. The labelling task
(bci_cognitive) tiles each clip into 4 s windows, as the reference cuts EEGMAT and DREAMER.

Neither MNE nor MOABB reads this file: MNE reads no MATLAB struct of recordings (its
read_raw_eeglab wants an EEGLAB set), and MOABB has no DREAMER class (nor braindecode). The
whole file is parsed once per process and its stimulus EEG kept as float32: by arithmetic from
the clips' lengths (about 3,600 s a subject), some 0.6 GB for the real file, after a parse that
holds all of it in float64 (baselines and ECG too, near 2 GB); not measured on the real file.
So the format reads in threads, one copy per embed job (registry.FORMATS).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from embedprobe.core.errors import DataError, UsageError
from embedprobe.datasets.base import Event, RecordingHeader, Signals, span_within
from embedprobe.datasets.mat import SubjectMat, channel_columns, file_key, loadmat
from embedprobe.datasets.walk import find_paths, require_folder

FORMAT = "dreamer"
FILE = "DREAMER.mat"
VARIABLE = "DREAMER"
SFREQ = 128.0
ELECTRODES = ("AF3", "F7", "F3", "FC5", "T7", "P7", "O1", "O2", "P8", "T8", "FC6", "F4", "F8",
              "AF4")
CHANNELS = ELECTRODES  # every channel read (the ECG is not): the average reference's
SUBJECTS = 23
CLIPS = 18
SCALES = {"valence": "ScoreValence", "arousal": "ScoreArousal"}  # dreamer_scale -> field
HIGH_FROM = 3  # a score of 3 or more is "high" (the reference binarises at 3)
READER_SETTINGS = ("dreamer_scale",)
ZENODO = "https://zenodo.org/records/546113"
_FIX_DOWNLOAD = f"download DREAMER.mat again from its Zenodo record ({ZENODO}, access on request)"


@dataclass(frozen=True)
class Recording(SubjectMat):
    """One subject's clip of the file: id "S01_clip01", subject "S01", session "01"."""

    scale: str  # "valence" or "arousal": the entry's dreamer_scale

    @property
    def subject(self) -> str:
        return self.recording.split("_")[0]

    @property
    def session(self) -> str:
        return self.recording.removeprefix(f"{self.subject}_clip")

    @property
    def index(self) -> tuple[int, int]:
        """(subject, clip), 0-based."""
        return int(self.subject[1:]) - 1, int(self.session) - 1


@dataclass(frozen=True)
class Dreamer:
    """The parsed file: per subject, its clips' stimulus EEG and its scores."""

    electrodes: tuple[str, ...]
    sfreq: float
    stimuli: tuple[tuple[np.ndarray, ...], ...]  # [subject][clip]: (samples, 14) float32 uV,
    # each channel's mean over the clip removed
    scores: dict[str, np.ndarray]  # "valence"/"arousal" -> (subjects, clips) int


def _texts(value) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    return tuple(str(v).strip() for v in np.atleast_1d(np.asarray(value, dtype=object)).ravel())


def _cells(value) -> list:
    """A MATLAB cell (an object array of any shape) or one element, as a list."""
    if isinstance(value, np.ndarray) and value.dtype == object:
        return list(value.ravel())
    return [value] if isinstance(value, dict) else list(np.atleast_1d(value))


def _field(struct, name: str, where: str, path: Path):
    if not isinstance(struct, dict) or name not in struct:
        held = ", ".join(struct) if isinstance(struct, dict) else type(struct).__name__
        raise DataError(f"{path}: {where} has no field {name} (it holds {held})",
                        fix=_FIX_DOWNLOAD)
    return struct[name]


def _parse(content: dict, path: Path) -> Dreamer:
    if VARIABLE not in content:
        held = ", ".join(sorted(k for k in content if not k.startswith("__"))) or "no variable"
        raise DataError(f"{path}: no variable {VARIABLE} (the struct of the DREAMER release); "
                        f"it holds {held}", fix=_FIX_DOWNLOAD)
    top = content[VARIABLE]
    electrodes = _texts(_field(top, "EEG_Electrodes", VARIABLE, path))
    if electrodes != ELECTRODES:
        raise DataError(f"{path}: EEG_Electrodes is {', '.join(electrodes)}; the DREAMER "
                        f"release's are {', '.join(ELECTRODES)}", fix=_FIX_DOWNLOAD)
    sfreq = float(np.asarray(_field(top, "EEG_SamplingRate", VARIABLE, path)).ravel()[0])
    subjects = _cells(_field(top, "Data", VARIABLE, path))
    stimuli, scores = [], {scale: [] for scale in SCALES}
    for number, subject in enumerate(subjects, start=1):
        where = f"{VARIABLE}.Data{{{number}}}"
        eeg = _field(subject, "EEG", where, path)
        clips = _cells(_field(eeg, "stimuli", f"{where}.EEG", path))
        arrays = []
        for k, clip in enumerate(clips, start=1):
            clip = np.asarray(clip)
            if clip.ndim != 2 or clip.shape[1] != len(ELECTRODES) or clip.shape[0] < 1:
                raise DataError(f"{path}: {where}.EEG.stimuli{{{k}}} has shape {clip.shape}, "
                                f"expected samples x {len(ELECTRODES)} (one column per "
                                "electrode)", fix=f"{_FIX_DOWNLOAD}; not transposed")
            # the DC offset away (each channel's mean over the clip), in float64 first
            arrays.append((clip - clip.mean(axis=0)).astype(np.float32))
        stimuli.append(tuple(arrays))
        for scale, name in SCALES.items():
            values = np.asarray(_field(subject, name, where, path), dtype=float).ravel()
            if len(values) != len(clips) or not np.isin(values, [1, 2, 3, 4, 5]).all():
                raise DataError(f"{path}: {where}.{name} is {values.tolist()}; one score 1-5 "
                                f"per clip ({len(clips)})", fix=_FIX_DOWNLOAD)
            scores[scale].append(values.astype(np.int64))
    if not stimuli:
        raise DataError(f"{path}: {VARIABLE}.Data holds no subject", fix=_FIX_DOWNLOAD)
    return Dreamer(electrodes, sfreq, tuple(stimuli),
                   {scale: np.array(v, dtype=object) for scale, v in scores.items()})


@functools.lru_cache(maxsize=1)
def _load(path: str, size: int, mtime_ns: int) -> Dreamer:
    return _parse(loadmat(path, _FIX_DOWNLOAD, simplify_cells=True), Path(path))


def read_file(path: Path) -> Dreamer:
    return _load(*file_key(path, _FIX_DOWNLOAD))


def find_recordings(root: Path, dreamer_scale: str | None = None) -> list[Recording]:
    """One recording per subject and clip of the `DREAMER.mat` under root, sorted by id; the
    entry's `dreamer_scale` (valence or arousal) names the labels."""
    if dreamer_scale not in SCALES:
        raise UsageError(f"a dreamer dataset's entry sets dreamer_scale: {', '.join(SCALES)} "
                         f"(got {dreamer_scale!r})",
                         fix="set `dreamer_scale: valence` or `dreamer_scale: arousal` on the "
                             "entry in config/datasets.yaml")
    root = require_folder(root, "DREAMER",
                          fix=f"put {FILE} there (Zenodo: {ZENODO}, access on request), or let "
                              "the demo_data rule write a look-alike")
    found = find_paths(root, FILE)
    if len(found) > 1:
        raise DataError(f"{FILE} is there {len(found)} times: {', '.join(map(str, found))}",
                        fix="keep one copy under the data root")
    if not found:
        return []
    data = read_file(found[0])
    return [Recording(f"S{s:02d}_clip{c:02d}", found[0], dreamer_scale)
            for s, clips in enumerate(data.stimuli, start=1)
            for c in range(1, len(clips) + 1)]


def fetch_fix(entry: dict, root: Path) -> str:
    """Where the entry's file comes from (registry.entry_fix): access is granted on request."""
    return (f"ask for access to DREAMER at {ZENODO} (the authors grant it by e-mail), then "
            f"put its {FILE} in {root}; dreamer_valence and dreamer_arousal read the same file")


def _clip(rec: Recording) -> np.ndarray:
    subject, clip = rec.index
    return read_file(rec.mat).stimuli[subject][clip]


# The reader interface (datasets/base.py) --------------------------------------------------


def read_header(rec: Recording) -> RecordingHeader:
    data = read_file(rec.mat)
    return RecordingHeader(data.electrodes, data.sfreq, len(_clip(rec)))


def read_signals(rec: Recording, channels: Sequence[str], span=None) -> Signals:
    """The named channels as float32 volts (the file holds microvolts), without the headset's
    DC offset: each channel's mean over the clip is removed (what any of the protocol's
    high-passes, 0.1 Hz and up, removes too)."""
    data = read_file(rec.mat)
    clip = _clip(rec)
    columns = channel_columns(rec.mat, data.electrodes, channels)
    first, stop = span_within(span, len(clip))
    return Signals(data.sfreq, list(channels),
                   (clip[first:stop, columns].T * np.float32(1e-6)).astype(np.float32))


def label(score: int, scale: str) -> str:
    return f"{'high' if score >= HIGH_FROM else 'low'}_{scale}"


def read_events(rec: Recording) -> list[Event]:
    """One event over the clip's stimulus EEG: its score on the entry's scale, binarised."""
    data = read_file(rec.mat)
    subject, clip = rec.index
    score = int(data.scores[rec.scale][subject][clip])
    return [Event(0.0, len(_clip(rec)) / data.sfreq, label(score, rec.scale))]
