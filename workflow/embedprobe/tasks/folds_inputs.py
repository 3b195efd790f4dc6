"""Row counts of one fold's parts, as the preflight formulas of window-level probes take them."""

from __future__ import annotations

import numpy as np
import pandas as pd

from embedprobe.probing.folds import fold_split


def fold_part_sizes(task, bench: dict, table: pd.DataFrame, fold: int) -> dict[str, int]:
    subjects = table["subject"].astype(str).to_numpy()
    groups = task.fold_groups(subjects, bench)
    masks = fold_split(np.array([groups[s] for s in subjects]), fold, bench["folds"])
    return {f"n_{part}": int(mask.sum()) for part, mask in masks.items()}


def probe_runtime_minutes(inputs: dict) -> int:
    """Generous: fits scale with rows x features x grid values (measured ~2 min per 1e9)."""
    work = inputs["n_train"] * inputs["dim"] * inputs["n_fits"]
    return int(np.ceil(work / 1e9 * 2 * 3)) + 10
