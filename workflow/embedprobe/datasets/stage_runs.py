"""Scored stage runs (onset, duration, stage) laid on 30 s windows, the rule the reference suite
applies to its HMC, DCSM and MASS annotations (kkontras/NeuroAtlas dataio/dcsm.py
read_dcsm_hypnogram, dataio/mass.py read_mass_annotations): a label per second from the first
stage annotation's onset (seconds no run covers, and unscored runs, are none), then one window
per whole 30 s; a window is labelled where every second of it has one stage, else left out.
MASS's SS2, SS4 and SS5, scored in 20 s epochs, so keep a 30 s window only where the two 20 s
epochs it spans agree.

Also the stage-label lookup the EDF+ annotation readers share: a text of the reader's table is
a stage (or unscored), an unknown stage-like text ("Sleep stage X") is refused, anything else
(lights off, comments, events) is not a stage.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from embedprobe.core.errors import DataError

UNSCORED = -1  # a run that is scored "unknown" ("Sleep stage ?", DCSM's UNKNOWN)
_STAGE_LIKE = re.compile(r"^(sleep[ _-]?)?stage\b", re.IGNORECASE)


def stage_of(text: str, table: Mapping[str, int], source: Path) -> int | None:
    """The stage index (or UNSCORED) of an annotation text by the reader's `table`; None for a
    text that is not a stage. An unknown stage-like text is a DataError naming `source`."""
    key = text.strip()
    if key in table:
        return table[key]
    if _STAGE_LIKE.match(key):
        raise DataError(f"{source}: unknown sleep stage label {key!r}",
                        fix=f"its stages are {', '.join(repr(k) for k in table)}; correct or "
                            f"remove this annotation in {source}")
    return None


def windows_from_runs(runs: Sequence[tuple[float, float, int]], epoch_seconds: float,
                      counts: Counter | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(starts in seconds, labels) of the whole windows of `epoch_seconds` laid from the first
    run's onset over `runs` (onset s, duration s, stage or UNSCORED, in any order) that one
    stage covers entirely; `counts` gathers the windows left out ("unscored": unscored or not
    covered, "mixed stages": two stages in one window)."""
    if not runs:
        return np.zeros(0, float), np.zeros(0, np.int64)
    ordered = sorted(runs)
    origin = ordered[0][0]
    end = max(onset + duration for onset, duration, _ in ordered)
    per_second = np.full(int(round(end - origin)), UNSCORED, np.int64)
    for onset, duration, stage in ordered:
        first = int(round(onset - origin))
        per_second[first:first + int(round(duration))] = stage
    step = int(round(epoch_seconds))
    n = len(per_second) // step
    grid = per_second[:n * step].reshape(n, step)
    same = grid.min(axis=1) == grid.max(axis=1)
    keep = same & (grid[:, 0] != UNSCORED)
    if counts is not None:
        if (~same).any():
            counts[("unscored", "mixed stages")] += int((~same).sum())
        if (same & ~keep).any():
            counts[("unscored", "unscored or not scored")] += int((same & ~keep).sum())
    index = np.flatnonzero(keep)
    return origin + index * float(epoch_seconds), grid[index, 0]


def cut_to_signal(starts_s: np.ndarray, labels: np.ndarray, sfreq: float, n_samples: int,
                  epoch_seconds: float, counts: Counter, signal: Path, source: Path
                  ) -> tuple[np.ndarray, np.ndarray]:
    """The windows as sample starts within a signal of `n_samples`: those before its start are
    counted ("outside the recording"), those past its end cut with the index's warning
    (base.count_cut)."""
    from embedprobe.datasets.base import count_cut

    epoch = round(epoch_seconds * sfreq)
    starts = np.round(np.asarray(starts_s, float) * sfreq).astype(np.int64)
    before, past = starts < 0, starts + epoch > n_samples
    if before.any():
        counts[("outside the recording", "")] += int(before.sum())
    if past.any():
        count_cut(counts, signal, source, int(past.sum()), n_samples / sfreq,
                  float(starts_s[past][-1]) + epoch_seconds, epoch_seconds)
    inside = ~before & ~past
    return starts[inside], np.asarray(labels, np.int64)[inside]
