"""Limb movements (the reference's sleep_limb, task preset limb.json): one probe per field
(any limb movement, periodic limb movement) and threshold (0, 0.5, 1, 3, 5, 7, 10 s); the
headline is periodic limb movement at 0.5 s."""

from embedprobe.tasks.sleep_events.task import SleepEvents

TASK = SleepEvents(
    "sleep_limb",
    fields={"limb_movement_periodic": ("limb_movement_periodic",),
            "limb_movement_any": ("limb_movement", "limb_movement_periodic")},
    thresholds=(0.0, 0.5, 1.0, 3.0, 5.0, 7.0, 10.0), headline=("limb_movement_periodic", 0.5))
