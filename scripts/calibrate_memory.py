#!/usr/bin/env python
"""Fit the memory calibration table from measured peaks of the project's real jobs.

Every workload is the code a workflow job runs, in its own child process, measured by the kernel
(memory.run_measured: the child's ru_maxrss from wait4):

  embed           `embedprobe check`, then `embedprobe embed` (run_embed: reader threads, the
                  Encoder, preprocessing, the HDF5 store) on generated Sleep-EDF demo nights;
                  its inputs are the ones preflight builds from the check JSON and the index
                  (preflight.embed_inputs)
  probe_logistic  `embedprobe probe` (probe_fold -> probe.fit_logistic_probe, the fast method)
                  on an HDF5 store of hard synthetic embeddings; inputs from
                  the task's probe_memory
  probe_seizure   `embedprobe probe` of the seizure benchmark (probe_fold ->
                  seizure_probe.fit_seizure_probe: scikit-learn's lbfgs per C, threshold, SzCORE
                  event scoring) on a store of synthetic embeddings whose windows are real
                  windows of a generated CHB-MIT look-alike; inputs from the task's probe_memory
  probe_ridge     probe.fit_age_fold (StandardScaler + Ridge, alpha by inner CV, refit) on
                  subject means, split into training and test subjects as probe_fold does
  aggregate       EmbeddingStore.mean_by("subject") on a store (the brain-age job's first part)

Baselines are measured: a child that imports what the step's job imports. The other constants are
fitted on each job's whole measured peaks with the job's own formula (estimates.JOB_TYPES; the
total is linear in each fitted constant, so the fit evaluates the very terms the estimate uses):
the tightest constants >= 0 under which no run is under-predicted, since a request has to cover
the unlucky run (embed peaks vary by ~10% between runs of the same job). The sizes here differ
from the ones scripts/validate_memory.py checks. The table is written with the environment it was
measured in, and a drift table against the table it replaces is printed (constants that rose and
that fell).

Usage:
  python scripts/calibrate_memory.py --quick          # ~4 min on 2 cores (241 s); shipped table
  python scripts/calibrate_memory.py                  # more and larger runs
  python scripts/calibrate_memory.py --quick --out /tmp/cal.yaml --no-drift
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow"))

from embedprobe.memory import baselines  # noqa: E402
from embedprobe.memory import estimate as estimates  # noqa: E402
from embedprobe.memory import measure as memory  # noqa: E402
from embedprobe.memory.refit import FITTED, fit_constants, rounded  # noqa: E402

RESULT_TAG = "RESULT "
MiB = estimates.MiB
DEMO_DATASET = "sleep_edf_demo"
PROBE_BENCHMARK = "demo"  # sleep staging: 5 subject folds, the reference C grid
AGE_BENCHMARK = "demo_brain_age"
SEIZURE_BENCHMARK = "epilepsy_demo"  # 5 patient folds, the reference C grid
SEIZURE_DATASET = "chbmit_demo"
# The look-alike whose windows the seizure stores hold: every patient's first file has a seizure.
SEIZURE_LOOKALIKE = {"patients": 2, "files_per_patient": 1, "minutes_per_file": 6, "seed": 0}
SEIZURE_PATIENTS = 20  # the stores' rows are spread over this many patients (5 folds of 4)
NIGHTS_PER_SUBJECT = 2
WINDOWS_PER_NIGHT = 1000  # a Sleep-EDF night holds ~800-1100 scored 30 s windows
CHILD_TIMEOUT_S = 900

# What each step's job imports (its baseline): the list preflight also measures on a node.
STEP_IMPORTS = baselines.STEP_IMPORTS


# ====================================================================== the real jobs


def job_env() -> dict:
    """The children's environment: the package on the path, no hub look-ups."""
    return {**os.environ, "PYTHONPATH": str(ROOT / "workflow"), "HF_HUB_OFFLINE": "1"}


def cli_argv(config: dict, *args) -> list[str]:
    """`embedprobe --job-config JSON ...` as the workflow's rules run it."""
    return [sys.executable, "-m", "embedprobe.cli", "--job-config", json.dumps(config),
            *map(str, args)]


def measure(argv: list[str], label: str) -> memory.MeasuredRun:
    """Run one child to its end and return it with its kernel-measured peak; failures raise."""
    run = memory.run_measured(argv, timeout=CHILD_TIMEOUT_S, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=job_env())
    if not run.ok:
        reason = f"signal {memory.signal_name(run.killed_by_signal)}" \
            if run.killed_by_signal else f"exit {run.returncode}"
        raise RuntimeError(f"{label} failed ({reason}):\n{(run.stderr or '')[-3000:]}")
    return run


def child_argv(workload: str, params: dict) -> list[str]:
    """A workload of this script's child side (ridge, subject means, imports)."""
    return [sys.executable, str(Path(__file__).resolve()), "--child", workload,
            "--params", json.dumps(params)]


def child_result(run: memory.MeasuredRun) -> dict:
    line = [row for row in run.stdout.splitlines() if row.startswith(RESULT_TAG)][-1]
    return json.loads(line[len(RESULT_TAG):])


def write_estimate(path: Path, key: str, estimate) -> Path:
    """A preflight-style JSON with one job, so the job reads its knobs as in the workflow."""
    path.write_text(json.dumps({"jobs": {key: estimate.as_dict()}}))
    return path


@dataclass
class DemoSet:
    """A generated Sleep-EDF demo dataset, its window index and the job config that finds it."""

    config: dict
    roots: dict
    index: Path
    n_windows: int
    hours: float

    @property
    def folder(self) -> Path:
        return self.index.parent


def job_config(folder: Path) -> dict:
    """The project's config with every root (data, cache, results, weights) under `folder`,
    so jobs write their runs tables and caches there, not into the working tree."""
    from embedprobe.core.config import load_config

    config = load_config()
    for key in ("data_root", "cache_root", "results_root", "weights_root"):
        config[key] = str(folder / key.removesuffix("_root"))
    return config


def demo_set(folder: Path, hours: float, subjects: int = 2, nights: int = 2) -> DemoSet:
    """Write `subjects` x `nights` demo nights of `hours` of sleep and their window index.

    Four nights at least: embed holds reader_threads + 2 nights at once (two reading, one
    queued, one being batched), so a smaller dataset never reaches the peak a real one does.
    """
    from embedprobe.core.config import resolve_roots
    from embedprobe.datasets.registry import dataset_root
    from embedprobe.datasets.sleep_edf.lookalike import generate
    from embedprobe.pipeline.index import build_index, write_index

    folder.mkdir(parents=True, exist_ok=True)
    config = job_config(folder)
    config["datasets"][DEMO_DATASET].update(
        expected_recordings=subjects * nights,
        generator={"subjects": subjects, "nights": nights, "hours": hours, "seed": 0})
    roots = resolve_roots(config)
    index = folder / "index.tsv"
    if not index.is_file():
        generate(dataset_root(config, roots, DEMO_DATASET), subjects, nights, hours)
        write_index(build_index(config, roots, DEMO_DATASET), index)
    from embedprobe.pipeline.index import read_index

    return DemoSet(config, roots, index, len(read_index(index)), hours)


def run_check(demo: DemoSet, model: str):
    """The workflow's check job for (demo, model) in its own process; its CheckResult."""
    from embedprobe.pipeline.check import OK, read_result

    path = demo.folder / "check" / f"{model}.json"
    if not path.is_file():
        argv = cli_argv(demo.config, "check", "--dataset", DEMO_DATASET, "--model", model,
                        "--out", path)
        done = subprocess.run(argv, env=job_env(), capture_output=True, text=True,
                              timeout=CHILD_TIMEOUT_S)
        if not path.is_file():
            raise RuntimeError(f"check {model} wrote no result:\n{done.stderr[-3000:]}")
    result = read_result(path)
    if result.status != OK:
        raise RuntimeError(f"check {model}: {result.status}: {result.reason}")
    return path, result


def embed_inputs(demo: DemoSet, check) -> dict:
    """The embed job's estimate inputs exactly as preflight builds them."""
    from embedprobe.memory.preflight import embed_inputs as preflight_embed_inputs
    from embedprobe.pipeline.index import read_index

    return preflight_embed_inputs(demo.config, demo.roots, DEMO_DATASET, check,
                                  read_index(demo.index))


def embed_argv(demo: DemoSet, model: str, estimate_path: Path, out: Path) -> list[str]:
    """The workflow's embed job (knobs from the estimate JSON, torch threads from the config),
    from scratch: an earlier run's store or partial file is removed first."""
    from embedprobe.pipeline.store import partial_path

    out.unlink(missing_ok=True)
    partial_path(out).unlink(missing_ok=True)
    return cli_argv(demo.config, "embed", "--dataset", DEMO_DATASET, "--model", model,
                    "--index", demo.index, "--out", out, "--estimate", estimate_path,
                    "--threads", demo.config["embed"]["threads"])


def window_table(labels: np.ndarray):
    """A Sleep-EDF-like window table: up to WINDOWS_PER_NIGHT windows a night, two nights a
    subject, and ten subjects at least (five folds of two)."""
    import pandas as pd

    per_night = max(1, min(WINDOWS_PER_NIGHT, len(labels) // (10 * NIGHTS_PER_SUBJECT)))
    night = np.arange(len(labels)) // per_night
    subject = [f"SC4{n // NIGHTS_PER_SUBJECT:03d}" for n in night]
    return pd.DataFrame({
        "recording": [f"{s}{n % NIGHTS_PER_SUBJECT + 1}E0" for s, n in zip(subject, night,
                                                                            strict=True)],
        "subject": subject,
        "start": (np.arange(len(labels)) % per_night) * 3000,
        "label": labels.astype(np.int8),
    })


def write_store(path: Path, X: np.ndarray, labels: np.ndarray, table=None,
                dataset: str = DEMO_DATASET) -> list[str]:
    """A finished embedding cache of X (as embed writes it) over `table` (default: a
    Sleep-EDF-like one for `labels`); returns its subject column."""
    from embedprobe import __version__
    from embedprobe.pipeline import store as cache

    table = window_table(labels) if table is None else table
    if not path.is_file():
        identity = cache.CacheIdentity(
            dataset=dataset, model="synthetic",
            windows_sha256=cache.window_table_sha256(table), preprocessing="{}",
            weights_sha256="0" * 64, code_version=__version__)
        path.parent.mkdir(parents=True, exist_ok=True)
        with cache.EmbeddingWriter(path, identity, len(X), X.shape[1], table) as writer:
            for start in range(0, len(X), 8192):
                writer.append(X[start:start + 8192])
            writer.finish()
    return table["subject"].tolist()


def hard_rows(n_rows: int, dim: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The hard synthetic embeddings (embedprobe.probing.synthetic): what a probe has to work at."""
    from embedprobe.probing.synthetic import hard_embeddings

    return hard_embeddings(n_rows, dim, seed=seed)


def probe_config(folder: Path, n_jobs: int) -> dict:
    config = job_config(folder)
    config.setdefault("probe", {})["n_jobs"] = n_jobs
    return config


def probe_inputs(config: dict, benchmark: str, subjects: list[str], dim: int,
                 fold: int = 0) -> dict:
    """A probe job's estimate inputs exactly as preflight builds them (the benchmark's task)."""
    import pandas as pd

    from embedprobe.tasks.registry import benchmark_task

    bench = config["benchmarks"][benchmark]
    table = pd.DataFrame({"subject": subjects})
    return benchmark_task(config, benchmark).probe_memory(config, bench, table, fold, dim)[1]


def probe_argv(config: dict, store: Path, estimate_path: Path, out: Path, fold: int = 0,
               benchmark: str = PROBE_BENCHMARK, dataset: str = DEMO_DATASET):
    """The workflow's probe job for one fold of a benchmark (sleep staging unless named)."""
    out.mkdir(parents=True, exist_ok=True)
    return cli_argv(config, "probe", "--benchmark", benchmark, "--dataset", dataset,
                    "--model", "synthetic", "--embeddings", store, "--fold", fold,
                    "--out", out / "fold.json", "--predictions", out / "fold.npz",
                    "--estimate", estimate_path)


def seizure_set(folder: Path):
    """A CHB-MIT look-alike (EDF files and summaries as PhysioNet lays them out) and its window
    index; returns (the job config that finds it, the index)."""
    from embedprobe.core.config import resolve_roots
    from embedprobe.datasets.registry import dataset_root, generator_for
    from embedprobe.pipeline.index import build_index, read_index, write_index

    config = job_config(folder)
    config["datasets"][SEIZURE_DATASET].update(
        expected_recordings=SEIZURE_LOOKALIKE["patients"] * SEIZURE_LOOKALIKE["files_per_patient"],
        generator=SEIZURE_LOOKALIKE)
    roots = resolve_roots(config)
    index = folder / "seizure_index.tsv"
    if not index.is_file():
        generator_for(config, SEIZURE_DATASET).write_lookalike(
            dataset_root(config, roots, SEIZURE_DATASET), SEIZURE_LOOKALIKE)
        write_index(build_index(config, roots, SEIZURE_DATASET), index)
    return config, read_index(index)


def seizure_store(path: Path, index, rows: int, dim: int, seed: int = 0) -> list[str]:
    """A store of `rows` synthetic embeddings over SEIZURE_PATIENTS patients. Each row is a
    real window of the look-alike (its recording, start and label, cycling through the index),
    so the job reads the real headers and seizure lists for its event scoring; each patient's
    rows cover every window, seizures included. Seizure windows are shifted on a few features
    (a learnable signal). Returns the store's subject column."""
    import pandas as pd

    pick = np.arange(rows) % len(index)
    table = pd.DataFrame({
        "recording": index["recording"].to_numpy()[pick],
        "subject": [f"P{k * SEIZURE_PATIENTS // rows:02d}" for k in range(rows)],
        "start": index["start"].to_numpy()[pick],
        "label": index["label"].to_numpy()[pick].astype(np.int8),
    })
    if not path.is_file():
        rng = np.random.default_rng([seed, rows, dim])
        X = rng.standard_normal((rows, dim), dtype=np.float32)
        X[table["label"].to_numpy() == 1, : min(8, dim)] += 1.0
        write_store(path, X, table["label"].to_numpy(), table, SEIZURE_DATASET)
    return table["subject"].tolist()


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


ROWS_PER_SUBJECT = 20  # windows a subject has in the brain-age stores


def brain_age_set(folder: Path, n_subjects: int, dim: int):
    """A store of n_subjects x ROWS_PER_SUBJECT windows and the SC-subjects.xls with their ages
    where the brain-age job looks for it; returns (job config, store, subject column)."""
    from types import SimpleNamespace

    import pandas as pd

    from embedprobe import __version__
    from embedprobe.datasets.sleep_edf.lookalike import write_subjects_table
    from embedprobe.pipeline import store as cache

    config = job_config(folder)
    data = Path(config["data_root"]) / config["datasets"][DEMO_DATASET]["path"]
    data.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng([n_subjects, dim])
    ages = rng.uniform(25, 95, n_subjects).round()
    plans = [SimpleNamespace(subject=k, night=1, age=float(ages[k]), sex=1 + k % 2,
                             lights_off=dt.datetime(1989, 4, 1, 23, 0)) for k in range(n_subjects)]
    write_subjects_table(data / "SC-subjects.xls", plans)
    subjects = [f"SC{k:02d}" for k in range(n_subjects) for _ in range(ROWS_PER_SUBJECT)]
    table = pd.DataFrame({"recording": [f"{s}E0" for s in subjects], "subject": subjects,
                          "start": np.tile(np.arange(ROWS_PER_SUBJECT) * 3000, n_subjects),
                          "label": np.zeros(len(subjects), np.int8)})
    store = folder / f"store_{n_subjects}x{dim}.h5"
    if not store.is_file():
        identity = cache.CacheIdentity(
            dataset=DEMO_DATASET, model="synthetic",
            windows_sha256=cache.window_table_sha256(table), preprocessing="{}",
            weights_sha256="0" * 64, code_version=__version__)
        X = rng.standard_normal((len(table), dim), dtype=np.float32)
        with cache.EmbeddingWriter(store, identity, len(X), dim, table) as writer:
            for start in range(0, len(X), 8192):
                writer.append(X[start:start + 8192])
            writer.finish()
    return config, store, subjects


def brain_age_argv(config: dict, store: Path, estimate_path: Path, out: Path) -> list[str]:
    """The workflow's probe job for fold 0 of the brain-age benchmark."""
    out.mkdir(parents=True, exist_ok=True)
    return cli_argv(config, "probe", "--benchmark", AGE_BENCHMARK, "--dataset", DEMO_DATASET,
                    "--model", "synthetic", "--embeddings", store, "--fold", 0,
                    "--out", out / "fold.json", "--predictions", out / "fold.npz",
                    "--estimate", estimate_path)


def brain_age_inputs(config: dict, subjects: list[str], dim: int) -> dict:
    """The brain-age job's estimate inputs exactly as preflight builds them (fold 0)."""
    import pandas as pd

    from embedprobe.tasks.registry import benchmark_task

    bench = config["benchmarks"][AGE_BENCHMARK]
    table = pd.DataFrame({"subject": subjects})
    return benchmark_task(config, AGE_BENCHMARK).probe_memory(config, bench, table, 0, dim)[1]


def ridge_form_used(n: int, p: int) -> str:
    """The form scikit-learn's Ridge solves in fit_age_fold's largest fit (all n rows)."""
    return "dual" if p > n else "primal"


# ================================================================== child side: workloads


def _step_imports(step: str) -> None:
    """Import what the step imports, so a workload's peak contains the measured baseline."""
    exec(STEP_IMPORTS[step], {})


def _report(**values) -> None:
    values["self_peak"] = memory.self_peak_rss()
    print(RESULT_TAG + json.dumps(values), flush=True)


def child_ridge(p: dict) -> None:
    """The brain-age ridge path: fit_age_fold on the training subjects' mean embeddings."""
    _step_imports("ridge")
    from embedprobe.probing.probe import fit_age_fold

    means, ages = np.load(p["x"]), np.load(p["ages"])
    train = np.arange(len(ages)) < p["n_train"]  # boolean masks copy, as in probe_fold
    result = fit_age_fold(means[train], ages[train], means[~train], ages[~train])
    _report(mae=result["metrics"]["mae"])


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

    peaks = memory.gpu_batch_peaks(run_batch, [8, 32], "cuda")
    # what the driver says this process uses, less the allocator's reserve (NVML or
    # nvidia-smi): a mem_get_info difference taken after the first CUDA call misses it
    context = memory.cuda_context_bytes("cuda")
    _, total = torch.cuda.mem_get_info()
    _report(cuda=True, cuda_context_bytes=int(context), gpu_peaks=peaks.reserved,
            gpu_total_bytes=total)


CHILDREN = {
    "ridge": child_ridge,
    "subject_means": child_subject_means,
    "gpu": child_gpu,
}


# ============================================================== parent side: plan and fit

PLANS = {
    # Sizes differ from scripts/validate_memory.py's grid, so the validation is out of sample.
    # embed: (model, hours of sleep a night); 2 subjects x 2 nights each
    # probe_logistic: (rows, width, parallel fits); probe_ridge: (training subjects, width)
    # subject_means: (rows, width)
    True: {
        "embed": [("biot_random", 1.0), ("cbramod_random", 2.0), ("labram_random", 0.25),
                  ("biot_random", 2.5), ("labram_random", 1.0)],
        "probe_logistic": [(2_000, 16, 1), (10_000, 64, 1), (80_000, 128, 1),
                           (24_000, 512, 1), (12_000, 1024, 1), (30_000, 1536, 1),
                           (6_000, 2_560, 1), (40_000, 128, 2), (16_000, 1024, 2)],
        # probe_seizure: (rows, width, parallel fits)
        "probe_seizure": [(2_000, 16, 1), (10_000, 64, 1), (40_000, 128, 1), (16_000, 512, 1),
                          (8_000, 1024, 1), (4_000, 2_560, 1), (24_000, 256, 2)],
        "probe_ridge": [(40, 16), (100, 512), (400, 1024), (1_200, 128), (2_500, 64),
                        (1_500, 384), (600, 3_000)],
        "subject_means": [(2_000, 16), (200_000, 32), (50_000, 512), (100_000, 128)],
        # the large ones make the kernel and Gram terms big enough to be measured, not guessed
        "brain_age": [(60, 16), (300, 512), (1_000, 128), (400, 1024), (120, 3_000),
                      (2_000, 2_560), (3_000, 384)],
    },
    False: {
        "embed": [("biot_random", 1.0), ("biot_random", 4.0), ("cbramod_random", 2.0),
                  ("labram_random", 0.25), ("labram_random", 2.5)],
        "probe_logistic": [(2_000, 16, 1), (10_000, 64, 1), (40_000, 128, 1), (80_000, 384, 1),
                           (24_000, 512, 1), (12_000, 1024, 1), (40_000, 1536, 1),
                           (6_000, 2_560, 1), (40_000, 128, 2), (16_000, 1024, 2),
                           (80_000, 384, 3)],
        "probe_seizure": [(2_000, 16, 1), (10_000, 64, 1), (40_000, 128, 1), (80_000, 384, 1),
                          (16_000, 512, 1), (8_000, 1024, 1), (4_000, 2_560, 1),
                          (24_000, 256, 2), (40_000, 1024, 3)],
        "probe_ridge": [(40, 16), (100, 512), (400, 1024), (1_200, 128), (2_500, 64),
                        (1_500, 384), (600, 3_000), (4_000, 512)],
        "subject_means": [(2_000, 16), (200_000, 32), (50_000, 512), (100_000, 128),
                          (400_000, 64)],
        "brain_age": [(60, 16), (300, 512), (1_000, 128), (400, 1024), (120, 3_000),
                      (2_000, 2_560), (3_000, 384), (2_500, 256)],
    },
}

# What each job's fit sets (FITTED) and the envelope fit itself (fit_constants, rounded) live
# in embedprobe.memory.refit, shared with `embedprobe calibrate --from-runs`.
STRUCTURAL = {"weights_copies", "input_copies", "hdf5_buffer_bytes", "window_row_bytes",
              "accumulator_copies", "cluster_wrapper_bytes", "fit_data_copies"}
BASELINE_STEP = {"embed_cpu": "embed", "probe_logistic": "probe", "probe_ridge": "ridge",
                 "aggregate_subject_mean": "probe", "probe_brain_age": "ridge",
                 "probe_seizure": "seizure"}


def _unfitted(job: str, name: str) -> str:
    if name in STRUCTURAL and name not in FITTED.get(job, ()):
        return "structural"
    return "default (not measurable here)"


def _print_run(job: str, label: str, run: memory.MeasuredRun) -> None:
    print(f"  {job:<15} {label:<44} peak {run.peak_bytes / MiB:8.1f} MB  {run.seconds:6.1f} s",
          flush=True)


def measure_embed(plan, workdir: Path, repeats: int) -> list[dict]:
    """Each embed job `repeats` times; the highest peak counts.

    The same job peaks differently from run to run (seen: 779 to 878 MB): the reader threads'
    reading and resampling coincide with a batch's activations or not. A request must cover
    the unlucky run, so the fit takes the worst one seen.
    """
    runs = []
    for model, hours in plan:
        demo = demo_set(workdir / f"embed_{hours:g}h", hours)
        _, check = run_check(demo, model)
        inputs = embed_inputs(demo, check)
        estimate = estimates.estimate("embed_cpu", inputs, estimates.load_calibration(), None)
        estimate_path = write_estimate(demo.folder / f"estimate_{model}.json", "embed", estimate)
        peaks = []
        for _ in range(repeats):
            run = measure(embed_argv(demo, model, estimate_path, demo.folder / f"{model}.h5"),
                          f"embed {model} {hours} h")
            _print_run("embed", f"{model}, {demo.n_windows} windows, {hours:g} h nights", run)
            peaks.append(run.peak_bytes)
        runs.append({"inputs": inputs, "peak": max(peaks), "label": f"{model} {hours:g} h"})
    return runs


def measure_probe_logistic(plan, workdir: Path) -> list[dict]:
    runs = []
    for rows, dim, n_jobs in plan:
        X, y = hard_rows(rows, dim)
        store = workdir / f"store_{rows}x{dim}.h5"
        subjects = write_store(store, X, y)
        del X
        config = probe_config(workdir, n_jobs)
        inputs = probe_inputs(config, PROBE_BENCHMARK, subjects, dim)
        estimate = estimates.estimate("probe_logistic", inputs, estimates.load_calibration(), None)
        key = f"probe/{PROBE_BENCHMARK}/fold0"
        estimate_path = write_estimate(workdir / f"estimate_{rows}x{dim}_{n_jobs}.json", key,
                                       estimate)
        run = measure(probe_argv(config, store, estimate_path, workdir / "probe_out"),
                      f"probe {rows} x {dim}")
        _print_run("probe_logistic", f"{rows} rows x {dim}, {n_jobs} parallel fits", run)
        runs.append({"inputs": inputs, "peak": run.peak_bytes,
                     "label": f"{rows} x {dim}, n_jobs {n_jobs}"})
    return runs


def measure_probe_seizure(plan, workdir: Path) -> list[dict]:
    """The real seizure probe job (fold 0) as the workflow runs it."""
    folder = workdir / "seizure"
    runs = []
    for rows, dim, n_jobs in plan:
        config, index = seizure_set(folder)
        config.setdefault("probe", {})["n_jobs"] = n_jobs
        store = folder / f"store_{rows}x{dim}.h5"
        subjects = seizure_store(store, index, rows, dim)
        inputs = probe_inputs(config, SEIZURE_BENCHMARK, subjects, dim)
        estimate = estimates.estimate("probe_seizure", inputs, estimates.load_calibration(), None)
        path = write_estimate(folder / f"estimate_{rows}x{dim}_{n_jobs}.json",
                              f"probe/{SEIZURE_BENCHMARK}/fold0", estimate)
        run = measure(probe_argv(config, store, path, folder / "out",
                                      benchmark=SEIZURE_BENCHMARK, dataset=SEIZURE_DATASET),
                      f"seizure probe {rows} x {dim}")
        _print_run("probe_seizure", f"{rows} rows x {dim}, {n_jobs} parallel fits", run)
        runs.append({"inputs": inputs, "peak": run.peak_bytes,
                     "label": f"{rows} x {dim}, n_jobs {n_jobs}"})
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
        inputs = brain_age_inputs(config, subjects, dim)
        estimate = estimates.estimate("probe_brain_age", inputs, estimates.load_calibration(),
                                      None)
        path = write_estimate(folder / "estimate.json", f"probe/{AGE_BENCHMARK}/fold0", estimate)
        run = measure(brain_age_argv(config, store, path, folder / "out"),
                      f"brain age {n_subjects} x {dim}")
        _print_run("probe_brain_age", f"{n_subjects} subjects x {dim}", run)
        runs.append({"inputs": inputs, "peak": run.peak_bytes, "label": f"{n_subjects} x {dim}"})
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
        runs.append({"inputs": subject_mean_inputs({}, subjects, dim), "peak": run.peak_bytes,
                     "label": f"{rows} x {dim}"})
    return runs


JOB_TYPES = ("embed_cpu", "probe_logistic", "probe_ridge", "aggregate_subject_mean",
             "probe_brain_age", "probe_seizure")


def calibrate(quick: bool, workdir: Path, old: dict,
              selected: tuple[str, ...] = JOB_TYPES) -> tuple[dict, dict, dict]:
    """Run the workloads of the selected job types (the others keep the old table's fitted
    constants); returns (constants by job, provenance, fit report)."""
    plan = PLANS[quick]
    constants = {job: dict(values) for job, values in estimates.DEFAULT_CONSTANTS.items()}
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
    for step in dict.fromkeys(BASELINE_STEP[job] for job in selected if job in BASELINE_STEP):
        # as preflight measures it on a node (baselines.measured_step_baseline: `python -c`
        # with the step's imports), so the fitted constants carry what the job adds beyond
        # exactly that; a child of this script would also hold the script's own imports
        # (~4.5 MB more, and every probe estimate ~4.5 MB short where preflight measures)
        run = measure([sys.executable, "-c", STEP_IMPORTS[step]], f"imports {step}")
        _print_run("imports", step, run)
        baseline[step] = run.peak_bytes
    for job, step in BASELINE_STEP.items():
        if job in selected:
            fitted(job, {"baseline_bytes": baseline[step]}, "measured")

    workloads = {
        "embed_cpu": lambda: measure_embed(plan["embed"], workdir, repeats=2 if quick else 3),
        "probe_logistic": lambda: measure_probe_logistic(plan["probe_logistic"], workdir),
        "probe_ridge": lambda: measure_probe_ridge(plan["probe_ridge"], workdir),
        "aggregate_subject_mean": lambda: measure_subject_means(plan["subject_means"], workdir),
        "probe_seizure": lambda: measure_probe_seizure(plan["probe_seizure"], workdir),
    }
    runs = {job: workload() for job, workload in workloads.items() if job in selected}
    for job, job_runs in runs.items():
        values, miss = fit_constants(job, job_runs, FITTED[job], constants[job])
        fitted(job, values)
        report[job] = {"fit_max_over_prediction_mb": miss / MiB}
    # The brain-age job: its parts' fitted constants, then its own fitted on the real job. The
    # table keeps every constant it was fitted with, so an estimate uses exactly those.
    job = "probe_brain_age"
    if job in selected:
        # from the parts just fitted, not the previous table's copies of theirs
        merged = estimates.job_constants(job, {"jobs": {**constants, job: {}}})
        merged.pop("cluster_wrapper_bytes", None)
        constants[job] = {**merged, "baseline_bytes": constants[job]["baseline_bytes"]}
        provenance[job] = {name: provenance[job].get(name, "from its parts (estimates.COMPOSED)")
                           for name in constants[job]}
        runs[job] = measure_brain_age(plan["brain_age"], workdir)
        values, miss = fit_constants(job, runs[job], FITTED[job], constants[job])
        fitted(job, values)
        report[job] = {"fit_max_over_prediction_mb": miss / MiB}
    for name in ("recording_copies", "window_copies"):  # the host side is the same on a GPU
        fitted("embed_gpu", {name: constants["embed_cpu"][name]})

    if Path("/proc/driver/nvidia").exists():
        gpu = child_result(measure(child_argv("gpu", {"model": "biot_random"}), "gpu"))
        if gpu.get("cuda"):
            fitted("embed_gpu", {"baseline_bytes": gpu["self_peak"]}, "measured")
            fitted("embed_gpu_device", {"cuda_context_bytes": gpu["cuda_context_bytes"]},
                   "measured")

    report["in_sample"] = in_sample_errors({"jobs": constants}, runs)
    return constants, provenance, report


def in_sample_errors(calibration: dict, runs: dict[str, list[dict]]) -> list:
    """Each calibration run's measured peak against the fitted formula (no margin).

    In sample: scripts/validate_memory.py checks other sizes, models and widths.
    """
    rows = []
    print("\nin-sample fit: whole measured peak against the formula (no margin)")
    print(f"  {'job':<24} {'run':<32} {'measured MB':>12} {'estimate MB':>12} {'error':>8}")
    for job, job_runs in runs.items():
        for run in job_runs:
            total = estimates.estimate(job, run["inputs"], calibration, None).total
            error = (total - run["peak"]) / run["peak"]
            rows.append({"job": job, "run": run["label"], "measured_bytes": run["peak"],
                         "estimate_bytes": total, "error": round(error, 4)})
            print(f"  {job:<24} {run['label']:<32} {run['peak'] / MiB:12.1f} "
                  f"{total / MiB:12.1f} {error:+8.1%}")
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
    "embed BIOT, batch 32, 8 h night at 100 Hz, 2 reader threads": ("embed_cpu", {
        "batch_size": 32, "n_channels": 2, "n_samples": 6000, "feature_dim": 256,
        "weights_bytes": 13_000_000, "recording_bytes": 2 * 8 * 3600 * 100 * 8,
        "resample_ratio": 2.0, "n_workers": 2, "n_windows": 200_000, "night_windows": 960,
        "batch_activation_bytes": 120 * MiB, "activation_batch_size": 32}),
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
        before = estimates.estimate(job, inputs, old, None).total
        after = estimates.estimate(job, inputs, new, None).total
        lines.append(f"{label:<66} {before / MiB:8.0f} {after / MiB:8.0f} "
                     f"{(after - before) / before:+8.1%}")
    return lines


def environment(quick: bool, seconds: float) -> dict:
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
        "memory_limit_bytes": memory.available_memory_limit(),
        "mode": "quick" if quick else "full",
        "seconds": round(seconds, 1),
    }


def tidy(value):
    """Floats of the report to four significant digits, for a table people read."""
    if isinstance(value, dict):
        return {k: tidy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [tidy(v) for v in value]
    return float(f"{value:.4g}") if isinstance(value, float) else value


HEADER = """\
# Memory calibration: constants of the formulas in workflow/embedprobe/estimates.py, measured
# and fitted by scripts/calibrate_memory.py in the environment below, from the project's real
# jobs (embed, the sleep-staging probe, the brain-age ridge, subject means). Rerun the script
# rather than editing by hand; it prints how every constant moved. Provenance: measured (a
# child's kernel peak), fitted (the tightest constants >= 0 under which the formula covers the
# whole measured peak of every run, over runs of several sizes), structural (what the code
# holds, e.g. state dict + module = 2 copies of the weights), default (not measurable here,
# e.g. CUDA on a machine without a GPU: the code's default or the previous table's value).
# scripts/validate_memory.py checks the table out of sample.
"""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer and smaller runs")
    parser.add_argument("--out", type=Path, default=estimates.CALIBRATION_PATH)
    parser.add_argument("--previous", type=Path, default=None,
                        help="table to compare against (default: the one at --out)")
    parser.add_argument("--no-drift", action="store_true", help="do not print the drift table")
    parser.add_argument("--workdir", type=Path,
                        help="keep generated inputs here and reuse them (default: a temp dir)")
    parser.add_argument("--jobs", default=",".join(JOB_TYPES),
                        help="job types to refit (comma-separated; the others keep the "
                             f"previous table's constants; default all: {','.join(JOB_TYPES)})")
    parser.add_argument("--child", choices=sorted(CHILDREN), help=argparse.SUPPRESS)
    parser.add_argument("--params", default="{}", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        CHILDREN[args.child](json.loads(args.params))
        return 0

    previous_path = args.previous or args.out
    old = yaml.safe_load(previous_path.read_text()) if previous_path.is_file() else {}
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="calibrate_memory_") as tmp:
        workdir = args.workdir or Path(tmp)
        selected = tuple(args.jobs.split(","))
        unknown = sorted(set(selected) - set(JOB_TYPES))
        if unknown:
            parser.error(f"unknown job types {unknown}; use some of {', '.join(JOB_TYPES)}")
        constants, provenance, report = calibrate(args.quick, workdir, old or {}, selected)
    table = {
        "environment": environment(args.quick, time.monotonic() - start),
        "jobs": constants,
        "provenance": provenance,
        "fit": tidy(report),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(HEADER + yaml.safe_dump(table, sort_keys=False, width=100))
    if not args.no_drift:
        print(f"\ndrift against {previous_path if old else 'no previous table'}:")
        print("\n".join(drift_table(old or {}, constants)))
        if old:
            print()
            print("\n".join(reference_drift(old, {"jobs": constants})))
    print(f"\nwrote {args.out} in {time.monotonic() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
