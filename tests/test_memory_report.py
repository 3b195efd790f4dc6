"""Memory at a glance and calibration from the user's own runs.

Every table here is real: preflight JSONs hold real estimates.estimate() results (built from a
calibration table deliberately off by a factor), and the runs table is written row by row by
memory.append_runs_row, as the jobs write it, with peaks from a known "true" calibration plus a
little run-to-run noise. The commands run through embedprobe.cli.main.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from embedprobe import cli, estimates, memory_report
from embedprobe.calibration_fit import FROM_RUNS, PROVENANCE_FROM_RUNS
from embedprobe.config import load_config, resolve_roots
from embedprobe.estimates import MiB
from embedprobe.memory import append_runs_row
from embedprobe.preflight_record import estimate_path
from embedprobe.rules_support import benchmark_targets

BIAS = 1.35  # every refitted constant of the table in use is 35% too high
NOISE = 0.02  # measured peaks vary by +-2% around the true formula


def true_table(tmp_path: Path) -> Path:
    """The shipped table with every constant a refit from runs sets made non-zero: the 'truth'
    the runs are measured against."""
    table = yaml.safe_load(estimates.CALIBRATION_PATH.read_text())
    table["jobs"]["embed_cpu"]["window_copies"] = 0.6
    path = tmp_path / "true.yaml"
    path.write_text(yaml.safe_dump(table))
    return path


def biased_table(truth: Path, tmp_path: Path) -> Path:
    """The table in use: every constant the refit sets is BIAS times the true one."""
    table = yaml.safe_load(truth.read_text())
    for job, names in FROM_RUNS.items():
        for name in names:
            if name in table["jobs"].get(job, {}):
                value = table["jobs"][job][name] * BIAS
                table["jobs"][job][name] = int(value) if name.endswith("_bytes") else value
    table.setdefault("provenance", {}).setdefault("probe_ridge", {})["data_copies"] = "fitted"
    path = tmp_path / "in_use.yaml"
    path.write_text(yaml.safe_dump(table))
    return path


def embed_inputs(size: int) -> dict:
    """Embed jobs of varied shape: batch, night length, resampling, reader threads, model."""
    rng = random.Random(size)
    batch = rng.choice([8, 16, 32, 64])
    channels = rng.choice([2, 4, 8])
    return {
        "batch_size": batch, "n_channels": channels, "n_samples": 6000,
        "feature_dim": rng.choice([200, 256, 512]),
        "weights_bytes": rng.choice([4, 13, 40]) * 1_000_000,
        "recording_bytes": channels * rng.uniform(2, 12) * 3600 * 100 * 8,
        "resample_ratio": rng.choice([1.0, 1.28, 2.0, 2.56]),
        "n_workers": rng.choice([0, 1, 2, 4]),
        "n_windows": rng.randint(2_000, 200_000), "night_windows": rng.randint(300, 1100),
        "batch_activation_bytes": rng.uniform(20, 400) * MiB, "activation_batch_size": 32,
    }


def logistic_inputs(rows: int, dim: int, train_share: float, n_jobs: int) -> dict:
    n_train = int(rows * train_share)
    n_val = (rows - n_train) // 2
    return {"n_train": n_train, "n_val": n_val, "n_test": rows - n_train - n_val, "dim": dim,
            "n_classes": 5, "n_jobs": n_jobs, "n_fits": 6}


class Scenario:
    """A results root with preflight JSONs and a runs table; `rows` are the runs table's rows."""

    def __init__(self, root: Path, in_use: Path, truth: Path, seed: int = 0):
        self.root, self.rows = root, []
        self.in_use = estimates.load_calibration(in_use)
        self.truth = estimates.load_calibration(truth)
        self.rng = np.random.default_rng(seed)
        self.pairs: dict[tuple[str, str], dict] = {}

    def add(self, dataset: str, model: str, key: str, job_type: str, inputs: dict,
            status: str = "ok", attempt: int = 1, seconds: float = 600.0,
            peak_factor: float | None = None, margin: float = 0.15) -> dict:
        """One job in its pair's preflight JSON and one attempt of it in the runs table."""
        est = estimates.estimate(job_type, inputs, self.in_use, None, margin)
        jobs = self.pairs.setdefault((dataset, model), {})
        jobs[key] = est.as_dict() | {"runtime_min": 30}
        true_total = estimates.estimate(job_type, inputs, self.truth, None).total
        factor = peak_factor or (1 + self.rng.uniform(-NOISE, NOISE))
        peak_mb = round(true_total * factor / MiB, 1)
        estimate_mb = round(est.total / MiB, 1)
        row = {"time": "2026-12-01T10:00:00", "host": "node01", "rule": key.split("/")[0],
               "job": key, "dataset": dataset, "model": model, "attempt": attempt,
               "estimate_mb": estimate_mb, "request_mb": est.request_mb * attempt,
               "peak_mb": peak_mb, "ratio": round(peak_mb / estimate_mb, 3), "status": status,
               "category": "" if status == "ok" else status, "seconds": seconds}
        self.rows.append(row)
        return row

    def write(self) -> Path:
        """The preflight JSONs as the workflow lays them out (embed in the pair's, each
        benchmark's probe folds in its own) and the runs table."""
        files: dict[Path, dict] = {}
        for (dataset, model), jobs in self.pairs.items():
            for key, entry in jobs.items():
                path = estimate_path(self.root / "preflight", dataset, model, key)
                files.setdefault(path, {"dataset": dataset, "model": model, "jobs": {}})
                files[path]["jobs"][key] = entry
        for path, record in files.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(record))
        runs = self.root / "memory" / "runs.tsv"
        for row in self.rows:
            append_runs_row(runs, row)
        return runs


def varied_runs(scenario: Scenario, n_embed: int = 10) -> None:
    """Embed jobs of many shapes and logistic probe folds of many sizes and widths."""
    for k in range(n_embed):
        scenario.add(f"set{k}", "encoder", "embed", "embed_cpu", embed_inputs(k), margin=0.2,
                     seconds=1800 + 100 * k)
    sizes = [(20_000, 200), (60_000, 256), (120_000, 256), (40_000, 512), (10_000, 1024),
             (30_000, 2048), (160_000, 128), (80_000, 768)]
    for k, (rows, dim) in enumerate(sizes):
        for fold, share in enumerate((0.55, 0.7, 0.85)):
            scenario.add(f"set{k}", f"width{dim}", f"probe/bench/fold{fold}", "probe_logistic",
                         logistic_inputs(rows, dim, share, n_jobs=1 + (k + fold) % 3),
                         seconds=300 + 40 * k)


@pytest.fixture
def tables(tmp_path):
    truth = true_table(tmp_path)
    return truth, biased_table(truth, tmp_path)


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    code = cli.main(list(map(str, argv)))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# ---------------------------------------------------------------------------- the table


def small_demo_runs(tmp_path, tables) -> Scenario:
    """A demo-like benchmark: one embed job killed for memory once, five probe folds (one
    failed), and one probe of another benchmark."""
    truth, in_use = tables
    s = Scenario(tmp_path / "results", in_use, truth)
    inputs = embed_inputs(3)
    s.add("sleep_edf_demo", "biot_random", "embed", "embed_cpu", inputs, status="oom",
          seconds=120, peak_factor=1.10, margin=0.2)
    s.add("sleep_edf_demo", "biot_random", "embed", "embed_cpu", inputs, attempt=2,
          seconds=900, peak_factor=1.25, margin=0.2)
    for fold in range(5):
        s.add("sleep_edf_demo", "biot_random", f"probe/demo/fold{fold}", "probe_logistic",
              logistic_inputs(1500, 256, 0.6, 1), seconds=6 + fold,
              status="failed" if fold == 4 else "ok", peak_factor=0.50 + 0.1 * fold)
    s.add("sleep_edf_demo", "biot_random", "probe/other/fold0", "probe_logistic",
          logistic_inputs(1500, 256, 0.6, 1), seconds=5, peak_factor=3.0)
    s.write()
    return s


def test_memory_table_per_rule_and_model(tmp_path, tables, capsys):
    s = small_demo_runs(tmp_path, tables)
    code, out, err = run_cli(capsys, "memory", "--results-root", s.root)
    assert code == 0, err
    lines = out.splitlines()
    header = lines[0].split()
    assert header[:6] == ["rule", "dataset", "model", "jobs", "attempts", "OOM"]
    embed = next(line for line in lines if line.startswith("embed "))
    probe = next(line for line in lines if line.startswith("probe "))
    embed_rows = [r for r in s.rows if r["rule"] == "embed"]
    # jobs 1, attempts 2, OOM kills 1; the largest estimate, request and peak
    assert embed.split()[3:6] == ["1", "2", "1"]
    assert f"{max(r['request_mb'] for r in embed_rows):,.0f}" in embed
    assert f"{max(r['peak_mb'] for r in embed_rows):,.0f}" in embed
    # six probe jobs (five folds of demo, one of other), six attempts, no OOM kill
    assert probe.split()[3:6] == ["6", "6", "0"]
    ratios = [r["peak_mb"] / r["estimate_mb"] for r in s.rows if r["rule"] == "probe"]
    assert f"{min(ratios):.2f}-{max(ratios):.2f}" in probe
    # the worst under-prediction is the other benchmark's probe (3x the true peak), the worst
    # over-prediction the first demo fold (half of it)
    under = next(line for line in lines if line.startswith("worst under-prediction"))
    over = next(line for line in lines if line.startswith("worst over-prediction"))
    worst = max(s.rows, key=lambda r: r["peak_mb"] / r["estimate_mb"])
    best = min(s.rows, key=lambda r: r["peak_mb"] / r["estimate_mb"])
    assert worst["job"] == "probe/other/fold0" and best["job"] == "probe/demo/fold0"
    assert (f"sleep_edf_demo/biot_random probe/other/fold0, attempt 1: peak "
            f"{worst['peak_mb']:,.0f} MB against an estimate of {worst['estimate_mb']:,.0f} MB "
            f"({worst['peak_mb'] / worst['estimate_mb'] - 1:+.1%})") in under
    assert "probe/demo/fold0, attempt 1" in over
    assert f"({best['peak_mb'] / best['estimate_mb'] - 1:+.1%})" in over
    # memory-hours as a cluster bills them: request x seconds, against peak x seconds
    requested = sum(r["request_mb"] * r["seconds"] for r in s.rows) / 1024 / 3600
    used = sum(r["peak_mb"] * r["seconds"] for r in s.rows) / 1024 / 3600
    hours = next(line for line in lines if line.startswith("memory-hours"))
    assert f"requested {requested:.3g} GB-h, used {used:.3g} GB-h" in hours
    assert f"({used / requested:.0%} of the request used)" in hours


def test_memory_of_one_benchmark_and_its_panel(tmp_path, tables, capsys):
    s = small_demo_runs(tmp_path, tables)
    figure, summary = tmp_path / "panel" / "memory.png", tmp_path / "panel" / "summary.md"
    code, out, err = run_cli(capsys, "memory", "--results-root", s.root, "--benchmark", "demo",
                             "--figure", figure, "--markdown", summary)
    assert code == 0, err
    assert "probe/other" not in out  # another benchmark's probe is not this one's
    probe = next(line for line in out.splitlines() if line.startswith("probe "))
    assert probe.split()[3:6] == ["5", "5", "0"]
    png = figure.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20_000
    import matplotlib.image

    height, width, _ = matplotlib.image.imread(figure).shape
    assert (width, height) == (1320, 528)
    text = summary.read_text()
    assert text.startswith("# Memory: demo")
    assert "| rule | dataset | model | jobs | attempts | OOM kills |" in text
    assert "| embed | sleep_edf_demo | biot_random | 1 | 2 | 1 |" in text
    # the table in use over-predicts every demo job: no under-prediction to name
    assert "- Worst under-prediction: none, every measured peak is at or below its estimate." \
        in text
    assert "- Worst over-prediction: sleep_edf_demo/biot_random probe/demo/fold0, attempt 1" \
        in text
    # the benchmark's summary.md gets it as a section
    section = memory_report.as_section(text)
    assert section.startswith("\n## Memory\n\n| rule |") and "# Memory: demo" not in section


def test_no_runs_table_is_a_usage_error(tmp_path, capsys):
    code, out, err = run_cli(capsys, "memory", "--results-root", tmp_path / "nothing")
    assert code == 2 and out == ""
    assert f"error: no runs table at {tmp_path / 'nothing' / 'memory' / 'runs.tsv'}" in err
    assert "\nfix: run the workflow first" in err


def test_the_panel_of_a_benchmark_without_runs_says_so(tmp_path, capsys):
    figure, summary = tmp_path / "memory.png", tmp_path / "summary.md"
    config = load_config()
    text = memory_report.memory_report(tmp_path, "demo", config["benchmarks"]["demo"], figure,
                                       summary)
    assert "No measured runs" in text and "No measured runs" in summary.read_text()
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "warning: no runs table" in capsys.readouterr().err


def test_every_benchmark_target_includes_its_memory_panel():
    config = load_config()
    roots = resolve_roots(config, environ={})
    targets = benchmark_targets(config, roots, "demo", "demo_brain_age")
    assert "results/memory/demo/memory.png" in targets
    assert "results/memory/demo_brain_age/memory.png" in targets


# ------------------------------------------------------------------ refitting from runs


def refit_errors(scenario: Scenario, calibration: dict) -> dict[str, list[float]]:
    """|estimate - peak| / peak of every ok run under `calibration`, by job type."""
    errors: dict[str, list[float]] = {}
    for (dataset, model), jobs in scenario.pairs.items():
        for key, entry in jobs.items():
            for row in scenario.rows:
                if (row["dataset"], row["model"], row["job"]) == (dataset, model, key):
                    total = estimates.estimate(entry["job"], entry["inputs"], calibration,
                                               None).total
                    peak = row["peak_mb"] * MiB
                    errors.setdefault(entry["job"], []).append(abs(total - peak) / peak)
    return errors


def test_refit_from_runs_recovers_the_true_calibration(tmp_path, tables, capsys):
    truth, in_use = tables
    s = Scenario(tmp_path / "results", in_use, truth)
    varied_runs(s)
    runs = s.write()
    out_path = tmp_path / "refitted.yaml"
    code, out, err = run_cli(capsys, "calibrate", "--from-runs", runs, "--out", out_path,
                             "--calibration", in_use)
    assert code == 0, err
    assert f"{len(s.rows)} finished runs joined with their preflight inputs" in out
    refitted = estimates.load_calibration(out_path)
    before = refit_errors(s, estimates.load_calibration(in_use))
    after = refit_errors(s, refitted)
    for job in ("embed_cpu", "probe_logistic"):
        assert np.median(before[job]) > 0.2, (job, np.median(before[job]))
        assert np.median(after[job]) <= 0.05, (job, np.median(after[job]))
        # an envelope: no run is under-predicted by more than the peaks' rounding
        assert f"{job}: refitted from {len(before[job])} runs" in out
        for name in FROM_RUNS[job]:
            assert refitted["provenance"][job][name] == PROVENANCE_FROM_RUNS
            assert f"{job}.{name}" in out  # its drift is printed
    # the drift of a constant against the table in use, e.g. the embed baseline: -26% = 1/1.35
    in_use_value = estimates.load_calibration(in_use)["jobs"]["embed_cpu"]["baseline_bytes"]
    new_value = refitted["jobs"]["embed_cpu"]["baseline_bytes"]
    line = next(x for x in out.splitlines() if x.startswith("embed_cpu.baseline_bytes "))
    assert f"{(new_value - in_use_value) / in_use_value:+.1%}" in line
    # constants that are not refitted keep the table in use's values and provenance
    assert refitted["jobs"]["embed_cpu"]["weights_copies"] == 2.0
    assert refitted["provenance"]["embed_cpu"]["weights_copies"] == "structural"
    assert refitted["environment"]["source"] == "embedprobe calibrate --from-runs"
    assert refitted["environment"]["based_on"] == str(in_use)
    assert refitted["fit"]["embed_cpu"]["status"] == "refitted"
    assert f"note: preflight uses it once the config names it: snakemake ... --config " \
        f"memory_calibration={out_path}" in err


def test_a_second_preflight_moves_the_estimates_toward_the_peaks(tmp_path, tables, capsys):
    """The refitted table, pointed to by memory_calibration, gives new estimates (and requests)
    closer to what the jobs measured; the requests still cover the peaks."""
    truth, in_use = tables
    s = Scenario(tmp_path / "results", in_use, truth, seed=1)
    varied_runs(s)
    runs = s.write()
    out_path = tmp_path / "refitted.yaml"
    assert run_cli(capsys, "calibrate", "--from-runs", runs, "--out", out_path,
                   "--calibration", in_use)[0] == 0
    config = {"memory_calibration": str(out_path)}
    second = estimates.load_calibration(config["memory_calibration"])
    closer, covered = 0, 0
    for (dataset, model), jobs in s.pairs.items():
        for key, entry in jobs.items():
            row = next(r for r in s.rows if (r["dataset"], r["model"], r["job"])
                       == (dataset, model, key))
            peak = row["peak_mb"] * MiB
            again = estimates.fit_knobs(entry["job"], entry["inputs"], second, None,
                                        entry["margin"])
            closer += abs(again.total - peak) < abs(entry["total"] - peak)
            covered += again.request_mb >= row["peak_mb"]
    assert closer == len(s.rows) and covered == len(s.rows)


def test_a_refit_refuses_too_few_runs(tmp_path, tables, capsys):
    truth, in_use = tables
    s = Scenario(tmp_path / "results", in_use, truth)
    for k in range(3):  # 3 runs, 4 constants (baseline and three copies/factors)
        s.add(f"set{k}", "encoder", "embed", "embed_cpu", embed_inputs(k), margin=0.2)
    runs = s.write()
    out_path = tmp_path / "refitted.yaml"
    code, out, err = run_cli(capsys, "calibrate", "--from-runs", runs, "--out", out_path,
                             "--calibration", in_use)
    assert code == 2 and not out_path.exists()
    assert "error: cannot refit the memory calibration from these runs:" in err
    assert ("embed_cpu: kept the table's constants (3 runs): too few runs: 3 for 4 constants "
            "(baseline_bytes, recording_copies, window_copies, activation_factor)") in err
    assert "\nfix: refit from more, and more varied, finished jobs" in err


def test_a_refit_refuses_runs_too_alike(tmp_path, tables, capsys):
    """Five folds of one benchmark on one dataset: every fold loads the same rows at the same
    width, so nothing tells the embeddings copies from the baseline."""
    truth, in_use = tables
    s = Scenario(tmp_path / "results", in_use, truth)
    for fold in range(5):
        s.add("demo", "biot", f"probe/demo/fold{fold}", "probe_logistic",
              logistic_inputs(1500, 256, 0.58 + 0.01 * fold, 1))
    runs = s.write()
    code, _, err = run_cli(capsys, "calibrate", "--from-runs", runs, "--out",
                           tmp_path / "x.yaml", "--calibration", in_use)
    assert code == 2
    assert ("probe_logistic: kept the table's constants (5 runs): too few runs: 5 for 6 "
            "constants") in err
    for fold in range(5, 12):
        s.add("demo", "biot", f"probe/demo/fold{fold}", "probe_logistic",
              logistic_inputs(1500, 256, 0.5 + 0.01 * fold, 1))
    runs.unlink()
    runs = s.write()
    code, _, err = run_cli(capsys, "calibrate", "--from-runs", runs, "--out",
                           tmp_path / "x.yaml", "--calibration", in_use)
    assert code == 2
    assert ("probe_logistic: kept the table's constants (12 runs): runs too alike: the term of "
            "embeddings_copies, window_row_bytes, block_rows, square_copies varies by less "
            "than 10% between the 12 runs") in err


def test_a_refit_refuses_constants_that_move_together(tmp_path, tables, capsys):
    """Embed jobs that all resample by the same ratio: the raw and the resampled copies of a
    night grow together, so their constants cannot be told apart."""
    truth, in_use = tables
    s = Scenario(tmp_path / "results", in_use, truth)
    for k in range(8):
        s.add(f"set{k}", "encoder", "embed", "embed_cpu", embed_inputs(k) | {
            "resample_ratio": 2.0}, margin=0.2)
    runs = s.write()
    code, _, err = run_cli(capsys, "calibrate", "--from-runs", runs, "--out",
                           tmp_path / "x.yaml", "--calibration", in_use, "--job", "embed_cpu")
    assert code == 2
    line = next(x for x in err.splitlines() if "embed_cpu: kept" in x)
    assert "move together in every run (rank-deficient)" in line
    assert "recording_copies" in line and "window_copies" in line


def test_a_job_type_that_cannot_be_refitted_keeps_its_constants(tmp_path, tables, capsys):
    """Refit what the runs identify; keep (and say so) what they do not; leave out runs whose
    preflight was made again since (their inputs may not be the run's)."""
    truth, in_use = tables
    s = Scenario(tmp_path / "results", in_use, truth)
    varied_runs(s)
    s.add("brain", "encoder", "probe/age/fold0", "probe_ridge", {"n": 80, "p": 256})
    s.add("brain", "encoder", "probe/age/fold1", "probe_ridge", {"n": 80, "p": 256})
    stale = s.add("set0", "encoder", "embed", "embed_cpu", embed_inputs(0), margin=0.2)
    stale["estimate_mb"] += 50  # an earlier preflight's estimate
    runs = s.write()
    out_path = tmp_path / "refitted.yaml"
    code, out, err = run_cli(capsys, "calibrate", "--from-runs", runs, "--out", out_path,
                             "--calibration", in_use)
    assert code == 0, err
    assert "1 left out: stale: preflight made again since the run" in out
    assert "probe_ridge: kept the table's constants (2 runs): too few runs" in out
    assert "note: probe_ridge keeps the constants of in_use.yaml: too few runs" in err
    written = yaml.safe_load(out_path.read_text())
    kept = estimates.load_calibration(in_use)
    assert written["jobs"]["probe_ridge"] == kept["jobs"]["probe_ridge"]
    assert written["provenance"]["probe_ridge"]["data_copies"] == "fitted"  # as it was
    assert written["fit"]["probe_ridge"]["status"] == "kept"
    assert written["fit"]["embed_cpu"]["runs"] == 10
    # named with --job, a job type that cannot be refitted is a refusal
    code, _, err = run_cli(capsys, "calibrate", "--from-runs", runs, "--out",
                           tmp_path / "y.yaml", "--calibration", in_use, "--job", "probe_ridge",
                           "--job", "embed_cpu")
    assert code == 2 and not (tmp_path / "y.yaml").exists()
    assert "probe_ridge: kept the table's constants (2 runs): too few runs" in err


def test_runs_table_is_read_as_the_jobs_write_it(tmp_path, tables):
    s = small_demo_runs(tmp_path, tables)
    table = memory_report.read_runs(s.root / "memory" / "runs.tsv")
    assert len(table) == len(s.rows)
    assert list(table["status"]) == [r["status"] for r in s.rows]
    assert pd.api.types.is_float_dtype(table["peak_mb"])
