"""Stage files of one code per line per 30 s epoch (ISRUC-Sleep's `<n>_1.txt`, UCDDB's
`ucddbNNN_stage.txt`): read, every code checked, and no shorter than the recording."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

import numpy as np

from embedprobe.core.errors import DataError


def read_stage_codes(path: Path, n_epochs: int, recording: str, codes: Collection[int],
                     codes_text: str, source: str) -> np.ndarray:
    """The codes of the stage file of `recording` (the signal file's name), one per line (blank
    lines and a DOS end-of-file character only at the end); refuses a code not in `codes`
    (`codes_text` lists them in the fix) and a file shorter than the recording's `n_epochs`.
    `source` names where the file comes from (the fix of an unreadable file)."""
    try:
        lines = path.read_text(encoding="latin-1").rstrip("\x1a \t\r\n").splitlines()
    except OSError as exc:
        raise DataError(f"{path}: cannot read the stage file ({exc})",
                        fix=f"put the stage file of {recording} from {source} there") from exc
    found = np.empty(len(lines), np.int64)
    for i, line in enumerate(lines):
        text = line.strip()
        if not (text.isdigit() and int(text) in codes):
            raise DataError(f"{path}: line {i + 1} holds {text!r}, not a stage code",
                            fix=f"{source} stage files hold one code per line: {codes_text}; "
                                f"correct line {i + 1} of {path.name}")
        found[i] = int(text)
    if len(found) < n_epochs:
        raise DataError(f"{path}: {len(found)} stage codes for the {n_epochs} epochs of 30 s "
                        f"of {recording}",
                        fix=f"use the stage file that came with {recording} (one line per "
                            "30 s epoch of the whole recording); download both again")
    return found
