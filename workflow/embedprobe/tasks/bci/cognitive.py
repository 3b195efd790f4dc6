"""Cognitive and affective state from 4 s windows cut from continuous recordings (the
reference's bci_cognitive): EEGMAT's rest or mental arithmetic (each file one condition), and
DREAMER's self-reported valence or arousal, low or high (each film clip one report), each
stretch tiled into 4 s windows. A dataset's chance level counts the classes it has (two).
"""

from __future__ import annotations

from embedprobe.tasks.bci.trials import TrialTask

# EEGMAT's two conditions, then DREAMER's two scales cut at 3 (datasets/dreamer/reader.py)
CLASSES = ("rest", "arithmetic", "low_valence", "high_valence", "low_arousal", "high_arousal")

TASK = TrialTask("bci_cognitive", CLASSES, cut="tiles", offset_seconds=0.0,
                 what="cognitive-state window")
