"""Predicted peak memory of every downstream job, as named terms in bytes.

Each job type is one object (JobType, registered in JOB_TYPES by name): the terms of its peak
(formulas.py: each a name and a function of the job's inputs `i` and the calibration
constants `c`); the inputs it requires and their defaults; its constants' defaults; its knobs
and the cheaper settings to try before asking for more memory; the job types its constants come
from. The total is the sum of the terms and is the job's whole peak (interpreter and libraries
included), because that is what a scheduler kills on. Constants come from
config/memory_calibration.yaml (calibration.py reads it; scripts/calibrate_memory.py fits it).

JOB_TYPES is the one list of memory job types: the calibration table, the refit
(refit.FITTED: each type's `fitted`), the measured baselines (baselines.JOB_STEP: each type's
`step`), the calibration script and the tasks' probe jobs name only job types registered here
(tests/memory/test_estimates.py checks them).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from types import MappingProxyType

from embedprobe.core.config import schema_default
from embedprobe.core.errors import OutOfMemory, UsageError
from embedprobe.core.units import MIB
from embedprobe.memory.formulas import (
    BRAIN_AGE_TERMS,
    EMBED_CPU_TERMS,
    EMBED_GPU_DEVICE_TERMS,
    EMBED_GPU_TERMS,
    FLOAT32,
    FLOAT64,
    HYPNOGRAM_TERMS,
    PROBE_LOGISTIC_TERMS,
    PROBE_RIDGE_TERMS,
    PROBE_SEIZURE_TERMS,
    RECORDING_TERMS,
    SUBJECT_MEAN_JOB_TERMS,
    Constants,
    Inputs,
    Term,
    parallel_fits,
    ridge_form,
    ridge_form_bytes,
    stream_block_rows,
)

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
    return [(f"n_jobs={jobs}", {"n_jobs": jobs}) for jobs in range(parallel_fits(i) - 1, 0, -1)]


def _cheaper_logistic(i: Inputs, c: Constants) -> list[tuple[str, dict]]:
    """Fewer fits at once, then one fit with the fold's rows left in the store (streamed: the
    same fits to rounding, one pass over the store per evaluation of the objective), where
    that holds less than the rows: its two blocks of rows are fewer than the fold's (a few
    thousand wide token rows are not)."""
    streamed_rows = 2 * min(i["n_train"], stream_block_rows(i["dim"]))
    held_rows = i["n_train"] + i["n_val"] + i["n_test"]
    cheaper = [("streamed=1", {"n_jobs": 1, "streamed": 1})] if held_rows > streamed_rows else []
    return _cheaper_fits(i, c) + cheaper


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
    for jobs in range(parallel_fits(i) - 1, 0, -1):
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
    return {"n_jobs": parallel_fits(i)}


def _logistic_knobs(i: Inputs, c: Constants) -> dict:
    return {"n_jobs": parallel_fits(i), "streamed": int(bool(i["streamed"]))}


def _ridge_knobs(i: Inputs, c: Constants) -> dict:
    return {"ridge_form": ridge_form(i, c), "n_jobs": parallel_fits(i)}


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
    # constants that enter through the larger of two amounts (embed's reader part): the
    # estimate is convex, not linear, in them; refit fits it on its tangents
    convex: tuple[str, ...] = ()
    # the step whose imports its job's measured baseline is (baselines.STEP_IMPORTS); "" where
    # the job's baseline is not measured apart
    step: str = ""
    # the constants scripts/calibrate_memory.py fits on its runs (refit.FITTED)
    fitted: tuple[str, ...] = ()


_EMBED_REQUIRED = ("batch_size", "n_channels", "n_samples", "feature_dim", "weights_bytes",
                   "recording_bytes", "night_windows")
_EMBED_DEFAULTS = MappingProxyType(
    # statistic_bytes 0: no per-recording statistic (all but BIOT's, REVE's, ST-EEGFormer's)
    {"n_workers": 0, "n_windows": 0, "resample_ratio": 1.0, "min_batch_size": 1,
     "statistic_bytes": 0,
     # None: the calibration's activation_factor (all but the families that set their own)
     "family_activation_factor": None,
     # the store's finish() copies rows in blocks of pipeline/store_writer.FINISH_BLOCK_BYTES (a
     # test keeps the two equal; estimate and formulas import no pipeline module)
     "finish_block_bytes": 16 * MIB})
_GPU_REQUIRED = (*_EMBED_REQUIRED, "gpu_peaks", "gpu_total_bytes")
_RIDGE_DEFAULTS = MappingProxyType(
    # fit_age_fold casts the subject means to float64
    {"n_jobs": 1, "n_fits": 8, "dtype_bytes": FLOAT64, "ridge_form": "auto"})
_EMBED_HOST_CONSTANTS = {"weights_copies": 2.0, "recording_copies": 3.0, "window_copies": 3.0,
                         "hdf5_buffer_bytes": 16 * MIB, "window_row_bytes": 200.0,
                         "finish_row_bytes": 300.0}

_LOGISTIC_REQUIRED = ("n_train", "n_val", "n_test", "dim", "n_classes")
_LOGISTIC_DEFAULTS = MappingProxyType({"n_jobs": 1, "n_fits": 6, "dtype_bytes": FLOAT32,
                                       "streamed": 0})

# Constants every job type has (the scheduler's processes beside a cluster job).
COMMON_CONSTANTS = MappingProxyType({"cluster_wrapper_bytes": 300 * MIB})  # 2 x ~130 MB

_TYPES = [
    JobType(
        "embed_cpu",
        step="embed",
        # fitted on the calibration's runs (refit.fit_constants); the rest are measured
        # (baselines), structural (what the code holds) or keep their value
        fitted=("recording_copies", "window_copies", "activation_factor", "reused_heap_bytes"),
        terms=EMBED_CPU_TERMS,
        required=(*_EMBED_REQUIRED, "batch_activation_bytes"),
        defaults=_EMBED_DEFAULTS,
        constants=MappingProxyType({"baseline_bytes": 700 * MIB, **_EMBED_HOST_CONSTANTS,
                                    "input_copies": 1.0, "activation_factor": 1.2,
                                    "reused_heap_bytes": 0.0}),
        knobs=("batch_size", "n_workers"), cheaper=_cheaper_embed, fill=_activations_at_batch,
        convex=("recording_copies", "activation_factor", "reused_heap_bytes")),
    # host memory (the device has its own job type below), the readers being processes
    JobType(
        "embed_gpu",
        terms=EMBED_GPU_TERMS,
        required=_GPU_REQUIRED, defaults=_EMBED_DEFAULTS,
        constants=MappingProxyType({
            # measured on an H200 node: torch with CUDA initialised, mne, braindecode (FACTS.md)
            "baseline_bytes": 1536 * MIB, **_EMBED_HOST_CONSTANTS, "input_copies": 2.0,
            # the reader processes (measured: formulas, the reader-process terms)
            "reader_server_bytes": 70 * MIB, "reader_process_bytes": 25 * MIB}),
        knobs=("batch_size", "n_workers"), cheaper=_cheaper_embed, fill=_activations_at_batch,
        device="embed_gpu_device", convex=("recording_copies",)),
    JobType(
        "embed_gpu_device",
        terms=EMBED_GPU_DEVICE_TERMS,
        required=_GPU_REQUIRED, defaults=_EMBED_DEFAULTS,
        # check measures the context per process; 719 MB is what an H200 showed (FACTS.md)
        constants=MappingProxyType({"cuda_context_bytes": 720 * MIB, "allocator_slack": 0.2,
                                    "reserved_slack": 0.05}),
        knobs=("batch_size",), cheaper=_cheaper_device, fill=_activations_at_batch),
    JobType(
        "probe_logistic",
        step="probe",
        # embeddings_copies structural (1): the fold job reads its parts once and the probe
        # standardises the training part in place (formulas._FOLD_ROWS); fitted, it traded
        # with workspace_factor (n_train is 3/5 of the rows in every run) and over-predicted
        # a 1-million-row fold by 14% (docs/measurements/2026-12-07-probe-scale.md).
        # workspace_factor structural (1.5: what one evaluation holds a row); fitted on small
        # runs it took OpenBLAS's buffers for ~1 KB a row and over-predicted 1-2 million rows
        # by 37-41% (docs/measurements/2026-12-08-probe-workspace.md)
        fitted=("overhead_bytes", "window_row_bytes", "thread_heap_bytes",
                "block_rows", "wide_block_rows", "square_copies"),
        terms=PROBE_LOGISTIC_TERMS, required=_LOGISTIC_REQUIRED, defaults=_LOGISTIC_DEFAULTS,
        constants=MappingProxyType({
            "baseline_bytes": 250 * MIB, "overhead_bytes": 0.0, "embeddings_copies": 1.0,
            "window_row_bytes": 200.0, "workspace_factor": 1.5,
            # measured, not fitted (formulas._blas_buffers: a capped term is not linear in
            # its cap)
            "blas_rows": 40_000.0, "blas_buffer_bytes": 40 * MIB, "thread_heap_bytes": 0.0,
            # wide_block_rows: the diagonal form's (probing/probe_forms), no covariance blocks
            "block_rows": 12288.0, "wide_block_rows": 12288.0, "square_copies": 3.0}),
        knobs=("n_jobs", "streamed"), cheaper=_cheaper_logistic,
        resolved_knobs=_logistic_knobs,
        # a held fold's read block counts beyond the fits' memory (formulas._read_beyond_fits)
        convex=("block_rows", "wide_block_rows", "square_copies", "thread_heap_bytes")),
    # The motor-imagery probe: the staging probe's fit over trials, in a job that also imports
    # scikit-learn's train_test_split for its validation subject (baselines.STEP_IMPORTS
    # "bci"); its constants are the staging probe's, unless the table fits its own.
    JobType(
        "probe_bci",
        step="bci",
        terms=PROBE_LOGISTIC_TERMS, required=_LOGISTIC_REQUIRED, defaults=_LOGISTIC_DEFAULTS,
        constants=MappingProxyType({}), composed_of=("probe_logistic",),
        knobs=("n_jobs",), cheaper=_cheaper_fits, resolved_knobs=_fits_knob),
    # The seizure probe (seizure_probe.fit_seizure_probe, formulas.PROBE_SEIZURE_TERMS).
    JobType(
        "probe_seizure",
        step="seizure",
        # fit_data_copies structural, as the staging probe's
        fitted=("overhead_bytes", "embeddings_copies", "window_row_bytes", "workspace_factor",
                "block_rows"),
        terms=PROBE_SEIZURE_TERMS,
        required=("n_train", "n_val", "n_test", "dim"),
        defaults=MappingProxyType({"n_jobs": 1, "n_fits": 6, "dtype_bytes": FLOAT32}),
        constants=MappingProxyType({
            "baseline_bytes": 250 * MIB, "overhead_bytes": 0.0, "embeddings_copies": 2.0,
            "window_row_bytes": 200.0, "fit_data_copies": 1.0, "workspace_factor": 4.0,
            "block_rows": 8192.0}),
        knobs=("n_jobs",), cheaper=_cheaper_fits, resolved_knobs=_fits_knob),
    JobType(
        "probe_ridge",
        step="ridge",
        fitted=("overhead_bytes", "data_copies", "gram_factor", "kernel_factor"),
        terms=PROBE_RIDGE_TERMS,
        required=("n", "p"), defaults=_RIDGE_DEFAULTS,
        constants=MappingProxyType({
            "baseline_bytes": 250 * MIB, "overhead_bytes": 0.0, "data_copies": 3.0,
            "fit_data_copies": 1.0, "gram_factor": 2.0, "kernel_factor": 2.0,
            "worker_baseline_bytes": 150 * MIB}),
        knobs=("ridge_form", "n_jobs"), cheaper=_cheaper_ridge, resolved_knobs=_ridge_knobs),
    JobType(
        "aggregate_subject_mean",
        step="probe",
        fitted=("overhead_bytes", "chunk_copies", "index_row_bytes"),
        terms=SUBJECT_MEAN_JOB_TERMS,
        required=("dim", "chunk_rows", "n_subjects", "n_rows"), defaults=MappingProxyType({}),
        constants=MappingProxyType({
            # h5py's default chunk cache, 1 MiB for each dataset read (embeddings, row CRCs);
            # 16 MiB (embed's) over-predicted the brain-age job on small stores (100
            # subjects x 200 features: +5.9%, +1.2% with 2 MiB, validate_memory --quick)
            "baseline_bytes": 150 * MIB, "overhead_bytes": 0.0, "hdf5_buffer_bytes": 2 * MIB,
            "chunk_copies": 3.0, "index_row_bytes": 32.0, "accumulator_copies": 2.0}),
        knobs=("chunk_rows",), cheaper=_cheaper_chunks),
    # The brain-age probe job streams the subject means, then fits ridge, in one process: the
    # ridge job's terms plus the stream's (the memory freed after the stream stays in the
    # arena); its constants are its parts', unless the table fits its own.
    JobType(
        "probe_brain_age",
        step="ridge",
        # its own constants over its parts', fitted on the real job
        fitted=("overhead_bytes", "data_copies", "gram_factor", "kernel_factor",
                "chunk_copies"),
        terms=BRAIN_AGE_TERMS,
        required=("n", "p", "dim", "chunk_rows", "n_subjects", "n_rows"),
        defaults=_RIDGE_DEFAULTS, constants=MappingProxyType({}),
        knobs=("ridge_form", "n_jobs"), cheaper=_cheaper_ridge, resolved_knobs=_ridge_knobs,
        composed_of=("aggregate_subject_mean", "probe_ridge")),
    # The recording-level probe job (tasks/recording_level): the unit statistics streamed as
    # above, then a small logistic fit over one row per unit; the stream's constants are
    # aggregate_subject_mean's, unless the table fits its own.
    JobType(
        "probe_recording",
        step="recording",
        fitted=("overhead_bytes", "chunk_copies", "data_copies", "sd_copies"),
        terms=RECORDING_TERMS,
        required=("n_units", "n", "p", "dim", "chunk_rows", "n_subjects", "n_rows",
                  "n_classes"),
        defaults=MappingProxyType({"n_fits": 1, "with_std": 0, "unit_rows": 0}),
        constants=MappingProxyType({"data_copies": 4.0, "workspace_factor": 6.0,
                                    "sd_copies": 3.0}),
        composed_of=("aggregate_subject_mean",)),
    # The sleep-event probes (tasks/sleep_events): the seizure probe's shape (the store loaded,
    # one standardised float32 copy of the training rows, scikit-learn's binary lbfgs), one
    # fit at a time over every field and threshold, with the dataset's reader imported for
    # the event annotations; its constants start from the seizure probe's.
    JobType(
        "probe_events",
        step="events",
        fitted=("overhead_bytes", "embeddings_copies", "window_row_bytes"),
        terms=PROBE_SEIZURE_TERMS,
        required=("n_train", "n_val", "n_test", "dim"),
        defaults=MappingProxyType({"n_jobs": 1, "n_fits": 1, "dtype_bytes": FLOAT32}),
        constants=MappingProxyType({}), composed_of=("probe_seizure",)),
    # The hypnogram job (tasks/hypnogram): the window table and a staging fold's predictions.
    JobType(
        "probe_hypnogram",
        step="hypnogram",
        fitted=("overhead_bytes", "window_row_bytes"),
        terms=HYPNOGRAM_TERMS,
        required=("n_rows",), defaults=MappingProxyType({}),
        constants=MappingProxyType({"baseline_bytes": 250 * MIB, "overhead_bytes": 0.0,
                                    "window_row_bytes": 400.0})),
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
            f"{self.job}: {self.verdict}; total {self.total / MIB:,.0f} MB, request "
            f"{self.request_mb:,} MB (margin {self.margin:.0%}), limit {limit}"
        ]
        width = max(len(name) for name in self.terms)
        for name, value in sorted(self.terms.items(), key=lambda item: -item[1]):
            share = value / self.total if self.total else 0.0
            lines.append(f"  {name:<{width}}  {value / MIB:>10,.1f} MB  {share:>4.0%}")
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
    return int(math.ceil(total_bytes * (1.0 + margin) / MIB))


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
             margin: float | None = None) -> Estimate:
    """The predicted peak of one job: the terms of its job type, total, request and verdict.
    `margin`: the request's share above the total; None: the schema's memory.margin (the
    preflight passes the config's).

    Verdict "too_big" when the request (total plus margin) exceeds the limit; for a job type
    with a device side (embed_gpu) also when the device estimate exceeds the GPU's memory
    (gpu_total_bytes).
    """
    if margin is None:
        margin = schema_default("memory", "margin")
    kind = registered_job(job_type)
    i = job_inputs(job_type, inputs)
    c = job_constants(job_type, calibration)
    terms = {name: int(math.ceil(max(0.0, formula(i, c)))) for name, formula in kind.terms}
    total = sum(terms.values())
    request = request_mb(total, margin)
    limit_mb = None if limit_bytes is None else int(limit_bytes // MIB)
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
                 f"in the profile and memory.limit_mb to {mb} in the config)")
    elif on_cluster:
        where = (f"no configured partition has {need:,} MB: add one that does to the config's "
                 f"memory.partitions, or use fewer windows")
    else:
        where = (f"run it on a machine (or container limit) with at least {need:,} MB, or "
                 f"on a cluster partition that large")
    return f"even at {knobs} it needs {need:,} MB, more than the limit {result.limit_mb:,} MB: " \
        + where


def fit_knobs(job_type: str, inputs: dict, calibration: dict, limit_bytes: int | None,
              margin: float | None = None,
              partitions: dict[str, int] | None = None) -> Estimate:
    """The estimate at the fastest settings that fit, trying the cheap knobs before more memory.

    Knobs, cheapest first: fewer parallel fits (n_jobs), the smaller ridge form (dual when
    samples are fewer than features), a smaller batch, fewer reader threads, smaller HDF5
    chunks. A job that fits at none of them is "too_big", at its smallest settings, with a fix
    naming the knobs tried and the partition (name -> MB, from the profile) that would fit.
    `margin` as for `estimate`.
    """
    if margin is None:
        margin = schema_default("memory", "margin")
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
