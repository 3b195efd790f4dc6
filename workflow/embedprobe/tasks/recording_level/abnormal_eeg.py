"""Abnormal EEG (the reference's epilepsy benchmark on TUAB, NMT and Bonn): 10 s windows of
every recording, each recording one unit (its windows' mean embedding); the epilepsy probe:
balanced class weights, C over the grid chosen on validation AUPRC; headline AUROC with its
dummy 0.5, folds over subjects stratified on the class (TUAB: its official train/eval split),
sample SD over folds as the epilepsy benchmark reports it."""

from embedprobe.tasks.recording_level.task import RecordingLevel

TASK = RecordingLevel(
    "abnormal_eeg", level="recording", defines_units=True, sd_ddof=1, dummy=0.5,
    probe_defaults={"aggregation": "mean", "C_grid": [0.001, 0.01, 0.1, 1.0, 10.0, 100.0],
                    "class_weight": "balanced", "select_on": "auprc"})
