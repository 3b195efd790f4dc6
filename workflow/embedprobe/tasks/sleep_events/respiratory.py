"""Respiratory events (the reference's sleep_respiratory, task preset respiratory.json and its
respiratory_event_detection defaults): one probe per event field and threshold (0, 1, 3, 5, 7,
10 s). The headline is apnea or hypopnea, RERAs not counted (the AHI's events), at 10 s.

Fields as the reference's: each apnea type, hypopnea, RERA, periodic breathing, and the sums
`apnea_any` (the three apneas), `ahi` (apneas and hypopneas), `rdi` (ahi and RERAs) and
`respiratory_event_any` (its PhysioNet reader's `rdi.copy()`, its UCDDB reader's `ahi.copy()`:
periodic breathing is in neither, and UCDDB scores no RERA). A sum adds its kinds' seconds and
caps them at the epoch, as the reference's readers do (overlap.py; `field_overlap: union`
counts overlapping events once).
"""

from embedprobe.tasks.sleep_events.task import SleepEvents

APNEAS = ("apnea_obstructive", "apnea_central", "apnea_mixed")
AHI = (*APNEAS, "hypopnea")

TASK = SleepEvents(
    "sleep_respiratory",
    fields={"ahi": AHI, "apnea_obstructive": ("apnea_obstructive",),
            "apnea_central": ("apnea_central",), "apnea_mixed": ("apnea_mixed",),
            "hypopnea": ("hypopnea",), "rera": ("rera",),
            "periodic_breathing": ("periodic_breathing",), "apnea_any": APNEAS,
            "rdi": (*AHI, "rera"),
            "respiratory_event_any": (*AHI, "rera")},
    thresholds=(0.0, 1.0, 3.0, 5.0, 7.0, 10.0), headline=("ahi", 10.0))
