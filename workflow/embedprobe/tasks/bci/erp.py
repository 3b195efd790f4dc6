"""ERP (P300): is a 1 s epoch from a flash the response to a target? Two classes in MOABB's
names, strongly imbalanced (a 6 x 6 speller flashes a target row or column 1 time in 6).

The epoch starts at the flash (the reference keeps each cohort's own trial window: MOABB's
P300 interval [0, 1] s for BNCI 2014-008 and Brain Invaders 2013a) and lasts the dataset's
`epoch_seconds` (default 1 s).
"""

from __future__ import annotations

from embedprobe.tasks.bci.trials import TrialTask

CLASSES = ("NonTarget", "Target")

TASK = TrialTask("bci_erp", CLASSES, cut="trial", offset_seconds=0.0, what="ERP epoch")
