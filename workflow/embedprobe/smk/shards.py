"""How many embed jobs (shards) each dataset's stores are made of (`embed.shards`), for the
rules: a dataset of one shard has the embed rule write its store, one of several has the
embed_shard rule write each shard and embed_join join them (pipeline/store_shards.py).
"""

from __future__ import annotations

import re

from embedprobe.core.errors import UsageError
from embedprobe.core.paths import output_path


def shard_counts(config: dict) -> dict[str, int]:
    """Every dataset's shard count: `embed.shards` as one number, or per dataset (others 1)."""
    shards = config["embed"]["shards"]
    if not isinstance(shards, dict):
        return dict.fromkeys(config["datasets"], int(shards))
    unknown = sorted(set(shards) - set(config["datasets"]))
    if unknown:
        raise UsageError(f"embed.shards names datasets that are not in the config: "
                         f"{', '.join(unknown)}",
                         fix="name datasets of config/datasets.yaml (`embedprobe list datasets`)")
    return {name: int(shards[name]) if name in shards else 1 for name in config["datasets"]}


def datasets_pattern(config: dict, sharded: bool) -> str:
    """A wildcard constraint admitting the datasets whose stores are (sharded) or are not
    joined from shards; with none, a pattern nothing matches (an empty one would admit all)."""
    names = [name for name, n in shard_counts(config).items() if (n > 1) == sharded]
    return "|".join(re.escape(n) for n in sorted(names)) or "(?!)"


def shard_files(config: dict, roots: dict, dataset: str, model: str) -> list[str]:
    """The shard files of a (dataset, model) store, in row order: embed_join's input. The count
    is in their names: a changed count writes new files, never taking the old ones for them."""
    shards = shard_counts(config)[dataset]
    return [str(output_path("embedding_shard", roots, dataset=dataset, model=model,
                            shard=k, shards=shards)) for k in range(shards)]
