"""Check the memory estimates against real runs: predicted against measured peak of each job.

A grid of real jobs (embedprobe.devtools.workloads, the calibration's workloads), each run in its
own child process and measured by the kernel (its ru_maxrss from wait4, peaks.run_measured),
each predicted the way the workflow predicts it:

  embed           3 registered models x 3 night lengths of the Sleep-EDF demo (4 nights each),
                  and 2 models x 2 file layouts of a CHB-MIT look-alike (2 patients, 10 s
                  windows of 16-18 channels at 256 Hz: BIOT with its recording statistic,
                  CBraMod without); with `datasets` naming dcsm (--datasets), the embed models
                  x 3 sets of DCSM look-alike nights (4 psg.h5 nights of 7 channels, read
                  through h5py: dcsm_demo's 15 min at 64 Hz, and 15 min and 1 h at the
                  release's 256 Hz). Each: `embedprobe check`,
                  preflight.run_preflight (the shipped calibration), then the `embedprobe embed`
                  job with that preflight JSON as its --estimate
  logistic probe  3 feature widths x 3 row counts of hard synthetic embeddings in an HDF5 store:
                  the `embedprobe probe` job (sleep staging, fold 0), inputs from
                  the task's probe_memory, estimate from estimate.fit_knobs
  brain-age probe 3 widths x 3 numbers of subjects: the `embedprobe probe` job of the brain-age
                  benchmark (subject means streamed from a store, ages from an SC-subjects.xls,
                  ridge with inner CV), inputs and estimate as preflight.probe_estimate builds them
  recording probe 3 widths x 3 numbers of recordings (the largest with mean_std): the
                  `embedprobe probe` job of the abnormal-EEG benchmark (unit statistics
                  streamed from a store, a logistic fit per C over one row per recording),
                  predicted as preflight.probe_estimate does (job type probe_recording)
  hypnogram       3 (quick) or 4 store sizes: the `embedprobe probe` job of the sleep-hypnogram
                  benchmark (a staging fold's saved predictions over the store's window table),
                  predicted as preflight.probe_estimate does (job type probe_hypnogram)
  seizure probe   3 widths x 3 row counts: the `embedprobe probe` job of the seizure benchmark
                  (fold 0) on stores whose windows are real windows of a generated CHB-MIT
                  look-alike, predicted as preflight.probe_estimate does (job type probe_seizure)
  events probe    2-3 widths x 1-2 row counts: the `embedprobe probe` job of the sleep-
                  respiratory benchmark (fold 0: UCDDB look-alike windows, their event lists
                  read, one fit per field and threshold), job type probe_events
  tokens          the sleep-staging probe job (fold 0) on token stores (pooling: tokens) at 2
                  flattened widths x 2 row counts: a sleep epoch of LaBraM tokens (30 x 200)
                  and a 3 s trial of EEGPT's (12 x 2048), past the width where the probe takes
                  its diagonal form; C grid 0.001 and 0.01 (strong penalties converge fast on
                  2 cores; one fit at a time either way)
  families        the embed job of every other family's random init (EEGPT and the seven added
                  from braindecode: BENDR, Signal-JEPA, LUNA, REVE, ST-EEGFormer, CodeBrain,
                  EEG-DINO; and the time-series models Chronos and MOMENT where their
                  optional extra is installed) at 2 night lengths of the Sleep-EDF demo: no
                  constant of theirs is calibrated, the estimate rests on what their check
                  measures
  family-tokens   the same embed jobs with `pooling: tokens` (a (windows, tokens, width) store)
                  for every family with a patch grid (all but BIOT and BENDR; LaBraM and
                  CBraMod too), each as the entry `<model>_tokens`: the store's rows grow by
                  the token count
  scale           the sleep-staging probe job (fold 0) at cohort scale: a width of 256 (BIOT)
                  x row counts up to the largest this machine holds (2 million rows: an 8 GB
                  fold of SHHS's 8 million is out of reach here), C grid 0.1 and 1 (the
                  memory does not depend on the grid with one fit at a time); the rows are
                  25x the calibration's largest, so this is the fold formula's extrapolation
                  (docs/measurements/2026-12-07-probe-scale.md)
  contended       the embed jobs again at one size, once beside a CPU load generator (busy
                  processes, 2x the cores) and once with a slow model
                  (EMBEDPROBE_FAULT_SLOW_BATCH_S: readers would run ahead if the stream let them)

Probe estimates use the baselines preflight measures on this node (embedprobe.memory.baselines),
the embed estimate the one the check job measures, as the workflow does.

error = (predicted - measured) / measured. Targets: median |error| <= 5%, no error below -10%,
and every request (the estimate plus the margin, what the scheduler is asked for) above the
measured peak. Exit 1 when a target fails. The sizes differ from the calibration's
(scripts/calibrate_memory.py), so this is out of sample. scripts/validate_memory.py runs it.
"""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from embedprobe.core.config import load_config
from embedprobe.core.units import MIB
from embedprobe.devtools import workloads
from embedprobe.measure.limits import job_memory_limit
from embedprobe.measure.peaks import MeasuredRun, run_measured
from embedprobe.memory.baselines import probe_baseline_inputs
from embedprobe.memory.calibration import CALIBRATION_PATH, load_calibration
from embedprobe.memory.estimate import fit_knobs
from embedprobe.models.time_series import package_missing

MEDIAN_TARGET = 0.05
UNDER_TARGET = -0.10
WIDTH_OF = {200: "LaBraM/CBraMod", 256: "BIOT", 2048: "EEGPT", 6000: "LaBraM 30 tokens",
            8192: "EEGPT 4 tokens", 24576: "EEGPT 12 tokens"}
TOKENS_OF = {6000: 30, 24576: 12}  # the token stores' rows: tokens x width

BRAINDECODE_FAMILY_MODELS = ("eegpt_random", "bendr_random", "signal_jepa_random",
                             "luna_random", "reve_random", "steegformer_random",
                             "codebrain_random", "eegdino_random")
# The time-series families' random inits where their optional extra is installed
# (models/time_series.py): without it their check is a "package missing" skip, not a row.
TIME_SERIES_MODELS = tuple(m for m, arch in (("chronos_random", "Chronos"),
                                              ("moment_random", "MOMENT"))
                           if not package_missing(arch))
FAMILY_MODELS = BRAINDECODE_FAMILY_MODELS + TIME_SERIES_MODELS
# every family with a patch grid with `pooling: tokens` (not BIOT or BENDR:
# models/architectures.py; not the time-series models); LaBraM's and CBraMod's pooled rows are
# the main grid's
FAMILY_TOKEN_MODELS = tuple(f"{m}_tokens" for m in ("labram_random", "cbramod_random",
                                                     *BRAINDECODE_FAMILY_MODELS)
                            if m != "bendr_random")
# the embed rows' data sets (--datasets chooses; each grid's `embed_datasets` by default)
EMBED_DATASETS = ("sleep_edf", "chbmit", "dcsm")
GRIDS = {
    # embed: models x hours of sleep a night; probes: width -> row counts (the wide model's
    # fits are slow on 2 cores, so it gets smaller stores); ridge: widths x subjects
    "full": {
        "embed_models": ("biot_random", "cbramod_random", "labram_random"),
        "embed_hours": (1 / 6, 0.75, 3.0),
        # CHB-MIT look-alike files (windows a file, files of each of 2 patients): parts of one
        # size, 128 windows (a part a file) or 512 (two a file: BIOT's statistic reads twice
        # its largest stretch)
        "seizure_embed_models": ("biot_random", "cbramod_random"),
        "seizure_embed_files": ((128, 2), (1024, 1)),
        "embed_datasets": ("sleep_edf", "chbmit"),
        # DCSM look-alike nights (4 subjects) where --datasets names it: (hours, Hz) of each
        # set, the demo's (dcsm_demo: 15 min at 64 Hz) and the release's rate (3 h nights ran
        # past the child's 15 min on the loaded 2 cores: docs/measurements/2026-12-07-dcsm-
        # embed-memory.md)
        "dcsm_embed_nights": ((0.25, 64.0), (0.25, 256.0), (1.0, 256.0)),
        "probe_rows": {200: (20_000, 60_000, 120_000), 256: (20_000, 60_000, 120_000),
                       2048: (10_000, 20_000, 40_000)},
        "ridge_widths": (200, 256, 2048),
        "ridge_subjects": (150, 600, 1_800),
        "recording_units": (150, 600, 1_800),
        "hypnogram_rows": (20_000, 150_000, 500_000, 1_000_000),
        "seizure_rows": {200: (20_000, 60_000, 120_000), 256: (20_000, 60_000, 120_000),
                         2048: (5_000, 10_000, 20_000)},
        # the sleep-event probe: 54 fits a job (the respiratory task's fields x thresholds)
        "events_rows": {200: (15_000, 45_000), 256: (20_000, 80_000), 2048: (3_000, 6_000)},
        "contended_hours": 0.75,
        "family_models": FAMILY_MODELS,
        "family_token_models": FAMILY_TOKEN_MODELS,
        "family_hours": (1 / 6, 0.75),
        "token_rows": {6000: (3_000, 8_000), 24576: (800, 2_000)},
        # the ERP probe (many 1 s epochs, 2 classes): pooled, and EEGPT's 4 tokens x 2048 of an
        # epoch flattened (token_flattening: the diagonal form above 4,096 features)
        "erp_rows": {200: (20_000, 60_000), 8192: (3_000, 8_000)},
        "scale_rows": {256: (250_000, 1_000_000, 2_000_000)},
    },
    "quick": {
        "embed_models": ("biot_random",),
        "embed_hours": (1 / 6, 0.5, 0.75),
        "seizure_embed_models": ("biot_random",),
        "seizure_embed_files": ((128, 2),),
        "embed_datasets": ("sleep_edf", "chbmit"),
        "dcsm_embed_nights": ((0.25, 64.0), (1.0, 256.0)),
        "probe_rows": {200: (8_000, 16_000, 32_000), 256: (8_000, 16_000, 32_000),
                       2048: (4_000, 8_000, 16_000)},
        "ridge_widths": (200, 256, 2048),
        "ridge_subjects": (100, 300, 800),
        "recording_units": (100, 300, 800),
        "hypnogram_rows": (20_000, 150_000, 500_000),
        "seizure_rows": {200: (6_000, 12_000, 30_000), 256: (6_000, 12_000, 30_000),
                         2048: (2_500, 5_000, 10_000)},
        "events_rows": {200: (5_000, 20_000), 2048: (3_000,)},
        "contended_hours": 0.5,
        "family_models": FAMILY_MODELS,
        "family_token_models": FAMILY_TOKEN_MODELS,
        "family_hours": (1 / 6,),
        "token_rows": {6000: (2_000, 5_000), 24576: (600, 1_500)},
        "erp_rows": {200: (10_000, 30_000), 8192: (2_000, 5_000)},
        "scale_rows": {256: (250_000, 500_000)},
    },
}


@dataclass
class Row:
    job: str
    model: str
    size: str
    predicted_mb: float
    request_mb: int
    measured_mb: float
    seconds: float

    @property
    def error(self) -> float:
        return (self.predicted_mb - self.measured_mb) / self.measured_mb

    @property
    def covered(self) -> bool:
        return self.request_mb > self.measured_mb

    def as_dict(self) -> dict:
        return asdict(self) | {"error": round(self.error, 4), "covered": self.covered}


def _row(job, model, size, estimate: dict, run: MeasuredRun) -> Row:
    return Row(job, model, size, round(estimate["total"] / MIB, 1), int(estimate["request_mb"]),
               round(run.peak_bytes / MIB, 1), round(run.seconds, 1))


SLOW_BATCH_S = 0.25  # the slow model's extra seconds per batch
CONTENTIONS = {
    None: "",
    "cpu load": " beside a CPU load (2x the cores busy)",
    "slow model": f" with a slow model (+{SLOW_BATCH_S} s a batch)",
}


@contextlib.contextmanager
def cpu_load(processes: int, seconds: float = 900) -> Iterator[None]:
    """Busy processes (each stops by itself after `seconds`) for as long as the block runs."""
    busy = f"import time\nend = time.time() + {seconds}\nwhile time.time() < end: pass"
    procs = [subprocess.Popen([sys.executable, "-c", busy]) for _ in range(processes)]
    try:
        yield
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def measure_embed(demo, model: str, preflight_path: Path, contention: str | None):
    argv = workloads.embed_argv(demo, model, preflight_path, demo.folder / f"{model}.h5")
    env = workloads.job_env()
    if contention == "slow model":
        env["EMBEDPROBE_FAULT_SLOW_BATCH_S"] = str(SLOW_BATCH_S)
    load = cpu_load(2 * os.cpu_count()) if contention == "cpu load" else contextlib.nullcontext()
    with load:
        run = run_measured(argv, timeout=workloads.CHILD_TIMEOUT_S, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, env=env)
    if not run.ok:
        raise RuntimeError(f"embed {model} failed:\n{(run.stderr or '')[-3000:]}")
    return run


def embed_sets(grid: dict, workdir: Path, contended: bool):
    """(data set, its size in words, models, contention) of each embed row: Sleep-EDF demo
    nights, CHB-MIT look-alike files, then DCSM look-alike nights, those of
    grid["embed_datasets"]; with `contended`, one night length beside a CPU load and with a
    slow model."""
    datasets = grid["embed_datasets"]
    if contended:
        demo = workloads.demo_set(workdir / f"embed_{grid['contended_hours']:.3g}h",
                                  grid["contended_hours"])
        for contention in (c for c in CONTENTIONS if c):
            yield demo, _nights(demo), grid["embed_models"], contention
        return
    for hours in grid["embed_hours"] if "sleep_edf" in datasets else ():
        demo = workloads.demo_set(workdir / f"embed_{hours:.3g}h", hours)
        yield demo, _nights(demo), grid["embed_models"], None
    for windows, files in grid["seizure_embed_files"] if "chbmit" in datasets else ():
        demo = workloads.seizure_embed_set(workdir / f"embed_chbmit_{windows}x{files}",
                                           windows, files=files)
        size = (f"{demo.n_windows} windows, {2 * files} CHB-MIT look-alike files of "
                f"{demo.hours * 60:.0f} min")
        yield demo, size, grid["seizure_embed_models"], None
    for hours, sfreq in grid["dcsm_embed_nights"] if "dcsm" in datasets else ():
        demo = workloads.dcsm_embed_set(workdir / f"embed_dcsm_{hours:.3g}h_{sfreq:g}hz", hours,
                                        sfreq)
        yield demo, f"{_nights(demo)}, DCSM look-alike psg.h5 at {sfreq:g} Hz", \
            grid["embed_models"], None


def _nights(demo) -> str:
    return f"{demo.n_windows} windows, {demo.hours * 60:.0f} min sleep/night"


def with_token_entries(entries: dict, models) -> dict:
    """`entries` with `<model>_tokens` for each such name of `models` that has none: the
    model's entry with `pooling: tokens`, as config/models.yaml declares its three."""
    made = {name: entries[name.removesuffix("_tokens")] | {"pooling": "tokens"}
            for name in models if name.endswith("_tokens") and name not in entries}
    return entries | made


def embed_rows(grid: dict, workdir: Path, contended: bool = False) -> Iterator[Row]:
    """The embed job of each model on each data set, predicted by run_preflight."""
    checks: dict[tuple[str, str], Path] = {}
    for demo, size, models, contention in embed_sets(grid, workdir, contended):
        demo.config["models"] = with_token_entries(demo.config["models"], models)
        for model in models:
            key = (model, demo.dataset)  # the check depends on the model and the data's format
            if key not in checks:
                checks[key], _ = workloads.run_check(demo, model)
            preflight_path = demo.folder / "preflight" / f"{model}.json"
            # Only the embed job: the demo benchmarks' probe folds need more than its subjects.
            config = {**demo.config, "benchmarks": {}}
            record = workloads.preflight(demo, config, model, checks[key], preflight_path)
            run = measure_embed(demo, model, preflight_path, contention)
            yield _row("embed", model, size + CONTENTIONS[contention],
                       record["jobs"]["embed"], run)


def probe_rows(grid: dict, workdir: Path, calibration: dict, limit: int,
               margin: float, sizes_key: str = "probe_rows",
               c_grid: tuple | None = None) -> Iterator[Row]:
    """The sleep-staging probe job (fold 0) on stores of each width and row count (token
    stores for the widths of TOKENS_OF when `sizes_key` is token_rows)."""
    config = workloads.probe_config(workdir, n_jobs=1)
    if c_grid:
        config["benchmarks"][workloads.PROBE_BENCHMARK].setdefault("probe", {})["C_grid"] = \
            list(c_grid)
    key = f"probe/{workloads.PROBE_BENCHMARK}/fold0"
    for dim, sizes in grid[sizes_key].items():
        tokens = TOKENS_OF.get(dim, 0) if sizes_key == "token_rows" else 0
        X, y = (workloads.token_rows(max(sizes), tokens, dim // tokens) if tokens
                else workloads.hard_rows(max(sizes), dim))
        for rows in sizes:
            store = workdir / f"store_{rows}x{dim}.h5"
            subjects = workloads.write_store(store, X[:rows], y[:rows], tokens=tokens)
            inputs = (workloads.probe_inputs(config, workloads.PROBE_BENCHMARK, subjects, dim)
                      | probe_baseline_inputs("probe_logistic"))
            # at scale, the fold held and the fold streamed (the knob preflight takes where
            # the held rows do not fit)
            for streamed in (0, 1) if sizes_key == "scale_rows" else (0,):
                estimate = fit_knobs("probe_logistic", inputs | {"streamed": streamed},
                                     calibration, limit, margin)
                estimate_path = workloads.write_estimate(
                    workdir / f"estimate_{rows}x{dim}_{streamed}.json", key, estimate)
                run = workloads.measure(workloads.probe_argv(config, store, estimate_path,
                                                             workdir / "probe_out"),
                                        f"probe {rows} x {dim}")
                job = ("logistic probe, tokens" if tokens else
                       f"logistic probe, {'streamed' if streamed else 'held'}"
                       if sizes_key == "scale_rows" else "logistic probe")
                yield _row(job, f"width {dim} ({WIDTH_OF.get(dim, '-')})", f"{rows:,} windows",
                           estimate.as_dict(), run)
        del X, y


def brain_age_rows(grid: dict, workdir: Path, calibration: dict, limit: int,
                   margin: float) -> Iterator[Row]:
    """The brain-age probe job (fold 0) as the workflow runs it, predicted as preflight does."""
    import pandas as pd

    from embedprobe.memory.preflight import probe_estimate
    from embedprobe.tasks.registry import benchmark_task

    key = f"probe/{workloads.AGE_BENCHMARK}/fold0"
    for dim in grid["ridge_widths"]:
        for n_subjects in grid["ridge_subjects"]:
            folder = workdir / f"age_{n_subjects}x{dim}"
            config, store, subjects = workloads.brain_age_set(folder, n_subjects, dim)
            bench = config["benchmarks"][workloads.AGE_BENCHMARK]
            estimate, _ = probe_estimate(config, benchmark_task(config, workloads.AGE_BENCHMARK),
                                         bench, pd.DataFrame({"subject": subjects}), 0, dim,
                                         calibration, limit, margin, None)
            estimate_path = workloads.write_estimate(folder / "estimate.json", key, estimate)
            argv = workloads.brain_age_argv(config, store, estimate_path, folder / "out")
            run = workloads.measure(argv, f"brain age {n_subjects} x {dim}")
            yield _row("brain-age probe", f"width {dim} ({WIDTH_OF.get(dim, '-')})",
                       f"{n_subjects:,} subjects ({estimate.inputs['n']} train)",
                       estimate.as_dict(), run)


def recording_rows(grid: dict, workdir: Path, calibration: dict, limit: int,
                   margin: float) -> Iterator[Row]:
    """The recording-level probe job (fold 0) as the workflow runs it, predicted as preflight
    does; the largest number of recordings of each width with mean_std features."""
    from embedprobe.memory.preflight import probe_estimate
    from embedprobe.tasks.registry import benchmark_task

    key = f"probe/{workloads.RECORDING_BENCHMARK}/fold0"
    for dim in grid["ridge_widths"]:
        for n_units in grid["recording_units"]:
            aggregation = "mean_std" if n_units == max(grid["recording_units"]) else "mean"
            folder = workdir / f"recording_{n_units}x{dim}"
            config, store, table = workloads.recording_set(folder, n_units, dim, aggregation)
            bench = config["benchmarks"][workloads.RECORDING_BENCHMARK]
            entry = config["datasets"][workloads.RECORDING_DATASET]
            estimate, _ = probe_estimate(
                config, benchmark_task(config, workloads.RECORDING_BENCHMARK), bench, table, 0,
                dim, calibration, limit, margin, None, entry)
            estimate_path = workloads.write_estimate(folder / "estimate.json", key, estimate)
            argv = workloads.recording_argv(config, store, estimate_path, folder / "out")
            run = workloads.measure(argv, f"recording probe {n_units} x {dim}")
            yield _row("recording probe", f"width {dim} ({WIDTH_OF.get(dim, '-')})",
                       f"{n_units:,} recordings, {aggregation}", estimate.as_dict(), run)


def hypnogram_rows(grid: dict, workdir: Path, calibration: dict, limit: int,
                   margin: float) -> Iterator[Row]:
    """The hypnogram job (fold 0: a staging fold's predictions over the store's window
    table) as the workflow runs it, predicted as preflight does."""
    from embedprobe.memory.preflight import probe_estimate
    from embedprobe.tasks.registry import benchmark_task

    key = f"probe/{workloads.HYPNOGRAM_BENCHMARK}/fold0"
    for n_rows in grid["hypnogram_rows"]:
        folder = workdir / f"hypnogram_{n_rows}"
        config, store, table = workloads.hypnogram_set(folder, n_rows)
        bench = config["benchmarks"][workloads.HYPNOGRAM_BENCHMARK]
        estimate, _ = probe_estimate(
            config, benchmark_task(config, workloads.HYPNOGRAM_BENCHMARK), bench, table, 0, 8,
            calibration, limit, margin, None)
        estimate_path = workloads.write_estimate(folder / "estimate.json", key, estimate)
        argv = workloads.hypnogram_argv(config, store, estimate_path, folder / "out")
        run = workloads.measure(argv, f"hypnogram {n_rows}")
        yield _row("hypnogram", "-", f"{n_rows:,} windows", estimate.as_dict(), run)


def lookalike_probe_rows(spec, grid: dict, workdir: Path, calibration: dict, limit: int,
                         margin: float) -> Iterator[Row]:
    """The probe job (fold 0) over stores of a look-alike's windows (workloads.SEIZURE_PROBE,
    EVENTS_PROBE) as the workflow runs it, predicted as preflight does."""

    from embedprobe.memory.preflight import probe_estimate
    from embedprobe.tasks.registry import benchmark_task

    key = f"probe/{spec.benchmark}/fold0"
    config, index = workloads.lookalike_set(workdir, spec)
    config.setdefault("probe", {})["n_jobs"] = 1
    bench = config["benchmarks"][spec.benchmark]
    task = benchmark_task(config, spec.benchmark)
    for dim, sizes in grid[f"{spec.name}_rows"].items():
        for rows in sizes:
            store = workdir / f"store_{rows}x{dim}.h5"
            table = workloads.lookalike_store(store, index, rows, dim, seed=1, spec=spec)
            estimate, _ = probe_estimate(config, task, bench, table, 0, dim, calibration, limit,
                                         margin, None)
            estimate_path = workloads.write_estimate(workdir / f"estimate_{rows}x{dim}.json",
                                                     key, estimate)
            argv = workloads.probe_argv(config, store, estimate_path, workdir / "out",
                                        benchmark=spec.benchmark, dataset=spec.dataset)
            run = workloads.measure(argv, f"{spec.name} probe {rows} x {dim}")
            yield _row(f"{spec.name} probe", f"width {dim} ({WIDTH_OF.get(dim, '-')})",
                       f"{rows:,} windows", estimate.as_dict(), run)


# ------------------------------------------------------------------------------ the report

COLUMNS = ("job", "model", "size", "predicted MB", "requested MB", "measured MB", "error",
           "covered")


def table_line(row: Row) -> str:
    return (f"| {row.job} | {row.model} | {row.size} | {row.predicted_mb:,.0f} | "
            f"{row.request_mb:,} | {row.measured_mb:,.0f} | {row.error:+.1%} | "
            f"{'yes' if row.covered else 'NO'} |")


def table_header() -> list[str]:
    return ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]


def verdicts(rows: list[Row]) -> list[tuple[str, bool]]:
    """Each target as (line, passed)."""
    errors = [row.error for row in rows]
    median = statistics.median(abs(e) for e in errors)
    worst = min(errors)
    worst_row = rows[errors.index(worst)]
    uncovered = [row for row in rows if not row.covered]
    return [
        (f"median |error| {median:.1%} (target <= {MEDIAN_TARGET:.0%})", median <= MEDIAN_TARGET),
        (f"worst under-prediction {min(worst, 0.0):+.1%} ({worst_row.job}, {worst_row.model}, "
         f"{worst_row.size}; target >= {UNDER_TARGET:+.0%})", worst >= UNDER_TARGET),
        (f"requests above the measured peak: {len(rows) - len(uncovered)} of {len(rows)}",
         not uncovered),
    ]


def per_job_lines(rows: list[Row]) -> list[str]:
    lines = []
    for job in dict.fromkeys(row.job for row in rows):
        errors = [row.error for row in rows if row.job == job]
        lines.append(f"{job}: median |error| {statistics.median(abs(e) for e in errors):.1%}, "
                     f"from {min(errors):+.1%} to {max(errors):+.1%}")
    return lines


def write_rows(rows: list[Row], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".jsonl":
        path.write_text("".join(json.dumps(row.as_dict()) + "\n" for row in rows))
        return
    keys = list(rows[0].as_dict())
    lines = ["\t".join(keys)] + ["\t".join(str(row.as_dict()[k]) for k in keys) for row in rows]
    path.write_text("\n".join(lines) + "\n")


def family_rows(grid: dict, models_key: str, workdir: Path) -> Iterator[Row]:
    """The embed rows of the families' models (`grid[models_key]`) at the families' night
    lengths of the Sleep-EDF demo, which all of them share (no CHB-MIT or DCSM files)."""
    family_grid = grid | {"embed_models": grid[models_key], "embed_hours": grid["family_hours"],
                          "seizure_embed_files": (), "dcsm_embed_nights": ()}
    return embed_rows(family_grid, workdir / "families")


ROW_KINDS = ("embed", "families", "family-tokens", "logistic", "tokens", "brain-age",
             "recording", "hypnogram", "seizure", "events", "erp", "scale", "contended")


def chosen_grid(args) -> dict:
    """The full or quick grid; --models keeps those of its embed models, --hours those night
    lengths (a part of the grid rerun to compare, e.g. under another malloc setting),
    --datasets the embed rows' data sets (default: the grid's, Sleep-EDF and CHB-MIT)."""
    grid = dict(GRIDS["quick" if args.quick else "full"])
    if getattr(args, "datasets", None):
        unknown = sorted(set(args.datasets) - set(EMBED_DATASETS))
        if unknown:
            raise SystemExit(f"error: unknown embed data sets {unknown}\n"
                             f"fix: use some of: {', '.join(EMBED_DATASETS)}")
        grid["embed_datasets"] = tuple(args.datasets)
    if args.models:
        models = args.models.split(",")
        for key in ("embed_models", "family_models", "family_token_models",
                    "seizure_embed_models"):
            grid[key] = tuple(m for m in grid[key] if m in models)
        if not grid["seizure_embed_models"]:  # no model left for the CHB-MIT files
            grid["seizure_embed_files"] = ()
    if args.hours:
        hours = [float(h) for h in args.hours.split(",")]
        def kept(h: float) -> bool:
            return any(abs(h - k) < 1e-3 for k in hours)

        for key in ("embed_hours", "family_hours"):
            grid[key] = tuple(h for h in grid[key] if kept(h))
        grid["dcsm_embed_nights"] = tuple(n for n in grid["dcsm_embed_nights"] if kept(n[0]))
    return grid


def cpu_grid(args) -> int:
    chosen = set(args.jobs.split(","))
    unknown = chosen - set(ROW_KINDS)
    if unknown:
        raise SystemExit(f"error: unknown job types {sorted(unknown)}\n"
                         f"fix: use some of: {', '.join(ROW_KINDS)}")
    grid = chosen_grid(args)
    calibration = load_calibration()
    config = load_config()
    limit = job_memory_limit(config["memory"]["limit_mb"])
    margin = config["memory"]["margin"]
    started = time.monotonic()
    rows: list[Row] = []
    print(f"calibration {CALIBRATION_PATH} ({calibration['environment']['date']}); "
          f"margin {margin:.0%}; every job in its own measured child process", flush=True)
    print("\n".join(table_header()), flush=True)
    with tempfile.TemporaryDirectory(prefix="validate_memory_") as tmp:
        workdir = args.workdir or Path(tmp)
        sources = {
            "embed": lambda: embed_rows(grid, workdir / "embed"),
            "families": lambda: family_rows(grid, "family_models", workdir),
            "family-tokens": lambda: family_rows(grid, "family_token_models", workdir),
            "logistic": lambda: probe_rows(grid, workdir / "probe", calibration, limit, margin),
            "tokens": lambda: probe_rows(grid, workdir / "tokens", calibration, limit, margin,
                                         sizes_key="token_rows", c_grid=(0.001, 0.01)),
            "scale": lambda: probe_rows(grid, workdir / "scale", calibration, limit, margin,
                                        sizes_key="scale_rows", c_grid=(0.1, 1.0)),
            "brain-age": lambda: brain_age_rows(grid, workdir / "age", calibration, limit,
                                                margin),
            "recording": lambda: recording_rows(grid, workdir / "recording", calibration,
                                                limit, margin),
            "hypnogram": lambda: hypnogram_rows(grid, workdir / "hypnogram", calibration,
                                                limit, margin),
            "seizure": lambda: lookalike_probe_rows(
                workloads.SEIZURE_PROBE, grid, workdir / "seizure", calibration, limit, margin),
            "events": lambda: lookalike_probe_rows(
                workloads.EVENTS_PROBE, grid, workdir / "events", calibration, limit, margin),
            "erp": lambda: lookalike_probe_rows(
                workloads.ERP_PROBE, grid, workdir / "erp", calibration, limit, margin),
            "contended": lambda: embed_rows(grid, workdir / "embed", contended=True),
        }
        for name, source in sources.items():
            if name in chosen:
                for row in source():
                    rows.append(row)
                    print(table_line(row), flush=True)
    print()
    print("\n".join(per_job_lines(rows)))
    results = verdicts(rows)
    for line, passed in results:
        print(f"{'PASS' if passed else 'FAIL'}: {line}")
    print(f"{len(rows)} jobs in {time.monotonic() - started:.0f} s")
    if args.out:
        write_rows(rows, args.out)
        print(f"wrote {args.out}")
    return 0 if all(passed for _, passed in results) else 1

