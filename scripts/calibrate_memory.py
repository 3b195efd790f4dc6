#!/usr/bin/env python
"""Fit the memory calibration table from measured peaks of real step code.

Each workload runs in its own child process (memory.run_measured) on synthetic inputs of several
sizes: the real library calls of each step (MNE reading an EDF file, embedprobe.preprocess,
braindecode BIOT under inference_mode, h5py writes and chunked reads, StandardScaler +
LogisticRegression(lbfgs) with joblib parallel fits, Ridge in primal and dual form). Peaks are
the kernel's high-water marks: ru_maxrss of the child from wait4, and for a stage inside a child
the growth of VmHWM after resetting it (memory.measure_peak_growth). Constants are fitted by
non-negative least squares; the table is written with the environment it was measured in, and a
drift table against the table it replaces is printed (constants that rose and that fell).

Usage:
  python scripts/calibrate_memory.py --quick          # < 2 minutes; the shipped table
  python scripts/calibrate_memory.py                  # larger sizes, more runs
  python scripts/calibrate_memory.py --quick --out /tmp/cal.yaml --no-drift
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from importlib import metadata
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow"))

from embedprobe import estimates, memory  # noqa: E402

RESULT_TAG = "RESULT "
MiB = estimates.MiB
BIOT_SFREQ = 200
BIOT_TIMES = 6000  # 30 s at 200 Hz
BIOT_CHANNELS = 2

# What each step imports: the interpreter-and-libraries baseline of its jobs.
STEP_IMPORTS = {
    "embed": "import numpy, pandas, scipy.signal, h5py, mne, torch, braindecode.models, "
             "embedprobe.preprocess; torch.ones(8) @ torch.ones(8)",
    "probe": "import numpy, pandas, h5py, joblib, sklearn.linear_model, sklearn.preprocessing, "
             "sklearn.metrics",
    "aggregate": "import numpy, pandas, h5py",
}


# ============================================================== child side: the workloads


def _step_imports(step: str) -> None:
    """Import what the step imports, so a workload's peak contains the measured baseline."""
    exec(STEP_IMPORTS[step], {})


def _report(**values) -> None:
    values["self_peak"] = memory.self_peak_rss()
    print(RESULT_TAG + json.dumps(values), flush=True)


def child_imports(p: dict) -> None:
    _step_imports(p["step"])
    _report()


def _biot_architecture():
    """How the project builds BIOT and reads its features (imported here: it imports torch)."""
    from embedprobe.models.architectures import ARCHITECTURES

    return ARCHITECTURES["BIOT"]


def _biot():
    import braindecode.models

    kwargs = _biot_architecture().build_kwargs(BIOT_CHANNELS, BIOT_SFREQ, BIOT_TIMES)
    return braindecode.models.BIOT(**kwargs)


def child_embed(p: dict) -> None:
    """The embed step on one night: model, read, resample, cut, scale, forward, HDF5 append."""
    _step_imports("embed")
    import h5py
    import mne
    import torch

    from embedprobe.preprocess import cut_windows, resample, scale

    model = _biot()
    if not Path(p["weights"]).is_file():  # the first run writes the checkpoint the others load
        torch.save(model.state_dict(), p["weights"])
    model.load_state_dict(torch.load(p["weights"], weights_only=True))
    model.eval()
    weights_bytes = sum(t.numel() * 4 for t in model.parameters())

    def read_and_window():
        raw = mne.io.read_raw_edf(p["edf"], preload=True, verbose="error")
        native = raw.info["sfreq"]
        signals = raw.get_data()
        del raw
        recording_bytes = signals.nbytes
        signals = resample(signals, native, BIOT_SFREQ)
        starts = np.arange(signals.shape[-1] // BIOT_TIMES) * BIOT_TIMES
        windows = scale(cut_windows(signals, starts, BIOT_TIMES), "percentile95")
        return windows, recording_bytes, BIOT_SFREQ / native

    (windows, recording_bytes, ratio), recording_growth = memory.measure_peak_growth(
        read_and_window)
    batch = p["batch_size"]

    def forward(rows):
        with torch.inference_mode():
            return _biot_architecture().forward(model, torch.from_numpy(windows[rows]), ()).numpy()

    def forward_stage():
        """Batches into the store; the high-water mark after the first batch is what the
        check job measures (one forward pass), the one at the end the whole stage's."""
        with h5py.File(p["h5"], "w") as store:
            out = forward(slice(0, batch))
            first_batch_peak = memory.peak_since_reset()
            data = store.create_dataset("embeddings", (0, out.shape[1]), "f4",
                                        maxshape=(None, out.shape[1]), chunks=(batch, out.shape[1]))
            for k in range(p["n_batches"]):
                out = out if k == 0 else forward(slice(k * batch, (k + 1) * batch))
                data.resize(data.shape[0] + len(out), axis=0)
                data[-len(out):] = out
                store.flush()
        return first_batch_peak, out.shape[1]

    resident_before = memory.resident_now()
    (first_batch_peak, feature_dim), forward_growth = memory.measure_peak_growth(forward_stage)
    _report(weights_bytes=weights_bytes, recording_bytes=recording_bytes, resample_ratio=ratio,
            recording_growth=recording_growth,
            batch_activation_bytes=max(0, first_batch_peak - resident_before),
            forward_growth=forward_growth, feature_dim=int(feature_dim),
            n_windows=int(len(windows)))


def _fold_split(n: int, rng) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    order = rng.permutation(n)
    return order[: int(0.8 * n)], order[int(0.8 * n): int(0.9 * n)], order[int(0.9 * n):]


def _worker_peak(fit, *args):
    """Run a fit in a joblib worker and return its result with the worker's pid and peak."""
    return fit(*args), os.getpid(), memory.self_peak_rss()


def _run_fits(fit, grid, n_jobs: int) -> dict[int, int]:
    """Fits over a grid, in parallel worker processes when n_jobs > 1; worker peaks by pid."""
    if n_jobs <= 1:
        for value in grid:
            fit(value)
        return {}
    from joblib import Parallel, delayed

    results = Parallel(n_jobs=n_jobs)(delayed(_worker_peak)(fit, v) for v in grid)
    peaks: dict[int, int] = {}
    for _, pid, peak in results:
        peaks[pid] = max(peaks.get(pid, 0), peak)
    return peaks


def _logistic_fit(x, y, x_val, c_value, max_iter):
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(C=c_value, solver="lbfgs", max_iter=max_iter, tol=1e-12)
    model.fit(x, y)
    return float(model.predict_proba(x_val).sum())


def child_probe_logistic(p: dict) -> None:
    """A staging probe fold: load, fold copies, StandardScaler, lbfgs fits over C in parallel."""
    _step_imports("probe")
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.preprocessing import StandardScaler

    warnings.filterwarnings("ignore", category=ConvergenceWarning)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((p["n"], p["dim"]), dtype=np.float32)  # the embeddings as loaded
    y = rng.integers(0, p["n_classes"], p["n"])
    x[np.arange(p["n"]), y % p["dim"]] += 1.0  # some signal, so lbfgs has work to do
    train, val, test = _fold_split(p["n"], rng)
    scaler = StandardScaler().fit(x[train])
    x_train, x_val, x_test = (scaler.transform(x[rows]) for rows in (train, val, test))
    assert x_train.dtype == np.float32, "StandardScaler must keep float32"
    grid = np.logspace(-3, 2, p["n_fits"])
    workers = _run_fits(lambda c: _logistic_fit(x_train, y[train], x_val, c, p["max_iter"]),
                        grid, p["n_jobs"])
    _report(worker_peaks=list(workers.values()), x_test=float(x_test.sum()))


def child_probe_ridge(p: dict) -> None:
    """Ridge (solver chosen by shape: p x p gram when n >= p, n x n kernel otherwise)."""
    _step_imports("probe")
    from sklearn.linear_model import Ridge
    from sklearn.preprocessing import StandardScaler

    rng = np.random.default_rng(0)
    x = rng.standard_normal((p["n"], p["p"]), dtype=np.float32)
    y = rng.standard_normal(p["n"]).astype(np.float32)
    x_scaled = StandardScaler().fit_transform(x)
    model = Ridge(alpha=1.0, solver="cholesky").fit(x_scaled, y)
    _report(coef=float(model.coef_.sum()))


def child_aggregate(p: dict) -> None:
    """Subject means streamed from an HDF5 store by chunks of rows."""
    _step_imports("aggregate")
    import h5py

    with h5py.File(p["h5"], "r") as store:
        data = store["embeddings"]
        subjects, codes = np.unique(store["subject"][:], return_inverse=True)
        sums = np.zeros((len(subjects), data.shape[1]), np.float64)
        counts = np.bincount(codes, minlength=len(subjects))
        for start in range(0, data.shape[0], p["chunk_rows"]):
            block = data[start: start + p["chunk_rows"]]
            np.add.at(sums, codes[start: start + len(block)], block)
        means = sums / counts[:, None]
    _report(n_subjects=len(subjects), check=float(means.sum()))


def child_gpu(p: dict) -> None:
    """Host memory of a CUDA embed process and the device memory the context takes."""
    _step_imports("embed")
    import torch

    if not torch.cuda.is_available():
        _report(cuda=False)
        return
    free_before, total = torch.cuda.mem_get_info()
    model = _biot().cuda().eval()

    def run_batch(size):
        with torch.inference_mode():
            x = torch.randn(size, BIOT_CHANNELS, BIOT_TIMES, device="cuda")
            _biot_architecture().forward(model, x, ())

    peaks = memory.gpu_batch_peaks(run_batch, [8, 32], "cuda")
    torch.cuda.synchronize()
    free_after, _ = torch.cuda.mem_get_info()
    context = (free_before - free_after) - torch.cuda.memory_reserved()
    _report(cuda=True, cuda_context_bytes=max(0, int(context)), gpu_peaks=peaks,
            gpu_total_bytes=total)


CHILDREN = {
    "imports": child_imports,
    "embed": child_embed,
    "probe_logistic": child_probe_logistic,
    "probe_ridge": child_probe_ridge,
    "aggregate": child_aggregate,
    "gpu": child_gpu,
}


# ============================================================= parent side: plan and fit


def run_child(workload: str, params: dict) -> dict:
    """One workload in a fresh child; its measured peak and what it reported."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "workflow")}
    argv = [sys.executable, str(Path(__file__).resolve()), "--child", workload,
            "--params", json.dumps(params)]
    run = memory.run_measured(argv, timeout=600, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env)
    if not run.ok:
        reason = f"signal {memory.signal_name(run.killed_by_signal)}" \
            if run.killed_by_signal else f"exit {run.returncode}"
        raise RuntimeError(f"calibration workload {workload} {params} failed ({reason}):\n"
                           f"{run.stderr[-3000:]}")
    line = [row for row in run.stdout.splitlines() if row.startswith(RESULT_TAG)][-1]
    result = json.loads(line[len(RESULT_TAG):])
    # Worker processes hold their own memory: the job's total is the sum of the processes.
    workers = result.get("worker_peaks", [])
    result["peak"] = max(run.peak_bytes, result["self_peak"] + sum(workers))
    result["seconds"] = run.seconds
    result["params"] = params
    print(f"  {workload:<15} {json.dumps(params)[:70]:<70} peak {result['peak'] / MiB:8.1f} MB"
          f"  {run.seconds:5.1f} s", flush=True)
    return result


def nnls_fit(rows: list[dict], columns: dict, target) -> tuple[dict, float]:
    """Non-negative least squares of target(row) on named columns(row).

    Returns the constants and the largest absolute miss of the fit over the rows, in bytes.
    """
    from scipy.optimize import nnls

    names = list(columns)
    design = np.array([[columns[n](r) for n in names] for r in rows], float)
    y = np.array([target(r) for r in rows], float)
    scale = np.where(design.max(axis=0) > 0, design.max(axis=0), 1.0)
    coef, _ = nnls(design / scale, y)
    coef = coef / scale
    miss = float(np.abs(design @ coef - y).max())
    return dict(zip(names, coef.tolist(), strict=True)), miss


def rounded(name: str, value: float) -> float | int:
    """Whole bytes for byte counts, four significant digits for factors."""
    return int(round(value)) if name.endswith("_bytes") else float(f"{value:.4g}")


def write_edf(path: Path, hours: float, sfreq: float, rng) -> Path:
    """A synthetic night (two EEG channels of noise, microvolts) as a real EDF+ file."""
    import edfio

    n = int(hours * 3600 * sfreq)
    signals = [
        edfio.EdfSignal(np.clip(rng.normal(0, 30, n), -400, 400), sfreq, label=label,
                        physical_dimension="uV", physical_range=(-500, 500))
        for label in ("EEG Fpz-Cz", "EEG Pz-Oz")
    ]
    edfio.Edf(signals, data_record_duration=30).write(path)
    return path


def write_store(path: Path, n_rows: int, dim: int, n_subjects: int, rng) -> Path:
    """A synthetic embedding store: float32 rows chunked as the cache writes them."""
    import h5py

    with h5py.File(path, "w") as store:
        data = store.create_dataset("embeddings", (n_rows, dim), "f4",
                                    chunks=(min(n_rows, 1024), dim))
        step = 65536
        for start in range(0, n_rows, step):
            stop = min(n_rows, start + step)
            data[start:stop] = rng.standard_normal((stop - start, dim), dtype=np.float32)
        store["subject"] = np.sort(rng.integers(0, n_subjects, n_rows))
    return path


PLANS = {
    # embed: (hours, recorded rate, batch size, batches); probe: (n, dim, classes, n_jobs)
    True: {
        "embed": [(8, 100, 8, 2), (8, 100, 32, 2), (16, 200, 16, 2)],
        "probe_logistic": [(15_000, 128, 5, 1), (60_000, 256, 5, 1), (60_000, 64, 2, 1),
                           (15_000, 256, 5, 2), (60_000, 256, 5, 2)],
        "probe_ridge": [(20_000, 256), (8_000, 768), (500, 10_000), (1_500, 6_000)],
        "aggregate": [(1_000_000, 32, 80, 8192), (1_000_000, 32, 80, 131_072),
                      (50_000, 512, 1000, 4096), (50_000, 512, 1000, 50_000)],
    },
    False: {
        "embed": [(8, 100, 8, 3), (8, 100, 32, 3), (8, 100, 64, 3), (24, 100, 8, 3),
                  (24, 200, 32, 3), (24, 256, 64, 3)],
        "probe_logistic": [(40_000, 128, 5, 1), (160_000, 256, 5, 1), (320_000, 256, 5, 1),
                           (160_000, 64, 2, 1), (160_000, 256, 10, 1), (40_000, 256, 5, 2),
                           (160_000, 256, 5, 2), (160_000, 256, 5, 3)],
        "probe_ridge": [(40_000, 256), (80_000, 512), (20_000, 2048), (500, 20_000),
                        (2_000, 10_000), (4_000, 20_000)],
        "aggregate": [(1_000_000, 32, 80, 8192), (1_000_000, 32, 80, 131_072),
                      (4_000_000, 16, 500, 65_536), (100_000, 512, 1000, 4096),
                      (100_000, 512, 1000, 65_536)],
    },
}


# Constants that follow from what the code holds rather than from a fit.
STRUCTURAL = {"weights_copies", "input_copies", "hdf5_buffer_bytes", "window_row_bytes",
              "accumulator_copies", "cluster_wrapper_bytes"}


def _unfitted(name: str) -> str:
    return "structural" if name in STRUCTURAL else "default (not measurable here)"


def run_children(tasks: list[tuple[str, dict]], jobs: int) -> list[dict]:
    """Children side by side (each peak is its own process's, so they do not disturb each
    other); results in the order of `tasks`."""
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(lambda task: run_child(*task), tasks))


def calibrate(quick: bool, workdir: Path, old: dict, jobs: int = 2) -> tuple[dict, dict, dict]:
    """Run every workload; returns (constants by job, provenance, fit report)."""
    plan = PLANS[quick]
    rng = np.random.default_rng(0)
    constants = {job: dict(values) for job, values in estimates.DEFAULT_CONSTANTS.items()}
    for job, values in old.get("jobs", {}).items():
        constants.setdefault(job, {}).update(values)  # unfitted ones keep their old values
    provenance = {job: {name: old.get("provenance", {}).get(job, {}).get(name, _unfitted(name))
                        for name in values} for job, values in constants.items()}
    report: dict[str, dict] = {}

    def fitted(job, values, how="fitted"):
        for name, value in values.items():
            constants[job][name] = rounded(name, value)
            provenance[job][name] = how

    # Inputs first (real EDF files, HDF5 stores), then every child, then the fits.
    tasks: list[tuple[str, dict]] = [("imports", {"step": step}) for step in STEP_IMPORTS]
    edfs: dict[tuple, Path] = {}
    for k, (hours, sfreq, batch, n_batches) in enumerate(plan["embed"]):
        if (hours, sfreq) not in edfs:
            edfs[hours, sfreq] = write_edf(workdir / f"night_{hours}h_{sfreq}hz.edf", hours,
                                           sfreq, rng)
        tasks.append(("embed", {"edf": str(edfs[hours, sfreq]),
                                "weights": str(workdir / f"biot_{k}.pt"),
                                "h5": str(workdir / f"embed_{k}.h5"), "batch_size": batch,
                                "n_batches": n_batches, "hours": hours, "sfreq": sfreq}))
    max_iter = 3 if quick else 10
    for n, dim, n_classes, n_jobs in plan["probe_logistic"]:
        tasks.append(("probe_logistic", {"n": n, "dim": dim, "n_classes": n_classes,
                                         "n_jobs": n_jobs, "n_fits": max(2, n_jobs),
                                         "max_iter": max_iter}))
    shape = {"n": 20_000, "dim": 256, "n_classes": 5, "n_jobs": 1, "n_fits": 1}
    iterations = (max_iter, 10 * max_iter)
    tasks += [("probe_logistic", {**shape, "max_iter": it}) for it in iterations]
    tasks += [("probe_ridge", {"n": n, "p": p}) for n, p in plan["probe_ridge"]]
    stores: dict[tuple, Path] = {}
    for n_rows, dim, n_subjects, chunk_rows in plan["aggregate"]:
        key = (n_rows, dim, n_subjects)
        if key not in stores:
            stores[key] = write_store(workdir / f"store_{n_rows}_{dim}.h5", n_rows, dim,
                                      n_subjects, rng)
        tasks.append(("aggregate", {"h5": str(stores[key]), "chunk_rows": chunk_rows,
                                    "n_rows": n_rows, "dim": dim}))
    if Path("/proc/driver/nvidia").exists():
        tasks.append(("gpu", {}))
    print(f"{len(tasks)} measured children, {jobs} at a time:")
    results = run_children(tasks, jobs)
    runs: dict[str, list[dict]] = {}
    for (workload, _), result in zip(tasks, results, strict=True):
        runs.setdefault(workload, []).append(result)

    baseline = {r["params"]["step"]: r["peak"] for r in runs["imports"]}
    for job, step in (("embed_cpu", "embed"), ("probe_logistic", "probe"),
                      ("probe_ridge", "probe"), ("aggregate_subject_mean", "aggregate")):
        fitted(job, {"baseline_bytes": baseline[step]}, "measured")

    embed_runs = runs["embed"]
    recording, err_rec = nnls_fit(
        embed_runs,
        {"recording_copies": lambda r: r["recording_bytes"],
         "window_copies": lambda r: r["recording_bytes"] * r["resample_ratio"]},
        lambda r: r["recording_growth"])
    activation, err_act = nnls_fit(
        embed_runs, {"activation_factor": lambda r: r["batch_activation_bytes"]},
        lambda r: r["forward_growth"])
    fitted("embed_cpu", {**recording, **activation})
    for name in ("recording_copies", "window_copies"):  # the host side is the same on a GPU
        fitted("embed_gpu", {name: constants["embed_cpu"][name]})
    report["embed_cpu"] = {"fit_max_miss_mb": {"recording stage": err_rec / MiB,
                                               "forward stage": err_act / MiB}}

    *logistic_runs, short, long_ = runs["probe_logistic"]

    def fits(r):
        return max(1, min(r["params"]["n_jobs"], r["params"]["n_fits"]))

    def n_train(r):
        return int(0.8 * r["params"]["n"])

    values, err = nnls_fit(
        logistic_runs,
        {"embeddings_copies": lambda r: r["params"]["n"] * r["params"]["dim"] * 4,
         "fit_data_copies": lambda r: fits(r) * n_train(r) * r["params"]["dim"] * 4,
         "workspace_factor": lambda r: fits(r) * n_train(r) * r["params"]["n_classes"] * 8,
         "worker_baseline_bytes": lambda r: fits(r) if fits(r) > 1 else 0},
        lambda r: r["peak"] - baseline["probe"])
    fitted("probe_logistic", values)
    fitted("probe_ridge", {"worker_baseline_bytes": values["worker_baseline_bytes"],
                           "fit_data_copies": values["fit_data_copies"]})
    report["probe_logistic"] = {
        "fit_max_miss_mb": err / MiB,
        f"peak_change_{iterations[0]}_to_{iterations[1]}_iterations":
            (long_["peak"] - short["peak"]) / short["peak"],
    }

    ridge_runs = runs["probe_ridge"]
    values, err = nnls_fit(
        ridge_runs,
        {"data_copies": lambda r: r["params"]["n"] * r["params"]["p"] * 4,
         "gram_factor": lambda r: r["params"]["p"] ** 2 * 8
         if r["params"]["n"] >= r["params"]["p"] else 0,
         "kernel_factor": lambda r: r["params"]["n"] ** 2 * 8
         if r["params"]["n"] < r["params"]["p"] else 0},
        lambda r: r["peak"] - baseline["probe"])
    fitted("probe_ridge", values)
    report["probe_ridge"] = {"fit_max_miss_mb": err / MiB}

    aggregate_runs = runs["aggregate"]
    agg = constants["aggregate_subject_mean"]
    values, err = nnls_fit(
        aggregate_runs,
        {"chunk_copies": lambda r: r["params"]["chunk_rows"] * r["params"]["dim"] * 4,
         "index_row_bytes": lambda r: r["params"]["n_rows"]},
        lambda r: r["peak"] - baseline["aggregate"] - agg["hdf5_buffer_bytes"]
        - r["n_subjects"] * r["params"]["dim"] * 8 * agg["accumulator_copies"])
    fitted("aggregate_subject_mean", values)
    report["aggregate_subject_mean"] = {"fit_max_miss_mb": err / MiB}

    for gpu in runs.get("gpu", []):
        if gpu.get("cuda"):
            fitted("embed_gpu", {"baseline_bytes": gpu["peak"]}, "measured")
            fitted("embed_gpu_device", {"cuda_context_bytes": gpu["cuda_context_bytes"]},
                   "measured")

    report["validation"] = validate({"jobs": constants}, embed_runs, logistic_runs,
                                    ridge_runs, aggregate_runs)
    return constants, provenance, report


def validate(calibration: dict, embed_runs, logistic_runs, ridge_runs, aggregate_runs) -> list:
    """Each run's whole measured peak against the full formula with the fitted constants."""
    cases = []
    for r in embed_runs:
        cases.append(("embed_cpu", r, {
            "batch_size": r["params"]["batch_size"], "n_channels": BIOT_CHANNELS,
            "n_samples": BIOT_TIMES, "feature_dim": r["feature_dim"],
            "weights_bytes": r["weights_bytes"], "recording_bytes": r["recording_bytes"],
            "resample_ratio": r["resample_ratio"], "n_windows": 0,
            "batch_activation_bytes": r["batch_activation_bytes"]}))
    for r in logistic_runs:
        n = r["params"]["n"]
        cases.append(("probe_logistic", r, {
            "n_train": int(0.8 * n), "n_val": int(0.9 * n) - int(0.8 * n),
            "n_test": n - int(0.9 * n), "dim": r["params"]["dim"],
            "n_classes": r["params"]["n_classes"], "n_jobs": r["params"]["n_jobs"],
            "n_fits": r["params"]["n_fits"]}))
    for r in ridge_runs:
        cases.append(("probe_ridge", r, {"n": r["params"]["n"], "p": r["params"]["p"],
                                         "dtype_bytes": 4}))
    for r in aggregate_runs:
        cases.append(("aggregate_subject_mean", r, {
            "dim": r["params"]["dim"], "chunk_rows": r["params"]["chunk_rows"],
            "n_subjects": r["n_subjects"], "n_rows": r["params"]["n_rows"]}))
    rows = []
    print("\nvalidation: whole measured peak against the formula (no margin)")
    print(f"  {'job':<24} {'measured MB':>12} {'estimate MB':>12} {'error':>8}")
    for job, run, inputs in cases:
        total = estimates.estimate(job, inputs, calibration, None).total
        error = (total - run["peak"]) / run["peak"]
        params = {k: v for k, v in run["params"].items() if k not in ("edf", "weights", "h5")}
        rows.append({"job": job, "params": params, "measured_bytes": run["peak"],
                     "estimate_bytes": total, "error": round(error, 4)})
        print(f"  {job:<24} {run['peak'] / MiB:12.1f} {total / MiB:12.1f} {error:+8.1%}")
    for job in dict.fromkeys(row["job"] for row in rows):
        errors = [row["error"] for row in rows if row["job"] == job]
        print(f"  {job}: from {min(errors):+.1%} to {max(errors):+.1%} "
              "(negative: under-estimated, covered by the request margin)")
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
        "resample_ratio": 2.0, "n_workers": 2, "n_windows": 200_000,
        "batch_activation_bytes": 120 * MiB, "activation_batch_size": 32}),
    "staging probe fold, 160k/20k/20k x 256, 5 classes, 2 parallel fits": ("probe_logistic", {
        "n_train": 160_000, "n_val": 20_000, "n_test": 20_000, "dim": 256, "n_classes": 5,
        "n_jobs": 2, "n_fits": 6}),
    "brain-age ridge, 78 subjects x 256": ("probe_ridge", {"n": 78, "p": 256}),
    "subject means, 200k rows x 256, 78 subjects, 8192-row chunks": ("aggregate_subject_mean", {
        "dim": 256, "chunk_rows": 8192, "n_subjects": 78, "n_rows": 200_000}),
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
# and fitted by scripts/calibrate_memory.py in the environment below. Rerun the script rather
# than editing by hand; it prints how every constant moved. Provenance: measured (a child's
# kernel peak), fitted (non-negative least squares over runs of several sizes), structural (what
# the code holds, e.g. state dict + module = 2 copies of the weights), default (not measurable
# here, e.g. CUDA on a machine without a GPU: the code's default or the previous table's value).
"""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, under 2 minutes")
    parser.add_argument("--out", type=Path, default=estimates.CALIBRATION_PATH)
    parser.add_argument("--previous", type=Path, default=None,
                        help="table to compare against (default: the one at --out)")
    parser.add_argument("--no-drift", action="store_true", help="do not print the drift table")
    parser.add_argument("--jobs", type=int, default=2, help="children measured side by side")
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
        constants, provenance, report = calibrate(args.quick, Path(tmp), old or {}, args.jobs)
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
