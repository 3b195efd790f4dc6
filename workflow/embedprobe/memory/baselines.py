"""Each step's interpreter-and-libraries baseline, measured on the node that runs the jobs.

A baseline measured on one machine misses on another (other library versions, another
allocator, CUDA): the brain-age probe's was 170 MB where the table was fitted and 179 MB on
a fresh machine. So preflight measures the probes' baselines here, in children that import
what each job imports, and the check job measures embed's (the model built, see check.py).
scripts/calibrate_memory.py uses the same lists for the shipped table.

A node measures a step once per environment: the measurement is recorded under the results
root, by node and by a fingerprint of what decides it (the interpreter, every installed
distribution's version, the package's code, the step's imports), and later preflight jobs on
that node read it instead of starting a child of their own (one child is seconds of start-up
per probe preflight job).
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
from functools import cache
from importlib import metadata
from pathlib import Path

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


@cache
def environment_fingerprint() -> str:
    """What a step's baseline depends on besides its imports: the interpreter, the installed
    distributions' versions and the package's code (an editable install changes no version)."""
    package = Path(__file__).resolve().parents[1]
    newest_code = max(path.stat().st_mtime_ns for path in package.rglob("*.py"))
    distributions = sorted(f"{dist.metadata['Name']}=={dist.version}"
                           for dist in metadata.distributions())
    text = "\n".join([sys.executable, sys.version, str(newest_code), *distributions])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def baseline_record(folder: Path, step: str) -> Path:
    """Where this node records `step`'s baseline in this environment."""
    imports = hashlib.sha256(STEP_IMPORTS[step].encode()).hexdigest()[:8]
    return folder / socket.gethostname() / environment_fingerprint() / f"{step}-{imports}.json"


def recorded_step_baseline(step: str, folder: Path) -> int | None:
    """`step`'s baseline as this node recorded it in this environment, else measured now and
    recorded (written whole, then renamed: jobs running side by side read a whole record)."""
    record = baseline_record(folder, step)
    try:
        return int(json.loads(record.read_text())["peak_bytes"])
    except (OSError, ValueError, KeyError, TypeError):
        pass  # none yet, or unreadable: measure again
    measured = measured_step_baseline(step)
    if measured:
        record.parent.mkdir(parents=True, exist_ok=True)
        partial = record.with_name(f"{record.name}.{os.getpid()}.tmp")
        partial.write_text(json.dumps({"step": step, "peak_bytes": measured,
                                       "imports": STEP_IMPORTS[step],
                                       "python": sys.executable}, indent=2) + "\n")
        os.replace(partial, record)
    return measured


def probe_baseline_inputs(job_type: str, folder: Path | None = None) -> dict:
    """{"measured_baseline_bytes": ...} for a probe job type (what its step imports), measured
    here, or read from this node's record in `folder` where one was given; {} if it fails."""
    step = JOB_STEP[job_type]
    measured = (measured_step_baseline(step) if folder is None
                else recorded_step_baseline(step, folder))
    return {"measured_baseline_bytes": measured} if measured else {}
