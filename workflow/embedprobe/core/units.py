"""Units every subsystem shares: bytes per MiB, and each labelling task's default unit length."""

from __future__ import annotations

# The scheduler's MB are MiB; every byte count shown in MB divides by this.
MIB = 1 << 20

# A unit's length in seconds when the dataset's entry sets no `epoch_seconds`, by the name of
# the task that labels the units: the one owner of that default (the index, the window reader,
# the model's window and the tasks read it here). Kept by name, so that parse-time code and the
# model registry need not import the task modules.
UNIT_SECONDS = {"sleep_staging": 30.0, "seizure_detection": 10.0, "motor_imagery": 3.0,
                "abnormal_eeg": 10.0,
                # the reference's BCI trials (its guide, "Brain-computer interfaces"): an ERP
                # epoch 1 s from the flash, an SSVEP trial 4 s of flicker, a cognitive window 4 s
                "bci_erp": 1.0, "bci_ssvep": 4.0, "bci_cognitive": 4.0}

# Seconds the reference's confound control drops from the head of a trial, by task (its
# CONFOUND_CONTROL_TMIN: a motor-imagery cue's evoked response and the eye movement towards
# it). Motor imagery's default trial offset; the no_filtering variants embed them too, the
# trial taken whole from the cue (datasets/registry.entry_window).
CONFOUND_CONTROL_SECONDS = {"motor_imagery": 1.0}
