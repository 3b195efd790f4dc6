"""NSRR's two XML annotation files, read and written with the standard library's ElementTree.

Every NSRR polysomnography study ships, beside each EDF, one or both of:

- `annotations-events-nsrr/<stem>-nsrr.xml`, the NSRR-translated file (the root
  `PSGAnnotation`, then `SoftwareVersion`, `EpochLength`, and `ScoredEvents`, one
  `ScoredEvent` per event with `EventType`, `EventConcept`, `Start` and `Duration` in seconds
  from the EDF's first sample, and optionally `SignalLocation`, `SpO2Nadir`, `SpO2Baseline`,
  `ClockTime`). Sleep stages are events of type `Stages|Stages`, one per run of one stage, its
  duration a whole number of epochs; concepts `Wake|0`, `Stage 1 sleep|1` ... `Stage 4 sleep|4`,
  `REM sleep|5`, `Movement|6` and `Unscored|9`. The first event is `Recording Start Time`
  (no type). Sources: NSRR's edf-editor-translator wiki ("Standardized Annotation File Format"),
  Luna's NSRR XML reference (zzz.bwh.harvard.edu/luna/ref/annotations) and its NSRR remapping
  table (zzz.bwh.harvard.edu/luna/nsrr), which lists the concepts each study spells;
- `annotations-events-profusion/<stem>-profusion.xml`, Compumedics Profusion's own export (the
  root `CMPStudyConfig`, `EpochLength`, `ScoredEvents` whose `ScoredEvent`s hold `Name`, `Start`,
  `Duration`, `Input` and optionally `LowestSpO2`, `Desaturation`, and `SleepStages`, one
  `SleepStage` code per epoch: 0 wake, 1-4, 5 REM, 9 unscored). Source: the same wiki's
  "Compumedics Annotation Format" page.

An NSRR concept is "<NSRR name>|<Profusion name>": the part after the bar is the Profusion
export's `Name` of the same event (so in every SHHS file: `Obstructive apnea|Obstructive
Apnea`), and one table, EVENTS, keyed by that name, serves both files.

Both parse into one Scoring: a stage code per epoch from the file's start (-1 unscored, with
why), and the events of the four event types read (arousals, respiratory, limb movements),
each with its start, duration and Profusion name. Edge cases, each tested:

- unscored epochs (`Unscored|9`, `Movement|6`, Profusion 9 and 6) and gaps between stage events
  are unscored: left out, counted by name;
- overlapping stage events (two scorings of one night in one file: no study of the seven ships
  that, so such a file is damaged) and stage events off the epoch grid are refused;
- an event of a type the reader does not read (body position, technician notes, the recording
  start) is left out; an unknown concept within a read type is refused by name: the EVENTS
  table says what each known one is.

Whether stages or events run past the EDF's end is the reader's business (it knows the EDF).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from embedprobe.core.errors import DataError

STAGE_TYPE = "Stages|Stages"
# NSRR stage concept -> index into STAGES (W, N1, N2, N3, REM): R&K stage 4 is N3 (AASM)
STAGE_OF_CONCEPT = {"Wake|0": 0, "Stage 1 sleep|1": 1, "Stage 2 sleep|2": 2,
                    "Stage 3 sleep|3": 3, "Stage 4 sleep|4": 3, "REM sleep|5": 4}
UNSCORED_CONCEPTS = ("Movement|6", "Unscored|9")
# Profusion's SleepStage code -> index into STAGES; 6 (movement) and 9 are unscored
STAGE_OF_CODE = {0: 0, 1: 1, 2: 2, 3: 3, 4: 3, 5: 4}
UNSCORED_CODES = {6: "Movement|6", 9: "Unscored|9"}
CONCEPT_OF_STAGE = {0: "Wake|0", 1: "Stage 1 sleep|1", 2: "Stage 2 sleep|2",
                    3: "Stage 3 sleep|3", 4: "REM sleep|5"}
CODE_OF_STAGE = {0: 0, 1: 1, 2: 2, 3: 3, 4: 5}

AROUSALS, RESPIRATORY, LIMB = "Arousals|Arousals", "Respiratory|Respiratory", \
    "Limb Movement|Limb Movement"
READ_TYPES = (AROUSALS, RESPIRATORY, LIMB)


@dataclass(frozen=True)
class EventSpec:
    """What a Profusion event name is: its NSRR name, its NSRR event type, and the kinds
    (datasets/base.py's event kinds) it is an event of (none: read and left out)."""

    nsrr_name: str
    type: str
    kinds: tuple[str, ...]


# Profusion name -> EventSpec: the concepts of Luna's NSRR remapping table (arousals of every
# cause are arousals, as the reference's sleep_arousal counts them; a RERA is a respiratory
# effort-related arousal: arousal and rera; SpO2 desaturations, artifacts and SHHS's "Unsure"
# respiratory events are no kind's and are left out).
EVENTS = {
    "Arousal ()": EventSpec("Arousal", AROUSALS, ("arousal",)),
    "Arousal (Standard)": EventSpec("Arousal", AROUSALS, ("arousal",)),
    "Arousal (STANDARD)": EventSpec("Arousal", AROUSALS, ("arousal",)),
    "Arousal (Arousal)": EventSpec("Arousal", AROUSALS, ("arousal",)),
    "Arousal (ASDA)": EventSpec("ASDA arousal", AROUSALS, ("arousal",)),
    "Arousal (ARO SPONT)": EventSpec("Spontaneous arousal", AROUSALS, ("arousal",)),
    "Arousal (ARO RES)": EventSpec("Arousal resulting from respiratory effort", AROUSALS,
                                   ("arousal",)),
    "Arousal (ARO Limb)": EventSpec("Arousal resulting from limb movement", AROUSALS,
                                    ("arousal",)),
    "Arousal (ARO PLM)": EventSpec("Arousal resulting from periodic leg movement", AROUSALS,
                                   ("arousal",)),
    "Arousal (CHESHIRE)": EventSpec("Arousal resulting from Chin EMG", AROUSALS,
                                    ("arousal",)),
    "RERA": EventSpec("Respiratory effort related arousal", RESPIRATORY, ("arousal", "rera")),
    "Obstructive Apnea": EventSpec("Obstructive apnea", RESPIRATORY, ("apnea_obstructive",)),
    "Central Apnea": EventSpec("Central apnea", RESPIRATORY, ("apnea_central",)),
    "Mixed Apnea": EventSpec("Mixed apnea", RESPIRATORY, ("apnea_mixed",)),
    "Hypopnea": EventSpec("Hypopnea", RESPIRATORY, ("hypopnea",)),
    "Periodic Breathing": EventSpec("Periodic breathing", RESPIRATORY, ("periodic_breathing",)),
    "Unsure": EventSpec("Unsure", RESPIRATORY, ()),
    "SpO2 desaturation": EventSpec("SpO2 desaturation", RESPIRATORY, ()),
    "SpO2 artifact": EventSpec("SpO2 artifact", RESPIRATORY, ()),
    "Respiratory artifact": EventSpec("Respiratory artifact", RESPIRATORY, ()),
    "Limb Movement (Left)": EventSpec("Limb movement - left", LIMB, ("limb_movement",)),
    "Limb Movement (Right)": EventSpec("Limb movement - right", LIMB, ("limb_movement",)),
    "PLM (Left)": EventSpec("Periodic leg movement - left", LIMB, ("limb_movement_periodic",)),
    "PLM (Right)": EventSpec("Periodic leg movement - right", LIMB,
                             ("limb_movement_periodic",)),
}
EVENT_KINDS = ("arousal", "apnea_obstructive", "apnea_central", "apnea_mixed", "hypopnea",
               "rera", "periodic_breathing", "limb_movement", "limb_movement_periodic")


@dataclass(frozen=True)
class Scored:
    """One scored event of a read type: seconds from the EDF's first sample, its Profusion
    name (a key of EVENTS)."""

    start: float
    duration: float
    name: str


@dataclass
class Scoring:
    """An annotation file as read: a stage per epoch (index into STAGES, -1 unscored) from the
    file's start, why each unscored epoch is, and the events of the read types by start."""

    path: Path
    epoch_seconds: float
    stages: np.ndarray  # int64 per epoch
    unscored: Counter = field(default_factory=Counter)  # concept -> epochs
    events: list[Scored] = field(default_factory=list)


def _fix(path: Path) -> str:
    return (f"download {path.name} again from NSRR (its study's polysomnography/annotations-"
            f"events-{'profusion' if path.name.endswith('-profusion.xml') else 'nsrr'}/ folder)")


def _number(path: Path, element: ET.Element, tag: str, where: str) -> float:
    text = (element.findtext(tag) or "").strip()
    try:
        return float(text)
    except ValueError:
        raise DataError(f"{path}: {where} has {tag} {text!r}, not seconds",
                        fix=_fix(path)) from None


def _root(path: Path, tag: str) -> ET.Element:
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as exc:
        raise DataError(f"{path}: not well-formed XML ({exc})", fix=_fix(path)) from None
    except OSError as exc:
        raise DataError(f"{path}: cannot be read: {exc.strerror or exc}",
                        fix="check that the file is there and readable") from exc
    if root.tag != tag:
        raise DataError(f"{path}: its root element is <{root.tag}>, not <{tag}>",
                        fix=_fix(path))
    return root


def _epoch_seconds(path: Path, root: ET.Element) -> float:
    seconds = _number(path, root, "EpochLength", "the file")
    if seconds <= 0:
        raise DataError(f"{path}: EpochLength {seconds:g}", fix=_fix(path))
    return seconds


def _unknown(path: Path, what: str, where: str, types: Iterable[str]) -> DataError:
    return DataError(f"{path}: unknown event concept {what!r} ({where})",
                     fix="the reader knows the " + ", ".join(types) + " concepts of "
                         "datasets/nsrr/annotations.py EVENTS (Luna's NSRR remapping table); "
                         f"correct {path.name}, or add the concept there with its kinds")


def read_nsrr(path: Path) -> Scoring:
    """An `-nsrr.xml` file: its stage events laid on the epoch grid, its events of the read
    types (module docstring)."""
    path = Path(path)
    root = _root(path, "PSGAnnotation")
    epoch = _epoch_seconds(path, root)
    runs: list[tuple[int, int, int | str]] = []  # (first epoch, epochs, stage or concept)
    events: list[Scored] = []
    for k, event in enumerate(root.iter("ScoredEvent")):
        kind = (event.findtext("EventType") or "").strip()
        concept = (event.findtext("EventConcept") or "").strip()
        where = f"ScoredEvent {k + 1}"
        if kind == STAGE_TYPE:
            if concept not in STAGE_OF_CONCEPT and concept not in UNSCORED_CONCEPTS:
                raise _unknown(path, concept, where, [STAGE_TYPE])
            start = _number(path, event, "Start", where)
            duration = _number(path, event, "Duration", where)
            first, count = start / epoch, duration / epoch
            if not (first.is_integer() and count.is_integer()) or count < 0:
                raise DataError(f"{path}: {where} ({concept}) spans {start:g}-"
                                f"{start + duration:g} s, not whole {epoch:g} s epochs",
                                fix=_fix(path))
            runs.append((int(first), int(count), STAGE_OF_CONCEPT.get(concept, concept)))
        elif kind in READ_TYPES:
            name = concept.split("|", 1)[1].strip() if "|" in concept else concept
            spec = EVENTS.get(name)
            if spec is None or spec.type != kind:
                raise _unknown(path, concept, f"{where}, type {kind}", READ_TYPES)
            events.append(Scored(_number(path, event, "Start", where),
                                 _number(path, event, "Duration", where), name))
    return _scoring(path, epoch, runs, events)


def read_profusion(path: Path) -> Scoring:
    """A `-profusion.xml` file: its SleepStages codes and its ScoredEvents of known names."""
    path = Path(path)
    root = _root(path, "CMPStudyConfig")
    epoch = _epoch_seconds(path, root)
    runs: list[tuple[int, int, int | str]] = []
    for k, element in enumerate(root.iter("SleepStage")):
        text = (element.text or "").strip()
        code = int(text) if text.isdigit() else None
        if code not in STAGE_OF_CODE and code not in UNSCORED_CODES:
            raise _unknown(path, text, f"SleepStage {k + 1}", ["SleepStages"])
        runs.append((k, 1, STAGE_OF_CODE[code] if code in STAGE_OF_CODE
                     else UNSCORED_CODES[code]))
    events = []
    for k, event in enumerate(root.iter("ScoredEvent")):
        name = (event.findtext("Name") or "").strip()
        where = f"ScoredEvent {k + 1}"
        if name not in EVENTS:
            raise _unknown(path, name, where, READ_TYPES)
        events.append(Scored(_number(path, event, "Start", where),
                             _number(path, event, "Duration", where), name))
    return _scoring(path, epoch, runs, events)


def _scoring(path: Path, epoch: float, runs, events: list[Scored]) -> Scoring:
    n = max((first + count for first, count, _ in runs), default=0)
    stages = np.full(n, -1, np.int64)
    owner = np.full(n, -1, np.int64)  # which run scored each epoch: overlaps are refused
    unscored: Counter = Counter()
    for k, (first, count, stage) in enumerate(sorted(runs, key=lambda r: r[0])):
        taken = owner[first:first + count]
        if (taken >= 0).any():
            raise DataError(f"{path}: two stage events score the epoch at "
                            f"{(first + int(np.flatnonzero(taken >= 0)[0])) * epoch:g} s (two "
                            "scorings in one file?)", fix=_fix(path))
        owner[first:first + count] = k
        if isinstance(stage, str):
            unscored[stage] += count
        else:
            stages[first:first + count] = stage
    gaps = int((owner < 0).sum())
    if gaps:
        unscored["no stage event"] += gaps
    return Scoring(path, epoch, stages, unscored, sorted(events, key=lambda e: e.start))


# --- writing (the look-alikes: the same library that reads them) ------------------------------


def stage_runs(stages: Sequence[int], epoch: float) -> list[tuple[float, float, str]]:
    """(start, duration, concept) of each run of one stage code (-1: `Unscored|9`)."""
    runs: list[tuple[float, float, str]] = []
    codes = [int(s) for s in stages]
    first = 0
    for k in range(1, len(codes) + 1):
        if k == len(codes) or codes[k] != codes[first]:
            concept = CONCEPT_OF_STAGE.get(codes[first], UNSCORED_CONCEPTS[1])
            runs.append((first * epoch, (k - first) * epoch, concept))
            first = k
    return runs


def _indent(root: ET.Element) -> ET.ElementTree:
    tree = ET.ElementTree(root)
    ET.indent(tree)
    return tree


def _text(parent: ET.Element, tag: str, value) -> None:
    ET.SubElement(parent, tag).text = value if isinstance(value, str) else f"{value:g}"


def write_nsrr(path: Path, epoch: float, seconds: float, stages: Sequence[int],
               events: Sequence[Scored], stage_events: Sequence | None = None) -> Path:
    """An `-nsrr.xml` file: the recording start, `events` by their NSRR concept, then the
    stage runs of `stages` (or `stage_events` as given: (start, duration, concept))."""
    root = ET.Element("PSGAnnotation")
    _text(root, "SoftwareVersion", "Compumedics")
    _text(root, "EpochLength", epoch)
    scored = ET.SubElement(root, "ScoredEvents")
    start = ET.SubElement(scored, "ScoredEvent")
    ET.SubElement(start, "EventType")
    _text(start, "EventConcept", "Recording Start Time")
    _text(start, "Start", 0.0)
    _text(start, "Duration", seconds)
    _text(start, "ClockTime", "00.00.00 22.00.00")
    for event in events:
        spec = EVENTS[event.name]
        element = ET.SubElement(scored, "ScoredEvent")
        _text(element, "EventType", spec.type)
        _text(element, "EventConcept", f"{spec.nsrr_name}|{event.name}")
        _text(element, "Start", event.start)
        _text(element, "Duration", event.duration)
        _text(element, "SignalLocation", "EEG" if spec.type == AROUSALS else
              "ABDO RES" if spec.type == RESPIRATORY else "Left Leg")
    for first, duration, concept in (stage_events if stage_events is not None
                                     else stage_runs(stages, epoch)):
        element = ET.SubElement(scored, "ScoredEvent")
        _text(element, "EventType", STAGE_TYPE)
        _text(element, "EventConcept", concept)
        _text(element, "Start", first)
        _text(element, "Duration", duration)
    _indent(root).write(path, encoding="UTF-8", xml_declaration=True)
    return path


def write_profusion(path: Path, epoch: float, stages: Sequence[int],
                    events: Sequence[Scored], movement: Sequence[int] = ()) -> Path:
    """A `-profusion.xml` file: `events` by name, one SleepStage code per epoch (-1: 9; the
    epochs of `movement`: 6)."""
    root = ET.Element("CMPStudyConfig")
    _text(root, "EpochLength", epoch)
    scored = ET.SubElement(root, "ScoredEvents")
    for event in events:
        element = ET.SubElement(scored, "ScoredEvent")
        _text(element, "Name", event.name)
        _text(element, "Start", event.start)
        _text(element, "Duration", event.duration)
        _text(element, "Input", "ABDO RES")
    sleep = ET.SubElement(root, "SleepStages")
    for k, stage in enumerate(stages):
        code = 6 if k in movement else CODE_OF_STAGE.get(int(stage), 9)
        _text(sleep, "SleepStage", str(code))
    _indent(root).write(path, encoding="UTF-8", xml_declaration=True)
    return path
