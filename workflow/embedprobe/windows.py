"""The window index: one row per labelled window of every recording."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from .config import lookup
from .datasets.registry import dataset_root, reader_for

INDEX_COLUMNS = ["recording", "subject", "night", "start", "label", "sfreq"]


def build_index(config: dict, roots: dict, dataset: str) -> pd.DataFrame:
    """Read every recording's labels (headers and annotations only, no signals)."""
    entry = lookup(config, "datasets", dataset)
    reader = reader_for(config, dataset)
    rows = []
    for rec in reader.find_recordings(dataset_root(config, roots, dataset)):
        if rec.hypnogram is None and config.get("allow_partial"):
            print(f"warning: skipping {rec.psg} (no hypnogram)", file=sys.stderr)
            continue
        starts, labels, sfreq = reader.read_labels(rec, entry.get("trim_wake_minutes", 30))
        rows.append(
            pd.DataFrame(
                {
                    "recording": rec.recording,
                    "subject": rec.subject,
                    "night": rec.night,
                    "start": starts,
                    "label": labels,
                    "sfreq": sfreq,
                }
            )
        )
    return pd.concat(rows, ignore_index=True)[INDEX_COLUMNS]


def write_index(table: pd.DataFrame, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    table.to_csv(tmp, sep="\t", index=False)
    tmp.replace(path)


def read_index(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, sep="\t", dtype={"recording": str, "subject": str})
