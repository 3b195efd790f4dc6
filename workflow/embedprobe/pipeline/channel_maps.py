"""Per-dataset channel maps: which recorded channels a model family gets, under which names."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from embedprobe.core.config import PROJECT_ROOT, lookup
from embedprobe.core.errors import UsageError

CHANNEL_MAP_DIR = PROJECT_ROOT / "config" / "channel_maps"


@dataclass(frozen=True)
class ChannelPlan:
    state: str  # "applied", "labels as recorded", "ruled out"
    recorded: tuple[str, ...] = ()  # channel names as in the files, in model order
    model_names: tuple[str, ...] = ()  # the names the model receives
    reason: str = ""

    @property
    def ruled_out(self) -> bool:
        return self.state == "ruled out"


def channel_map_path(config: dict, dataset: str, map_dir: Path = CHANNEL_MAP_DIR) -> Path:
    """The dataset's map: `channel_map:` in its config entry (datasets of one format share a
    map), else the file named after the dataset."""
    return Path(map_dir) / f"{lookup(config, 'datasets', dataset).get('channel_map', dataset)}.yaml"


def channel_plan(config: dict, dataset: str, family: str,
                 map_dir: Path = CHANNEL_MAP_DIR) -> ChannelPlan:
    """Read the dataset's map; a family without an entry is refused before any data is read."""
    path = channel_map_path(config, dataset, map_dir)
    if not path.is_file():
        raise UsageError(
            f"dataset '{dataset}' has no channel map ({path} does not exist)",
            fix=f"write {path} with an entry for '{family}' (rename, labels_as_recorded or "
                f"skip), or name an existing map with channel_map: in config/datasets.yaml",
        )
    entries = yaml.safe_load(path.read_text()) or {}
    if family not in entries:
        raise UsageError(
            f"{path} has no entry for model family '{family}'",
            fix=f"add '{family}:' with rename, labels_as_recorded or skip (and its reason)",
        )
    entry = entries[family]
    if "skip" in entry:
        return ChannelPlan("ruled out", reason=str(entry["skip"]))
    if "rename" in entry:
        pairs = entry["rename"]
        return ChannelPlan("applied", tuple(pairs), tuple(pairs.values()))
    if "labels_as_recorded" in entry:
        names = tuple(entry["labels_as_recorded"])
        return ChannelPlan("labels as recorded", names, names)
    raise UsageError(
        f"{path}: entry '{family}' needs one of rename, labels_as_recorded, skip",
        fix="see config/channel_maps/sleep_edf_expanded.yaml for the form",
    )


def mapped_channels(config: dict, dataset: str, map_dir: Path = CHANNEL_MAP_DIR) -> tuple[str, ...]:
    """Every recorded channel some model family receives (first-seen order): the channels the
    data-quality scan looks at."""
    path = channel_map_path(config, dataset, map_dir)
    entries = (yaml.safe_load(path.read_text()) or {}) if path.is_file() else {}
    seen: dict[str, None] = {}
    for family in entries:
        seen.update(dict.fromkeys(channel_plan(config, dataset, family, map_dir).recorded))
    return tuple(seen)
