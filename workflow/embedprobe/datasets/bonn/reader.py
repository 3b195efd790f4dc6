"""The Bonn University EEG epilepsy dataset (Andrzejak et al., Phys. Rev. E 64, 061907, 2001).

Five sets of 100 single-channel segments, each 23.6 s: 4097 samples at 173.61 Hz (12-bit,
band-passed 0.53-40 Hz), cut from longer recordings after visual artifact removal:

    Z (paper's set A)  surface EEG, 5 healthy volunteers, awake, eyes open
    O (set B)          the same volunteers, eyes closed
    N (set C)          intracranial, 5 epilepsy patients, seizure-free, hippocampal formation of
                       the hemisphere opposite the epileptogenic zone
    F (set D)          the same patients, seizure-free, within the epileptogenic zone
    S (set E)          the same patients, during seizures (ictal)

The university's download page (www.ukbonn.de/epileptologie/.../downloads/) offers one zip per
set (z.zip, o.zip, n.zip, f.zip, s.zip; earlier Z.zip ... on epileptologie-bonn.de). Each holds
the set's 100 files at its top level, so each is unpacked into its own folder (MNE-Features'
seizure example lists the files right in the folder it unpacks a zip into); the usual layout,
the Kaggle mirror's and the reference suite's (kkontras/NeuroAtlas, its cohorts/bonn/cohort.yaml
and epilepsy/bonn_preprocessor.py), is one folder per set named by its letter:

    <root>/Z/Z001.txt ... Z100.txt      <root>/N/N001.TXT ... N100.TXT  (n.zip: upper case)
    <root>/O/O001.txt ... O100.txt      <root>/F/F001.txt ... F100.txt
    <root>/S/S001.txt ... S100.txt

Each file is plain ASCII, one integer sample (microvolts) per line, no header (CRLF line ends
in the distributed files). The set folders may sit deeper under root (an archive's top folder)
and, as the reference accepts, be named by the letter or by the paper's set (A or setA for Z,
..., E or setE for S), in any case; the extension's case is not checked either.

A recording is one clip: id "Z001", its set `set` ("Z") also its session. The corpus names no
subjects (which clips come from which of the 5 volunteers or patients is not distributed), so
each clip is its own subject, and folds go over clips, stratified on the class, as the
reference does (its adapters/bonn.py): a volunteer's or patient's clips can fall in train and
test. The recording-level label is the reference's default label mode, binary_s_vs_rest:
ictal (S) against non-ictal (Z, O, N, F).

The one channel is named FZ, as the reference's reader names it (dataio/bonn.py): a neutral
midline 10-20 name that lets the families that place channels by name take it. It is nominal:
the surface sets were selected from all the scalp channels, the others are depth electrodes.

Refused (a DataError naming the file): a clip that is not 4097 samples, a line that is not one
finite number, a clip-like name whose letter is not Z, O, N, F or S (or whose number is not
001-100), a clip outside a folder of its own set, a clip there twice. Marked incomplete (its
`problem`; refused unless allow_partial): a gap in a set's numbering (that clip's file is
missing), and a set folder that holds no clips. A set that is not there at all is not an error
here: the dataset's `expected_recordings` (500) finds it missing.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from embedprobe.core.errors import DataError
from embedprobe.datasets.base import Event, RecordingHeader, Signals, span_within
from embedprobe.datasets.walk import find_paths, require_folder

FORMAT = "bonn"
SFREQ = 173.61
N_SAMPLES = 4097
CLIPS_PER_SET = 100
SETS = ("Z", "O", "N", "F", "S")
PAPER_SET = {"Z": "A", "O": "B", "N": "C", "F": "D", "S": "E"}  # Andrzejak et al. 2001
EXTENSION = {"Z": ".txt", "O": ".txt", "N": ".TXT", "F": ".txt", "S": ".txt"}  # as distributed
DESCRIPTIONS = {
    "Z": "surface, healthy, eyes open", "O": "surface, healthy, eyes closed",
    "N": "intracranial, interictal, hippocampal formation opposite the epileptogenic zone",
    "F": "intracranial, interictal, epileptogenic zone", "S": "intracranial, ictal"}
EEG_CHANNELS = ("FZ",)  # nominal (the reference's label): one unnamed channel
CLASSES = ("non_ictal", "ictal")  # the reference's binary_s_vs_rest
ICTAL_SETS = frozenset("S")
UV = 1e-6
_CLIP = re.compile(r"^(?P<letter>[a-z])(?P<number>\d{3})\.txt$", re.IGNORECASE)
_FOLDER_SET = {alias.casefold(): letter for letter in SETS
               for alias in (letter, PAPER_SET[letter], f"set{PAPER_SET[letter]}")}
_FIX_DOWNLOAD = ("replace it with the file from the set's zip (Bonn University's epileptology "
                 "download page, Andrzejak et al. 2001)")


def _fix_place(letter: str) -> str:
    return (f"put set {letter}'s clips in a folder named {letter} (or {PAPER_SET[letter]}, "
            f"set{PAPER_SET[letter]}), as unpacked from {letter.lower()}.zip")


@dataclass(frozen=True)
class Recording:
    recording: str  # "Z001"
    path: Path  # the clip's text file (not there for an incomplete recording)
    set: str  # "Z", "O", "N", "F" or "S"
    number: int  # 1-100
    problem: str = ""  # why the clip is incomplete; "" when its file is there

    # The reader interface's names (datasets/base.py)
    @property
    def subject(self) -> str:
        return self.recording  # no subject ids in the corpus: each clip is its own

    @property
    def session(self) -> str:
        return self.set

    @property
    def signal_path(self) -> Path:
        return self.path

    @property
    def files(self) -> tuple[Path, ...]:
        return () if self.problem else (self.path,)


def folder_set(folder: Path) -> str | None:
    """The set a folder holds by its name ("Z", "z", "A", "setA" -> "Z"); None for others."""
    return _FOLDER_SET.get(folder.name.casefold())


def clip_name(letter: str, number: int) -> str:
    return f"{letter}{number:03d}{EXTENSION[letter]}"


def _clip_of(path: Path) -> tuple[str, int] | None:
    """(set, number) of a file named like a clip; None for other text files outside set
    folders (a readme); a refusal for anything else."""
    match = _CLIP.match(path.name)
    in_set = folder_set(path.parent)
    if match is None:
        if in_set is None:
            return None
        raise DataError(f"{path}: not a Bonn clip name (set {in_set}'s folder holds "
                        f"{in_set}001{EXTENSION[in_set]} ... {in_set}100{EXTENSION[in_set]})",
                        fix="remove it from the set folder")
    letter, number = match["letter"].upper(), int(match["number"])
    if letter not in SETS:
        raise DataError(f"{path}: set letter {match['letter']} is not one of "
                        f"{', '.join(SETS)}",
                        fix="keep the distributed names Z001.txt ... S100.txt (the paper's sets "
                            "A-E are the files' Z, O, N, F, S); remove or rename this file")
    if not 1 <= number <= CLIPS_PER_SET:
        raise DataError(f"{path}: clip number {match['number']}: a set holds clips "
                        f"001-{CLIPS_PER_SET}", fix="keep the distributed names; remove it")
    if in_set != letter:
        where = (f"in the folder of set {in_set} ({path.parent.name})" if in_set
                 else f"in {path.parent.name}/, which is not a set folder")
        raise DataError(f"{path}: a clip of set {letter} {where}", fix=_fix_place(letter))
    return letter, number


def find_recordings(root: Path) -> list[Recording]:
    """Every clip under root, sorted by id; a gap in a set's numbering, or a set folder without
    clips, gives an incomplete recording (its `problem` names the missing file)."""
    root = require_folder(root, "Bonn",
                          fix="unpack z.zip, o.zip, n.zip, f.zip and s.zip (Bonn University's "
                              "epileptology downloads) into Z/, O/, N/, F/, S/ there, or write "
                              "the look-alike (the demo_data rule)")
    clips: dict[str, Recording] = {}
    for path in sorted(p for p in find_paths(root, "*") if p.suffix.lower() == ".txt"
                       and p.is_file()):
        found = _clip_of(path)
        if found is None:
            continue
        letter, number = found
        rec_id = f"{letter}{number:03d}"
        if rec_id in clips:
            raise DataError(f"clip {rec_id} is there twice: {clips[rec_id].path} and {path}",
                            fix="keep one copy under the data root")
        clips[rec_id] = Recording(rec_id, path, letter, number)
    for rec in _gaps(clips) + _empty_set_folders(root, clips):
        clips.setdefault(rec.recording, rec)
    return [clips[k] for k in sorted(clips)]


def _gaps(clips: dict[str, Recording]) -> list[Recording]:
    """A placeholder for each clip missing below a set's highest number."""
    out = []
    for letter in SETS:
        numbers = {r.number: r.path.parent for r in clips.values() if r.set == letter}
        if not numbers:
            continue
        top, folder = max(numbers), numbers[max(numbers)]
        for number in sorted(set(range(1, top)) - set(numbers)):
            name = clip_name(letter, number)
            out.append(Recording(f"{letter}{number:03d}", folder / name, letter, number,
                                 f"{name} is missing from {folder} (it holds clips up to "
                                 f"{letter}{top:03d})"))
    return out


def _empty_set_folders(root: Path, clips: dict[str, Recording]) -> list[Recording]:
    """A placeholder (the set's first clip) for a set folder that holds no clip at all, when no
    other folder holds that set's clips: an unpacking that failed."""
    have = {r.set for r in clips.values()}
    out = []
    for folder in sorted(p for p in find_paths(root, "*") if p.is_dir()):
        letter = folder_set(folder)
        if letter is None or letter in have or any(folder.iterdir()):
            continue
        name = clip_name(letter, 1)
        out.append(Recording(f"{letter}001", folder / name, letter, 1,
                             f"set folder {folder} holds no clips ({name} ... are missing)"))
        have.add(letter)
    return out


def _refuse_incomplete(rec: Recording) -> None:
    if rec.problem:
        raise DataError(f"{rec.recording}: {rec.problem}",
                        fix=f"put {rec.path.name} from {rec.set.lower()}.zip in "
                            f"{rec.path.parent} (or allow_partial=true to leave it out)")


@functools.lru_cache(maxsize=8)
def _parse(path: str, size: int, mtime_ns: int) -> np.ndarray:
    """A clip's samples in microvolts (float64), checked line by line (kept for the next call:
    header, scan and signals read one clip after another)."""
    raw = Path(path).read_bytes()
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not a plain ASCII text file (byte {exc.start} is "
                        f"{raw[exc.start]:#04x})", fix=_FIX_DOWNLOAD) from exc
    lines = [line.strip() for line in text.splitlines()]
    while lines and not lines[-1]:  # a final line end (or blank lines) after the last sample
        lines.pop()
    try:
        values = np.array(lines, dtype=np.float64) if lines else np.zeros(0)
    except ValueError:
        values = None
    if values is None or not np.isfinite(values).all():
        number, line = _first_bad_line(lines)
        raise DataError(f"{path}, line {number}: {line[:40]!r} is not a number (a Bonn clip "
                        "holds one sample per line)", fix=_FIX_DOWNLOAD)
    if len(values) != N_SAMPLES:
        raise DataError(f"{path}: {len(values)} samples, a Bonn clip has {N_SAMPLES} (23.6 s "
                        f"at {SFREQ} Hz)", fix=f"{_FIX_DOWNLOAD}: a cut or joined file cannot "
                                              "be used")
    return values


def _first_bad_line(lines: list[str]) -> tuple[int, str]:
    for number, line in enumerate(lines, start=1):
        try:
            if np.isfinite(float(line)):
                continue
        except ValueError:
            pass
        return number, line
    raise AssertionError("no bad line")  # only called when numpy refused one


def read_clip(rec: Recording) -> np.ndarray:
    """The clip's 4097 samples in microvolts, as written in its file."""
    _refuse_incomplete(rec)
    try:
        stat = rec.path.stat()
    except OSError as exc:
        raise DataError(f"{rec.path}: cannot read it ({exc})", fix=_FIX_DOWNLOAD) from exc
    return _parse(str(rec.path), stat.st_size, stat.st_mtime_ns)


# The reader interface (datasets/base.py) --------------------------------------------------


def read_header(rec: Recording) -> RecordingHeader:
    """FZ at 173.61 Hz; the file is read (and checked) to know its length."""
    return RecordingHeader(EEG_CHANNELS, SFREQ, len(read_clip(rec)))


def read_signals(rec: Recording, channels: Sequence[str], span=None) -> Signals:
    """The clip as float32 volts (its one channel, as often as asked)."""
    missing = [c for c in channels if c not in EEG_CHANNELS]
    if missing:
        raise DataError(f"{rec.path}: no channel {', '.join(missing)}; a Bonn clip has one, "
                        f"{EEG_CHANNELS[0]}",
                        fix="choose channels this file has (config/channel_maps/bonn.yaml)")
    clip = read_clip(rec)
    first, stop = span_within(span, len(clip))
    data = np.tile(clip[first:stop] * UV, (len(channels), 1)).astype(np.float32)
    return Signals(SFREQ, list(channels), data)


def read_events(rec: Recording) -> list[Event]:
    """None: a clip's label is its set (recording_label)."""
    return []


def recording_label(rec: Recording) -> str:
    """ictal for set S, non_ictal for Z, O, N and F (the reference's binary_s_vs_rest)."""
    return CLASSES[1] if rec.set in ICTAL_SETS else CLASSES[0]
