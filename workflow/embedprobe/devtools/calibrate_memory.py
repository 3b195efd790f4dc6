"""Fit the memory calibration table from measured peaks of the project's real jobs.

Every workload is the code a workflow job runs, in its own child process, measured by the kernel
(peaks.run_measured: the child's ru_maxrss from wait4); embedprobe.devtools.workloads builds the
data and runs the jobs (the validation scripts run the same workloads):

  embed           `embedprobe check`, then `embedprobe embed` (run_embed: reader threads, the
                  Encoder, preprocessing, the HDF5 store) on generated Sleep-EDF demo nights
                  (2 channels read at 100 Hz: the windows and activations dominate) and on
                  CHB-MIT look-alike files (16-18 channels read at 256 Hz: the readers' read
                  and filtered signal dominates, which Sleep-EDF alone cannot fit); its inputs
                  are the ones preflight builds from the check JSON and the index
                  (preflight.embed_inputs)
  probe_logistic  `embedprobe probe` (pipeline/fold_job -> probing/logistic.fit_logistic_probe,
                  the fast method) on an HDF5 store of hard synthetic embeddings; inputs from
                  the task's probe_memory
  probe_seizure   `embedprobe probe` of the seizure benchmark (pipeline/fold_job ->
                  tasks/seizure/probe.fit_seizure_probe: scikit-learn's lbfgs per C, threshold,
                  SzCORE event scoring) on a store of synthetic embeddings whose windows are real
                  windows of a generated CHB-MIT look-alike; inputs from the task's probe_memory
  probe_ridge     probing/ridge.fit_age_fold (StandardScaler + Ridge, alpha by inner CV, refit) on
                  subject means, split into training and test subjects as pipeline/fold_job does
  aggregate       EmbeddingStore.mean_by("subject") on a store (the brain-age job's first part)
  probe_recording `embedprobe probe` of the abnormal-EEG benchmark (unit statistics streamed,
                  scikit-learn's lbfgs per C over one row per recording), mean and mean_std
                  features; its stream's constants are aggregate's, its own fitted on the job
  probe_hypnogram `embedprobe probe` of the sleep-hypnogram benchmark (a staging fold's saved
                  predictions over the store's window table: no embeddings read)
  probe_events    `embedprobe probe` of the sleep-respiratory benchmark (tasks/sleep_events:
                  the event lists read, one balanced lbfgs fit per field and threshold) on a
                  store whose windows are real windows of a UCDDB look-alike; the seizure
                  probe's constants, its own overhead and copies fitted on the job

Baselines are measured: a child that imports what the step's job imports. The other constants are
fitted on each job's whole measured peaks with the job's own formula (estimate.JOB_TYPES; the
total is linear in each fitted constant, so the fit evaluates the very terms the estimate uses):
the tightest constants >= 0 under which no run is under-predicted, since a request has to cover
the unlucky run (embed peaks vary by ~10% between runs of the same job). The sizes here differ
from the ones scripts/validate_memory.py checks. The table is written with the environment it was
measured in, and a drift table against the table it replaces is printed (constants that rose and
that fell). scripts/calibrate_memory.py runs it; each child is this module run with
`python -m` (child_argv).
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path

import numpy as np
import yaml

from embedprobe.core.units import MIB
from embedprobe.devtools.workloads import (
    AGE_BENCHMARK,
    DEMO_DATASET,
    EVENTS_PROBE,
    PROBE_BENCHMARK,
    SEIZURE_PROBE,
    LookalikeProbe,
    brain_age_argv,
    brain_age_inputs,
    brain_age_set,
    demo_set,
    embed_argv,
    embed_inputs,
    hard_rows,
    hypnogram_argv,
    hypnogram_inputs,
    hypnogram_set,
    lookalike_set,
    lookalike_store,
    measure,
    probe_argv,
    probe_config,
    probe_inputs,
    recording_argv,
    recording_inputs,
    recording_set,
    run_check,
    seizure_embed_set,
    token_rows,
    write_estimate,
    write_store,
)
from embedprobe.measure.gpu import cuda_context_bytes, gpu_batch_peaks
from embedprobe.measure.limits import available_memory_limit
from embedprobe.measure.peaks import MeasuredRun, self_peak_rss
from embedprobe.memory.baselines import JOB_STEP, STEP_IMPORTS
from embedprobe.memory.calibration import load_calibration
from embedprobe.memory.estimate import (
    DEFAULT_CONSTANTS,
    JOB_TYPES,
    estimate,
    job_constants,
)
from embedprobe.memory.formulas import FINISH_BLOCK_COPIES, FLOAT32
from embedprobe.memory.refit import FITTED, fit_constants, rounded
from embedprobe.probing.probe_forms import eigen_preconditioner

RESULT_TAG = "RESULT "
RUNS_FILE = "calibration_runs.json"  # in --workdir: every fitted run, its inputs and peaks


# ============================================================ the child side: how to start it


def child_argv(workload: str, params: dict) -> list[str]:
    """A workload of this module's child side (ridge, subject means, imports)."""
    return [sys.executable, "-m", __name__, workload, json.dumps(params)]


def child_result(run: MeasuredRun) -> dict:
    line = [row for row in run.stdout.splitlines() if row.startswith(RESULT_TAG)][-1]
    return json.loads(line[len(RESULT_TAG):])


def ridge_params(folder: Path, n_train: int, n_subjects: int, p: int, seed: int = 0) -> dict:
    """The ridge child's inputs: subject means (float64, as EmbeddingStore.mean_by returns
    them) and ages of `n_subjects` subjects in .npy files; the first n_train are training."""
    x_path, age_path = folder / f"means_{n_subjects}x{p}.npy", folder / f"ages_{n_subjects}.npy"
    if not x_path.is_file():
        rng = np.random.default_rng([seed, n_subjects, p])
        folder.mkdir(parents=True, exist_ok=True)
        np.save(x_path, rng.standard_normal((n_subjects, p)))
        np.save(age_path, rng.uniform(25, 95, n_subjects).round())
    return {"x": str(x_path), "ages": str(age_path), "n_train": n_train}


def ridge_form_used(n: int, p: int) -> str:
    """The form scikit-learn's Ridge solves in fit_age_fold's largest fit (all n rows)."""
    return "dual" if p > n else "primal"


# ============================================================== the child side: its workloads


def _step_imports(step: str) -> None:
    """Import what the step imports, so a workload's peak contains the measured baseline."""
    exec(STEP_IMPORTS[step], {})


def _report(**values) -> None:
    values["self_peak"] = self_peak_rss()
    print(RESULT_TAG + json.dumps(values), flush=True)


def child_ridge(p: dict) -> None:
    """The brain-age ridge path: fit_age_fold on the training subjects' mean embeddings."""
    _step_imports("ridge")
    from embedprobe.probing.ridge import fit_age_fold
    from embedprobe.probing.split import Split

    means, ages = np.load(p["x"]), np.load(p["ages"])
    train = np.arange(len(ages)) < p["n_train"]  # boolean masks copy, as Split.cut does
    test = ~train
    result = fit_age_fold(Split.cut(means, ages, {"train": train, "val": train & test,
                                                  "test": test}))
    _report(mae=result.test_metrics["mae"])


def child_subject_means(p: dict) -> None:
    """The brain-age job's first part: one mean embedding per subject, streamed from the store."""
    _step_imports("probe")
    from embedprobe.pipeline.store import open_embeddings

    with open_embeddings(p["store"]) as store:
        subjects, means = store.mean_by("subject")
    _report(n_subjects=len(subjects), check=float(means.sum()))


def child_gpu(p: dict) -> None:
    """Host memory of a CUDA embed process and the device memory the context takes."""
    _step_imports("embed")
    import torch

    if not torch.cuda.is_available():
        _report(cuda=False)
        return
    from embedprobe.core.config import load_config
    from embedprobe.models.encoder import Encoder
    from embedprobe.models.registry import model_spec
    from embedprobe.pipeline.channel_maps import channel_plan

    config = load_config()
    spec = model_spec(config, p["model"])
    plan = channel_plan(config, DEMO_DATASET, spec.family)
    encoder = Encoder(spec, plan.model_names, {}, device="cuda")
    n_times = int(round(30 * spec.sfreq))

    def run_batch(size):
        encoder(np.random.default_rng(0).standard_normal(
            (size, len(plan.recorded), n_times), dtype=np.float32))

    peaks = gpu_batch_peaks(run_batch, [8, 32], "cuda")
    # what the driver says this process uses, less the allocator's reserve (NVML or
    # nvidia-smi): a mem_get_info difference taken after the first CUDA call misses it
    context = cuda_context_bytes("cuda")
    _, total = torch.cuda.mem_get_info()
    _report(cuda=True, cuda_context_bytes=int(context), gpu_peaks=peaks.reserved,
            gpu_total_bytes=total)


def child_store_writer(p: dict) -> None:
    """The embed job's store alone: a writer with batches of rows appended, then its finish();
    what each grew beyond the embed step's imports and the window table."""
    _step_imports("embed")
    from embedprobe.devtools.workloads import store_writer_growth

    appending, finishing = store_writer_growth(Path(p["out"]), p["n_windows"],
                                               (p["feature_dim"],), p["batch_size"])
    _report(appending=appending, finishing=finishing)


def measure_store_writer(workdir: Path) -> dict:
    """The store's constants, each measured on a writer alone: what finish() holds a window
    beyond its block (the window table it reads back) on a large index, and the buffers: what
    a small store's writer holds while appending, less a batch of rows."""
    block = JOB_TYPES["embed_cpu"].defaults["finish_block_bytes"]
    grew = {}
    for n in (100_000, 1000):
        store = {"n_windows": n, "feature_dim": 256, "batch_size": 32,
                 "out": str(workdir / f"store_writer_{n}.h5")}
        run = measure(child_argv("store_writer", store), "store writer")
        _print_run("store", f"writer, {n:,} x 256 rows", run)
        grew[n] = (store, child_result(run))
    large, measured = grew[100_000]
    per_row = max(0.0, measured["finishing"] - block * FINISH_BLOCK_COPIES) / large["n_windows"]
    small, measured = grew[1000]
    batch_rows = small["batch_size"] * small["feature_dim"] * FLOAT32
    return {"finish_row_bytes": per_row,
            "hdf5_buffer_bytes": max(0.0, measured["appending"] - batch_rows)}


CHILDREN = {
    "store_writer": child_store_writer,
    "ridge": child_ridge,
    "subject_means": child_subject_means,
    "gpu": child_gpu,
}


# ============================================================== parent side: plan and fit

PLANS = {
    # Sizes differ from scripts/validate_memory.py's grid, so the validation is out of sample.
    # embed: (model, hours of sleep a night); 2 subjects x 2 nights each
    # embed_seizure: (model, 10 s windows a file, files a patient) of a CHB-MIT look-alike of
    # 2 patients; files of 600 windows: BIOT's statistic reads 100 min, its largest stretch 85
    # probe_logistic: (rows, width, parallel fits); probe_ridge: (training subjects, width)
    # subject_means: (rows, width); embed_repeats: runs of each embed job (their median is its
    # typical peak; refit.fit_constants)
    "quick": {
        # the same embed job peaks apart between runs (BIOT: its readers' filter copies and its
        # batches' activations coincide or not; docs/measurements/2026-12-05-typical-run.md):
        # three runs each
        "embed_repeats": 3,
        # forward passes grow by family (small for CBraMod and LaBraM, more for LUNA and
        # CodeBrain, most for BIOT; docs/measurements/2026-12-05-typical-run.md): the factor and
        # the freed heap a pass reuses are told apart only by passes on both sides of that heap
        "embed": [("biot_random", 0.5), ("cbramod_random", 1.0), ("labram_random", 0.25),
                  ("luna_random", 0.25), ("codebrain_random", 0.25)],
        "embed_seizure": [("biot_random", 600, 1), ("cbramod_random", 256, 2)],
        "probe_logistic": [(2_000, 16, 1), (10_000, 64, 1), (80_000, 128, 1),
                           (24_000, 512, 1), (12_000, 1024, 1), (30_000, 1536, 1),
                           (6_000, 2_560, 1), (40_000, 128, 2), (16_000, 1024, 2),
                           # token stores' widths, the probe's diagonal form (validate_memory:
                           # 6,000 and 24,576 at other row counts)
                           (3_500, 8_000, 1), (1_000, 16_384, 1)],
        # probe_seizure: (rows, width, parallel fits)
        "probe_seizure": [(2_000, 16, 1), (10_000, 64, 1), (40_000, 128, 1), (16_000, 512, 1),
                          (8_000, 1024, 1), (4_000, 2_560, 1), (24_000, 256, 2)],
        "probe_ridge": [(40, 16), (100, 512), (400, 1024), (1_200, 128), (2_500, 64),
                        (1_500, 384), (600, 3_000)],
        "subject_means": [(2_000, 16), (200_000, 32), (50_000, 512), (100_000, 128)],
        # the large ones make the kernel and Gram terms big enough to be measured, not guessed
        "brain_age": [(60, 16), (300, 512), (1_000, 128), (400, 1024), (120, 3_000),
                      (2_000, 2_560), (3_000, 384)],
        # recordings, width, aggregation (sizes apart from validate_memory's)
        # (the wide ones span several 64 MiB blocks of the store, as a long dataset does)
        "recording": [(60, 16, "mean"), (400, 512, "mean_std"), (1_000, 128, "mean"),
                      (250, 1024, "mean_std"), (2_500, 256, "mean"), (1_200, 2_560, "mean_std"),
                      (100, 1536, "mean"), (900, 1536, "mean"), (700, 768, "mean_std")],
        # windows of the store whose table the hypnogram job reads (validate_memory: others)
        "hypnogram": [2_000, 60_000, 250_000, 700_000],
        # probe_events: (rows, width, parallel fits) over UCDDB look-alike windows; every field
        # and threshold of the respiratory task is one fit (54 a job)
        "probe_events": [(2_000, 16, 1), (10_000, 64, 1), (30_000, 128, 1), (8_000, 512, 1)],
    },
    "full": {
        "embed_repeats": 3,
        "embed": [("biot_random", 1.0), ("biot_random", 4.0), ("cbramod_random", 2.0),
                  ("labram_random", 0.25), ("labram_random", 2.5), ("luna_random", 0.25),
                  ("codebrain_random", 1.0)],
        "embed_seizure": [("biot_random", 600, 1), ("biot_random", 256, 2),
                          ("cbramod_random", 256, 2), ("labram_random", 600, 1)],
        "probe_logistic": [(2_000, 16, 1), (10_000, 64, 1), (40_000, 128, 1), (80_000, 384, 1),
                           (24_000, 512, 1), (12_000, 1024, 1), (40_000, 1536, 1),
                           (6_000, 2_560, 1), (40_000, 128, 2), (16_000, 1024, 2),
                           (80_000, 384, 3), (3_500, 8_000, 1), (1_000, 16_384, 1)],
        "probe_seizure": [(2_000, 16, 1), (10_000, 64, 1), (40_000, 128, 1), (80_000, 384, 1),
                          (16_000, 512, 1), (8_000, 1024, 1), (4_000, 2_560, 1),
                          (24_000, 256, 2), (40_000, 1024, 3)],
        "probe_ridge": [(40, 16), (100, 512), (400, 1024), (1_200, 128), (2_500, 64),
                        (1_500, 384), (600, 3_000), (4_000, 512)],
        "subject_means": [(2_000, 16), (200_000, 32), (50_000, 512), (100_000, 128),
                          (400_000, 64)],
        "brain_age": [(60, 16), (300, 512), (1_000, 128), (400, 1024), (120, 3_000),
                      (2_000, 2_560), (3_000, 384), (2_500, 256)],
        "recording": [(60, 16, "mean"), (400, 512, "mean_std"), (1_000, 128, "mean"),
                      (250, 1024, "mean_std"), (2_500, 256, "mean"), (1_200, 2_560, "mean_std"),
                      (3_000, 64, "mean_std")],
        "hypnogram": [2_000, 60_000, 250_000, 700_000, 1_200_000],
        "probe_events": [(2_000, 16, 1), (10_000, 64, 1), (30_000, 128, 1), (8_000, 512, 1),
                         (60_000, 256, 1), (4_000, 2_560, 1)],
    },
}

# What each job's fit sets (FITTED) and the envelope fit itself (fit_constants, rounded) live
# in embedprobe.memory.refit, shared with `embedprobe calibrate --from-runs`; the step whose
# imports are each job's baseline (JOB_STEP) in embedprobe.memory.baselines, shared with
# preflight.
STRUCTURAL = {"weights_copies", "input_copies", "hdf5_buffer_bytes", "window_row_bytes",
              "accumulator_copies", "cluster_wrapper_bytes", "fit_data_copies"}


def _unfitted(job: str, name: str) -> str:
    if name in STRUCTURAL and name not in FITTED.get(job, ()):
        return "structural"
    return "default (not measurable here)"


def _print_run(job: str, label: str, run: MeasuredRun) -> None:
    print(f"  {job:<15} {label:<44} peak {run.peak_bytes / MIB:8.1f} MB  {run.seconds:6.1f} s",
          flush=True)


def embed_sets(plan: dict, workdir: Path):
    """(data set, model, label) of each embed run of a plan: Sleep-EDF demo nights, then
    CHB-MIT look-alike files."""
    for model, hours in plan["embed"]:
        yield demo_set(workdir / f"embed_{hours:g}h", hours), model, f"{model} {hours:g} h"
    for model, windows, files in plan["embed_seizure"]:
        data = seizure_embed_set(workdir / f"embed_chbmit_{windows}x{files}", windows,
                                 files=files)
        yield data, model, f"{model} CHB-MIT 2x{files} files of {windows} windows"


def measure_embed(plan: dict, workdir: Path, repeats: int) -> list[dict]:
    """Each embed job `repeats` times: the typical peak (their median) is the run's `peak`,
    every repeat its `peaks`.

    The same job peaks differently from run to run (seen: BIOT 1,274 to 1,405 MB, CBraMod's
    CHB-MIT job 1,018 to 1,250): the reader threads' reading and resampling coincide with a
    batch's activations or not. The fit (refit.fit_constants) covers the typical peak and
    every repeat within its allowance; the embed request's margin takes the spread.
    """
    runs = []
    for demo, model, label in embed_sets(plan, workdir):
        _, check = run_check(demo, model)
        inputs = embed_inputs(demo, check)
        predicted = estimate("embed_cpu", inputs, load_calibration(), None)
        estimate_path = write_estimate(demo.folder / f"estimate_{model}.json", "embed", predicted)
        peaks = []
        for _ in range(repeats):
            run = measure(embed_argv(demo, model, estimate_path, demo.folder / f"{model}.h5"),
                          f"embed {label}")
            _print_run("embed", f"{label}, {demo.n_windows} windows", run)
            peaks.append(run.peak_bytes)
        runs.append({"inputs": inputs, "peak": int(statistics.median(peaks)),
                     "peaks": peaks, "label": label})
    return runs


def measure_probe_job(job: str, inputs: dict, estimate_file: Path, key: str, argv_of,
                      label: str) -> dict:
    """One probe job as the workflow runs it: predicted with the current table (its estimate
    JSON is the job's --estimate), run in a measured child; its row for the fit."""
    predicted = estimate(job, inputs, load_calibration(), None)
    path = write_estimate(estimate_file, key, predicted)
    run = measure(argv_of(path), f"{job} {label}")
    _print_run(job, label, run)
    return {"inputs": inputs, "peak": run.peak_bytes, "label": label}


def measure_probe_logistic(plan, workdir: Path) -> list[dict]:
    """The staging probe job; past the eigen form's width (probing/probe_forms) on a token store
    (tokens of 200 or 2,048 values) with C 0.001 and 0.01 only: one fit at a time either way,
    and strong penalties converge in minutes on 2 cores where C = 100 would take an hour."""
    runs = []
    for rows, dim, n_jobs in plan:
        store = workdir / f"store_{rows}x{dim}.h5"
        wide = not eigen_preconditioner(dim)
        tokens = dim // (200 if dim % 200 == 0 else 2048) if wide else 0
        X, y = token_rows(rows, tokens, dim // tokens) if wide else hard_rows(rows, dim)
        subjects = write_store(store, X, y, tokens=tokens)
        del X
        config = probe_config(workdir, n_jobs)
        if wide:
            config["benchmarks"][PROBE_BENCHMARK].setdefault("probe", {})["C_grid"] = [
                0.001, 0.01]
        runs.append(measure_probe_job(
            "probe_logistic", probe_inputs(config, PROBE_BENCHMARK, subjects, dim),
            workdir / f"estimate_{rows}x{dim}_{n_jobs}.json", f"probe/{PROBE_BENCHMARK}/fold0",
            lambda path: probe_argv(config, store, path, workdir / "probe_out"),  # noqa: B023
            f"{rows} x {dim}, n_jobs {n_jobs}"))
    return runs


def measure_lookalike_probe(job: str, spec: LookalikeProbe, plan, workdir: Path) -> list[dict]:
    """The real probe job (fold 0) over stores of a look-alike's windows (the seizure probe,
    the sleep-event probes), as the workflow runs it."""
    folder = workdir / spec.name
    runs = []
    for rows, dim, n_jobs in plan:
        config, index = lookalike_set(folder, spec)
        config.setdefault("probe", {})["n_jobs"] = n_jobs
        store = folder / f"store_{rows}x{dim}.h5"
        table = lookalike_store(store, index, rows, dim, spec=spec)
        runs.append(measure_probe_job(
            job, probe_inputs(config, spec.benchmark, table, dim),
            folder / f"estimate_{rows}x{dim}_{n_jobs}.json", f"probe/{spec.benchmark}/fold0",
            lambda path: probe_argv(config, store, path, folder / "out",  # noqa: B023
                                    benchmark=spec.benchmark, dataset=spec.dataset),
            f"{rows} x {dim}, n_jobs {n_jobs}"))
    return runs


def measure_probe_ridge(plan, workdir: Path) -> list[dict]:
    runs = []
    for n, p in plan:
        params = ridge_params(workdir, n, n + n // 4, p)  # a fifth of the subjects test
        run = measure(child_argv("ridge", params), f"ridge {n} x {p}")
        _print_run("probe_ridge", f"{n} subjects x {p}", run)
        inputs = {"n": n, "p": p, "ridge_form": ridge_form_used(n, p)}
        runs.append({"inputs": inputs, "peak": run.peak_bytes, "label": f"{n} x {p}"})
    return runs


def measure_brain_age(plan, workdir: Path) -> list[dict]:
    """The real brain-age job (subject means streamed from a store, ages from the .xls, ridge
    with inner CV), as the workflow runs it."""
    runs = []
    for n_subjects, dim in plan:
        folder = workdir / f"age_{n_subjects}x{dim}"
        config, store, subjects = brain_age_set(folder, n_subjects, dim)
        runs.append(measure_probe_job(
            "probe_brain_age", brain_age_inputs(config, subjects, dim), folder / "estimate.json",
            f"probe/{AGE_BENCHMARK}/fold0",
            lambda path: brain_age_argv(config, store, path, folder / "out"),  # noqa: B023
            f"{n_subjects} x {dim}"))
    return runs


def measure_recording(plan, workdir: Path) -> list[dict]:
    """The real recording-level job (unit statistics streamed from a store, a logistic fit per
    C over the recordings), as the workflow runs it."""
    runs = []
    for n_units, dim, aggregation in plan:
        folder = workdir / f"recording_{n_units}x{dim}"
        config, store, table = recording_set(folder, n_units, dim, aggregation)
        runs.append(measure_probe_job(
            "probe_recording", recording_inputs(config, table, dim), folder / "estimate.json",
            "probe/recording/fold0",
            lambda path: recording_argv(config, store, path, folder / "out"),  # noqa: B023
            f"{n_units} x {dim} {aggregation}"))
    return runs


def measure_hypnogram(plan, workdir: Path) -> list[dict]:
    """The real hypnogram job (a staging fold's predictions over the store's window table)."""
    runs = []
    for n_rows in plan:
        folder = workdir / f"hypnogram_{n_rows}"
        config, store, table = hypnogram_set(folder, n_rows)
        runs.append(measure_probe_job(
            "probe_hypnogram", hypnogram_inputs(config, table), folder / "estimate.json",
            "probe/hypnogram/fold0",
            lambda path: hypnogram_argv(config, store, path, folder / "out"),  # noqa: B023
            f"{n_rows} windows"))
    return runs


def measure_subject_means(plan, workdir: Path) -> list[dict]:
    from embedprobe.tasks.brain_age import subject_mean_inputs

    runs = []
    rng = np.random.default_rng(0)
    for rows, dim in plan:
        store = workdir / f"means_store_{rows}x{dim}.h5"
        subjects = write_store(store, rng.standard_normal((rows, dim), dtype=np.float32),
                               rng.integers(0, 5, rows))
        run = measure(child_argv("subject_means", {"store": str(store)}),
                      f"subject means {rows} x {dim}")
        _print_run("subject_means", f"{rows} rows x {dim}", run)
        runs.append({"inputs": subject_mean_inputs(subjects, dim), "peak": run.peak_bytes,
                     "label": f"{rows} x {dim}"})
    return runs


# The job types the calibration fits: those with fitted constants (refit.FITTED, whose keys are
# registered job types of estimate.CALIBRATED_JOBS).
CALIBRATED_JOBS = tuple(FITTED)


def calibrate(mode: str, workdir: Path, old: dict,
              selected: tuple[str, ...] = CALIBRATED_JOBS) -> tuple[dict, dict, dict]:
    """Run the workloads of the selected job types at the sizes of plan `mode` (PLANS: "quick"
    or "full"); the others keep the old table's fitted constants. Returns (constants by job,
    provenance, fit report)."""
    plan = PLANS[mode]
    constants = {job: dict(values) for job, values in DEFAULT_CONSTANTS.items()}
    provenance = {job: {name: _unfitted(job, name) for name in values}
                  for job, values in constants.items()}
    # Structural constants come from the code; the ones not measurable here keep their old
    # values (measured on another machine, a GPU one say); the rest are measured below.
    for job, values in old.get("jobs", {}).items():
        for name, value in values.items():
            # (a constant the code has no default for, e.g. probe_brain_age's own, is kept)
            if provenance.get(job, {}).get(name) != "structural":
                constants.setdefault(job, {})[name] = value
                provenance.setdefault(job, {})[name] = old.get("provenance", {}).get(
                    job, {}).get(name, provenance[job].get(name, "kept from the previous table"))
    report: dict[str, dict] = {}

    def fitted(job, values, how="fitted"):
        for name, value in values.items():
            constants[job][name] = rounded(name, value)
            provenance[job][name] = how

    print("measured children, one at a time:")
    baseline = {}
    # only the selected job types' baselines: the others keep the previous table's
    for step in dict.fromkeys(JOB_STEP[job] for job in selected if job in JOB_STEP):
        # as preflight measures it on a node (baselines.measured_step_baseline: `python -c`
        # with the step's imports), so the fitted constants carry what the job adds beyond
        # exactly that; a child of this module would also hold the module's own imports (every
        # probe estimate then short where preflight measures:
        # docs/measurements/2026-12-01-check-baseline.md)
        run = measure([sys.executable, "-c", STEP_IMPORTS[step]], f"imports {step}")
        _print_run("imports", step, run)
        baseline[step] = run.peak_bytes
    for job, step in JOB_STEP.items():
        if job in selected:
            fitted(job, {"baseline_bytes": baseline[step]}, "measured")

    if "embed_cpu" in selected:
        # the store's own (h5py's and HDF5's buffers, finish's read of the window table), so
        # the embed fit does not carry them in its other constants
        store = measure_store_writer(workdir)
        for job in ("embed_cpu", "embed_gpu"):
            fitted(job, store, "measured")
    workloads = {
        "embed_cpu": lambda: measure_embed(plan, workdir, plan["embed_repeats"]),
        "probe_logistic": lambda: measure_probe_logistic(plan["probe_logistic"], workdir),
        "probe_ridge": lambda: measure_probe_ridge(plan["probe_ridge"], workdir),
        "aggregate_subject_mean": lambda: measure_subject_means(plan["subject_means"], workdir),
        "probe_seizure": lambda: measure_lookalike_probe(
            "probe_seizure", SEIZURE_PROBE, plan["probe_seizure"], workdir),
        "probe_hypnogram": lambda: measure_hypnogram(plan["hypnogram"], workdir),
    }
    runs = {job: workload() for job, workload in workloads.items() if job in selected}
    for job, job_runs in runs.items():
        values, miss = fit_constants(job, job_runs, FITTED[job], constants[job])
        fitted(job, values)
        report[job] = {"fit_max_over_prediction_mb": miss / MIB}
    # The brain-age, recording-level and sleep-event jobs: their parts' fitted constants, then
    # their own fitted on the real job. The table keeps every constant it was fitted with, so
    # an estimate uses exactly those.
    composed = {"probe_brain_age": lambda: measure_brain_age(plan["brain_age"], workdir),
                "probe_recording": lambda: measure_recording(plan["recording"], workdir),
                "probe_events": lambda: measure_lookalike_probe(
                    "probe_events", EVENTS_PROBE, plan["probe_events"], workdir)}
    for job, workload in composed.items():
        if job not in selected:
            continue
        # from the parts just fitted, not the previous table's copies of theirs
        merged = job_constants(job, {"jobs": {**constants, job: {}}})
        merged.pop("cluster_wrapper_bytes", None)
        constants[job] = {**merged, "baseline_bytes": constants[job]["baseline_bytes"]}
        parts = "from its parts (memory/estimate.COMPOSED)"
        provenance[job] = {name: provenance[job].get(name, parts) for name in constants[job]}
        runs[job] = workload()
        values, miss = fit_constants(job, runs[job], FITTED[job], constants[job])
        fitted(job, values)
        report[job] = {"fit_max_over_prediction_mb": miss / MIB}
    for name in ("recording_copies", "window_copies"):  # the host side is the same on a GPU
        fitted("embed_gpu", {name: constants["embed_cpu"][name]})

    if Path("/proc/driver/nvidia").exists():
        gpu = child_result(measure(child_argv("gpu", {"model": "biot_random"}), "gpu"))
        if gpu.get("cuda"):
            fitted("embed_gpu", {"baseline_bytes": gpu["self_peak"]}, "measured")
            fitted("embed_gpu_device", {"cuda_context_bytes": gpu["cuda_context_bytes"]},
                   "measured")

    report["in_sample"] = in_sample_errors({"jobs": constants}, runs)
    # every run with its inputs, for refits and checks of the fit without measuring again
    (workdir / RUNS_FILE).write_text(json.dumps(runs, default=str))
    return constants, provenance, report


def in_sample_errors(calibration: dict, runs: dict[str, list[dict]]) -> list:
    """Each calibration run's measured peak (the median of its repeats) against the fitted
    formula (no margin), and its highest repeat's.

    In sample: scripts/validate_memory.py checks other sizes, models and widths.
    """
    rows = []
    print("\nin-sample fit: whole measured peak against the formula (no margin)")
    print(f"  {'job':<24} {'run':<32} {'measured MB':>12} {'estimate MB':>12} {'error':>8} "
          f"{'highest repeat':>15}")
    for job, job_runs in runs.items():
        for run in job_runs:
            total = estimate(job, run["inputs"], calibration, None).total
            error = (total - run["peak"]) / run["peak"]
            row = {"job": job, "run": run["label"], "measured_bytes": run["peak"],
                   "estimate_bytes": total, "error": round(error, 4)}
            highest = ""
            if len(run.get("peaks") or ()) > 1:
                top = max(run["peaks"])
                row["highest_repeat_error"] = round((total - top) / top, 4)
                highest = f"{row['highest_repeat_error']:+15.1%}"
            rows.append(row)
            print(f"  {job:<24} {run['label']:<32} {run['peak'] / MIB:12.1f} "
                  f"{total / MIB:12.1f} {error:+8.1%} {highest}")
    return rows


def drift_table(old: dict, new: dict) -> list[str]:
    """Per constant: old, new, change; rises and falls both shown."""
    lines = [f"{'constant':<46} {'old':>14} {'new':>14} {'change':>9}"]
    for job, values in new.items():
        for name, value in values.items():
            before = old.get("jobs", {}).get(job, {}).get(name)
            if before is None:
                change = "new"
            elif before == 0:
                change = "n/a" if value == 0 else "from 0"
            else:
                change = f"{(value - before) / abs(before):+.1%}"
            shown = "-" if before is None else f"{before:.6g}"
            lines.append(f"{job + '.' + name:<46} {shown:>14} {value:>14.6g} {change:>9}")
    return lines


# Jobs of the size the benchmarks run, to show what a new table changes in practice.
REFERENCE_JOBS = {
    # 16 inputs from 2 channels read; parts of 512 windows (4.3 h, with the filters' reach),
    # the statistic over a 22-h Sleep-EDF recording streamed in stretches of as many
    # (window_parts.statistic_read: 0.5 Hz high-pass reach 2,153 samples a side)
    "embed BIOT, batch 32, Sleep-EDF (22 h recordings at 100 Hz), 2 reader threads": (
        "embed_cpu", {
            "batch_size": 32, "n_channels": 16, "n_samples": 6000, "feature_dim": 256,
            "weights_bytes": 13_000_000, "recording_bytes": 2 * (512 * 3000 + 5000) * 8,
            "statistic_bytes": 2 * (512 * 3000 + 2 * 2153) * 8, "resample_ratio": 2.0,
            "n_workers": 2, "n_windows": 200_000, "night_windows": 512,
            "batch_activation_bytes": 700 * MIB, "activation_batch_size": 32}),
    "staging probe fold, 160k/20k/20k x 256, 5 classes, 2 parallel fits": ("probe_logistic", {
        "n_train": 160_000, "n_val": 20_000, "n_test": 20_000, "dim": 256, "n_classes": 5,
        "n_jobs": 2, "n_fits": 6}),
    "brain-age ridge, 78 subjects x 256": ("probe_ridge", {"n": 78, "p": 256}),
    "subject means, 200k rows x 256, 78 subjects, 65536-row chunks": ("aggregate_subject_mean", {
        "dim": 256, "chunk_rows": 65536, "n_subjects": 78, "n_rows": 200_000}),
}


def reference_drift(old: dict, new: dict) -> list[str]:
    """Totals of REFERENCE_JOBS under the old and the new table."""
    lines = [f"{'reference job':<66} {'old MB':>8} {'new MB':>8} {'change':>8}"]
    for label, (job, inputs) in REFERENCE_JOBS.items():
        before = estimate(job, inputs, old, None).total
        after = estimate(job, inputs, new, None).total
        lines.append(f"{label:<66} {before / MIB:8.0f} {after / MIB:8.0f} "
                     f"{(after - before) / before:+8.1%}")
    return lines


def environment(mode: str, seconds: float) -> dict:
    def version(name):
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return None

    return {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %z"),
        "host": platform.node(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "packages": {name: version(name) for name in (
            "torch", "braindecode", "scikit-learn", "numpy", "scipy", "h5py", "mne", "joblib")},
        "cpus": os.cpu_count(),
        "memory_limit_bytes": available_memory_limit(),
        "mode": mode,
        "seconds": round(seconds, 1),
    }


def kept_fit(old_fit: dict, report: dict, selected: tuple) -> dict:
    """The fit report of a refit of some job types: the previous table's entries and
    in-sample rows for the job types not refit (their constants are kept too), then the new
    ones, so the table still shows how every constant it holds was fitted."""
    kept = {job: value for job, value in old_fit.items()
            if job != "in_sample" and job not in selected}
    rows = [row for row in old_fit.get("in_sample", []) if row["job"] not in selected]
    return {**kept, **{k: v for k, v in report.items() if k != "in_sample"},
            "in_sample": rows + report.get("in_sample", [])}


def tidy(value):
    """Floats of the report to four significant digits, for a table people read."""
    if isinstance(value, dict):
        return {k: tidy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [tidy(v) for v in value]
    return float(f"{value:.4g}") if isinstance(value, float) else value


HEADER = """\
# Memory calibration: constants of the formulas in workflow/embedprobe/memory/formulas.py, measured
# and fitted by scripts/calibrate_memory.py in the environment below, from the project's real
# jobs (embed, the sleep-staging probe, the brain-age ridge, subject means). Rerun the script
# rather than editing by hand; it prints how every constant moved. Provenance: measured (a
# child's kernel peak), fitted (the tightest constants >= 0 under which the formula covers the
# whole measured peak of every run, over runs of several sizes), structural (what the code
# holds, e.g. state dict + module = 2 copies of the weights), default (not measurable here,
# e.g. CUDA on a machine without a GPU: the code's default or the previous table's value).
# scripts/validate_memory.py checks the table out of sample.
"""


def run(quick: bool, out: Path, previous: Path | None, drift: bool, workdir: Path | None,
        selected: tuple[str, ...] = CALIBRATED_JOBS) -> int:
    """Refit the `selected` job types (the quick plan or the full one), write the table to
    `out`, and print its drift against `previous` (default: the table at `out`)."""
    mode = "quick" if quick else "full"
    previous_path = previous or out
    old = yaml.safe_load(previous_path.read_text()) if previous_path.is_file() else {}
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="calibrate_memory_") as tmp:
        constants, provenance, report = calibrate(mode, workdir or Path(tmp), old or {},
                                                  selected)
    table = {
        "environment": environment(mode, time.monotonic() - start),
        "jobs": constants,
        "provenance": provenance,
        "fit": tidy(kept_fit((old or {}).get("fit", {}), report, selected)),
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(HEADER + yaml.safe_dump(table, sort_keys=False, width=100))
    if drift:
        print(f"\ndrift against {previous_path if old else 'no previous table'}:")
        print("\n".join(drift_table(old or {}, constants)))
        if old:
            print()
            print("\n".join(reference_drift(old, {"jobs": constants})))
    print(f"\nwrote {out} in {time.monotonic() - start:.0f} s")
    return 0


if __name__ == "__main__":  # a measured child: WORKLOAD PARAMS_JSON (child_argv)
    CHILDREN[sys.argv[1]](json.loads(sys.argv[2]))
