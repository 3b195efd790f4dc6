"""A recording kept as one EDF file plus a text listing of its folder (CHB-MIT, Siena).

The listing (CHB-MIT's chbNN-summary.txt, Siena's Seizures-list-PNxx.txt) holds the seizures
of every file of one patient; the readers name it in their own words (`summary`,
`seizure_list`) through a property of their subclass.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ListedRecording:
    recording: str  # file stem, e.g. "chb01_03", "PN00-1"
    edf: Path
    listing: Path  # the folder's listing (may not exist)
    subject: str  # the patient, e.g. "chb01", "PN00"
    session: str  # the file's number, e.g. "03", "1"
    problem: str = ""  # why the recording is incomplete; "" when complete

    @property
    def signal_path(self) -> Path:
        return self.edf

    @property
    def files(self) -> tuple[Path, ...]:
        return tuple(p for p in (self.edf, self.listing) if p.is_file())
