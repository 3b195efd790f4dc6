"""SSVEP: which flickering target is the subject looking at? One class per stimulus frequency,
named as MOABB names the events (the frequency as text).

The trial is the cohort's own window (the reference: Nakanishi 2015 0.15-4.15 s after the
stimulus onset, its visual latency skipped): `trial_offset_seconds` and `epoch_seconds` on the
dataset's entry (defaults 0 s and 4 s).
"""

from __future__ import annotations

from embedprobe.tasks.bci.trials import TrialTask

# Nakanishi 2015's twelve targets, 9.25-14.75 Hz in 0.5 Hz steps, in ascending frequency; then
# Kim 2025's forty, 14-21.8 Hz in 0.2 Hz steps, named as MOABB's Kim2025BetaRange names them
# ("14", "14.2" ... "21.8"). A dataset's chance level counts the classes it has.
CLASSES = (tuple(f"{9.25 + 0.5 * k:.2f}" for k in range(12))
           + tuple(f"{(140 + 2 * k) / 10:g}" for k in range(40)))

TASK = TrialTask("bci_ssvep", CLASSES, cut="trial", offset_seconds=0.0, what="SSVEP trial")
