"""Each step's interpreter-and-libraries baseline, measured on the node that runs the jobs.

A baseline measured on one machine misses on another (other library versions, another
allocator, CUDA): the brain-age probe's was 170 MB where the table was fitted and 179 MB on
a fresh machine. So preflight measures the probes' baselines here, in children that import
what each job imports, and the check job measures embed's (the model built, see check.py).
scripts/calibrate_memory.py uses the same lists for the shipped table.
"""

from __future__ import annotations

import subprocess
import sys
from functools import cache

from embedprobe.measure.peaks import run_measured
from embedprobe.memory.estimate import JOB_TYPES

# What each step's job imports before its data: its interpreter-and-libraries baseline.
STEP_IMPORTS = {
    "embed": "import torch, mne, braindecode.models, embedprobe.cli, embedprobe.pipeline.embed, "
             "embedprobe.memory.runs; torch.ones(8) @ torch.ones(8)",
    # the sleep-staging probe job (probing/softmax.py's own L-BFGS: no scikit-learn)
    "probe": "import embedprobe.cli, embedprobe.pipeline.fold_job, embedprobe.tasks.sleep_staging, "
             "embedprobe.memory.runs",
    # the motor-imagery probe job: the staging probe's, and scikit-learn's train_test_split
    # draws its validation subject (probing/folds.py; ~50 MB the staging step lacked: the
    # BNCI look-alike's probes peaked 170-177 MB against 145-167 MB estimates)
    "bci": "import sklearn.model_selection, embedprobe.cli, embedprobe.pipeline.fold_job, "
           "embedprobe.tasks.bci.trials, embedprobe.memory.runs",
    # the brain-age job also imports scikit-learn's Ridge and reads the subjects table (.xls)
    "ridge": "import sklearn.linear_model, sklearn.preprocessing, xlrd, embedprobe.cli, "
             "embedprobe.pipeline.fold_job, embedprobe.memory.runs, embedprobe.tasks.brain_age",
    # the seizure probe fits scikit-learn's LogisticRegression and scores events (timescoring)
    "seizure": "import sklearn.linear_model, timescoring.scoring, embedprobe.cli, "
               "embedprobe.pipeline.fold_job, embedprobe.memory.runs, "
               "embedprobe.tasks.seizure.task, embedprobe.tasks.seizure.probe",
    # the recording-level probe fits scikit-learn's LogisticRegression over unit rows and asks
    # the dataset's reader for the classes (the readers' modules: h5py, pandas' spreadsheets)
    "recording": "import sklearn.linear_model, sklearn.preprocessing, embedprobe.cli, "
                 "embedprobe.pipeline.fold_job, embedprobe.memory.runs, "
                 "embedprobe.datasets.registry, embedprobe.tasks.recording_level.task, "
                 "embedprobe.tasks.recording_level.probe",
    # the sleep-event probes fit scikit-learn's LogisticRegression and read the dataset's
    # event annotations through its reader (wfdb, MNE, pandas)
    "events": "import sklearn.linear_model, sklearn.metrics, embedprobe.cli, "
              "embedprobe.pipeline.fold_job, embedprobe.memory.runs, "
              "embedprobe.datasets.registry, embedprobe.tasks.sleep_events.task, "
              "embedprobe.tasks.sleep_events.probe",
    # the hypnogram job reads a staging fold's predictions and the window table: no fit
    "hypnogram": "import embedprobe.cli, embedprobe.pipeline.fold_job, embedprobe.memory.runs, "
                 "embedprobe.datasets.registry, embedprobe.tasks.hypnogram.task",
}
# The step whose imports are each job type's baseline (its `step` in estimate.JOB_TYPES):
# preflight's for a probe job, the calibration's for every job type it fits. embed_gpu's is
# measured by the check job (CUDA initialised), none of these.
JOB_STEP = {name: t.step for name, t in JOB_TYPES.items() if t.step}


@cache
def measured_step_baseline(step: str) -> int | None:
    """Peak bytes of a child that imports what `step`'s job imports (its ru_maxrss, so the
    parent's size does not leak in); None when the child fails (the table's value counts)."""
    run = run_measured([sys.executable, "-c", STEP_IMPORTS[step]], timeout=300,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return run.peak_bytes if run.ok else None


def probe_baseline_inputs(job_type: str) -> dict:
    """{"measured_baseline_bytes": ...} for a probe job type (what its step imports), measured
    here; {} if it fails."""
    measured = measured_step_baseline(JOB_STEP[job_type])
    return {"measured_baseline_bytes": measured} if measured else {}
