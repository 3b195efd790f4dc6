"""The project's real jobs as measured workloads: data built, the job run in its own child
process, its peak measured by the kernel (peaks.run_measured: the child's ru_maxrss from wait4).

The calibration (calibrate_memory) fits the table on them; the validation (validate_memory, its
GPU grid validate_gpu_memory) and bench_embed_memory check estimates against them.
Each workload runs the code a workflow job runs, through `embedprobe <step> --job-config ...`
as the rules run it, with every root (data, cache, results, weights) under a folder of its own:

  embed           generated Sleep-EDF demo nights (demo_set: 30 s windows of 2 channels at
                  100 Hz), CHB-MIT look-alike files (seizure_embed_set: 10 s windows of 16-18
                  channels at 256 Hz) or DCSM look-alike nights (dcsm_embed_set: psg.h5 files
                  of 7 channels), `embedprobe check` (run_check), then `embedprobe embed`
                  (embed_argv) with the knobs of an estimate JSON (preflight writes it);
                  embed_inputs builds its estimate inputs as preflight does
  logistic probe  `embedprobe probe` (probe_argv: sleep staging unless named) on an HDF5 store
                  of hard synthetic embeddings (hard_rows, write_store); probe_inputs builds
                  the inputs as preflight does, from the benchmark's task
  seizure probe   the same job of the seizure benchmark on a store whose windows are real
                  windows of a generated CHB-MIT look-alike (lookalike_set, lookalike_store
                  with SEIZURE_PROBE)
  events probe    the same for the sleep-respiratory benchmark over a UCDDB look-alike's
                  windows, whose event lists the job reads (EVENTS_PROBE)
  brain-age probe the job of the brain-age benchmark (brain_age_set: a store and the
                  SC-subjects.xls with the ages; brain_age_argv, brain_age_inputs)
  recording probe the job of the abnormal-EEG benchmark (recording_set: a store of recordings
                  of ROWS_PER_UNIT windows, each labelled with its recording's class; its
                  probe's aggregation mean or mean_std; recording_inputs as preflight does)
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from embedprobe.measure.peaks import MeasuredRun, run_measured, signal_name

# The folder that holds the package (workflow/): the children's PYTHONPATH.
PACKAGE_PARENT = Path(__file__).resolve().parents[2]

DEMO_DATASET = "sleep_edf_demo"
PROBE_BENCHMARK = "demo"  # sleep staging: 5 subject folds, the reference C grid
AGE_BENCHMARK = "demo_brain_age"
SEIZURE_BENCHMARK = "epilepsy_demo"  # 5 patient folds, the reference C grid
SEIZURE_DATASET = "chbmit_demo"
# The look-alike whose windows the seizure stores hold (SEIZURE_PROBE)
SEIZURE_LOOKALIKE = {"patients": 2, "files_per_patient": 1, "minutes_per_file": 6, "seed": 0}
NIGHTS_PER_SUBJECT = 2
WINDOWS_PER_NIGHT = 1000  # a Sleep-EDF night holds ~800-1100 scored 30 s windows
ROWS_PER_SUBJECT = 20  # windows a subject has in the brain-age stores
RECORDING_BENCHMARK = "abnormal_eeg_demo"  # recordings as units, 5 folds stratified on class
RECORDING_DATASET = "bonn_demo"  # its reader's CLASSES name the labels; no file is read
ROWS_PER_UNIT = 40  # windows a recording has in the recording-level stores (TUAB: ~120)
HYPNOGRAM_BENCHMARK = "demo_hypnogram"  # reads the staging benchmark `demo`'s fold predictions
CHILD_TIMEOUT_S = 900


def job_env() -> dict:
    """The children's environment: the package first on the path (then what the caller's path
    held: an optional extra installed into a folder of its own), no hub look-ups."""
    path = os.pathsep.join(p for p in (str(PACKAGE_PARENT), os.environ.get("PYTHONPATH"))
                           if p)
    return {**os.environ, "PYTHONPATH": path, "HF_HUB_OFFLINE": "1"}


def cli_argv(config: dict, *args) -> list[str]:
    """`embedprobe --job-config JSON ...` as the workflow's rules run it."""
    return [sys.executable, "-m", "embedprobe.cli", "--job-config", json.dumps(config),
            *map(str, args)]


def measure(argv: list[str], label: str) -> MeasuredRun:
    """Run one child to its end and return it with its kernel-measured peak; failures raise."""
    run = run_measured(argv, timeout=CHILD_TIMEOUT_S, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, env=job_env())
    if not run.ok:
        reason = f"signal {signal_name(run.killed_by_signal)}" \
            if run.killed_by_signal else f"exit {run.returncode}"
        raise RuntimeError(f"{label} failed ({reason}):\n{(run.stderr or '')[-3000:]}")
    return run


def write_estimate(path: Path, key: str, estimate) -> Path:
    """A preflight-style JSON with one job, so the job reads its knobs as in the workflow."""
    path.write_text(json.dumps({"jobs": {key: estimate.as_dict()}}))
    return path


@dataclass
class DemoSet:
    """A generated dataset (the Sleep-EDF demo unless `dataset` names another), its window
    index and the job config that finds it."""

    config: dict
    roots: dict
    index: Path
    n_windows: int
    hours: float
    dataset: str = DEMO_DATASET

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
    from embedprobe.pipeline.context import DatasetContext
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
        write_index(build_index(DatasetContext.build(config, roots, DEMO_DATASET)), index)
    from embedprobe.pipeline.index import read_index

    return DemoSet(config, roots, index, len(read_index(index)), hours)


SEIZURE_WINDOW_S = 10  # the look-alike's windows (chbmit_demo's epoch_seconds)
DCSM_DATASET = "dcsm_demo"


def lookalike_embed_set(folder: Path, dataset: str, settings: dict, hours: float,
                        recordings: int) -> DemoSet:
    """`dataset`'s look-alike written with `settings` (`recordings` of `hours` each) and its
    window index, under `folder`: the embed job on another format's data."""
    from embedprobe.core.config import resolve_roots
    from embedprobe.datasets.registry import dataset_root, generator_for
    from embedprobe.pipeline.context import DatasetContext
    from embedprobe.pipeline.index import build_index, read_index, write_index

    folder.mkdir(parents=True, exist_ok=True)
    config = job_config(folder)
    config["datasets"][dataset].update(expected_recordings=recordings, generator=settings)
    roots = resolve_roots(config)
    index = folder / "index.tsv"
    if not index.is_file():
        generator_for(config, dataset).write_lookalike(dataset_root(config, roots, dataset),
                                                       settings)
        write_index(build_index(DatasetContext.build(config, roots, dataset)), index)
    return DemoSet(config, roots, index, len(read_index(index)), hours, dataset)


def seizure_embed_set(folder: Path, windows_per_file: int, patients: int = 2,
                      files: int = 1) -> DemoSet:
    """A CHB-MIT look-alike of `patients` x `files` files of `windows_per_file` 10 s windows
    each and its window index: the embed job on seizure-like data, whose readers read 16-18
    channels at 256 Hz where a Sleep-EDF night gives them 2 at 100 Hz. Files of 256 or 512
    windows make parts of one size (window_parts.parts cuts at every 512th row), so the
    readers' largest stretches coincide as they do on CHB-MIT's hour-long files; longer
    files make BIOT's statistic read more than its largest stretch."""
    minutes = windows_per_file * SEIZURE_WINDOW_S / 60
    settings = {"patients": patients, "files_per_patient": files, "minutes_per_file": minutes,
                "seed": 0}
    return lookalike_embed_set(folder, SEIZURE_DATASET, settings, minutes / 60,
                               patients * files)


def dcsm_embed_set(folder: Path, hours: float, sfreq: float, subjects: int = 4) -> DemoSet:
    """A DCSM look-alike of `subjects` nights of `hours` at `sfreq` (the release's 256 Hz, or
    the demo's 64) and its window index: the embed job reading psg.h5 files through h5py.
    Four nights, as demo_set, so the readers run ahead as far as on a real cohort."""
    settings = {"subjects": subjects, "hours": hours, "sfreq": sfreq, "seed": 0}
    return lookalike_embed_set(folder, DCSM_DATASET, settings, hours, subjects)


def run_check(demo: DemoSet, model: str):
    """The workflow's check job for (demo, model) in its own process; its CheckResult."""
    from embedprobe.pipeline.check import OK, read_result

    path = demo.folder / "check" / f"{model}.json"
    if not path.is_file():
        argv = cli_argv(demo.config, "check", "--dataset", demo.dataset, "--model", model,
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
    from embedprobe.pipeline.context import DatasetContext
    from embedprobe.pipeline.index import read_index

    return preflight_embed_inputs(DatasetContext.build(demo.config, demo.roots, demo.dataset),
                                  check,
                                  read_index(demo.index))


def preflight(demo: DemoSet, config: dict, model: str, check: Path, out: Path) -> dict:
    """The preflight record of `model`'s embed job on `demo` under `config` (the demo's, as a
    measurement changed it), written to `out` as the workflow's preflight writes it; its notes
    on stderr are dropped, which would interleave with the measurement's table."""
    import contextlib
    import io

    from embedprobe.memory.preflight import run_preflight
    from embedprobe.pipeline.context import DatasetContext

    with contextlib.redirect_stderr(io.StringIO()):
        return run_preflight(DatasetContext.build(config, demo.roots, demo.dataset), model,
                             check, demo.index, out)


def embed_argv(demo: DemoSet, model: str, estimate_path: Path, out: Path) -> list[str]:
    """The workflow's embed job (knobs from the estimate JSON, torch threads from the config),
    from scratch: an earlier run's store or partial file is removed first."""
    from embedprobe.pipeline.store_format import partial_path

    out.unlink(missing_ok=True)
    partial_path(out).unlink(missing_ok=True)
    return cli_argv(demo.config, "embed", "--dataset", demo.dataset, "--model", model,
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


def synthetic_identity(table, dataset: str = DEMO_DATASET):
    """The cache identity of a store of generated rows over `table`."""
    from embedprobe import __version__
    from embedprobe.pipeline.store_identity import CacheIdentity
    from embedprobe.pipeline.window_table import window_table_sha256

    return CacheIdentity(
        dataset=dataset, model="synthetic", windows_sha256=window_table_sha256(table),
        preprocessing="{}", weights_sha256="0" * 64, code_version=__version__)


def write_store(path: Path, X: np.ndarray, labels: np.ndarray, table=None,
                dataset: str = DEMO_DATASET, tokens: int = 0) -> list[str]:
    """A finished embedding cache of X (as embed writes it) over `table` (default: a
    Sleep-EDF-like one for `labels`); with `tokens`, a token store whose rows are X's rows cut
    into that many tokens. Returns its subject column."""
    from embedprobe.pipeline.store_writer import EmbeddingWriter

    table = window_table(labels) if table is None else table
    if not path.is_file():
        identity = synthetic_identity(table, dataset)
        path.parent.mkdir(parents=True, exist_ok=True)
        row = (tokens, X.shape[1] // tokens) if tokens else X.shape[1]
        with EmbeddingWriter(path, identity, len(X), row, table) as writer:
            for start in range(0, len(X), 8192):
                block = X[start:start + 8192]
                writer.append(block.reshape(len(block), *np.atleast_1d(row)))
            writer.finish()
    return table["subject"].tolist()


def store_writer_growth(path: Path, n_windows: int, row: tuple[int, ...],
                        batch_size: int) -> tuple[int, int]:
    """The embed job's store alone, as embed writes it: a writer with batches of random rows
    appended, then its finish(). (What the writer grew while appending, what finish() grew
    beyond that), in bytes; the window table is made before either."""
    from embedprobe.measure.peaks import measure_peak_growth
    from embedprobe.pipeline.store_writer import EmbeddingWriter

    table = window_table(np.zeros(n_windows, dtype=np.int8))
    identity = synthetic_identity(table)
    rows = np.random.default_rng(0).standard_normal((batch_size, *row), dtype=np.float32)

    def append() -> EmbeddingWriter:
        writer = EmbeddingWriter(path, identity, n_windows, row, table)
        for start in range(0, n_windows, batch_size):
            writer.append(rows[:min(batch_size, n_windows - start)])
        return writer

    writer, appending = measure_peak_growth(append)
    _, finishing = measure_peak_growth(writer.finish)
    writer.close()
    return appending, finishing


def hard_rows(n_rows: int, dim: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The hard synthetic embeddings (devtools.synthetic): what a probe has to work at."""
    from embedprobe.devtools.synthetic import hard_embeddings

    return hard_embeddings(n_rows, dim, seed=seed)


def token_rows(n_rows: int, tokens: int, width: int,
               seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Token-store rows: hard rows of `width` (what one token is), `tokens` of them a window,
    flattened in order; a window's label is its first token's. Generating hard rows at the
    flattened width would build its width x width covariance (2 GB at 16,384)."""
    X, y = hard_rows(n_rows * tokens, width, seed=seed)
    return X.reshape(n_rows, tokens * width), y[::tokens].copy()


def probe_config(folder: Path, n_jobs: int) -> dict:
    config = job_config(folder)
    config.setdefault("probe", {})["n_jobs"] = n_jobs
    return config


def probe_inputs(config: dict, benchmark: str, units, dim: int, fold: int = 0) -> dict:
    """A probe job's estimate inputs exactly as preflight builds them (the benchmark's task):
    `units` is the store's window table (the seizure folds stratify on its labels) or its
    subject column."""
    import pandas as pd

    from embedprobe.tasks.registry import benchmark_task

    bench = config["benchmarks"][benchmark]
    table = units if isinstance(units, pd.DataFrame) else pd.DataFrame({"subject": units})
    return benchmark_task(config, benchmark).probe_memory(config, bench, table, fold, dim)[1]


def probe_argv(config: dict, store: Path, estimate_path: Path, out: Path, fold: int = 0,
               benchmark: str = PROBE_BENCHMARK, dataset: str = DEMO_DATASET):
    """The workflow's probe job for one fold of a benchmark (sleep staging unless named)."""
    out.mkdir(parents=True, exist_ok=True)
    return cli_argv(config, "probe", "--benchmark", benchmark, "--dataset", dataset,
                    "--model", "synthetic", "--embeddings", store, "--fold", fold,
                    "--out", out / "fold.json", "--predictions", out / "fold.npz",
                    "--estimate", estimate_path)


@dataclass(frozen=True)
class LookalikeProbe:
    """A probe job whose store rows are real windows of a generated look-alike (the job reads
    the dataset's own annotations at probe time: seizure lists, event lists)."""

    name: str  # the row kind and folder name
    benchmark: str
    dataset: str
    lookalike: dict  # the generator's settings
    recordings: int  # the recordings the look-alike holds
    subjects: int = 20  # the stores' rows are spread over this many subjects (5 folds of 4)


# Every patient's first file has a seizure.
SEIZURE_PROBE = LookalikeProbe("seizure", SEIZURE_BENCHMARK, SEIZURE_DATASET, SEIZURE_LOOKALIKE,
                               SEIZURE_LOOKALIKE["patients"]
                               * SEIZURE_LOOKALIKE["files_per_patient"])
# Two UCDDB nights with their respiratory event lists (apneas, hypopneas, periodic breathing).
EVENTS_PROBE = LookalikeProbe("events", "sleep_respiratory_demo", "ucddb_demo",
                              {"subjects": 2, "hours": 0.5, "seed": 0}, 2)


# BNCI 2014-008's look-alike (ERP: 1 s epochs from each flash, 1 target in 6): the probe of
# many short trials, over 4 subjects left out one at a time (folds: loso).
ERP_PROBE = LookalikeProbe("erp", "bci_erp_demo", "bnci2014_008_demo",
                           {"subjects": 4, "selections": 2, "repetitions": 10, "seed": 0}, 4,
                           subjects=4)


def lookalike_set(folder: Path, spec: LookalikeProbe = SEIZURE_PROBE):
    """The spec's look-alike (its files as the real dataset lays them out) and its window
    index; returns (the job config that finds it, the index)."""
    from embedprobe.core.config import resolve_roots
    from embedprobe.core.selection import with_fold_count
    from embedprobe.datasets.registry import dataset_root, generator_for
    from embedprobe.pipeline.context import DatasetContext
    from embedprobe.pipeline.index import build_index, read_index, write_index

    config = job_config(folder)
    config["datasets"][spec.dataset].update(expected_recordings=spec.recordings,
                                            generator=spec.lookalike)
    # `folds: loso` as the job's config slice holds it: one fold per subject
    config["benchmarks"][spec.benchmark] = with_fold_count(config, spec.benchmark, spec.dataset)
    roots = resolve_roots(config)
    index = folder / f"{spec.name}_index.tsv"
    if not index.is_file():
        generator_for(config, spec.dataset).write_lookalike(
            dataset_root(config, roots, spec.dataset), spec.lookalike)
        write_index(build_index(DatasetContext.build(config, roots, spec.dataset)), index)
    return config, read_index(index)


def lookalike_store(path: Path, index, rows: int, dim: int, seed: int = 0,
                    spec: LookalikeProbe = SEIZURE_PROBE):
    """A store of `rows` synthetic embeddings over the spec's subjects. Each row is a real
    window of the look-alike (its recording, start and label, cycling through the index), so
    the job reads the real headers and annotations for its scoring; each subject's rows cover
    every window, events included. Windows of a nonzero label are shifted on a few features
    (a learnable signal). Returns the store's window table (recording, subject, start, label:
    the seizure folds stratify the patients on their labels)."""
    import pandas as pd

    pick = np.arange(rows) % len(index)
    table = pd.DataFrame({
        "recording": index["recording"].to_numpy()[pick],
        "subject": [f"P{k * spec.subjects // rows:02d}" for k in range(rows)],
        "start": index["start"].to_numpy()[pick],
        "label": index["label"].to_numpy()[pick].astype(np.int8),
    })
    if not path.is_file():
        rng = np.random.default_rng([seed, rows, dim])
        X = rng.standard_normal((rows, dim), dtype=np.float32)
        X[table["label"].to_numpy() > 0, : min(8, dim)] += 1.0
        write_store(path, X, table["label"].to_numpy(), table, spec.dataset)
    return table


def brain_age_set(folder: Path, n_subjects: int, dim: int):
    """A store of n_subjects x ROWS_PER_SUBJECT windows and the SC-subjects.xls with their ages
    where the brain-age job looks for it; returns (job config, store, subject column)."""
    from types import SimpleNamespace

    import pandas as pd

    from embedprobe.datasets.sleep_edf.lookalike import write_subjects_table

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
        X = rng.standard_normal((len(table), dim), dtype=np.float32)
        write_store(store, X, table["label"].to_numpy(), table)
    return config, store, subjects


def brain_age_argv(config: dict, store: Path, estimate_path: Path, out: Path) -> list[str]:
    """The workflow's probe job for fold 0 of the brain-age benchmark."""
    return probe_argv(config, store, estimate_path, out, benchmark=AGE_BENCHMARK)


def brain_age_inputs(config: dict, subjects: list[str], dim: int) -> dict:
    """The brain-age job's estimate inputs exactly as preflight builds them (fold 0)."""
    return probe_inputs(config, AGE_BENCHMARK, subjects, dim)


def recording_set(folder: Path, n_units: int, dim: int, aggregation: str = "mean"):
    """A store of n_units recordings x ROWS_PER_UNIT windows (half of the recordings of each
    class, one subject each) and the job config whose abnormal-EEG benchmark aggregates them
    by `aggregation`; returns (job config, store, window table)."""
    import pandas as pd

    config = job_config(folder)
    # probe_recording is abnormal EEG's recording-level option (its default probes windows)
    config["benchmarks"][RECORDING_BENCHMARK].setdefault("probe", {}).update(
        aggregation=aggregation, units="recordings")
    units = [f"R{k:05d}" for k in range(n_units)]
    names = np.repeat(units, ROWS_PER_UNIT)
    labels = np.repeat(np.arange(n_units) % 2, ROWS_PER_UNIT).astype(np.int8)
    table = pd.DataFrame({"recording": names, "subject": names, "session": "1",
                          "start": np.tile(np.arange(ROWS_PER_UNIT) * 1736, n_units),
                          "label": labels})
    store = folder / f"store_{n_units}x{dim}.h5"
    rng = np.random.default_rng([n_units, dim])
    if not store.is_file():
        X = rng.standard_normal((len(table), dim), dtype=np.float32)
        X[labels == 1, : min(8, dim)] += 0.5  # a class signal, so the fits are real ones
        write_store(store, X, labels, table, RECORDING_DATASET)
    return config, store, table


def recording_argv(config: dict, store: Path, estimate_path: Path, out: Path) -> list[str]:
    """The workflow's probe job for fold 0 of the abnormal-EEG benchmark."""
    return probe_argv(config, store, estimate_path, out, benchmark=RECORDING_BENCHMARK,
                      dataset=RECORDING_DATASET)


def recording_inputs(config: dict, table, dim: int) -> dict:
    """The recording-level job's estimate inputs exactly as preflight builds them (fold 0)."""
    from embedprobe.tasks.registry import benchmark_task

    bench = config["benchmarks"][RECORDING_BENCHMARK]
    entry = config["datasets"][RECORDING_DATASET]
    return benchmark_task(config, RECORDING_BENCHMARK).probe_memory(
        config, bench, table, 0, dim, entry)[1]


def hypnogram_set(folder: Path, n_rows: int):
    """A store of n_rows Sleep-EDF-like windows (stages in runs, as nights have them) and the
    staging fold 0's predictions where the hypnogram job of HYPNOGRAM_BENCHMARK reads them
    (its source's fold, model "synthetic"); returns (job config, store, window table)."""
    from embedprobe.core.config import resolve_roots
    from embedprobe.core.paths import output_path
    from embedprobe.probing.folds import fold_split
    from embedprobe.tasks.registry import task_for

    config = job_config(folder)
    bench = config["benchmarks"][HYPNOGRAM_BENCHMARK]
    rng = np.random.default_rng(n_rows)
    labels = np.repeat(rng.integers(0, 5, n_rows // 10 + 1), 10)[:n_rows]
    table = window_table(labels)
    store = folder / f"store_{n_rows}.h5"
    write_store(store, rng.standard_normal((n_rows, 8), dtype=np.float32), labels, table)
    predictions = output_path("fold_predictions", resolve_roots(config),
                              benchmark=bench["source"], dataset=DEMO_DATASET,
                              model="synthetic", fold=0)
    if not predictions.is_file():
        folds = task_for("sleep_staging").fold_groups(table, bench)
        test = np.flatnonzero(fold_split(folds, table, 0)["test"])
        predicted = np.where(rng.random(len(test)) < 0.2, rng.integers(0, 5, len(test)),
                             labels[test])
        predictions.parent.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(predictions, index=test, y_true=labels[test], y_pred=predicted)
        predictions.with_suffix(".json").write_text(json.dumps({"chosen": 1.0}))
    return config, store, table


def hypnogram_argv(config: dict, store: Path, estimate_path: Path, out: Path) -> list[str]:
    """The workflow's hypnogram job for fold 0."""
    return probe_argv(config, store, estimate_path, out, benchmark=HYPNOGRAM_BENCHMARK)


def hypnogram_inputs(config: dict, table) -> dict:
    """The hypnogram job's estimate inputs exactly as preflight builds them (fold 0)."""
    return probe_inputs(config, HYPNOGRAM_BENCHMARK, table, dim=8)
