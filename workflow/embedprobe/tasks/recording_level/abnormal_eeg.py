"""Abnormal EEG (the reference's epilepsy benchmark on TUAB, NMT and Bonn): 10 s windows of
every recording, labelled with the recording's class. By default each window is a row of the
seizure probe, as the reference's run lines probe TUAB and Bonn (`--task seizure_detection`):
balanced class weights, C over the grid on validation AUPRC, max_iter 500; headline the test
windows' AUROC (its event AUC is n/a without seizure events) with its dummy 0.5. Option
`probe.units: recordings`: one mean embedding per recording, the same probe settings (the
reason: one decision per recording is the clinical question). Folds over subjects stratified
on the class (TUAB: its official train/eval split), sample SD over folds as the epilepsy
benchmark reports it."""

from embedprobe.tasks.recording_level.task import RecordingLevel

TASK = RecordingLevel(
    "abnormal_eeg", level="recording", defines_units=True, sd_ddof=1, dummy=0.5,
    probe_defaults={"aggregation": "mean", "C_grid": [0.001, 0.01, 0.1, 1.0, 10.0, 100.0],
                    "class_weight": "balanced", "select_on": "auprc"},
    units_options=("windows", "recordings"))
