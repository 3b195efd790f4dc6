"""A job's dataset, resolved once: its config entry and what index, check, preflight, embed and
the window source derive from it (root, reader, labelling task, window columns, channel map,
preprocessing), so that none of them looks the entry up again on the way down."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from embedprobe.core.config import lookup
from embedprobe.datasets.registry import (
    DataStatus,
    entry_fix,
    entry_reader,
    entry_recordings,
    entry_root,
    entry_status,
    entry_unit_seconds,
    entry_window,
    require_entry_data,
)
from embedprobe.models.registry import ModelSpec, entry_model_spec
from embedprobe.pipeline.channel_maps import (
    CHANNEL_MAP_DIR,
    ChannelPlan,
    channels_at,
    entry_map_path,
    plan_at,
)
from embedprobe.pipeline.protocol import Preprocessing, entry_preprocessing

if TYPE_CHECKING:  # the tasks are imported when the labelling task is first asked for
    from embedprobe.tasks.base import Task

# The index columns every embedding store keeps beside its vectors (a task adds its own).
WINDOW_COLUMNS = ["recording", "subject", "start", "label"]


@dataclass(frozen=True, eq=False)
class DatasetContext:
    """One dataset of one job: built by `build` from (config, roots, dataset), which looks the
    entry up once (an unknown name is the registry's UsageError)."""

    name: str
    config: dict
    roots: dict
    entry: dict
    reader: ModuleType

    @classmethod
    def build(cls, config: dict, roots: dict, dataset: str) -> DatasetContext:
        entry = lookup(config, "datasets", dataset)
        return cls(dataset, config, roots, entry, entry_reader(entry))

    @cached_property
    def root(self) -> Path:
        """Where the dataset's files live (registry.dataset_root); made when first asked for,
        so that a pair ruled out before any data is read needs no data_root."""
        return entry_root(self.roots, self.entry)

    @cached_property
    def task(self) -> Task:
        """The labelling task (tasks.registry.labelling_task); resolved when first asked for,
        so that a refused `labels:` is raised where it was before (after the data checks)."""
        from embedprobe.tasks.registry import entry_labelling_task

        return entry_labelling_task(self.name, self.entry)

    @property
    def window_columns(self) -> list[str]:
        """The index columns an embedding store keeps: WINDOW_COLUMNS and the task's own."""
        return WINDOW_COLUMNS + list(self.task.stored_columns_for(self.entry))

    @property
    def unit_seconds(self) -> float:
        return entry_unit_seconds(self.entry)

    def window(self, bci_filtering: str) -> tuple[float, float]:
        """(start, length) in seconds a model embeds of each unit (registry.entry_window)."""
        return entry_window(self.entry, bci_filtering)

    @cached_property
    def _recordings(self) -> list:
        return entry_recordings(self.entry, self.root)

    def recordings(self) -> list:
        """The dataset's recordings (registry.entry_recordings), listed once: index, check and
        preflight each ask again, and the status and require_data reuse them."""
        return self._recordings

    def use_header_cache(self) -> int:
        """Load the EDF headers the dataset's last index kept (datasets/header_cache.py), so
        this job reads none of an unchanged file again; how many it kept."""
        from embedprobe.datasets.header_cache import load

        return load(self._header_cache_path()) if self.roots.get("cache_root") else 0

    def keep_headers(self) -> int:
        """Save the EDF headers this job read of the dataset's files for the later jobs."""
        from embedprobe.datasets.header_cache import save

        if not self.roots.get("cache_root"):
            return 0
        return save(self._header_cache_path(), [p for r in self.recordings() for p in r.files])

    def _header_cache_path(self) -> Path:
        from embedprobe.core.paths import output_path

        return output_path("edf_headers", self.roots, dataset=self.name)

    def _listed(self) -> list | None:
        """recordings(), or None where the folder is missing: entry_status reports that
        itself, where a reader's listing would refuse it."""
        return self.recordings() if self.root.is_dir() else None

    def status(self) -> DataStatus:
        return entry_status(self.name, self.entry, self.root, self._listed())

    def fix_for(self, status: DataStatus, invocation: list[str] | None = None) -> str:
        return entry_fix(self.config, self.name, self.entry, status, invocation)

    def require_data(self, invocation: list[str] | None = None) -> list[Path]:
        return require_entry_data(self.config, self.name, self.entry, self.root, invocation,
                                  self._listed())

    def channel_map_path(self, map_dir: Path = CHANNEL_MAP_DIR) -> Path:
        return entry_map_path(self.name, self.entry, map_dir)

    def channel_plan(self, family: str, map_dir: Path = CHANNEL_MAP_DIR) -> ChannelPlan:
        return plan_at(self.channel_map_path(map_dir), self.name, family)

    def mapped_channels(self, map_dir: Path = CHANNEL_MAP_DIR) -> tuple[str, ...]:
        return channels_at(self.channel_map_path(map_dir), self.name)

    def model_spec(self, model: str) -> ModelSpec:
        """The model's settings for this dataset (models.registry.model_spec)."""
        return entry_model_spec(model, dict(lookup(self.config, "models", model)), self.entry)

    def preprocessing(self, spec: ModelSpec) -> Preprocessing:
        return entry_preprocessing(self.config, self.name, self.entry, spec)
