"""Cognitive state: rest or mental arithmetic, from 4 s windows cut from continuous recordings
(the reference's bci_cognitive on EEGMAT: each file one condition, tiled into 4 s windows).
"""

from __future__ import annotations

from embedprobe.tasks.bci.trials import TrialTask

CLASSES = ("rest", "arithmetic")

TASK = TrialTask("bci_cognitive", CLASSES, cut="tiles", offset_seconds=0.0,
                 what="rest or arithmetic window")
