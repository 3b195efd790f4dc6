"""Predicted peak memory of every downstream job, as named terms in bytes.

Each job type is one object (JobType, registered in JOB_TYPES by name): the terms of its peak,
each a name and a function of the job's inputs `i` and the calibration constants `c`; the
inputs it requires and their defaults; its constants' defaults; its knobs and the cheaper
settings to try before asking for more memory; the job types its constants come from. The
total is the sum of the terms and is the job's whole peak (interpreter and libraries included),
because that is what a scheduler kills on. Constants come from config/memory_calibration.yaml
(scripts/calibrate_memory.py fits them).

Inputs (bytes unless said otherwise):
  embed_cpu / embed_gpu: batch_size, n_channels, n_samples (per window at the model rate),
    feature_dim, weights_bytes (n_params * 4), recording_bytes (what a reader reads for the
    largest part of a night, window_source.parts: channels read * samples * 8),
    resample_ratio (model rate / recorded rate), n_workers (readers: threads beside a CPU
    encoder, processes beside a GPU one), n_windows, night_windows (windows of the largest
    part), batch_activation_bytes measured at activation_batch_size
    (CPU; memory.measure_peak_growth of one forward pass, in check); embed_gpu also gpu_peaks
    ({batch size: allocator peak}, two or more sizes; memory.gpu_batch_peaks),
    gpu_reserved_peaks (the same for the allocator's reserve), gpu_context_bytes (the CUDA
    context of one process, measured by check) and gpu_total_bytes.
  every job, optional: measured_baseline_bytes, this node's own baseline (check measures
    embed's: interpreter, libraries, the built model and its first call; preflight measures
    the probes' import baselines); without it the calibration table's baseline counts.
  probe_logistic: n_train, n_val, n_test, dim, n_classes, n_jobs (fits at once, in threads),
    n_fits (values of C), dtype_bytes (of the cached embeddings). It models the probe job:
    probe_fold loads the whole store and cuts the fold's splits, probe.fit_logistic_probe
    (method "fast") standardises one float32 copy of the training rows, builds a p x p
    preconditioner and runs preconditioned L-BFGS fits that share that copy.
  probe_seizure: n_train, n_val, n_test, dim, n_jobs, n_fits, dtype_bytes: the seizure probe
    job (scikit-learn's binary lbfgs per C, seizure_probe.fit_seizure_probe).
  probe_ridge: n, p, n_jobs, n_fits, dtype_bytes (fit_age_fold computes in float64),
    ridge_form ("auto", "primal" or "dual").
  aggregate_subject_mean: dim, chunk_rows, n_subjects, n_rows.
  every job: on_cluster (adds the scheduler's own processes in the job's allocation).
"""

from __future__ import annotations

import copy
import math
import shlex
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import MappingProxyType

import yaml

from embedprobe.core.errors import OutOfMemory, UsageError

MiB = 1 << 20
CALIBRATION_PATH = Path(__file__).resolve().parents[3] / "config" / "memory_calibration.yaml"
FLOAT32 = 4
FLOAT64 = 8
LBFGS_HISTORY = 10  # scipy's lbfgs keeps 10 correction pairs of the coefficient vector

Inputs = dict
Constants = dict
Term = tuple[str, Callable[[Inputs, Constants], float]]


# ------------------------------------------------------------------------ shared sub-terms


def _parallel_fits(i: Inputs) -> int:
    """Fits that run at once: n_jobs, but never more than there are fits."""
    return max(1, min(int(i["n_jobs"]), int(i["n_fits"])))


def _worker_processes(i: Inputs) -> int:
    """Parallel ridge fits run in worker processes; one fit runs in the job's own process."""
    fits = _parallel_fits(i)
    return fits if fits > 1 else 0


def _nights_in_flight(i: Inputs) -> int:
    """Nights (parts of them) being read ahead of the model: one per reader (thread or
    process), whatever the model's speed; without readers the main thread reads one at a time.
    Each is counted at its reading cost, which covers the windows it holds once read."""
    return max(1, int(i["n_workers"]))


def _parts_made_ahead(i: Inputs) -> int:
    """Parts made and waiting beyond one per reader: WindowSource.stream keeps one more in
    flight than it has readers (window_source.in_flight), so a reader done early goes on; it
    waits as windows (reader processes: in a shared slot). None without readers."""
    return 1 if int(i["n_workers"]) > 0 else 0


def _part_windows_bytes(i: Inputs) -> float:
    """The model windows of the largest part (night_windows: preflight's largest part)."""
    return i["night_windows"] * i["n_channels"] * i["n_samples"] * FLOAT32


def _reader_processes(i: Inputs) -> int:
    """Reader processes beside a GPU encoder (window_source: processes on cuda, threads on the
    CPU, where the encoder's own threads use the cores)."""
    return max(0, int(i["n_workers"]))


def _measured_baseline(i: Inputs) -> float | None:
    """This node's own baseline, when a job measured it here (check for embed, preflight's
    import children for the probes): it replaces the calibration table's, which was measured
    on another machine with other library versions."""
    measured = i.get("measured_baseline_bytes")
    return float(measured) if measured else None


def _baseline(i: Inputs, c: Constants) -> float:
    measured = _measured_baseline(i)
    return c["baseline_bytes"] if measured is None else measured


def _embed_baseline(i: Inputs, c: Constants) -> float:
    """What embed holds before its first batch: interpreter, libraries (braindecode imports
    most of its own only when the model is built: ~100 MB), the model and its first-call
    state. check measures exactly that on the node; else the table's imports-only baseline
    plus the state dict and the module."""
    measured = _measured_baseline(i)
    if measured is not None:
        return measured
    return c["baseline_bytes"] + i["weights_bytes"] * c["weights_copies"]


def _batch_input_bytes(i: Inputs) -> float:
    return i["batch_size"] * i["n_channels"] * i["n_samples"] * FLOAT32


def _power_of_two_ceil(n: float) -> int:
    return 1 << max(0, math.ceil(n) - 1).bit_length()


def _page_locked_copies(i: Inputs) -> float:
    """A GPU job stages each batch in page-locked memory and takes its vectors back the same
    way (Encoder.launch); two batches are under way at once (the one being stored, the one the
    device computes). torch's pinned-memory cache rounds each block up to a power of two and
    keeps every block for reuse, so the last, smaller batch's blocks stay beside them: three
    of each. (After an out-of-memory halving the cache also keeps the halved sizes' blocks,
    up to two more of each; the rerun of such a job starts at the smaller batch.)"""
    vectors = i["batch_size"] * i["feature_dim"] * FLOAT32
    return 3 * (_power_of_two_ceil(_batch_input_bytes(i)) + _power_of_two_ceil(vectors))


def _batch_activations(i: Inputs, c: Constants) -> float:
    """Measured at the check job's batch size; activations grow linearly with the batch."""
    per_window = i["batch_activation_bytes"] / i["activation_batch_size"]
    return per_window * i["batch_size"] * c["activation_factor"]


def _gpu_line_peaks(i: Inputs) -> dict:
    """The peaks the device line runs through: the caching allocator's reserved peaks (what
    the process really holds on the GPU) where check measured them, else its allocated ones."""
    return i.get("gpu_reserved_peaks") or i["gpu_peaks"]


def _gpu_measured(i: Inputs) -> tuple[int, float, float]:
    """(smallest measured batch, its peak, bytes per further window) on the device.

    The line runs through the smallest and the largest measured batch. Below the smallest
    measured batch the estimate stays at its peak: measure the smaller one at the smallest
    batch you would accept (1 is cheap).
    """
    peaks = {int(b): float(v) for b, v in _gpu_line_peaks(i).items()}
    low, high = min(peaks), max(peaks)
    per_window = max(0.0, (peaks[high] - peaks[low]) / (high - low)) if high > low else 0.0
    return low, peaks[low], per_window


def _gpu_allocated(i: Inputs) -> float:
    low, peak_low, per_window = _gpu_measured(i)
    return peak_low + per_window * max(0, i["batch_size"] - low)


def _gpu_slack(i: Inputs, c: Constants) -> float:
    """Headroom over the line: small over reserved peaks (the allocator's rounding is in
    them), larger over allocated ones (the reserve on top is not)."""
    share = c["reserved_slack"] if i.get("gpu_reserved_peaks") else c["allocator_slack"]
    return share * _gpu_allocated(i)


def _cuda_context(i: Inputs, c: Constants) -> float:
    """The CUDA context of one process: measured per process by check (NVML or nvidia-smi,
    minus the allocator's reserve), else the table's."""
    return float(i.get("gpu_context_bytes") or c["cuda_context_bytes"])


def _logistic_rows(i: Inputs) -> int:
    """Every row of the store: the job loads them all before cutting the fold."""
    return i["n_train"] + i["n_val"] + i["n_test"]


def _logistic_workspace(i: Inputs, c: Constants) -> float:
    """One lbfgs fit: class scores and gradients per row, and the lbfgs history."""
    rows = i["n_train"] * i["n_classes"] * FLOAT64 * c["workspace_factor"]
    history = 2 * LBFGS_HISTORY * (i["dim"] + 1) * i["n_classes"] * FLOAT64
    return rows + history


def ridge_form_bytes(i: Inputs, c: Constants) -> dict[str, float]:
    """Solver matrix of one ridge fit in each form: primal p x p, dual n x n."""
    return {
        "primal": i["p"] * i["p"] * FLOAT64 * c["gram_factor"],
        "dual": i["n"] * i["n"] * FLOAT64 * c["kernel_factor"],
    }


def ridge_form(i: Inputs, c: Constants) -> str:
    """The form a ridge fit uses: as forced, or the smaller of the two ("auto")."""
    form = i.get("ridge_form", "auto")
    if form in ("primal", "dual"):
        return form
    sizes = ridge_form_bytes(i, c)
    return "primal" if sizes["primal"] <= sizes["dual"] else "dual"


def _startup(i: Inputs, c: Constants) -> float:
    """What a probe job holds beyond its imports before its data: the store opened, the runs
    record and its thread, modules imported on first use. Fitted on a tiny job, so the size
    terms need not absorb it (they did, over-predicting large folds by 13-18%)."""
    return c["overhead_bytes"]


def _job_wrapper(i: Inputs, c: Constants) -> float:
    """On a cluster the job's allocation also holds the scheduler's snakemake processes."""
    return c["cluster_wrapper_bytes"] if i.get("on_cluster") else 0


# Host terms shared by embed on the CPU and on the GPU (only activations move to the device).
_EMBED_HOST_TERMS: list[Term] = [
    ("interpreter and libraries, with the model built", _embed_baseline),
    ("nights in flight: raw signal copies (at most one night per reader)",
     lambda i, c: _nights_in_flight(i) * i["recording_bytes"] * c["recording_copies"]),
    ("nights in flight: resampled signal copies",
     lambda i, c: _nights_in_flight(i) * i["recording_bytes"] * i["resample_ratio"]
     * c["window_copies"]),
    ("windows of a part made ahead, waiting for the model",
     lambda i, c: _parts_made_ahead(i) * _part_windows_bytes(i)),
    # its batches are views of it; no finished part is held beyond those in flight
    ("windows of the night being batched", lambda i, c: _part_windows_bytes(i)),
    ("batch input", lambda i, c: _batch_input_bytes(i) * c["input_copies"]),
    ("HDF5 buffers", lambda i, c: c["hdf5_buffer_bytes"] + i["batch_size"] * i["feature_dim"]
     * FLOAT32),
    ("window table", lambda i, c: i["n_windows"] * c["window_row_bytes"]),
    ("scheduler processes", _job_wrapper),
]

# A GPU job's readers are processes forked from one server process (window_source). The
# server holds the reading code's imports (numpy, scipy.signal, MNE), which its readers share;
# each reader adds what it writes after the fork (interpreter state, its allocator). Their
# nights in flight are the host terms above, wherever they sit. Measured as the difference in a
# process tree's cgroup peak between reader processes and reader threads (2 readers, nights of
# 0.75 h and 3 h of sleep: +121 and +110 MB), and per process from /proc/PID/smaps_rollup
# (server 65 MB anonymous; each reader ~25 MB private beyond its night's buffers).
_READER_PROCESS_TERMS: list[Term] = [
    ("reader processes: their server (the reading code's imports, shared by the readers)",
     lambda i, c: c["reader_server_bytes"] if _reader_processes(i) else 0),
    ("reader processes: what each one writes beyond its server's",
     lambda i, c: _reader_processes(i) * c["reader_process_bytes"]),
]

# ------------------------------------------------------------------------- the job types

_SUBJECT_MEAN_TERMS: list[Term] = [
    # neither a block nor h5py's chunk caches hold more than the store has
    ("HDF5 chunk buffers", lambda i, c: min(c["hdf5_buffer_bytes"], _store_bytes(i))
     + min(i["chunk_rows"], i["n_rows"]) * i["dim"] * FLOAT32 * c["chunk_copies"]),
    ("subject column of the window table", lambda i, c: i["n_rows"] * c["index_row_bytes"]),
    ("per-subject sums and means",
     lambda i, c: i["n_subjects"] * i["dim"] * FLOAT64 * c["accumulator_copies"]),
]

_PROBE_START: list[Term] = [
    ("interpreter and libraries", _baseline),
    ("job start-up beyond its imports", _startup),
]

_RIDGE_TERMS: list[Term] = _PROBE_START + [
    ("probe data and its copies (load, scaled, centred)",
     lambda i, c: i["n"] * i["p"] * i["dtype_bytes"] * c["data_copies"]),
    ("training copies per further parallel fit",
     lambda i, c: (_parallel_fits(i) - 1) * i["n"] * i["p"] * i["dtype_bytes"]
     * c["fit_data_copies"]),
    ("solver workspace per parallel fit (gram p x p or kernel n x n)",
     lambda i, c: _parallel_fits(i) * ridge_form_bytes(i, c)[ridge_form(i, c)]),
    ("parallel worker processes", lambda i, c: _worker_processes(i)
     * c["worker_baseline_bytes"]),
]

_SCHEDULER: Term = ("scheduler processes", _job_wrapper)
# Standardising, fitting the scaler and scoring go through blocks of rows (both logistic probes).
_ROW_BLOCKS: Term = ("row blocks (standardise, score)",
                     lambda i, c: c["block_rows"] * i["dim"] * FLOAT32)


def _store_bytes(i: Inputs) -> float:
    """The embeddings of a store as float32 rows."""
    return i["n_rows"] * i["dim"] * FLOAT32


def _sklearn_workspace(i: Inputs, c: Constants) -> float:
    """One binary lbfgs fit of scikit-learn: float64 vectors per training row (raw scores,
    losses, gradients, sample weights of the balanced classes) and scipy's lbfgs history."""
    rows = i["n_train"] * FLOAT64 * c["workspace_factor"]
    history = 2 * LBFGS_HISTORY * (i["dim"] + 1) * FLOAT64
    return rows + history


# --- what each job type may change before asking for more memory, cheapest first


def _cheaper_embed(i: Inputs, c: Constants, readers: bool = True) -> list[tuple[str, dict]]:
    """Halve the batch down to min_batch_size, then (host jobs) drop readers one by one."""
    steps = []
    batch = int(i["batch_size"])
    while batch > int(i["min_batch_size"]):
        batch = max(int(i["min_batch_size"]), batch // 2)
        steps.append((f"batch_size={batch}", {"batch_size": batch}))
    if readers:
        for workers in range(int(i["n_workers"]) - 1, -1, -1):
            steps.append((f"n_workers={workers}", {"batch_size": batch, "n_workers": workers}))
    return steps


def _cheaper_device(i: Inputs, c: Constants) -> list[tuple[str, dict]]:
    return _cheaper_embed(i, c, readers=False)


def _cheaper_fits(i: Inputs, c: Constants) -> list[tuple[str, dict]]:
    """Fewer fits at once."""
    return [(f"n_jobs={jobs}", {"n_jobs": jobs}) for jobs in range(_parallel_fits(i) - 1, 0, -1)]


def _cheaper_ridge(i: Inputs, c: Constants) -> list[tuple[str, dict]]:
    """The smaller form first (when the forced one is the larger), then fewer fits at once."""
    steps = []
    current = ridge_form(i, c)
    other = "dual" if current == "primal" else "primal"
    sizes = ridge_form_bytes(i, c)
    form = current
    if sizes[other] < sizes[current]:
        form = other
        steps.append((f"ridge_form={other}", {"ridge_form": other}))
    for jobs in range(_parallel_fits(i) - 1, 0, -1):
        steps.append((f"n_jobs={jobs}", {"ridge_form": form, "n_jobs": jobs}))
    return steps


def _cheaper_chunks(i: Inputs, c: Constants) -> list[tuple[str, dict]]:
    """Halve the HDF5 blocks down to 1024 rows."""
    steps = []
    rows = int(i["chunk_rows"])
    while rows > 1024:
        rows = max(1024, rows // 2)
        steps.append((f"chunk_rows={rows}", {"chunk_rows": rows}))
    return steps


# --- knobs as the job will run them (resolved from the inputs)


def _fits_knob(i: Inputs, c: Constants) -> dict:
    return {"n_jobs": _parallel_fits(i)}


def _ridge_knobs(i: Inputs, c: Constants) -> dict:
    return {"ridge_form": ridge_form(i, c), "n_jobs": _parallel_fits(i)}


def _no_knobs(i: Inputs, c: Constants) -> dict:
    return {}


def _no_cheaper(i: Inputs, c: Constants) -> list[tuple[str, dict]]:
    return []


def _activations_at_batch(merged: dict) -> None:
    """Activations were measured at the check's batch; without it, at the job's own."""
    merged.setdefault("activation_batch_size", merged["batch_size"])


def _nothing_to_fill(merged: dict) -> None:
    return None


@dataclass(frozen=True)
class JobType:
    """One kind of downstream job and everything its estimate needs: the terms of its peak,
    the inputs it requires and their defaults, its constants' defaults, its knobs and the
    cheaper settings to try, and the job types its constants come from (`composed_of`)."""

    name: str
    terms: tuple[Term, ...]
    required: tuple[str, ...]
    defaults: Mapping[str, object]
    constants: Mapping[str, float]
    knobs: tuple[str, ...] = ()
    cheaper: Callable[[Inputs, Constants], list[tuple[str, dict]]] = _no_cheaper
    # knobs the job resolves from its inputs (ridge form "auto", fits capped by their number)
    resolved_knobs: Callable[[Inputs, Constants], dict] = _no_knobs
    fill: Callable[[dict], None] = _nothing_to_fill  # a default that depends on other inputs
    composed_of: tuple[str, ...] = ()  # their constants first (later ones win), then its own
    device: str | None = None  # the job type of its GPU side, estimated beside it


_EMBED_REQUIRED = ("batch_size", "n_channels", "n_samples", "feature_dim", "weights_bytes",
                   "recording_bytes", "night_windows")
_EMBED_DEFAULTS = MappingProxyType(
    {"n_workers": 0, "n_windows": 0, "resample_ratio": 1.0, "min_batch_size": 1})
_GPU_REQUIRED = (*_EMBED_REQUIRED, "gpu_peaks", "gpu_total_bytes")
_RIDGE_DEFAULTS = MappingProxyType(
    # fit_age_fold casts the subject means to float64
    {"n_jobs": 1, "n_fits": 8, "dtype_bytes": FLOAT64, "ridge_form": "auto"})
_EMBED_HOST_CONSTANTS = {"weights_copies": 2.0, "recording_copies": 3.0, "window_copies": 3.0,
                         "hdf5_buffer_bytes": 16 * MiB, "window_row_bytes": 200.0}
_PROBE_ROWS: list[Term] = [
    ("embeddings as loaded and the fold's splits",
     lambda i, c: _logistic_rows(i) * i["dim"] * i["dtype_bytes"] * c["embeddings_copies"]),
    ("window table", lambda i, c: _logistic_rows(i) * c["window_row_bytes"]),
    ("standardised training rows (float32, shared by the fits)",
     lambda i, c: i["n_train"] * i["dim"] * FLOAT32 * c["fit_data_copies"]),
]

# Constants every job type has (the scheduler's processes beside a cluster job).
COMMON_CONSTANTS = MappingProxyType({"cluster_wrapper_bytes": 300 * MiB})  # 2 x ~130 MB

_TYPES = [
    JobType(
        "embed_cpu",
        terms=(*_EMBED_HOST_TERMS, ("batch activations", _batch_activations)),
        required=(*_EMBED_REQUIRED, "batch_activation_bytes"),
        defaults=_EMBED_DEFAULTS,
        constants=MappingProxyType({"baseline_bytes": 700 * MiB, **_EMBED_HOST_CONSTANTS,
                                    "input_copies": 1.0, "activation_factor": 1.2}),
        knobs=("batch_size", "n_workers"), cheaper=_cheaper_embed, fill=_activations_at_batch),
    # host memory (the device has its own job type below), the readers being processes
    JobType(
        "embed_gpu",
        terms=(*_EMBED_HOST_TERMS[:-1], *_READER_PROCESS_TERMS,
               ("page-locked copies of batches, in and out of the device",
                lambda i, c: _page_locked_copies(i)),
               _EMBED_HOST_TERMS[-1]),
        required=_GPU_REQUIRED, defaults=_EMBED_DEFAULTS,
        constants=MappingProxyType({
            # measured on an H200 node: torch with CUDA initialised, mne, braindecode (FACTS.md)
            "baseline_bytes": 1536 * MiB, **_EMBED_HOST_CONSTANTS, "input_copies": 2.0,
            # the reader processes (measured here: _READER_PROCESS_TERMS)
            "reader_server_bytes": 70 * MiB, "reader_process_bytes": 25 * MiB}),
        knobs=("batch_size", "n_workers"), cheaper=_cheaper_embed, fill=_activations_at_batch,
        device="embed_gpu_device"),
    JobType(
        "embed_gpu_device",
        terms=(
            ("CUDA context", _cuda_context),
            ("allocator peak at the smallest measured batch (weights, buffers, activations)",
             lambda i, c: _gpu_measured(i)[1]),
            ("batch activations of the further windows",
             lambda i, c: _gpu_measured(i)[2] * max(0, i["batch_size"] - _gpu_measured(i)[0])),
            ("allocator slack", _gpu_slack),
        ),
        required=_GPU_REQUIRED, defaults=_EMBED_DEFAULTS,
        # check measures the context per process; 719 MB is what an H200 showed (FACTS.md)
        constants=MappingProxyType({"cuda_context_bytes": 720 * MiB, "allocator_slack": 0.2,
                                    "reserved_slack": 0.05}),
        knobs=("batch_size",), cheaper=_cheaper_device, fill=_activations_at_batch),
    JobType(
        "probe_logistic",
        terms=(
            *_PROBE_START, *_PROBE_ROWS,
            ("solver workspace per parallel fit",
             lambda i, c: _parallel_fits(i) * _logistic_workspace(i, c)),
            _ROW_BLOCKS,
            # The covariance, its eigenvectors and eigh's workspace, plus each fit's scaling.
            ("preconditioner (p x p float64)",
             lambda i, c: (c["square_copies"] + _parallel_fits(i)) * i["dim"] ** 2 * FLOAT64),
            _SCHEDULER,
        ),
        required=("n_train", "n_val", "n_test", "dim", "n_classes"),
        defaults=MappingProxyType({"n_jobs": 1, "n_fits": 6, "dtype_bytes": FLOAT32}),
        constants=MappingProxyType({
            "baseline_bytes": 250 * MiB, "overhead_bytes": 0.0, "embeddings_copies": 2.0,
            "window_row_bytes": 200.0, "fit_data_copies": 1.0, "workspace_factor": 3.0,
            "block_rows": 12288.0, "square_copies": 3.0}),
        knobs=("n_jobs",), cheaper=_cheaper_fits, resolved_knobs=_fits_knob),
    # The seizure probe (seizure_probe.fit_seizure_probe): the whole store loaded and cut into
    # the fold's splits, one standardised float32 copy of the training rows, scikit-learn's
    # binary lbfgs per C (threads share the copy), each C's validation scores kept for the
    # choice; the event scoring's per-window arrays count with the window table.
    JobType(
        "probe_seizure",
        terms=(
            *_PROBE_START, *_PROBE_ROWS,
            ("solver workspace per parallel fit (scikit-learn lbfgs)",
             lambda i, c: _parallel_fits(i) * _sklearn_workspace(i, c)),
            _ROW_BLOCKS,
            ("validation scores of every C (float64)",
             lambda i, c: int(i["n_fits"]) * i["n_val"] * FLOAT64),
            _SCHEDULER,
        ),
        required=("n_train", "n_val", "n_test", "dim"),
        defaults=MappingProxyType({"n_jobs": 1, "n_fits": 6, "dtype_bytes": FLOAT32}),
        constants=MappingProxyType({
            "baseline_bytes": 250 * MiB, "overhead_bytes": 0.0, "embeddings_copies": 2.0,
            "window_row_bytes": 200.0, "fit_data_copies": 1.0, "workspace_factor": 4.0,
            "block_rows": 8192.0}),
        knobs=("n_jobs",), cheaper=_cheaper_fits, resolved_knobs=_fits_knob),
    JobType(
        "probe_ridge",
        terms=(*_RIDGE_TERMS, _SCHEDULER),
        required=("n", "p"), defaults=_RIDGE_DEFAULTS,
        constants=MappingProxyType({
            "baseline_bytes": 250 * MiB, "overhead_bytes": 0.0, "data_copies": 3.0,
            "fit_data_copies": 1.0, "gram_factor": 2.0, "kernel_factor": 2.0,
            "worker_baseline_bytes": 150 * MiB}),
        knobs=("ridge_form", "n_jobs"), cheaper=_cheaper_ridge, resolved_knobs=_ridge_knobs),
    JobType(
        "aggregate_subject_mean",
        terms=(*_PROBE_START, *_SUBJECT_MEAN_TERMS, _SCHEDULER),
        required=("dim", "chunk_rows", "n_subjects", "n_rows"), defaults=MappingProxyType({}),
        constants=MappingProxyType({
            # h5py's default chunk cache, 1 MiB for each dataset read (embeddings, row CRCs);
            # 16 MiB (embed's) over-predicted the brain-age job on small stores (100
            # subjects x 200 features: +5.9%, +1.2% with 2 MiB, validate_memory --quick)
            "baseline_bytes": 150 * MiB, "overhead_bytes": 0.0, "hdf5_buffer_bytes": 2 * MiB,
            "chunk_copies": 3.0, "index_row_bytes": 32.0, "accumulator_copies": 2.0}),
        knobs=("chunk_rows",), cheaper=_cheaper_chunks),
    # The brain-age probe job streams the subject means, then fits ridge, in one process: the
    # ridge job's terms plus the stream's (the memory freed after the stream stays in the
    # arena); its constants are its parts', unless the table fits its own.
    JobType(
        "probe_brain_age",
        terms=(*_RIDGE_TERMS, *[(f"subject means streamed first: {name}", formula)
                                for name, formula in _SUBJECT_MEAN_TERMS], _SCHEDULER),
        required=("n", "p", "dim", "chunk_rows", "n_subjects", "n_rows"),
        defaults=_RIDGE_DEFAULTS, constants=MappingProxyType({}),
        knobs=("ridge_form", "n_jobs"), cheaper=_cheaper_ridge, resolved_knobs=_ridge_knobs,
        composed_of=("aggregate_subject_mean", "probe_ridge")),
]
JOB_TYPES: Mapping[str, JobType] = MappingProxyType({t.name: t for t in _TYPES})

# Read-only views for the calibration tools: each job type's default constants ("common":
# every job's) and the job types whose constants come from others.
DEFAULT_CONSTANTS: Mapping[str, Mapping[str, float]] = MappingProxyType(
    {"common": COMMON_CONSTANTS, **{t.name: t.constants for t in _TYPES}})
COMPOSED: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {t.name: t.composed_of for t in _TYPES if t.composed_of})


def registered_job(name: str) -> JobType:
    """The registered job type; an unknown name is a usage error."""
    if name not in JOB_TYPES:
        raise UsageError(f"no memory formula for job type '{name}'",
                         fix=f"use one of: {', '.join(JOB_TYPES)}")
    return JOB_TYPES[name]


# ---------------------------------------------------------------------------- the estimate


@dataclass
class Estimate:
    """A job's predicted peak: named terms, their total, the request and the verdict."""

    job: str
    terms: dict[str, int]
    total: int
    margin: float
    request_mb: int
    limit_mb: int | None
    verdict: str  # "ok" or "too_big"
    knobs: dict
    fix: str | None = None
    tried: list[str] = field(default_factory=list)
    device: Estimate | None = None
    # The formula's inputs (defaults filled in): what a refit from measured runs needs.
    inputs: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return asdict(self)

    def raise_if_too_big(self) -> None:
        """Stop before the long run, with the breakdown and the fix."""
        if self.verdict != "ok":
            raise OutOfMemory(f"{self.job} cannot fit its memory limit:\n{self}", fix=self.fix)

    def __str__(self) -> str:
        limit = f"{self.limit_mb:,} MB" if self.limit_mb is not None else "unknown"
        lines = [
            f"{self.job}: {self.verdict}; total {self.total / MiB:,.0f} MB, request "
            f"{self.request_mb:,} MB (margin {self.margin:.0%}), limit {limit}"
        ]
        width = max(len(name) for name in self.terms)
        for name, value in sorted(self.terms.items(), key=lambda item: -item[1]):
            share = value / self.total if self.total else 0.0
            lines.append(f"  {name:<{width}}  {value / MiB:>10,.1f} MB  {share:>4.0%}")
        if self.knobs:
            lines.append("  knobs: " + ", ".join(f"{k}={v}" for k, v in self.knobs.items()))
        lines.extend(f"  tried: {step}" for step in self.tried)
        if self.device is not None:
            lines.append("  device: " + str(self.device).replace("\n", "\n  "))
        if self.fix:
            lines.append(f"  fix: {self.fix}")
        return "\n".join(lines)


def _plain(inputs: dict) -> dict:
    """The inputs as JSON keeps them (batch sizes of the GPU peaks as strings)."""
    return {k: ({str(b): v for b, v in value.items()} if isinstance(value, dict) else value)
            for k, value in inputs.items()}


def request_mb(total_bytes: float, margin: float) -> int:
    """MiB to ask the scheduler for (SLURM's and HTCondor's "MB" are MiB)."""
    return int(math.ceil(total_bytes * (1.0 + margin) / MiB))


def job_inputs(job_type: str, inputs: dict) -> dict:
    """The inputs with defaults filled in; a missing required input is a usage error."""
    kind = registered_job(job_type)
    missing = [name for name in kind.required if name not in inputs]
    if missing:
        raise UsageError(f"memory estimate of {job_type} lacks inputs {missing}",
                         fix="pass them from the check job, the window index or the config")
    merged = {**kind.defaults, **inputs}
    kind.fill(merged)
    return merged


def job_constants(job_type: str, calibration: dict) -> dict:
    """Constants of one job type: the calibration table's, defaults where it has none."""
    table = calibration.get("jobs", {})
    merged = {**COMMON_CONSTANTS, **table.get("common", {})}
    kind = JOB_TYPES.get(job_type)
    for part in kind.composed_of if kind else ():
        merged.update({**JOB_TYPES[part].constants, **table.get(part, {})})
    own = kind.constants if kind else {}
    return {**merged, **own, **table.get(job_type, {})}


def _knobs(kind: JobType, i: Inputs, c: Constants) -> dict:
    knobs = {name: i[name] for name in kind.knobs if name in i}
    return knobs | kind.resolved_knobs(i, c)


def estimate(job_type: str, inputs: dict, calibration: dict, limit_bytes: int | None,
             margin: float = 0.15) -> Estimate:
    """The predicted peak of one job: the terms of its job type, total, request and verdict.

    Verdict "too_big" when the request (total plus margin) exceeds the limit; for a job type
    with a device side (embed_gpu) also when the device estimate exceeds the GPU's memory
    (gpu_total_bytes).
    """
    kind = registered_job(job_type)
    i = job_inputs(job_type, inputs)
    c = job_constants(job_type, calibration)
    terms = {name: int(math.ceil(max(0.0, formula(i, c)))) for name, formula in kind.terms}
    total = sum(terms.values())
    request = request_mb(total, margin)
    limit_mb = None if limit_bytes is None else int(limit_bytes // MiB)
    verdict = "ok" if limit_mb is None or request <= limit_mb else "too_big"
    device = None
    if kind.device is not None:
        device = estimate(kind.device, inputs, calibration, i["gpu_total_bytes"], margin)
        if device.verdict != "ok":
            verdict = "too_big"
    return Estimate(job_type, terms, total, margin, request, limit_mb, verdict,
                    _knobs(kind, i, c), device=device, inputs=_plain(i))


# ------------------------------------------------------------------------------ the knobs


def _fix_text(result: Estimate, partitions: dict[str, int] | None, on_cluster: bool) -> str:
    knobs = ", ".join(f"{k}={v}" for k, v in result.knobs.items()) or "no knobs"
    if result.device is not None and result.device.verdict != "ok":
        return (f"even at {knobs} the GPU needs {result.device.request_mb:,} MB of "
                f"{result.device.limit_mb:,} MB: use a GPU with at least "
                f"{result.device.request_mb:,} MB or embed on the CPU")
    need = result.request_mb
    fitting = sorted((mb, name) for name, mb in (partitions or {}).items() if mb >= need)
    if fitting:
        mb, name = fitting[0]
        where = (f"run it on partition '{name}' ({mb:,} MB; set slurm_partition for this rule "
                 f"in the profile and the largest memory to {mb} in the config)")
    elif on_cluster:
        where = (f"no configured partition has {need:,} MB: add one that does to the config, "
                 f"or use fewer windows")
    else:
        where = (f"run it on a machine (or container limit) with at least {need:,} MB, or "
                 f"on a cluster partition that large")
    return f"even at {knobs} it needs {need:,} MB, more than the limit {result.limit_mb:,} MB: " \
        + where


def fit_knobs(job_type: str, inputs: dict, calibration: dict, limit_bytes: int | None,
              margin: float = 0.15, partitions: dict[str, int] | None = None) -> Estimate:
    """The estimate at the fastest settings that fit, trying the cheap knobs before more memory.

    Knobs, cheapest first: fewer parallel fits (n_jobs), the smaller ridge form (dual when
    samples are fewer than features), a smaller batch, fewer reader threads, smaller HDF5
    chunks. A job that fits at none of them is "too_big", at its smallest settings, with a fix
    naming the knobs tried and the partition (name -> MB, from the profile) that would fit.
    """
    result = estimate(job_type, inputs, calibration, limit_bytes, margin)
    if result.verdict == "ok":
        return result
    i = job_inputs(job_type, inputs)
    c = job_constants(job_type, calibration)
    tried = []
    for description, change in registered_job(job_type).cheaper(i, c):
        tried.append(description)
        result = estimate(job_type, {**inputs, **change}, calibration, limit_bytes, margin)
        if result.verdict == "ok":
            break
    result.tried = tried
    if result.verdict != "ok":
        result.fix = _fix_text(result, partitions, bool(i.get("on_cluster")))
    return result


# ------------------------------------------------------------------------- the calibration


def calibration_path(config: dict) -> Path:
    """The table the config names (`memory_calibration`), else the shipped one."""
    return Path(config.get("memory_calibration") or CALIBRATION_PATH)


def embed_baseline_from_table(config: dict, cuda: bool, weights_bytes: int) -> int:
    """The embed baseline the calibration table in use gives (for comparing a measured one)."""
    calibration = load_calibration(calibration_path(config))
    job = "embed_gpu" if cuda else "embed_cpu"
    c = job_constants(job, calibration)
    return int(_embed_baseline({"weights_bytes": weights_bytes}, c))


def load_calibration(path: str | Path = CALIBRATION_PATH) -> dict:
    """The calibration table; constants it lacks are filled from the defaults and listed.

    Returns {"environment": ..., "jobs": {job: {constant: value}}, "defaulted": [...], ...}.
    """
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"memory calibration table {path} not found",
                         fix=f"python scripts/calibrate_memory.py --quick --out "
                             f"{shlex.quote(str(path))}   # in the project folder")
    try:
        table = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as exc:
        raise UsageError(f"memory calibration table {path} is not valid YAML: {exc}",
                         fix="rerun scripts/calibrate_memory.py to rewrite it") from exc
    if not isinstance(table.get("jobs", {}), dict):
        raise UsageError(f"{path}: 'jobs' must map job types to constants",
                         fix="rerun scripts/calibrate_memory.py to rewrite it")
    table = copy.deepcopy(table)
    jobs = table.setdefault("jobs", {})
    defaulted = []
    for job, constants in DEFAULT_CONSTANTS.items():
        have = jobs.setdefault(job, {})
        for name, value in constants.items():
            if name not in have:
                have[name] = value
                defaulted.append(f"{job}.{name}")
    table["defaulted"] = defaulted
    return table
