"""A cohort of thousands of recordings through the real workflow, step by step, and its
projection to SHHS and to the reference's full suite (scripts/bench_scale.py).

The cohort is bench_plan_scale's generated SHHS look-alike (NSRR EDF + XML, `shhs1` nights of
NIGHT_HOURS: 10 windows of 30 s each) standing in as sleep_stage's `shhs`, with one cheap
encoder at one thread a job, embedded in `embed.shards` shards. The encoder is TINY_MODEL by
default: `biot_random`'s entry (BIOT's real preprocessing, recording statistic and forward,
random weights) with one layer of width 32, which a configfile adds as a model of its own:
the full-size BIOT costs 3.2 CPU-s a batch of 32 at one thread here, 50 times the tiny one's,
and on a loaded 2-core machine a thousand nights of it take hours. `--model biot_random` runs
the full size. Timed and
measured, each as the real command in a child process:

- the plan: `snakemake -n` of the benchmark's results against a bare Snakemake of the same DAG
  (bench_plan_scale's);
- the run: `snakemake <the benchmark's results.tsv for shhs> --cores N`, every job at one
  thread: index, check, preflight, the shards and their join, the probe folds and the
  aggregate. Each job's wall and CPU seconds come from its `benchmark:` file (Snakemake
  samples the CPU while the job runs: a lower bound; the whole run's row is the children's
  getrusage, exact); its peak from the
  runs table where the job records one (embed shards and probe folds: the kernel's high-water
  mark, beside the preflight's estimate), else the benchmark file's max_rss (polled, a lower
  bound); its request is the `mem_mb` Snakemake gave it; its output size is its files'.

The projection multiplies the reference's measured rate (docs/measurements/
2026-12-08-cohort-scale.md says which) and the preflight's formulas, given the run's own
formula inputs scaled to SHHS's nights and epochs: a projection, not a measurement.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from embedprobe.core.paths import output_path
from embedprobe.core.units import MIB
from embedprobe.devtools import bench_plan_scale as plan_scale

DATASET = plan_scale.DATASET
TINY_MODEL = "biot_tiny_random"
TINY_PARAMS = {"embed_dim": 32, "num_heads": 2, "num_layers": 1}  # braindecode BIOT's
FULL_MODEL = "biot_random"  # whose entry the tiny one copies
REFERENCE_DIM = 256  # BIOT's embedding width: the projected probe folds' rows
BENCHMARK = "sleep_stage"
QUICK_NIGHTS, QUICK_SHARDS = 10, 2

# The reference benchmark's timings (docs/measurements/2026-12-08-cohort-scale.md quotes
# them): Sleep-EDF with BIOT, ~200,000 epochs extracted in 17 min on one RTX 4500; one
# staging probe fold ~34 min on 4 cores.
REFERENCE_EPOCHS, REFERENCE_EMBED_S = 200_000, 17 * 60
REFERENCE_FOLD_S, REFERENCE_FOLD_CORES = 34 * 60, 4
# SHHS (issue 53): 8,444 nights, about 8 million 30 s epochs.
SHHS_NIGHTS, SHHS_EPOCHS = 8444, 8_000_000
SHARD_TARGET_H = 2.0  # a shard's runtime target (issue 53: shorter than many clusters' limits)
FOLDS = plan_scale.FOLDS

TABLE_COLUMNS = ("step", "jobs", "wall_s", "cpu_s", "wall_ms_per_recording",
                 "cpu_ms_per_recording", "peak_mb", "estimate_mb", "request_mb",
                 "peak_of_request", "output_mb")
STEPS = ("index", "check", "preflight", "preflight_probe", "embed_shard", "embed_join", "probe",
         "aggregate")
MEASURED_BY_RUNS = {"embed_shard": "embed", "probe": "probe"}  # rule -> the runs table's rule


@dataclass
class JobRun:
    """One job of the run: what Snakemake printed, its benchmark file, its runs-table row."""

    rule: str
    key: str  # the runs table's job key (embed shard, probe fold) or ""
    request_mb: float
    wall_s: float
    cpu_s: float
    peak_mb: float
    estimate_mb: float | None
    output_bytes: int


@dataclass
class StepRow:
    step: str
    jobs: int | None = None
    wall_s: float | None = None
    cpu_s: float | None = None
    wall_ms_per_recording: float | None = None
    cpu_ms_per_recording: float | None = None
    peak_mb: float | None = None
    estimate_mb: float | None = None
    request_mb: float | None = None
    peak_of_request: float | None = None
    output_mb: float | None = None


@dataclass
class Report:
    nights: int
    shards: int
    model: str
    windows: int
    rows: list[StepRow]
    jobs: list[JobRun]
    store_bytes: int
    data_bytes: int
    projection: list[tuple[str, str]]


# --- the cohort and its config -------------------------------------------------------------


def write_config(folder: Path, nights: int, shards: int, model: str) -> Path:
    """bench_plan_scale's cohort configfile, narrowed to the one dataset and encoder (the tiny
    one added as a model)."""
    import yaml

    manifest = plan_scale.write_cohort(folder / "data", nights)
    path = plan_scale.write_config(folder, folder / "data", manifest, nights)
    config = json.loads(path.read_text())
    config.update({"only_models": [model], "only_datasets": [DATASET],
                   "embed": {"shards": shards}})
    if model == TINY_MODEL:  # a model of its own, listed by the benchmark beside the others
        shipped = plan_scale.PROJECT / "config"
        models = yaml.safe_load((shipped / "models.yaml").read_text())["models"]
        listed = yaml.safe_load((shipped / "benchmarks.yaml").read_text())["benchmarks"]
        config["models"] = {TINY_MODEL: {**models[FULL_MODEL], "params": TINY_PARAMS}}
        config["benchmarks"] = {BENCHMARK: {"models": [*listed[BENCHMARK]["models"],
                                                       TINY_MODEL]}}
    path.write_text(json.dumps(config, indent=1))
    return path


def roots_of(folder: Path) -> dict:
    return {key: str(folder / name) for key, name in
            (("results_root", "results"), ("cache_root", "cache"), ("data_root", "data"))}


def one_thread_each(cores: int) -> list[str]:
    return ["--cores", str(cores), "--set-threads", "embed=1", "embed_shard=1", "probe=1"]


# --- the jobs of the run ---------------------------------------------------------------------


def _benchmark_file(path: str) -> tuple[float, float, float]:
    """(wall s, CPU s, max_rss MB) of a Snakemake benchmark file."""
    header, values = Path(path).read_text().splitlines()[:2]
    row = dict(zip(header.split("\t"), values.split("\t"), strict=True))
    return float(row["s"]), float(row["cpu_time"]), float(row["max_rss"])


def _runs_rows(results_root: Path) -> dict[tuple[str, str], dict]:
    """The runs table's last ok row per (rule, job key)."""
    from embedprobe.memory.report import read_runs

    table = read_runs(output_path("runs", {"results_root": results_root}))
    ok = table[table["status"] == "ok"]
    return {(row["rule"], row["job"]): row for row in ok.to_dict("records")}


def _size(paths: list[str]) -> int:
    return sum(Path(p).stat().st_size for p in paths if Path(p).is_file())


def _runs_key(job: plan_scale.Job) -> str:
    from embedprobe.memory.records import job_key, shard_job_key

    if job.rule == "embed_shard":
        return shard_job_key(int(job.wildcards["shard"]), int(job.wildcards["shards"]))
    if job.rule == "probe":
        return job_key(job.wildcards["benchmark"], job.wildcards["fold"])
    return ""


def job_runs(printed: list[plan_scale.Job], results_root: Path) -> list[JobRun]:
    """Each job the run printed, measured."""
    runs = _runs_rows(results_root)
    out = []
    for job in printed:
        if not job.benchmark:
            continue  # the target rule
        wall, cpu, max_rss = _benchmark_file(job.benchmark)
        key = _runs_key(job)
        row = runs.get((MEASURED_BY_RUNS.get(job.rule, ""), key))
        out.append(JobRun(job.rule, key, float(job.resources["mem_mb"]), wall, cpu,
                          float(row["peak_mb"]) if row else max_rss,
                          float(row["estimate_mb"]) if row else None, _size(job.outputs)))
    return out


def step_rows(jobs: list[JobRun], nights: int) -> list[StepRow]:
    """One row per step (rule) of the run, in STEPS order."""
    rows = []
    for step in STEPS:
        members = [j for j in jobs if j.rule == step]
        if not members:
            continue
        wall = sum(j.wall_s for j in members)
        estimates = [j.estimate_mb for j in members if j.estimate_mb]
        cpu = sum(j.cpu_s for j in members)
        rows.append(StepRow(
            step, len(members), wall, cpu, 1000 * wall / nights, 1000 * cpu / nights,
            max(j.peak_mb for j in members), max(estimates) if estimates else None,
            max(j.request_mb for j in members),
            max(j.peak_mb / j.request_mb for j in members),
            sum(j.output_bytes for j in members) / MIB))
    return rows


# --- the projection --------------------------------------------------------------------------


def _preflight(results_root: Path, model: str, benchmark: str | None = None) -> dict:
    where = {"preflight_dir": results_root / "preflight", "dataset": DATASET, "model": model}
    path = (output_path("preflight", where) if benchmark is None
            else output_path("preflight_probe", where, benchmark=benchmark))
    return json.loads(path.read_text())


def shhs_embed_inputs(inputs: dict, night_windows: int, shard_nights: int) -> dict:
    """The run's embed formula inputs with its nights scaled to `night_windows` each and
    `shard_nights` of them in one shard: the per-window signal bytes kept, parts of at most
    PART_WINDOWS (a night's statistic streams in part-sized stretches)."""
    from embedprobe.pipeline.window_parts import PART_WINDOWS

    per_window = max(inputs["part_signal_bytes"]) / max(inputs["part_windows"])
    night_parts = [PART_WINDOWS] * (night_windows // PART_WINDOWS)
    night_parts += [night_windows % PART_WINDOWS] if night_windows % PART_WINDOWS else []
    scale = night_windows / inputs["night_windows"]
    return {**inputs, "n_windows": night_windows * shard_nights, "night_windows": night_windows,
            "part_windows": night_parts * shard_nights,
            "part_signal_bytes": [int(w * per_window) for w in night_parts] * shard_nights,
            "statistic_bytes": int(inputs["statistic_bytes"] and per_window
                                   * min(PART_WINDOWS, night_windows)),
            "recording_bytes": int(inputs["recording_bytes"] * scale)}


def shhs_probe_inputs(inputs: dict, rows: int, streamed: int) -> dict:
    """The run's probe fold inputs with `rows` windows of BIOT's width split as a fold
    splits them."""
    test = rows // FOLDS
    return {**inputs, "n_train": rows - 2 * test, "n_val": test, "n_test": test,
            "streamed": streamed, "dim": REFERENCE_DIM}


def _estimate_mb(entry: dict, inputs: dict) -> float:
    from embedprobe.memory.calibration import load_calibration
    from embedprobe.memory.estimate import estimate

    return estimate(entry["job"], inputs, load_calibration(), None).total / MIB


def suite_checkpoints() -> int:
    """The reference's checkpoint ids (config/models.yaml `reference_models:`)."""
    import yaml

    from embedprobe.core.reference_models import reference_checkpoints

    models = yaml.safe_load((plan_scale.PROJECT / "config" / "models.yaml").read_text())
    return len(reference_checkpoints(models["reference_models"], models["models"]))


def projection(results_root: Path, model: str, report_rows: list[StepRow], windows: int
               ) -> list[tuple[str, str]]:
    """(quantity, value) lines of the SHHS and full-suite projection."""
    rate = REFERENCE_EPOCHS / REFERENCE_EMBED_S  # windows per GPU-second
    gpu_h = SHHS_EPOCHS / rate / 3600
    shards = math.ceil(gpu_h / SHARD_TARGET_H)
    night_windows = round(SHHS_EPOCHS / SHHS_NIGHTS)
    pair = _preflight(results_root, model)["jobs"]["embed"]
    embed_mb = _estimate_mb(pair, shhs_embed_inputs(pair["inputs"], night_windows,
                                                    math.ceil(SHHS_NIGHTS / shards)))
    run_mb = _estimate_mb(pair, pair["inputs"])
    fold = next(iter(_preflight(results_root, model, BENCHMARK)["jobs"].values()))
    held_mb, streamed_mb = (_estimate_mb(fold, shhs_probe_inputs(fold["inputs"], SHHS_EPOCHS, s))
                            for s in (0, 1))
    fold_node_h = (REFERENCE_FOLD_S * SHHS_EPOCHS / REFERENCE_EPOCHS / 3600)
    probe = next(r for r in report_rows if r.step == "probe")
    here_fold_h = probe.wall_s / probe.jobs * SHHS_EPOCHS / windows / 3600
    n_checkpoints = suite_checkpoints()
    return [
        ("reference rate (BIOT, one RTX 4500)", f"{rate:.0f} windows/s"),
        ("SHHS embed, one checkpoint", f"{gpu_h:.1f} GPU-hours"),
        (f"SHHS shards at <= {SHARD_TARGET_H:g} h each", f"{shards} embed_shard jobs of "
                                                          f"{gpu_h / shards:.1f} GPU-hours"),
        (f"SHHS embed_shard peak, {model} (preflight's formula, host memory)",
         f"{embed_mb:.0f} MB ({math.ceil(SHHS_NIGHTS / shards)} nights of "
         f"{night_windows} windows): this run's {run_mb:.0f} MB + {embed_mb - run_mb:.0f} MB "
         "for SHHS's nights"),
        (f"SHHS probe fold peak, {REFERENCE_DIM} dims, held / streamed (preflight's formula)",
         f"{held_mb / 1024:.1f} GB / {streamed_mb / 1024:.1f} GB"),
        ("SHHS probe, 5 folds at the reference's rate",
         f"{FOLDS * fold_node_h:.0f} node-hours ({REFERENCE_FOLD_CORES} cores; "
         f"{fold_node_h:.1f} h a fold)"),
        ("SHHS probe, 5 folds, this run's folds scaled by rows (one core; their start-up "
         "scaled too: an upper bound)",
         f"{FOLDS * here_fold_h:.1f} node-hours ({here_fold_h * 60:.1f} min a fold)"),
        (f"full suite on an SHHS-sized cohort: {n_checkpoints} checkpoints",
         f"{n_checkpoints * gpu_h:.0f} GPU-hours, "
         f"{n_checkpoints * FOLDS * fold_node_h:.0f} probe node-hours at the reference's "
         "rates (BIOT's: larger encoders are slower)"),
    ]


# --- the run ---------------------------------------------------------------------------------


def run(nights: int, shards: int, model: str, cores: int, workdir: Path | None = None,
        keep: bool = False, progress=print) -> Report:
    """The run in a temporary folder under `workdir`, removed after unless `keep`."""
    if keep:
        folder = Path(tempfile.mkdtemp(prefix="bench_scale_", dir=workdir))
        progress(f"kept: {folder}")
        return _run(folder, nights, shards, model, cores, progress)
    with tempfile.TemporaryDirectory(prefix="bench_scale_", dir=workdir) as tmp:
        return _run(Path(tmp), nights, shards, model, cores, progress)


def _run(folder: Path, nights: int, shards: int, model: str, cores: int, progress) -> Report:
    env = plan_scale.child_env()
    start = time.perf_counter()
    config = write_config(folder, nights, shards, model)
    roots = roots_of(folder)
    written = time.perf_counter() - start
    data_bytes = _tree_bytes(Path(roots["data_root"]))
    progress(f"cohort of {nights} nights written in {written:.1f} s "
             f"({data_bytes / MIB:.0f} MB)")
    target = str(output_path("results", roots, benchmark=BENCHMARK, dataset=DATASET))
    plan = [plan_scale.snakemake(), "-n", target, "--configfile", str(config),
            *one_thread_each(cores)]
    wall, cpu, text = plan_scale.timed(plan, plan_scale.PROJECT, env)
    printed = plan_scale.parse_dry_run(text)
    rows = [StepRow("cohort written", wall_s=written,
                    wall_ms_per_recording=1000 * written / nights, output_mb=data_bytes / MIB),
            StepRow("plan: snakemake -n", plan_scale.job_count(text), wall, cpu)]
    bare = folder / "bare"
    bare.mkdir()
    # the target is a file: a rule of no output that asks for it stands for it in the bare DAG
    plan_scale.bare_snakefile([*printed, plan_scale.Job("target", inputs=[target])], bare,
                              "target")
    wall, cpu, text = plan_scale.timed([plan_scale.snakemake(), "-n", "target"], bare, env)
    rows.append(StepRow("plan: bare Snakemake, same DAG", plan_scale.job_count(text) - 1, wall,
                        cpu))  # less its target rule
    progress(f"plans: embedprobe {rows[1].wall_s:.1f} s, bare {wall:.1f} s")
    wall, cpu, text = plan_scale.timed([plan_scale.snakemake(), target, "--configfile",
                                        str(config), *one_thread_each(cores)],
                                       plan_scale.PROJECT, env)
    jobs = job_runs(plan_scale.parse_dry_run(text), Path(roots["results_root"]))
    steps = step_rows(jobs, nights)
    rows += steps + [StepRow(f"run: snakemake --cores {cores}", len(jobs), wall, cpu,
                             1000 * wall / nights, 1000 * cpu / nights)]
    progress(f"run: {wall:.1f} s, {len(jobs)} jobs")
    store = output_path("embeddings", roots, dataset=DATASET, model=model)
    store_bytes = store.stat().st_size + _tree_bytes(store.with_suffix(".shards"))
    windows = _store_rows(store)
    return Report(nights, shards, model, windows, rows, jobs, store_bytes, data_bytes,
                  projection(Path(roots["results_root"]), model, steps, windows))


def _tree_bytes(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


def _store_rows(store: Path) -> int:
    from embedprobe.pipeline.store import open_embeddings

    with open_embeddings(store) as opened:
        return len(opened.windows)


# --- the tables ------------------------------------------------------------------------------


def _cell(value) -> str:
    if value is None:
        return ""
    return f"{value:.3g}" if isinstance(value, float) and abs(value) < 10 else (
        f"{value:.0f}" if isinstance(value, float) else str(value))


def format_report(report: Report) -> str:
    lines = [f"{report.nights} nights, {report.windows} windows, {report.shards} shards, "
             f"{report.model} at one thread a job; load average {os.getloadavg()[0]:.1f}", "",
             "| " + " | ".join(TABLE_COLUMNS) + " |", "|" + "---|" * len(TABLE_COLUMNS)]
    lines += ["| " + " | ".join(_cell(getattr(r, c)) for c in TABLE_COLUMNS) + " |"
              for r in report.rows]
    per_window = report.store_bytes / report.windows
    lines += ["", f"store: {report.store_bytes / MIB:.1f} MB ({per_window:.0f} B a window: "
              f"shards + the joined virtual dataset); cohort "
              f"{report.data_bytes / MIB:.0f} MB", "",
              "Projection (the reference's measured rates and the preflight's formulas; not "
              "measured):", "", "| quantity | value |", "|---|---|"]
    lines += [f"| {name} | {value} |" for name, value in report.projection]
    return "\n".join(lines)
