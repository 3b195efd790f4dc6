"""The TUH EEG corpora's montage conventions, shared by the TUAB and TUSZ readers.

TUH files label each electrode "EEG <electrode>-<reference>": "EEG FP1-REF" in the averaged-
reference configurations (01_tcp_ar, 03_tcp_ar_a), "EEG FP1-LE" in the linked-ears ones
(02_tcp_le, 04_tcp_le_a), with the old temporal names T3-T6 (= T7, T8, P7, P8). The "_a"
configurations lack the ear electrodes A1 and A2 (TUSZ's AAREADME.txt, v2.0.x). The 19
electrodes of the 10-20 system (SCALP) are in every configuration; the TCP montage adds A1, A2.
Each corpus keeps its files under an edf/ folder beside its AAREADME.txt (edf_folder).
"""

from __future__ import annotations

import re
from pathlib import Path

from embedprobe.core.errors import DataError

# The TCP montage's electrodes, in the order TUH files list them.
ELECTRODES = ("FP1", "FP2", "F3", "F4", "C3", "C4", "P3", "P4", "O1", "O2", "F7", "F8",
              "T3", "T4", "T5", "T6", "A1", "A2", "FZ", "CZ", "PZ")
EARS = ("A1", "A2")
SCALP = tuple(e for e in ELECTRODES if e not in EARS)
# Channel configuration folder -> the reference suffix its labels carry.
CONFIGURATIONS = {"01_tcp_ar": "REF", "02_tcp_le": "LE", "03_tcp_ar_a": "REF",
                  "04_tcp_le_a": "LE"}
EDF_FOLDER = "edf"
_LABEL = re.compile(r"^EEG (?P<electrode>[A-Z0-9]+)-(?P<reference>REF|LE)$")


def label(electrode: str, reference: str = "REF") -> str:
    """The label a TUH file gives `electrode` under `reference` ("EEG FP1-REF")."""
    return f"EEG {electrode}-{reference}"


def electrodes_of(configuration: str) -> tuple[str, ...]:
    """The montage electrodes a configuration records: the ears only where it has them."""
    return SCALP if configuration.endswith("_a") else ELECTRODES


def electrode_of(recorded: str) -> tuple[str, str] | None:
    """(electrode, reference) of a TUH electrode label, None for any other channel."""
    match = _LABEL.match(recorded)
    return (match["electrode"], match["reference"]) if match else None


def edf_folder(root: Path, corpus: str) -> Path:
    """A TUH corpus's edf/ folder: root's edf/ (root = the release's folder with AAREADME.txt),
    or root itself when it is that folder; `corpus` names the release in the message
    ("TUAB v3.0.1")."""
    root = Path(root)
    if (root / EDF_FOLDER).is_dir():
        return root / EDF_FOLDER
    if root.name == EDF_FOLDER and root.is_dir():
        return root
    raise DataError(f"{corpus.split()[0]} folder {root} has no {EDF_FOLDER}/ folder",
                    fix=f"point the dataset's path at {corpus} (the folder holding AAREADME.txt "
                        f"and {EDF_FOLDER}/), or write the look-alike (the demo_data rule)")
