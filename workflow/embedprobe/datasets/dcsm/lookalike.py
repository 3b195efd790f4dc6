"""A look-alike of the DCSM release (reader.py): one tp<uuid>/ folder per subject with psg.h5
(the six EEG derivations and E1-M2 under /channels/, float32 microvolts, `sample_rate` 64 Hz
by default where the real files hold 256: the look-alike stays small) and hypnogram.ids, one
`init,duration,stage` line per run of one stage (the release writes runs, not epochs), the
night's last run UNKNOWN. The folder names are uuid-like hex, whose order as text differs from
their order by numbers (the reason for `fold_order: text`).

Settings: `subjects`, `hours`, `sfreq` (the memory validation's nights are the release's
256 Hz), `seed`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from embedprobe.datasets.dcsm.reader import EEG_CHANNELS, EPOCH_SECONDS, HYPNOGRAM, PSG, STAGES
from embedprobe.datasets.synth.files import start_rewrite, with_defaults, write_manifest
from embedprobe.datasets.synth.sleep import cycling_hypnogram, stage_eeg

DEFAULTS = {"subjects": 5, "hours": 0.25, "sfreq": 64.0, "seed": 0}
UNKNOWN_EPOCHS = 2  # the unscored run at the end of each night


@dataclass(frozen=True)
class NightPlan:
    name: str  # "tp" + hex groups, as the release names its folders
    stages: np.ndarray  # per 30 s epoch, the scored ones (the UNKNOWN run follows)

    def runs(self) -> list[tuple[float, float, str]]:
        """(init, duration, stage text) of each run of one stage, then the UNKNOWN run."""
        runs, start = [], 0
        for k in range(1, len(self.stages) + 1):
            if k == len(self.stages) or self.stages[k] != self.stages[start]:
                runs.append((start * EPOCH_SECONDS, (k - start) * EPOCH_SECONDS,
                             STAGES[int(self.stages[start])]))
                start = k
        end = len(self.stages) * EPOCH_SECONDS
        return [*runs, (end, UNKNOWN_EPOCHS * EPOCH_SECONDS, "UNKNOWN")]


def _name(rng: np.random.Generator) -> str:
    digits = "".join(rng.choice(list("0123456789abcdef"), 32))
    return f"tp{digits[:8]}_{digits[8:12]}_{digits[12:16]}_{digits[16:20]}_{digits[20:]}"


def plan(settings: dict) -> list[NightPlan]:
    s = with_defaults(settings, DEFAULTS, "the DCSM look-alike")
    rng = np.random.default_rng(s["seed"])
    n = int(round(s["hours"] * 3600 / EPOCH_SECONDS))
    return [NightPlan(_name(rng), cycling_hypnogram(rng, n)) for _ in range(int(s["subjects"]))]


def write_night(folder: Path, p: NightPlan, seed: int, sfreq: float) -> list[Path]:
    import h5py

    rng = np.random.default_rng([seed, int(p.name[2:10], 16)])
    stages = np.concatenate([p.stages, [-1] * UNKNOWN_EPOCHS])
    folder.mkdir(parents=True, exist_ok=True)
    with h5py.File(folder / PSG, "w") as h5:
        h5.attrs["sample_rate"] = sfreq
        group = h5.create_group("channels")
        for label in (*EEG_CHANNELS, "E1-M2"):
            group.create_dataset(label, data=stage_eeg(rng, stages, sfreq, EPOCH_SECONDS)
                                 .astype(np.float32))
    (folder / HYPNOGRAM).write_text("".join(f"{i:g},{d:g},{s}\n" for i, d, s in p.runs()))
    return [folder / PSG, folder / HYPNOGRAM]


def write_lookalike(root: Path, settings: dict) -> list[Path]:
    root = Path(root)
    nights = plan(settings)
    s = with_defaults(settings, DEFAULTS, "the DCSM look-alike")
    start_rewrite(root, (p.name for p in nights), PSG, "psg.h5", key=lambda f: f.parent.name)
    files = [f for p in nights for f in write_night(root / p.name, p, s["seed"],
                                                     float(s["sfreq"]))]
    return [*files, write_manifest(root, files)]
