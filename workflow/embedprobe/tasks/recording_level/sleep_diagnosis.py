"""Sleep diagnosis (the reference's sleep_diagnosis): one embedding per subject over its
nights' sleep-staging windows (no units of its own: the staging cache of the dataset is
reused), StandardScaler + LogisticRegression with C = 1 fixed and no class weights; headline
AUROC (n/a for a multi-class label such as ISRUC's pathology groups), 5 subject-level folds,
population SD."""

from embedprobe.tasks.recording_level.task import RecordingLevel

TASK = RecordingLevel(
    "sleep_diagnosis", level="subject", defines_units=False, sd_ddof=0,
    probe_defaults={"aggregation": "mean", "C_grid": [1.0], "class_weight": None})
