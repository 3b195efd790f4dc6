"""Per-dataset channel maps: which recorded channels a model family gets, under which names, and
(for maps that derive channels) what each model input is made of.

Entry forms, one per family in config/channel_maps/<dataset>.yaml:
  rename: {recorded: model name}   labels_as_recorded: [recorded, ...]   skip: <reason>
  slots: {slot: source}            for families that read channels by slot (SLOT_LAYOUTS)
  derive: {model name: source}     for the others, when their inputs are derived
A source is a recorded channel as is ("EEG Fpz-Cz"), a bipolar pair derived from two recorded
electrodes (["EEG Fp1", "EEG F7"]: Fp1 - F7), one electrode standing in for a pair
({approx: "C3"}), or the first of several channels a recording has ({first_of: ["BTEleft SD",
"BTEright SD"]}: a channel whose name differs between recordings, resolved per recording by
`recorded_in`). Slots without a source are zero. Any entry may carry a `note:`.

A map may instead be another map's entries under this dataset's channel names:
  like: siena
  electrodes: {"EEG Fp1": FP1, ...}   every recorded channel the other map reads, renamed
(TUSZ's reader names the electrodes Siena's map derives its 20 bipolar pairs from otherwise).

Kept free of torch: reader processes import this module (pipeline/window_recipe.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
import yaml

from embedprobe.core.config import PROJECT_ROOT, lookup
from embedprobe.core.errors import DataError, UsageError
from embedprobe.models import eegnet  # its slots; no torch (reader processes import this)

CHANNEL_MAP_DIR = PROJECT_ROOT / "config" / "channel_maps"

# BIOT's pretrained checkpoints learned one channel token per position for the 16 bipolar
# derivations of the TCP double banana, in this order (BIOT's own CHB-MIT/TUH preprocessing;
# braindecode's BIOT_CHANNEL_ORDER[:16]; the reference suite's BIOT wrapper, _BIOT_SLOT_ORDER).
BIOT_SLOTS = (
    "FP1-F7", "F7-T7", "T7-P7", "P7-O1",
    "FP2-F8", "F8-T8", "T8-P8", "P8-O2",
    "FP1-F3", "F3-C3", "C3-P3", "P3-O1",
    "FP2-F4", "F4-C4", "C4-P4", "P4-O2",
)
# Families that read channels by slot: the model gets every slot, a slot without a source zero
# (the reference's BIOT and EEGNet wrappers alike).
SLOT_LAYOUTS: dict[str, tuple[str, ...]] = {"biot": BIOT_SLOTS,
                                              "eegnetv4": eegnet.SLOTS}

DIRECT, DERIVED, APPROX, FIRST_OF = "direct", "derived", "approx", "first of"
APPLIED, AS_RECORDED, SLOTS, DERIVED_STATE, RULED_OUT = (
    "applied", "labels as recorded", "slots", "derived", "ruled out")
FORMS = ("rename", "labels_as_recorded", "slots", "derive", "skip")
SOURCE_FORMS = ('a recorded channel ("EEG Fpz-Cz"), a pair ["EEG Fp1", "EEG F7"] (Fp1 - F7), '
                '{approx: "EEG C3"} or {first_of: ["BTEleft SD", "BTEright SD"]}')


@dataclass(frozen=True)
class Source:
    """What one model input is made of: `plus` as recorded, or `plus` - `minus`."""

    position: int  # the model input it feeds
    kind: str  # DIRECT (a recorded derivation), DERIVED (plus - minus), APPROX (one electrode),
    # FIRST_OF (the first of `alternatives` a recording has; `plus` is the first listed)
    plus: str
    minus: str | None = None
    alternatives: tuple[str, ...] = ()


@dataclass(frozen=True)
class ChannelPlan:
    state: str  # "applied", "labels as recorded", "slots", "derived", "ruled out"
    recorded: tuple[str, ...] = ()  # the recorded channels read, unique, in read order
    model_names: tuple[str, ...] = ()  # the name of every model input, zero slots included
    reason: str = ""
    sources: tuple[Source, ...] = ()  # slots / derive: the filled inputs, in input order
    note: str = ""
    # per recorded channel, its alternatives where a first_of source names it (else empty):
    # recorded_in picks the one each recording has
    choices: tuple[tuple[str, ...], ...] = ()

    @property
    def ruled_out(self) -> bool:
        return self.state == RULED_OUT

    @property
    def derives(self) -> bool:
        """The model inputs are made from the recorded channels, not the channels themselves."""
        return bool(self.sources)

    @property
    def summary(self) -> str:
        """One line for tables and logs: how the model inputs are filled."""
        if not self.derives:
            return f"{self.state}: {len(self.model_names)} channels"
        kinds = [source.kind for source in self.sources]
        counts = ", ".join(f"{kinds.count(kind)} {kind}"
                           for kind in (DIRECT, DERIVED, APPROX, FIRST_OF) if kind in kinds)
        zero = len(self.model_names) - len(self.sources)
        return (f"{self.state}: {len(self.sources)} of {len(self.model_names)} inputs filled "
                f"({counts})" + (f", {zero} zero" if zero else ""))


# ------------------------------------------------------------------------------ reading maps


def channel_map_path(config: dict, dataset: str, map_dir: Path = CHANNEL_MAP_DIR) -> Path:
    """The dataset's map: `channel_map:` in its config entry (datasets of one format share a
    map), else the file named after the dataset."""
    return entry_map_path(dataset, lookup(config, "datasets", dataset), map_dir)


def entry_map_path(dataset: str, entry: dict, map_dir: Path = CHANNEL_MAP_DIR) -> Path:
    """channel_map_path of a dataset's config entry."""
    return Path(map_dir) / f"{entry.get('channel_map', dataset)}.yaml"


def forms_for(family: str) -> str:
    """The entry forms that fit the family, for fix lines."""
    if family in SLOT_LAYOUTS:
        return "slots or skip"
    return "rename, labels_as_recorded, derive or skip"


def channel_plan(config: dict, dataset: str, family: str,
                 map_dir: Path = CHANNEL_MAP_DIR) -> ChannelPlan:
    """Read the dataset's map; a family without an entry is refused before any data is read."""
    return plan_at(channel_map_path(config, dataset, map_dir), dataset, family)


def plan_at(path: Path, dataset: str, family: str) -> ChannelPlan:
    """channel_plan from the dataset's map at `path` (channel_map_path)."""
    if not path.is_file():
        raise UsageError(
            f"dataset '{dataset}' has no channel map ({path} does not exist)",
            fix=f"write {path} with an entry for '{family}' ({forms_for(family)}), or name an "
                f"existing map with channel_map: in config/datasets.yaml",
        )
    entries = map_entries(path)
    if family not in entries:
        raise UsageError(
            f"{path} has no entry for model family '{family}'",
            fix=f"add '{family}:' with {forms_for(family)} (and its reason)",
        )
    return plan_from_entry(path, family, entries[family])


@cache  # the plan asks for every (dataset, family) pair: each map is parsed once per version
def _parsed(path: Path, _mtime_ns: int, _size: int) -> dict:
    return yaml.safe_load(path.read_text()) or {}


def _version(path: Path) -> tuple[int, int]:
    stat = path.stat()
    return stat.st_mtime_ns, stat.st_size


def _read(path: Path) -> dict:
    return _parsed(path, *_version(path))


def map_entries(path: Path) -> dict:
    """The map at `path`, family -> entry; a `like:` map's entries are the other map's with
    every recorded channel renamed by its `electrodes:` (the module's docstring)."""
    raw = _read(path)
    if "like" not in raw:
        return raw
    base = path.with_name(f"{raw['like']}.yaml")
    return _like_entries(path, base, _version(path), _version(base) if base.is_file() else None)


@cache  # plan_at asks once per family: resolved and checked once per version of both maps
def _like_entries(path: Path, base: Path, _version: tuple, _base_version: tuple | None) -> dict:
    raw = _read(path)
    names = raw.get("electrodes")
    if (not base.is_file() or "like" in _read(base) or not isinstance(names, dict)
            or set(raw) != {"like", "electrodes"}):
        raise UsageError(f"{path}: like: {raw['like']} needs an existing map that is not a "
                         "like: map itself, and electrodes: {its channel: this dataset's}, "
                         "nothing else",
                         fix=f"name a map in {path.parent} and rename its channels (a family "
                             "of its own needs a map of its own)")
    entries = {family: _renamed(entry, names) for family, entry in _read(base).items()}
    plans = {family: plan_from_entry(path, family, e) for family, e in entries.items()}
    missing = sorted(set(channels_of(plans)) - set(names.values()))
    if missing:
        raise UsageError(f"{path}: electrodes: does not rename {', '.join(missing)}, which "
                         f"{base.name} reads", fix=f"add each to electrodes: in {path.name}")
    return entries


def _renamed(entry, names: dict):
    """One entry with every recorded channel renamed (model names and notes kept)."""
    if not isinstance(entry, dict):
        return entry

    def source(value):
        if isinstance(value, str):
            return names.get(value, value)
        if isinstance(value, list):
            return [source(v) for v in value]
        if isinstance(value, dict):
            return {k: source(v) for k, v in value.items()}
        return value

    out = dict(entry)
    if isinstance(entry.get("rename"), dict):
        out["rename"] = {source(k): v for k, v in entry["rename"].items()}
    for form in ("labels_as_recorded", "slots", "derive"):
        if form in entry:
            out[form] = source(entry[form])
    return out


def plan_from_entry(path: Path, family: str, entry) -> ChannelPlan:
    """One family's entry of the map at `path` as a plan."""
    forms = [form for form in FORMS if isinstance(entry, dict) and form in entry]
    if len(forms) != 1:
        raise UsageError(
            f"{path}: entry '{family}' needs exactly one of {', '.join(FORMS)}",
            fix=f"give '{family}' one of {forms_for(family)}; see "
                f"config/channel_maps/sleep_edf_expanded.yaml for the forms",
        )
    form, note = forms[0], str(entry.get("note", ""))
    if form == "skip":
        return ChannelPlan(RULED_OUT, reason=str(entry["skip"]), note=note)
    if (form == "slots") != (family in SLOT_LAYOUTS):
        raise UsageError(*_wrong_form(path, family, form))
    if form == "slots":
        return _slot_plan(path, family, entry["slots"], note)
    if form == "derive":
        return _derived_plan(path, family, entry["derive"], note)
    if form == "rename":
        pairs = entry["rename"]
        return ChannelPlan(APPLIED, tuple(pairs), tuple(pairs.values()), note=note)
    names = tuple(entry["labels_as_recorded"])
    return ChannelPlan(AS_RECORDED, names, names, note=note)


def _wrong_form(path: Path, family: str, form: str) -> tuple[str, str]:
    if family in SLOT_LAYOUTS:
        return (f"{path}: '{family}' reads channels by slot, so `{form}:` would put channel i "
                f"into slot i whatever it is",
                f"use slots: {{slot: source}} with {family}'s slots "
                f"({', '.join(SLOT_LAYOUTS[family])}); a source is {SOURCE_FORMS}")
    return (f"{path}: '{family}' reads channels by name or order, not by slot",
            "use rename, labels_as_recorded or derive (slots: is for "
            f"{', '.join(SLOT_LAYOUTS)})")


def _slot_plan(path: Path, family: str, slots, note: str) -> ChannelPlan:
    """Every slot of the family's layout is a model input; slots not named stay zero."""
    layout = SLOT_LAYOUTS[family]
    if not isinstance(slots, dict) or not slots:
        raise UsageError(f"{path}: '{family}' slots: needs a mapping slot -> source",
                         fix=f"e.g. slots: {{{layout[0]}: [\"EEG Fp1\", \"EEG F7\"]}}")
    unknown = [name for name in slots if name not in layout]
    if unknown:
        raise UsageError(
            f"{path}: '{family}' has no slot {', '.join(map(str, unknown))}",
            fix=f"use {family}'s slot names: {', '.join(layout)}",
        )
    sources = tuple(_source(path, family, name, layout.index(name), slots[name])
                    for name in layout if name in slots)
    recorded, choices = _read_order(path, family, sources)
    return ChannelPlan(SLOTS, recorded, layout, sources=sources, note=note, choices=choices)


def _derived_plan(path: Path, family: str, inputs, note: str) -> ChannelPlan:
    """The model gets exactly the listed inputs, in this order, under these names."""
    if not isinstance(inputs, dict) or not inputs:
        raise UsageError(f"{path}: '{family}' derive: needs a mapping model name -> source",
                         fix='e.g. derive: {FP1-F7: ["EEG Fp1", "EEG F7"]}')
    sources = tuple(_source(path, family, name, position, value)
                    for position, (name, value) in enumerate(inputs.items()))
    recorded, choices = _read_order(path, family, sources)
    return ChannelPlan(DERIVED_STATE, recorded, tuple(map(str, inputs)), sources=sources,
                       note=note, choices=choices)


def _source(path: Path, family: str, name, position: int, value) -> Source:
    """One input's source, in one of the three forms."""
    if isinstance(value, str):
        return Source(position, DIRECT, value)
    if isinstance(value, dict) and set(value) == {"approx"} and isinstance(value["approx"], str):
        return Source(position, APPROX, value["approx"])
    if isinstance(value, dict) and set(value) == {"first_of"}:
        names = value["first_of"]
        if (isinstance(names, list) and len(names) >= 2
                and all(isinstance(n, str) for n in names) and len(set(names)) == len(names)):
            return Source(position, FIRST_OF, names[0], alternatives=tuple(names))
    if (isinstance(value, list) and len(value) == 2 and all(isinstance(v, str) for v in value)
            and value[0] != value[1]):
        return Source(position, DERIVED, value[0], value[1])
    raise UsageError(f"{path}: '{family}' input {name}: {value!r} is not a source",
                     fix=f"give {name} {SOURCE_FORMS}")


def _read_order(path: Path, family: str, sources: tuple[Source, ...]
                ) -> tuple[tuple[str, ...], tuple[tuple[str, ...], ...]]:
    """The recorded channels the sources use, each once, in the order first used, and each
    one's alternatives (all empty where no source is a first_of). A recorded row is one
    channel in every recording: a name that is also another source's alternative is refused."""
    seen: dict[str, tuple[str, ...]] = {}
    for source in sources:
        used = [(source.plus, source.alternatives)] + (
            [(source.minus, ())] if source.minus is not None else [])
        for name, alternatives in used:
            if seen.setdefault(name, alternatives) != alternatives:
                raise UsageError(f"{path}: '{family}' reads {name} both as itself and as one "
                                 "of a first_of",
                                 fix="name the channel one way in this family's entry")
    every = [n for name, group in seen.items() for n in (group or (name,))]
    twice = sorted({n for n in every if every.count(n) > 1})
    if twice:
        raise UsageError(f"{path}: '{family}' names {', '.join(twice)} in more than one source",
                         fix="give each recorded channel one source (a first_of lists it once)")
    choices = tuple(seen.values()) if any(seen.values()) else ()
    return tuple(seen), choices


def recorded_in(plan: ChannelPlan, channels, where: Path) -> tuple[str, ...]:
    """plan.recorded as one recording names them: each first_of group's first alternative
    among `channels` (the recording's, read_header), the other channels as they are. A
    recording with none of a group is refused, naming `where` (its signal file)."""
    if not plan.choices:
        return plan.recorded
    present = set(channels)
    names = []
    for name, alternatives in zip(plan.recorded, plan.choices, strict=True):
        if not alternatives:
            names.append(name)
            continue
        found = next((a for a in alternatives if a in present), None)
        if found is None:
            raise DataError(f"{where}: has none of {', '.join(alternatives)} (the channel map's "
                            f"first_of; its channels: {', '.join(channels)})",
                            fix="add the recording's name for that channel to the first_of list "
                                "in the dataset's channel map, or leave the recording out")
        names.append(found)
    return tuple(names)


def every_channel(plan: ChannelPlan) -> tuple[str, ...]:
    """Every recorded channel the plan may read in some recording: first_of alternatives
    included (the data-quality scan looks at those a recording has)."""
    if not plan.choices:
        return plan.recorded
    return tuple(dict.fromkeys(n for name, group in zip(plan.recorded, plan.choices, strict=True)
                               for n in (group or (name,))))


def mapped_channels(config: dict, dataset: str, map_dir: Path = CHANNEL_MAP_DIR) -> tuple[str, ...]:
    """Every recorded channel some model family receives (first-seen order): the channels the
    data-quality scan looks at."""
    return channels_at(channel_map_path(config, dataset, map_dir), dataset)


def channels_at(path: Path, dataset: str) -> tuple[str, ...]:
    """mapped_channels from the dataset's map at `path` (channel_map_path)."""
    if not path.is_file():
        return ()
    return channels_of({f: plan_at(path, dataset, f) for f in map_entries(path)})


def channels_of(plans: dict[str, ChannelPlan]) -> tuple[str, ...]:
    """Every recorded channel of a map's plans (family -> plan), first-seen order."""
    seen: dict[str, None] = {}
    for plan in plans.values():
        seen.update(dict.fromkeys(every_channel(plan)))
    return tuple(seen)


# --------------------------------------------------------------------- making the model inputs


@cache
def _rows(plan: ChannelPlan) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row of `plus` per source, sources with a `minus`, row of each such `minus`) in the
    recorded array: worked out once per plan."""
    row = {name: i for i, name in enumerate(plan.recorded)}
    plus = np.array([row[s.plus] for s in plan.sources], np.intp)
    pairs = np.array([i for i, s in enumerate(plan.sources) if s.minus is not None], np.intp)
    minus = np.array([row[plan.sources[i].minus] for i in pairs], np.intp)
    return plus, pairs, minus


def derive_inputs(plan: ChannelPlan, data: np.ndarray) -> np.ndarray:
    """data (..., len(plan.recorded), samples), the recorded channels in plan.recorded's order
    -> (..., filled inputs, samples): each source's row as is or plus - minus, in input order.
    Plans that derive nothing get `data` back unchanged (no copy)."""
    if not plan.derives:
        return data
    if data.shape[-2] != len(plan.recorded):
        raise ValueError(f"{data.shape[-2]} recorded rows for the plan's "
                         f"{len(plan.recorded)} recorded channels")
    plus, pairs, minus = _rows(plan)
    out = np.take(data, plus, axis=-2)
    if len(pairs):
        out[..., pairs, :] -= np.take(data, minus, axis=-2)
    return out


def input_positions(plan: ChannelPlan) -> np.ndarray:
    """The model input each row of derive_inputs feeds (the others stay zero); for plans that
    derive nothing, every recorded channel feeds the input of its own position."""
    if not plan.derives:
        return np.arange(len(plan.recorded))
    return np.array([source.position for source in plan.sources], np.intp)
