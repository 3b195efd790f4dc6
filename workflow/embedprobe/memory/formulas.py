"""The terms of every memory job type's peak, in bytes: each a name and a function of the
job's inputs `i` and the calibration constants `c`. estimate.JOB_TYPES gives each job type
its terms (the tuples at the end), the inputs it requires and their defaults, and its
constants' defaults; config/memory_calibration.yaml the fitted constants.

Inputs (bytes unless said otherwise):
  embed_cpu / embed_gpu: batch_size, n_channels, n_samples (per window at the model rate),
    feature_dim, weights_bytes (n_params * 4), recording_bytes (what a reader reads and
    filters for the largest part, window_parts.largest_part: the recorded channels read,
    not the model inputs, * the samples of its stretch with the filters' reach * 8: float64),
    statistic_bytes (the same for the stretch a reader reads and filters at once while it
    computes a per-recording statistic the model's normalisation needs,
    window_parts.statistic_read: a part's length with the filters' reach, or the whole
    recording where it is shorter; else 0), resample_ratio (model rate / recorded rate),
    n_workers (readers: threads beside a CPU encoder, processes beside a GPU one),
    n_windows, night_windows (windows of the largest part; n_channels, the model inputs,
    sizes them), optional part_windows and
    part_signal_bytes (each part's windows and what its reader reads and filters, in stream
    order; without them every part counts as the largest), batch_activation_bytes measured at
    activation_batch_size
    (CPU; peaks.measure_peak_growth of one forward pass, in check); embed_gpu also gpu_peaks
    ({batch size: allocator peak}, two or more sizes; gpu.gpu_batch_peaks),
    gpu_reserved_peaks (the same for the allocator's reserve), gpu_context_bytes (the CUDA
    context of one process, measured by check) and gpu_total_bytes; finish_block_bytes (the
    blocks the store's finish() copies rows in; estimate's default is the store's).
  every job, optional: measured_baseline_bytes, this node's own baseline (check measures
    embed's: interpreter, libraries, the built model and its first call; preflight measures
    the probes' import baselines); without it the calibration table's baseline counts.
  probe_logistic: n_train, n_val, n_test, dim, n_classes, n_jobs (fits at once, in threads),
    n_fits (values of C), dtype_bytes (of the cached embeddings; the parts are read as float32
    whatever it is). It models the probe job: pipeline/fold_job reads the fold's parts from the
    store a block at a time into one float32 array each (store.read_parts: one copy of the
    fold's rows, the whole store never loaded), fit_logistic_probe (method "fast") standardises
    the training part in place (no second copy), builds a p x p preconditioner and runs
    preconditioned L-BFGS fits that share those rows (docs/memory.md, the probe's copies).
  probe_seizure: n_train, n_val, n_test, dim, n_jobs, n_fits, dtype_bytes: the seizure probe
    job (scikit-learn's binary lbfgs per C, seizure_probe.fit_seizure_probe).
  probe_ridge: n, p, n_jobs, n_fits, dtype_bytes (fit_age_fold computes in float64),
    ridge_form ("auto", "primal" or "dual").
  aggregate_subject_mean: dim, chunk_rows, n_subjects, n_rows.
  every job: on_cluster (adds the scheduler's own processes in the job's allocation).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from embedprobe.probing.probe_forms import block_share, eigen_preconditioner, stream_block_rows

FLOAT32 = 4
FLOAT64 = 8
# finish() holds a block of rows read back, its finite check (a byte a value) and h5py's
# write of it: 24 MB for a 16 MB block of a token store, measured on the writer alone
FINISH_BLOCK_COPIES = 1.5
LBFGS_HISTORY = 10  # scipy's lbfgs keeps 10 correction pairs of the coefficient vector

Inputs = dict
Constants = dict
Term = tuple[str, Callable[[Inputs, Constants], float]]


# ------------------------------------------------------------------------ shared sub-terms


def parallel_fits(i: Inputs) -> int:
    """Fits that run at once: n_jobs, but never more than there are fits."""
    return max(1, min(int(i["n_jobs"]), int(i["n_fits"])))


def _worker_processes(i: Inputs) -> int:
    """Parallel ridge fits run in worker processes; one fit runs in the job's own process."""
    fits = parallel_fits(i)
    return fits if fits > 1 else 0


def _nights_in_flight(i: Inputs) -> int:
    """Nights (parts of them) being read ahead of the model: one per reader (thread or
    process), whatever the model's speed; without readers the main thread reads one at a time.
    Each is counted at its reading cost, which covers the windows it holds once read."""
    return max(1, int(i["n_workers"]))


def _signal_held(i: Inputs) -> float:
    """The signal a reader reads and filters at once, as float64 bytes of the channels read:
    a stretch of the statistic's while it computes the recording's statistic (part-sized,
    streamed: window_recipe.streamed_statistic), else its part's stretch. It computes the
    statistic before it reads the part's stretch and keeps only the statistic, so it holds
    one or the other, never both: the larger counts. Neither grows with the recording."""
    return max(float(i["recording_bytes"]), float(i["statistic_bytes"]))


def _parts_in_flight(i: Inputs) -> int:
    """Parts submitted and not yet taken by the model (window_parts.in_flight: one per
    reader and one more); without readers the job's own thread makes the next part while the
    last one's array is still held: one."""
    workers = int(i["n_workers"])
    return workers + 1 if workers > 0 else 1


def _stream_parts(i: Inputs, slots: bool) -> tuple[list, list]:
    """(windows, signal bytes) of each part in stream order (preflight: the window index's
    parts). Reader processes write into `workers + 2` shared slots the size of the largest
    part, which stay resident (`slots`), and inputs without the parts (older records) make
    every part as large as the largest."""
    if slots or not i.get("part_windows"):
        count = _parts_in_flight(i) + 1
        return [i["night_windows"]] * count, [_signal_held(i)] * count
    return list(i["part_windows"]), list(i["part_signal_bytes"])


def _parts_held(i: Inputs, c: Constants, slots: bool = False) -> float:
    """The most the window stream holds at once (window_source.WindowStream): the part being
    batched and the parts in flight after it, each as its windows (every model input: BIOT's
    16 slots from 2 channels read on Sleep-EDF), and what each part being made holds beyond
    its windows: the signal its reader reads and filters (scipy's sosfiltfilt pads it and
    runs forwards and backwards in float64, MNE's FIR filters too; one fitted factor,
    recording_copies, since every protocol filters what it reads). A reader allocates the
    windows once those copies are freed, so the larger of the two counts; at most one part
    per reader is being made. Taken over every run of consecutive parts: where the index's
    parts differ in size (they end at recording ends and every 512th row) the largest never
    come all at once. (The estimate is convex, not linear, in recording_copies:
    refit.fit_constants fits it on its tangents.)"""
    per_window = i["n_channels"] * i["n_samples"] * FLOAT32
    windows, signal = _stream_parts(i, slots)
    beyond = [max(0.0, s * c["recording_copies"] - w * per_window)
              for w, s in zip(windows, signal, strict=True)]
    flight, making = _parts_in_flight(i), max(1, int(i["n_workers"]))
    most = 0.0
    for batched in range(-1, len(windows)):  # -1: before the model takes the first part
        after = range(batched + 1, min(len(windows), batched + 1 + flight))
        held = sum(windows[j] for j in after) + (windows[batched] if batched >= 0 else 0)
        made = sorted((beyond[j] for j in after), reverse=True)[:making]
        most = max(most, held * per_window + sum(made))
    return most


def store_rows_held(i: Inputs, c: Constants) -> float:
    """Rows of the store in memory at once: a batch being written, or after the last batch
    (whose rows are freed by then) what the store's finish() holds: a block of rows read back,
    checked and copied, and the window table it reads back to check the final file's checksum
    (finish_row_bytes a window), the larger. A token store's block (rows of ~0.5 MB) and a
    large index's table make finish the larger."""
    batch = i["batch_size"] * i["feature_dim"] * FLOAT32
    store = i["n_windows"] * i["feature_dim"] * FLOAT32
    finish = (min(store, i["finish_block_bytes"]) * FINISH_BLOCK_COPIES
              + i["n_windows"] * c["finish_row_bytes"])
    return max(batch, finish)


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


def embed_baseline(i: Inputs, c: Constants) -> float:
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
    """Measured at the check job's batch size; activations grow linearly with the batch.

    check measures a forward pass's growth on a heap it has just given back (so the growth is
    all new pages); the embed job's forward pass first reuses freed heap that is still
    resident beside it (one malloc arena for all threads: the readers' freed reading copies,
    the last batch's blocks where no release followed it), `reused_heap_bytes` of it, so only
    the rest grows the job. A small model's whole pass fits in that (on the 66fea43 grid the
    small families' peaks lay 10-40 MB above the other terms, where the factor alone counted
    40-80 MB); a large one's grows past it. (The estimate is convex, not linear, in this
    constant and the factor: refit fits them on its tangents.) A family whose embed growth was
    measured against its check's has its own factor (`family_activation_factor`, from
    models/architectures.py: Chronos 1.0); None takes the fitted one."""
    per_window = i["batch_activation_bytes"] / i["activation_batch_size"]
    factor = i["family_activation_factor"]
    grown = per_window * i["batch_size"] * (c["activation_factor"] if factor is None else factor)
    return max(0.0, grown - c["reused_heap_bytes"])


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
    """The fold's rows: its parts, read from the store in blocks (store.read_parts)."""
    return i["n_train"] + i["n_val"] + i["n_test"]


# pipeline/store_format.READ_BLOCK_BYTES (not imported: h5py at parse time; a test holds them
# equal): the one store block read_parts holds beside the parts
STORE_READ_BLOCK_BYTES = 64 << 20


def _store_block(i: Inputs) -> float:
    """The store blocks read beside the parts (the whole store, if smaller): a held fold's
    read_parts (StoreRows.__getitem__) holds the block just read and the one before it (its
    name is rebound only once the next is read: 455-559 MB while reading, 250,000 x 256);
    a streamed fit one block a read."""
    blocks = 1 if _streamed(i) else 2
    return min(blocks * STORE_READ_BLOCK_BYTES, _logistic_rows(i) * i["dim"] * FLOAT32)


def _streamed(i: Inputs) -> int:
    """1 where the fold's rows stay in the store (the probe_logistic knob `streamed`)."""
    return int(bool(i.get("streamed")))


def _fit_rows(i: Inputs) -> int:
    """The rows one evaluation of the objective holds scores for: every training row, or
    one block of a streamed fit (probing/probe_forms.stream_block_rows)."""
    return min(i["n_train"], stream_block_rows(i["dim"])) if _streamed(i) else i["n_train"]


def _logistic_workspace(i: Inputs, c: Constants) -> float:
    """One lbfgs fit: class scores and gradients per row, and the lbfgs history."""
    rows = _fit_rows(i) * i["n_classes"] * FLOAT64 * c["workspace_factor"]
    history = 2 * LBFGS_HISTORY * (i["dim"] + 1) * i["n_classes"] * FLOAT64
    return rows + history


def _blas_buffers(i: Inputs, c: Constants) -> float:
    """What OpenBLAS's threaded products over a fit's rows touch beyond numpy's arrays: a
    float32 copy of up to blas_rows of them, at most blas_buffer_bytes (measured: 6 MB at
    6,000 x 256 rows, 38-43 MB from 150,000 to 600,000; ~0 with one BLAS thread;
    docs/measurements/2026-12-08-probe-workspace.md). Counted per row, it made the small
    calibration runs ask ~1 KB a training row and over-predicted large folds by 20-41%."""
    return min(min(_fit_rows(i), c["blas_rows"]) * i["dim"] * FLOAT32, c["blas_buffer_bytes"])


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


def _store_bytes(i: Inputs) -> float:
    """The embeddings of a store as float32 rows."""
    return i["n_rows"] * i["dim"] * FLOAT32


def _sklearn_workspace(i: Inputs, c: Constants) -> float:
    """One binary lbfgs fit of scikit-learn: float64 vectors per training row (raw scores,
    losses, gradients, sample weights of the balanced classes) and scipy's lbfgs history."""
    rows = i["n_train"] * FLOAT64 * c["workspace_factor"]
    history = 2 * LBFGS_HISTORY * (i["dim"] + 1) * FLOAT64
    return rows + history


# ------------------------------------------------------- terms several job types share

PARTS_HELD = ("parts in flight and being batched: their windows, and the signal each reader "
              "reads and filters (float64 copies; a recording's statistic streams it in "
              "part-sized stretches first), the larger")
# Host terms shared by embed on the CPU and on the GPU (only activations move to the device).
_EMBED_HOST_TERMS: list[Term] = [
    ("interpreter and libraries, with the model built", embed_baseline),
    # its batches are views of the part being batched; no finished part is held beyond it
    # and those in flight
    (PARTS_HELD, lambda i, c: _parts_held(i, c)),
    ("nights in flight: resampled signal copies",
     lambda i, c: _nights_in_flight(i) * i["recording_bytes"] * i["resample_ratio"]
     * c["window_copies"]),
    ("batch input", lambda i, c: _batch_input_bytes(i) * c["input_copies"]),
    ("HDF5 buffers and the store's rows: a batch written or a block finished, the larger",
     lambda i, c: c["hdf5_buffer_bytes"] + store_rows_held(i, c)),
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
     lambda i, c: (parallel_fits(i) - 1) * i["n"] * i["p"] * i["dtype_bytes"]
     * c["fit_data_copies"]),
    ("solver workspace per parallel fit (gram p x p or kernel n x n)",
     lambda i, c: parallel_fits(i) * ridge_form_bytes(i, c)[ridge_form(i, c)]),
    ("parallel worker processes", lambda i, c: _worker_processes(i)
     * c["worker_baseline_bytes"]),
]

_SCHEDULER: Term = ("scheduler processes", _job_wrapper)
# Standardising, fitting the scaler and scoring go through blocks of rows (both logistic probes).
_ROW_BLOCKS: Term = ("row blocks (standardise, score)",
                     lambda i, c: c["block_rows"] * i["dim"] * FLOAT32)
# The fold's rows: one float32 copy of each part, read from the store a block at a time
# (pipeline/store.read_parts; embeddings_copies fits what the calibration measures beside it,
# ~1), the block being read, and the window table.
_FOLD_ROWS: list[Term] = [
    ("the fold's parts as read (float32, one copy of each row; none streamed)",
     lambda i, c: (1 - _streamed(i)) * _logistic_rows(i) * i["dim"] * FLOAT32
     * c["embeddings_copies"]),
    ("the store block being read",
     lambda i, c: _store_block(i)),
    ("window table", lambda i, c: _logistic_rows(i) * c["window_row_bytes"]),
]
# scikit-learn's probes (seizure, events) fit on a standardised copy of the training rows; the
# staging probe standardises its training part in place (probing/logistic, overwrite).
_PROBE_ROWS: list[Term] = _FOLD_ROWS + [
    ("standardised training rows (float32, shared by the fits)",
     lambda i, c: i["n_train"] * i["dim"] * FLOAT32 * c["fit_data_copies"]),
]

# ------------------------------------------------------------- each job type's terms, in order

EMBED_CPU_TERMS: tuple[Term, ...] = (*_EMBED_HOST_TERMS, ("batch activations", _batch_activations))
# host memory (the device has its own terms below), the readers being processes
# (its reader processes write each part into a shared slot the size of the largest part)
_GPU_HOST_TERMS: list[Term] = [
    (name, (lambda i, c: _parts_held(i, c, slots=True)) if name == PARTS_HELD else formula)
    for name, formula in _EMBED_HOST_TERMS]
EMBED_GPU_TERMS: tuple[Term, ...] = (
    *_GPU_HOST_TERMS[:-1], *_READER_PROCESS_TERMS,
    ("page-locked copies of batches, in and out of the device",
     lambda i, c: _page_locked_copies(i)),
    _GPU_HOST_TERMS[-1])
EMBED_GPU_DEVICE_TERMS: tuple[Term, ...] = (
    ("CUDA context", _cuda_context),
    ("allocator peak at the smallest measured batch (weights, buffers, activations)",
     lambda i, c: _gpu_measured(i)[1]),
    ("batch activations of the further windows",
     lambda i, c: _gpu_measured(i)[2] * max(0, i["batch_size"] - _gpu_measured(i)[0])),
    ("allocator slack", _gpu_slack),
)
# PRECONDITIONER_ROWS of probing/logistic (not imported: scipy at parse time; a test holds
# them equal)
PRECONDITIONER_ROWS = 20_000
# The staging probe's fits, each term (i, c) -> bytes; held, they run after the parts are read
_LOGISTIC_FITS: list[Term] = [
    ("solver workspace per parallel fit",
     lambda i, c: parallel_fits(i) * _logistic_workspace(i, c)),
    ("BLAS threads' buffers per parallel fit",
     lambda i, c: parallel_fits(i) * _blas_buffers(i, c)),
    # each further fit runs in a thread of its own, whose temporaries come from its own malloc
    # arena (freed blocks stay in it)
    ("each further parallel fit's heap",
     lambda i, c: (parallel_fits(i) - 1) * c["thread_heap_bytes"]),
    # the fitted blocks in the share the splits fill (probing/probe_forms.block_share): a BCI fold
    # of a few hundred trials at a token store's 24,576 features would count 2.4 GB of blocks
    # that are never made; from 8,192 rows a split on, the calibrated block_rows unchanged.
    # The diagonal form (wide rows) gathers no covariance blocks: its own wide_block_rows.
    ("row blocks (standardise, score)",
     lambda i, c: (c["block_rows"] if eigen_preconditioner(i["dim"]) else c["wide_block_rows"])
     * block_share(i["n_train"], i["n_val"], i["n_test"]) * i["dim"] * FLOAT32),
    # The covariance, its eigenvectors and eigh's workspace, plus each fit's scaling.
    # (none above probing/probe_forms.EIGEN_MAX_FEATURES: the diagonal form)
    ("preconditioner (p x p float64)",
     lambda i, c: (c["square_copies"] + parallel_fits(i)) * i["dim"] ** 2 * FLOAT64
     if eigen_preconditioner(i["dim"]) else 0),
]


def _read_beyond_fits(i: Inputs, c: Constants) -> float:
    """A held fold's store block is freed before the fits start (read_parts returns; the
    peak is the larger phase: 271 MB reading, 259 MB fitting, at 80,000 x 128), so it counts
    only where it outgrows the fits' memory; a streamed fit reads its blocks while it fits."""
    if _streamed(i):
        return _store_block(i)
    return max(0.0, _store_block(i) - sum(term(i, c) for _, term in _LOGISTIC_FITS))


PROBE_LOGISTIC_TERMS: tuple[Term, ...] = (
    *_PROBE_START,
    *[(name, _read_beyond_fits if name == "the store block being read" else term)
      for name, term in _FOLD_ROWS],
    # streamed (the knob): two blocks of rows at once: the store's span h5py read and the
    # block gathered from it, then that block and its standardised copy (pipeline/store.
    # StoreRows, standardize.StandardizedRows); the preconditioner's rows, gathered once
    # before the fits, are fewer
    ("streamed: two blocks of rows (read and gathered, or gathered and standardised)",
     lambda i, c: _streamed(i) * 2 * max(min(i["n_train"], stream_block_rows(i["dim"])),
                                         min(i["n_train"], PRECONDITIONER_ROWS))
     * i["dim"] * FLOAT32),
    *_LOGISTIC_FITS,
    _SCHEDULER,
)
# The seizure probe (seizure_probe.fit_seizure_probe): the whole store loaded and cut into
# the fold's splits, one standardised float32 copy of the training rows, scikit-learn's
# binary lbfgs per C (threads share the copy), each C's validation scores kept for the
# choice; the event scoring's per-window arrays count with the window table.
PROBE_SEIZURE_TERMS: tuple[Term, ...] = (
    *_PROBE_START, *_PROBE_ROWS,
    ("solver workspace per parallel fit (scikit-learn lbfgs)",
     lambda i, c: parallel_fits(i) * _sklearn_workspace(i, c)),
    _ROW_BLOCKS,
    ("validation scores of every C (float64)",
     lambda i, c: int(i["n_fits"]) * i["n_val"] * FLOAT64),
    _SCHEDULER,
)
PROBE_RIDGE_TERMS: tuple[Term, ...] = (*_RIDGE_TERMS, _SCHEDULER)
# The hypnogram job (tasks/hypnogram): no embeddings are read; the store's window table, the
# source fold's predictions and one row of features per test recording.
HYPNOGRAM_TERMS: tuple[Term, ...] = (
    *_PROBE_START,
    ("window table, the source fold's predictions and the test windows' table",
     lambda i, c: i["n_rows"] * c["window_row_bytes"]),
    _SCHEDULER,
)
SUBJECT_MEAN_JOB_TERMS: tuple[Term, ...] = (*_PROBE_START, *_SUBJECT_MEAN_TERMS, _SCHEDULER)
# The brain-age probe job streams the subject means, then fits ridge, in one process: the
# ridge job's terms plus the stream's (the memory freed after the stream stays in the arena).
BRAIN_AGE_TERMS: tuple[Term, ...] = (
    *_RIDGE_TERMS, *[(f"subject means streamed first: {name}", formula)
                     for name, formula in _SUBJECT_MEAN_TERMS], _SCHEDULER)
# The recording-level probe job (tasks/recording_level): the unit statistics streamed as the
# brain-age job streams subject means (with mean_std also the sums of squares and a float64
# square of each slice), then one scikit-learn lbfgs fit at a time over the units' features.
RECORDING_TERMS: tuple[Term, ...] = (
    *_PROBE_START,
    *[(f"unit statistics streamed first: {name}", formula)
      for name, formula in _SUBJECT_MEAN_TERMS],
    # the sums of squares, the SD and its temporaries per unit, and the float64 square of the
    # largest unit's rows within a block (store.stats_by)
    ("unit SD (mean_std): sums of squares and their temporaries, one unit's rows squared",
     lambda i, c: i["with_std"] * (i["n_subjects"] * i["dim"] * FLOAT64 * c["sd_copies"]
                                   + min(i["unit_rows"], i["chunk_rows"]) * i["dim"] * FLOAT64)),
    ("unit features and their copies (float64: stacked, scaled, each part's rows)",
     lambda i, c: i["n_units"] * i["p"] * FLOAT64 * c["data_copies"]),
    ("solver workspace (scikit-learn lbfgs, one fit at a time)",
     lambda i, c: i["n"] * i["n_classes"] * FLOAT64 * c["workspace_factor"]
     + 2 * LBFGS_HISTORY * (i["p"] + 1) * i["n_classes"] * FLOAT64),
    _SCHEDULER,
)
