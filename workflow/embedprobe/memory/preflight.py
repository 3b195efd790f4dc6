"""preflight: predict the peak memory of a (dataset, model) pair's downstream jobs.

Two records per pair, so that a job's estimate depends on what the job depends on:
results/preflight/{dataset}/{model}.json holds the embed job (no benchmark enters it), and
results/preflight/{dataset}/{model}/{benchmark}.json one benchmark's probe folds. Adding a
benchmark then writes one new record and leaves the embeddings and the other probes alone.

Inputs are cheap and real: the feature width, parameter count, batch activations and batch
time measured by the check job; row counts from the window index; shapes from the config.
Each job gets named terms, a total, the request (with margin), the limit and a verdict; the
cheaper knobs (smaller batch, fewer parallel fits) are used before asking for more memory.

Preflight is where the embed batch size is decided, once: it starts from the config's
embed.batch_size (on a GPU no larger than the batch the check could run), lowers it while the
job does not fit, and writes it as the embed job's `knobs` (batch_size, n_workers) in the
pair's JSON; the embed job reads them there.
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from embedprobe.core.config import lookup
from embedprobe.core.errors import OutOfMemory, UsageError
from embedprobe.core.paths import output_path
from embedprobe.core.units import MIB
from embedprobe.core.variants import pooled_variant, split_variant
from embedprobe.measure.limits import (
    cluster_memory_limit_mb,
    job_memory_limit,
    running_under_scheduler,
)
from embedprobe.memory.baselines import probe_baseline_inputs
from embedprobe.memory.calibration import calibration_path, load_calibration
from embedprobe.memory.estimate import fit_knobs
from embedprobe.memory.records import job_key
from embedprobe.models.architectures import ARCHITECTURES
from embedprobe.pipeline.check import OK, read_result
from embedprobe.pipeline.context import DatasetContext
from embedprobe.pipeline.device import embed_device
from embedprobe.pipeline.index import read_index
from embedprobe.pipeline.window_parts import largest_part, part_spans, statistic_read
from embedprobe.tasks.base import fold_entry
from embedprobe.tasks.registry import task_for

FLOAT64 = 8


def recording_headers(context: DatasetContext) -> dict:
    """Every recording's header (channels, rate, length) by its name, read from the headers
    only."""
    return {r.recording: context.reader.read_header(r)
            for r in context.recordings() if not r.problem}


def embed_inputs(context: DatasetContext, check, table) -> dict:
    """The embed job's estimate inputs: the check's measurements, the window index's counts
    and what a reader reads and filters (window_recipe.make_windows): the largest part's
    stretch with the filters' reach (window_parts.largest_part), or the longest recording
    from the headers where whole ones are read, and the statistic's stretch
    (window_parts.statistic_read: part-sized, not the recording) where the model's
    normalisation needs the recording's statistic first (BIOT, REVE and ST-EEGFormer under
    the reference protocol); the same for each part, in stream order. All are sized by the recorded
    channels read (channels_read), not the model inputs (check.n_chans: BIOT's 16 slots),
    which size the windows and batches."""
    config = context.config
    spec = context.model_spec(check.model)
    headers = recording_headers(context)
    recorded_sfreq = next(iter(headers.values())).sfreq
    prep = context.preprocessing(spec)
    part = largest_part(table, prep.whole_recordings, spec.sfreq, check.n_times_epoch,
                        prep.filters)
    lengths = {name: header.n_samples for name, header in headers.items()}
    longest = max(lengths.values())
    samples = part.samples if part.samples is not None else longest
    read = channels_read(context, spec, prep)
    epoch_seconds = context.window(spec.bci_filtering)[1]
    statistic = statistic_read(prep, epoch_seconds, recorded_sfreq, longest)
    windows, part_samples = stream_parts(table, prep, spec.sfreq, check.n_times_epoch, lengths,
                                         statistic)
    batch_size = config["embed"]["batch_size"]  # the request; fit_knobs may lower it
    return {
        "batch_size": batch_size,
        "n_channels": check.n_chans,
        "n_samples": check.n_times_epoch,
        "feature_dim": check.feature_dim,
        "weights_bytes": check.n_params * 4,
        "recording_bytes": read * samples * FLOAT64,
        "statistic_bytes": read * statistic * FLOAT64,
        "resample_ratio": spec.sfreq / recorded_sfreq,
        "n_workers": config["embed"]["reader_threads"],
        "n_windows": len(table),
        "night_windows": part.windows,
        "part_windows": windows,
        "part_signal_bytes": [read * n * FLOAT64 for n in part_samples],
        "batch_activation_bytes": check.batch_activation_bytes,
        "activation_batch_size": check.batch_size,
        "family_activation_factor": ARCHITECTURES[spec.architecture].activation_factor,
    } | measured_baseline(check) | gpu_inputs(check, batch_size)


def stream_parts(table, prep, to_sfreq: float, window_samples: int,
                 lengths: dict[str, int], statistic: int) -> tuple[list[int], list[int]]:
    """Each part's windows and the recorded samples its reader reads and filters, in stream
    order (window_parts.part_spans): its stretch, up to the recording's end, or the whole
    recording where whole ones are read (or the index has no rates); a stretch of the
    statistic's (`statistic` samples, window_parts.statistic_read) where the model's
    normalisation needs it first (window_recipe.recording_statistic), if that is longer: the
    reader holds one or the other."""
    longest = max(lengths.values())
    windows, samples = [], []
    for recording, n_windows, span in part_spans(table, prep.whole_recordings, to_sfreq,
                                                 window_samples, prep.filters):
        whole = lengths.get(recording, longest)
        # a stretch past the recording's end reads what there is
        read = whole if span is None else min(span[1], whole) - span[0]
        samples.append(max(read, min(statistic, whole)))
        windows.append(n_windows)
    return windows, samples


def channels_read(context: DatasetContext, spec, prep) -> int:
    """The recorded channels a reader reads (window_recipe._read): the channel map's, and for
    a common average reference every channel it averages."""
    plan = context.channel_plan(spec.family)
    return len(dict.fromkeys((*plan.recorded, *prep.average_reference)))


def measured_baseline(check) -> dict:
    """This node's embed baseline, measured by check (absent from checks made before it was)."""
    return {"measured_baseline_bytes": check.baseline_bytes} if check.baseline_bytes else {}


def gpu_inputs(check, batch_size: int) -> dict:
    """The GPU allocator's measured peaks and the GPU's memory, when check ran on a GPU; the
    batch starts no larger than check's (check halves a batch the GPU cannot hold)."""
    if not check.gpu_peaks:
        return {}
    measured = {"gpu_reserved_peaks": check.gpu_reserved_peaks,
                "gpu_context_bytes": check.gpu_context_bytes}
    return {"gpu_peaks": check.gpu_peaks, "gpu_total_bytes": check.gpu_total_bytes,
            "batch_size": min(batch_size, check.batch_size)} | {
                k: v for k, v in measured.items() if v}


def embed_job_type(config: dict, check) -> str:
    """embed_gpu for embed.device cuda, else embed_cpu; the check must have run on the same."""
    device = embed_device(config)
    if (device == "cuda") != bool(check.gpu_peaks):
        raise UsageError(
            f"embed.device is {device}, but the check of {check.dataset}/{check.model} ran on "
            f"{check.device}", fix="run the check again with the same config (Snakemake does "
                                   "when the config changes; by hand: embedprobe check ...)")
    return "embed_gpu" if device == "cuda" else "embed_cpu"


def probe_estimate(config, task, bench, table, fold, dim, calibration, limit, margin,
                   partitions, entry: dict | None = None, on_cluster: bool = False,
                   baselines: Path | None = None):
    """The probe job's estimate and runtime: its task names the job type and its inputs
    (`entry`: the dataset's config entry, whose fold manifest or strata size the folds);
    `on_cluster`: the job runs under a scheduler (Sizing.on_cluster); `baselines`: the folder
    of the nodes' recorded step baselines (memory/baselines.py)."""
    job_type, inputs, runtime = task.probe_memory(config, bench, table, fold, dim, entry)
    baseline = probe_baseline_inputs(job_type, baselines)
    estimate = fit_knobs(job_type, inputs | baseline | {"on_cluster": on_cluster}, calibration,
                         limit, margin, partitions)
    return estimate, runtime


def offer_pooled(estimate, check, model: str, fold_estimate) -> None:
    """A token store's probe that cannot fit: its fix names the pooled width's request too
    (`pooling: mean`, the width divided by the tokens), the cheaper setting of all."""
    if estimate.verdict == "ok" or not check.tokens:
        return
    width = check.feature_dim // check.tokens
    pooled, _runtime = fold_estimate(dim=width)
    verdict = "fits" if pooled.verdict == "ok" else "does not fit either"
    variant, base = split_variant(model)
    setting = ("`pooling: mean` in its entry (config/models.yaml)" if variant is None else
               f"its variant {pooled_variant(variant)} (--config "
               f"variants={pooled_variant(variant)} in place of {variant})")
    estimate.fix = (f"{estimate.fix}; or probe {base} pooled: {setting} gives {width} "
                    f"features instead of {check.tokens} tokens x {width} and needs "
                    f"{pooled.request_mb:,} MB, which {verdict}")


def embed_runtime_minutes(check, n_windows: int) -> int:
    """Three times the checked batch rate (reading, writing, a slower node), plus 10 min."""
    batches = math.ceil(n_windows / max(check.batch_size, 1))
    return int(math.ceil(batches * check.seconds * 3 / 60)) + 10


@dataclass
class Sizing:
    """What a pair's estimates are sized against: the passed check, the window index, the
    calibration, the memory limit (and where it comes from), the margin and the partitions."""

    check: object
    table: object
    calibration: dict
    limit: int
    limit_source: str
    margin: float
    partitions: list | None
    # the job's allocation also holds the scheduler's processes (formulas: cluster_wrapper)
    on_cluster: bool


def sizing(config: dict, dataset: str, model: str, check_path: Path, index_path: Path) -> Sizing:
    check = read_result(check_path)
    if check.status != OK:
        raise UsageError(f"check of {dataset}/{model} did not pass ({check.status}): "
                         f"{check.reason}", fix=check.fix or "run the check step again")
    memory = config["memory"]
    cluster_mb = memory["limit_mb"] or cluster_memory_limit_mb()
    return Sizing(
        check=check, table=read_index(index_path),
        calibration=load_calibration(calibration_path(config)),
        limit=job_memory_limit(cluster_mb),
        limit_source=("config memory.limit_mb" if memory["limit_mb"] else
                      "largest SLURM node (sinfo)" if cluster_mb else
                      "this machine (cgroup aware)"),
        margin=memory["margin"],
        partitions=memory["partitions"] or None,
        # the config's setting (the cluster profiles set it), or found: the allocation also
        # holds Snakemake's own processes
        on_cluster=bool(memory["on_cluster"]) or running_under_scheduler())


def run_preflight(context: DatasetContext, model: str, check_path: Path, index_path: Path,
                  out: Path) -> dict:
    """The pair's embed job: no benchmark enters it, so adding one does not re-embed."""
    config, dataset = context.config, context.name
    sized = sizing(config, dataset, model, check_path, index_path)
    inputs = embed_inputs(context, sized.check, sized.table) | {
        "on_cluster": sized.on_cluster}
    estimate = fit_knobs(
        embed_job_type(config, sized.check), inputs, sized.calibration, sized.limit,
        max(sized.margin, config["memory"]["embed_margin"]), sized.partitions)
    runtime = embed_runtime_minutes(sized.check, len(sized.table))
    return write_record(sized, {"dataset": dataset, "model": model},
                        {"embed": (estimate, runtime)}, out)


def run_probe_preflight(config: dict, roots: dict, benchmark: str, dataset: str, model: str,
                        check_path: Path, index_path: Path, out: Path) -> dict:
    """One benchmark's probe folds on the pair: only that benchmark enters it, so adding
    another benchmark refits nothing of this one. Folds it cannot size (e.g. too few subjects
    for its folds) are listed in `not_sized` with a warning: its probe jobs then fail with that
    message, and the pair's other benchmarks run."""
    bench = lookup(config, "benchmarks", benchmark)
    if dataset not in bench["datasets"] or model not in bench["models"]:
        raise UsageError(f"benchmark {benchmark} does not run {dataset}/{model}",
                         fix=f"name a dataset and model of benchmarks.{benchmark}")
    sized = sizing(config, dataset, model, check_path, index_path)
    jobs, not_sized = {}, {}
    try:
        entry = fold_entry(config, roots, dataset)  # per_stratum reads the subjects' classes
        for fold in range(bench["folds"]):
            fold_estimate = partial(
                probe_estimate, config, task_for(bench["task"]), bench, sized.table, fold,
                calibration=sized.calibration, limit=sized.limit, margin=sized.margin,
                partitions=sized.partitions, entry=entry, on_cluster=sized.on_cluster,
                baselines=output_path("step_baselines", roots))
            jobs[job_key(benchmark, fold)] = fold_estimate(dim=sized.check.feature_dim)
            offer_pooled(jobs[job_key(benchmark, fold)][0], sized.check, model, fold_estimate)
    except UsageError as exc:
        jobs, not_sized = {}, {benchmark: {"message": exc.message, "fix": exc.fix}}
        print(f"warning: preflight {dataset}/{model}: benchmark {benchmark} not sized: "
              f"{exc.message} (its probe jobs will fail; other benchmarks run)\n"
              f"fix: {exc.fix}", file=sys.stderr)
    return write_record(sized, {"benchmark": benchmark, "dataset": dataset, "model": model},
                        jobs, out, not_sized=not_sized)


def write_record(sized: Sizing, names: dict, sized_jobs: dict, out: Path, **extra) -> dict:
    """The preflight JSON: each job's estimate with its runtime, the limit and the verdict;
    a job that cannot fit the limit stops here with the breakdown and the fix."""
    jobs = {key: est.as_dict() | {"runtime_min": runtime}
            for key, (est, runtime) in sized_jobs.items()}
    pair = f"{names['dataset']}/{names['model']}"
    record = names | {
        "limit_mb": int(sized.limit // MIB),
        "limit_source": sized.limit_source,
        "margin": sized.margin,
        "verdict": "ok" if all(j["verdict"] == "ok" for j in jobs.values()) else "too_big",
        "jobs": jobs,
    } | extra
    for key, job in jobs.items():
        print(f"preflight {pair} {key}: {job['verdict']}, request "
              f"{job['request_mb']:,} MB of {record['limit_mb']:,} MB", file=sys.stderr)
    too_big = [key for key, job in jobs.items() if job["verdict"] != "ok"]
    if too_big:
        worst = sized_jobs[too_big[0]][0]
        raise OutOfMemory(f"{pair}: {', '.join(too_big)} cannot fit the memory "
                          f"limit ({record['limit_mb']:,} MB)\n{worst}", fix=worst.fix)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=2) + "\n")
    return record
