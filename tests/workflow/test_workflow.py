"""The real snakemake on the demo: plan, full run, refusals. Roots live in a tmp folder."""

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from embedprobe.memory.records import estimate_path, job_estimate

from helpers.project import PROJECT, snakemake

pytestmark = pytest.mark.workflow

# 5 subjects x 2 nights, 0.5 h of sleep each (~1,500 windows): every fold tests one subject.
SMALL_DEMO = {"datasets": {"sleep_edf_demo": {"expected_recordings": 10,
                                              "generator": {"subjects": 5, "nights": 2,
                                                            "hours": 0.5, "seed": 0}}}}


@pytest.fixture(scope="module")
def small_demo_config(tmp_path_factory):
    path = tmp_path_factory.mktemp("cfg") / "small_demo.yaml"
    path.write_text(yaml.safe_dump(SMALL_DEMO))
    return str(path)


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory, small_demo_config):
    workdir = tmp_path_factory.mktemp("demo_run")
    run = snakemake(workdir, "--configfile", small_demo_config, "--cores", "2", "demo")
    return workdir, run


def job_stats(out: str) -> dict[str, int]:
    """The first `Job stats:` table of snakemake's output: rule -> job count."""
    lines = out.split("Job stats:")[1].splitlines()
    rows = [line.split() for line in lines[3:]]
    return {row[0]: int(row[1]) for row in rows[:next(i for i, r in enumerate(rows)
                                                      if r[:1] == ["total"])]}


def test_dry_run_prints_the_plan(tmp_path, small_demo_config):
    run = snakemake(tmp_path, "--configfile", small_demo_config, "-n", "demo")
    assert run.returncode == 0, run.stderr
    out = run.stdout + run.stderr
    stats = job_stats(out)
    # one preflight for the pair's embed, one per benchmark for its probe folds
    for rule, count in (("demo_data", 1), ("index", 1), ("check", 1), ("preflight", 1),
                        ("preflight_probe", 2), ("embed", 1), ("probe", 10), ("aggregate", 2),
                        ("summary", 2), ("pair_figure", 1)):
        assert stats.get(rule) == count, (rule, stats)
    assert not (tmp_path / "data").exists(), "a dry run must not create data"
    # Before preflight ran, the memory of embed and probe jobs is not known yet.
    embed_block = out.split("rule embed:")[1].split("\n\n")[0]
    assert "mem_mb=<TBD>" in embed_block and "htcondor_request_mem_mb=<TBD>" in embed_block


def test_demo_end_to_end(demo_run):
    workdir, run = demo_run
    assert run.returncode == 0, run.stderr[-3000:]
    table = pd.read_csv(workdir / "results/demo/sleep_edf_demo/results.tsv", sep="\t")
    row = table.set_index("model").loc["biot_random"]
    assert row["folds"] == "5/5"
    # The generator's spectra separate the stages: a log-bandpower baseline scores kappa
    # 0.72-0.83 on it (tests/datasets/test_sleep_edf_lookalike.py); a random-init BIOT keeps
    # spectral content.
    # 0.5 is far above chance (0) and below what any correctly wired chain reaches.
    assert row["kappa_mean"] > 0.5, row
    for k in range(5):
        fold = json.loads((workdir / f"results/demo/sleep_edf_demo/biot_random/fold{k}.json")
                          .read_text())
        assert fold["fold"] == k and fold["status"] == "ok"
        assert fold["n_train"] > 0 and fold["n_val"] > 0 and fold["n_test"] > 0
        # every C of the grid is recorded with its iterations, under the reference's cap
        assert set(fold["iterations_by_C"]) == {"0.001", "0.01", "0.1", "1.0", "10.0", "100.0"}
        assert fold["max_iter"] == 10_000
        assert all(0 < n <= 10_000 for n in fold["iterations_by_C"].values())
        assert fold["converged_by_C"]["1.0"] is True
    assert "kappa" in run.stdout + run.stderr


def test_fold_lines_and_table_are_printed(demo_run):
    _, run = demo_run
    out = run.stdout + run.stderr
    assert "[1/5] sleep_edf_demo biot_random fold 0: ok, kappa" in out
    # The closing summary of each benchmark the run wrote (stdout; Snakemake logs to stderr).
    assert "demo/summary.md:" in run.stdout and "demo_brain_age/summary.md:" in run.stdout
    assert "| sleep_edf_demo | biot_random |" in run.stdout and "5/5" in run.stdout


def test_missing_data_is_skipped_or_with_strict_refused_before_any_job(tmp_path):
    """A dataset none of whose files are there is skipped (the keep-going design; the run of a
    benchmark over it and a present one: tests/workflow/test_selection.py); strict=true
    refuses it."""
    run = snakemake(tmp_path, "-n", "sleep_stage")
    assert run.returncode == 0, run.stderr[-2000:]
    assert "warning: sleep_edf_expanded will be skipped: data not found in" in run.stderr
    assert "rule index:" not in run.stdout and "rule embed:" not in run.stdout
    # (biot_random alone: strict also stops at biot_pretrained's unfetched checkpoint)
    run = snakemake(tmp_path, "-n", "sleep_stage",
                    config=["strict=true", "only_models=biot_random"])
    assert run.returncode == 2
    assert "error: dataset 'sleep_edf_expanded' is missing (0/197 recordings)" in run.stderr
    assert ("fix: embedprobe data download sleep_edf_expanded   # on a login node; or put the "
            "sleep_edf_expanded files under") in run.stderr


def test_partial_data_runs_unless_strict(tmp_path, demo_root):
    """A dataset with some recordings runs on them, the plan saying so; strict=true refuses
    it (exit 2) with the allow_partial=true command, which runs."""
    data = tmp_path / "data" / "sleep-edf-database-expanded-1.0.0"
    data.mkdir(parents=True)
    for edf in sorted(demo_root.rglob("*.edf"))[:4]:
        (data / edf.name).symlink_to(edf)
    run = snakemake(tmp_path, "-n", "sleep_stage")
    assert run.returncode == 0, run.stderr[-2000:]
    assert "warning: sleep_edf_expanded runs on 2 of its 197 recordings: " in run.stderr
    assert "rule index:" in run.stdout
    strict = ["strict=true", "only_models=biot_random", "only_datasets=sleep_edf_expanded"]
    refused = snakemake(tmp_path, "-n", "sleep_stage", config=strict)
    assert refused.returncode == 2
    assert "is partial (2/197 recordings)" in refused.stderr
    assert "allow_partial=true" in refused.stderr
    allowed = snakemake(tmp_path, "-n", "sleep_stage", config=[*strict, "allow_partial=true"])
    assert allowed.returncode == 0, allowed.stderr[-2000:]


def test_unknown_model_name_is_a_usage_error(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"benchmarks": {"demo": {"task": "sleep_staging",
                                                            "datasets": ["sleep_edf_demo"],
                                                            "models": ["biot_randon"]}}}))
    run = snakemake(tmp_path, "--configfile", str(bad), "-n", "demo")
    assert run.returncode == 2
    assert "unknown model 'biot_randon' (did you mean 'biot_random'?)" in run.stderr
    assert "fix: use one of:" in run.stderr


def test_memory_requests_come_from_preflight(demo_run, small_demo_config):
    workdir, run = demo_run
    preflight = json.loads(
        (workdir / "results/preflight/sleep_edf_demo/biot_random.json").read_text())
    assert preflight["verdict"] == "ok"
    embed = preflight["jobs"]["embed"]
    assert embed["total"] == sum(embed["terms"].values())
    assert embed["request_mb"] >= embed["total"] / 2**20
    # What Snakemake gave each job (its resources.mem_mb, recorded by the job itself).
    runs = pd.read_csv(workdir / "results/memory/runs.tsv", sep="\t")
    assert sorted(runs["job"]) == sorted(
        ["embed"] + [f"probe/{b}/fold{k}" for b in ("demo", "demo_brain_age") for k in range(5)])
    for row in runs.itertuples():
        assert row.status == "ok" and row.attempt == 1
        # embed's estimate is in the pair's JSON, a probe fold's in its benchmark's
        path = estimate_path(workdir / "results/preflight", "sleep_edf_demo", "biot_random",
                             row.job)
        assert row.request_mb == job_estimate(path, row.job)["request_mb"]
        assert 0 < row.peak_mb < row.request_mb  # the request covered the measured peak
    # The dry run after preflight shows the real numbers.
    dry = snakemake(workdir, "--configfile", small_demo_config, "--forcerun", "embed", "-n",
                    "demo")
    embed_block = (dry.stdout + dry.stderr).split("rule embed:")[1].split("\n\n")[0]
    assert f"mem_mb={embed['request_mb']}" in embed_block


def test_probe_estimates_are_in_their_benchmark_s_preflight(demo_run):
    """The pair's preflight holds embed alone; each benchmark's its own probe folds."""
    workdir, _ = demo_run
    root = workdir / "results/preflight/sleep_edf_demo"
    pair = json.loads((root / "biot_random.json").read_text())
    assert list(pair["jobs"]) == ["embed"] and "not_sized" not in pair
    index = pd.read_csv(workdir / "results/index/sleep_edf_demo.tsv", sep="\t")
    for benchmark, job in (("demo", "probe_logistic"), ("demo_brain_age", "probe_brain_age")):
        record = json.loads((root / "biot_random" / f"{benchmark}.json").read_text())
        assert record["benchmark"] == benchmark and record["verdict"] == "ok"
        assert record["not_sized"] == {} and record["limit_mb"] == pair["limit_mb"]
        assert list(record["jobs"]) == [f"probe/{benchmark}/fold{k}" for k in range(5)]
        assert {entry["job"] for entry in record["jobs"].values()} == {job}
        if job == "probe_logistic":  # every labelled window is in one part of each fold
            for entry in record["jobs"].values():
                parts = entry["inputs"]
                assert parts["n_train"] + parts["n_val"] + parts["n_test"] == len(index)


def test_a_new_benchmark_refits_nothing_of_the_others(demo_run, small_demo_config, tmp_path):
    """A copy of `demo` added under a new name: the plan embeds nothing again and refits no
    probe of demo or demo_brain_age; only the new benchmark's preflight, probes and reports."""
    workdir, run = demo_run
    assert run.returncode == 0, run.stderr[-3000:]
    bench = yaml.safe_load((PROJECT / "config/benchmarks.yaml").read_text())[
        "benchmarks"]["demo"]
    extra = tmp_path / "demo_copy.yaml"
    extra.write_text(yaml.safe_dump({"benchmarks": {"demo_copy": bench}}))
    dry = snakemake(workdir, "--configfile", small_demo_config, str(extra), "--cores", "2",
                    "-n", "demo_copy", "demo")
    out = dry.stdout + dry.stderr
    assert dry.returncode == 0, out[-3000:]
    assert job_stats(out) == {"preflight_probe": 1, "probe": 5, "aggregate": 1,
                              "pair_figure": 1, "memory_panel": 1, "summary": 1,
                              "leaderboard": 1, "demo_copy": 1}, out[-3000:]
    probes = out.split("rule probe:")[1:]
    assert len(probes) == 5
    assert all("benchmark=demo_copy" in block.split("\n\n")[0] for block in probes)
    assert "results/preflight/sleep_edf_demo/biot_random/demo_copy.json" in out


def test_check_json_has_what_preflight_reads(demo_run):
    workdir, _ = demo_run
    check = json.loads((workdir / "results/check/sleep_edf_demo/biot_random.json").read_text())
    assert check["status"] == "ok" and check["forward"] == "(32, 256) finite"
    assert check["feature_dim"] == 256 and check["n_chans"] == 16 and check["n_times_epoch"] == 6000
    assert check["batch_activation_bytes"] > 0 and check["seconds"] > 0


def test_limit_below_estimate_stops_before_embed(tmp_path, small_demo_config):
    run = snakemake(tmp_path, "--configfile", small_demo_config, "--cores", "2", "demo",
                    config=["memory={limit_mb: 400}"])
    assert run.returncode == 1
    out = run.stdout + run.stderr
    assert "embed cannot fit its memory limit" in out or "cannot fit the memory limit" in out
    assert "interpreter and libraries" in out and "fix: even at batch_size=1" in out
    assert not list((tmp_path / "cache").rglob("*.h5*")), "embed must not have started"
    record = json.loads((tmp_path / "results/preflight/sleep_edf_demo/"
                         "biot_random.json.failure.json").read_text())
    assert record["category"] == "oom" and record["step"] == "preflight"


def test_brain_age_beats_the_training_mean_from_the_same_embeddings(demo_run):
    workdir, run = demo_run
    table = pd.read_csv(workdir / "results/demo_brain_age/sleep_edf_demo/results.tsv", sep="\t")
    row = table.set_index("model").loc["biot_random"]
    assert row["folds"] == "5/5"
    # The generator lowers slow-wave and spindle power with age: the probe must beat
    # predicting each fold's training mean age (measured: 10.4 vs 24.6 years on this demo).
    assert row["mae_mean"] < 0.75 * row["baseline_mae_mean"], row
    assert row["pearson_r_pooled"] > 0.5
    out = run.stdout + run.stderr
    assert out.count("rule embed:") == 1, "brain_age must reuse the sleep-staging embeddings"
    assert "[1/5] sleep_edf_demo biot_random fold 0: ok, MAE(years)" in out


def test_summary_figures_and_report(demo_run, small_demo_config):
    workdir, _ = demo_run
    summary = (workdir / "results/demo/summary.md").read_text()
    assert "| sleep_edf_demo | biot_random |" in summary and "5/5" in summary
    for png in ("results/demo/figures/scores.png",
                "results/demo/sleep_edf_demo/biot_random/confusion.png",
                "results/demo_brain_age/figures/scores.png"):
        assert (workdir / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    report = snakemake(workdir, "--configfile", small_demo_config, "--report",
                       str(workdir / "report.html"), "demo")
    assert report.returncode == 0, report.stderr[-2000:]
    html = (workdir / "report.html").read_text(errors="replace")
    assert "confusion.png" in html and "scores.png" in html and "summary.md" in html


def test_saved_predictions_are_reused_and_refitted_on_request(demo_run, small_demo_config):
    workdir, _ = demo_run
    fold0 = workdir / "results/demo/sleep_edf_demo/biot_random/fold0.json"
    before = fold0.stat().st_mtime_ns
    again = snakemake(workdir, "--configfile", small_demo_config, "--cores", "2", "demo")
    assert again.returncode == 0
    assert "Nothing to be done" in again.stdout + again.stderr
    assert fold0.stat().st_mtime_ns == before
    runs_before = len(pd.read_csv(workdir / "results/memory/runs.tsv", sep="\t"))
    refit = snakemake(workdir, "--configfile", small_demo_config, "--cores", "2",
                      "--forcerun", "probe", "--", "demo")
    assert refit.returncode == 0, refit.stderr[-2000:]
    assert fold0.stat().st_mtime_ns > before
    runs = pd.read_csv(workdir / "results/memory/runs.tsv", sep="\t")
    assert len(runs) == runs_before + 10  # 5 sleep-staging + 5 brain-age folds refitted
    assert "rule embed:" not in refit.stdout + refit.stderr


def test_memory_panel_after_the_probes(demo_run, small_demo_config):
    """Each benchmark's memory panel (figure + table) is drawn after its probes, is in the
    benchmark's summary.md and in the Snakemake report; `embedprobe memory` prints the table."""
    workdir, run = demo_run
    assert run.returncode == 0, run.stderr[-3000:]
    runs = pd.read_csv(workdir / "results/memory/runs.tsv", sep="\t")
    for benchmark in ("demo", "demo_brain_age"):
        png = workdir / f"results/memory/{benchmark}/memory.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        # the panel drawn from the runs, not the "no measured runs" one: the scatter's y = x
        # and the margins' bands, memory-hours bars in the rules' colours, no killed attempt
        pixels = panel_colours(png)
        assert pixels["shape"] == (528, 1320)
        assert min(pixels[c] for c in ("band 20%", "band 15%", "embed", "probe")) > 200, pixels
        assert pixels["out-of-memory kill"] == 0 and set(runs["status"]) == {"ok"}
        table = (workdir / f"results/memory/{benchmark}/summary.md").read_text()
        assert "| embed | sleep_edf_demo | biot_random | 1 |" in table
        assert "| probe | sleep_edf_demo | biot_random | 5 |" in table
        summary = (workdir / f"results/{benchmark}/summary.md").read_text()
        assert "\n## Memory\n" in summary and "Memory-hours: requested" in summary
        assert "| probe | sleep_edf_demo | biot_random | 5 |" in summary.split("## Memory")[1]
    # the table as a user prints it, every number from the runs table
    printed = subprocess.run([str(Path(sys.executable).parent / "embedprobe"), "memory",
                              "--results-root", str(workdir / "results")],
                             capture_output=True, text=True, timeout=300)
    assert printed.returncode == 0, printed.stderr
    lines = printed.stdout.splitlines()
    assert lines[0].split()[:6] == ["rule", "dataset", "model", "jobs", "attempts", "OOM"]
    for line, (rule, group) in zip(lines[1:3], runs.groupby("rule"), strict=True):
        assert line.split()[:9] == [
            rule, "sleep_edf_demo", "biot_random", str(group["job"].nunique()), str(len(group)),
            "0", f"{group['estimate_mb'].max():,.0f}", f"{group['request_mb'].max():,.0f}",
            f"{group['peak_mb'].max():,.0f}"]
    assert lines[4].startswith("worst under-prediction: ")
    assert lines[5].startswith("worst over-prediction: ")
    gbh = (runs["request_mb"] * runs["seconds"]).sum() / 1024 / 3600
    assert lines[6].startswith(f"memory-hours: requested {gbh:.3g} GB-h, used ")
    # the report embeds each panel's PNG, byte for byte, under its caption
    report = snakemake(workdir, "--configfile", small_demo_config, "--report",
                       str(workdir / "memory_report.html"), "demo")
    assert report.returncode == 0, report.stderr[-2000:]
    html = (workdir / "memory_report.html").read_text(errors="replace")
    for benchmark in ("demo", "demo_brain_age"):
        png = (workdir / f"results/memory/{benchmark}/memory.png").read_bytes()
        assert base64.b64encode(png).decode() in html, benchmark
    assert "Memory of benchmark" in html and "memory-hours requested" in html


def test_a_refit_from_the_demo_runs_is_refused(demo_run):
    """The demo's folds are all one size and its one embed job one run: `embedprobe calibrate
    --from-runs` names why per job type and writes nothing."""
    workdir, _ = demo_run
    refit = subprocess.run([str(Path(sys.executable).parent / "embedprobe"), "calibrate",
                            "--from-runs", str(workdir / "results/memory/runs.tsv"), "--out",
                            str(workdir / "refitted.yaml")],
                           capture_output=True, text=True, timeout=300)
    assert refit.returncode == 2 and not (workdir / "refitted.yaml").exists()
    err = refit.stderr
    assert "error: cannot refit the memory calibration from these runs:" in err
    # recording_copies enters where a part's filtered signal (BIOT: its whole recording, for
    # the statistic) outgrows its windows (a convex term, refit on its tangent): with the
    # table's 3.2 copies it does on the demo, so the single embed run is 1 for 3 constants
    assert ("embed_cpu: kept the table's constants (1 run): too few runs: 1 for 3 constants "
            "(recording_copies, window_copies, activation_factor)") in err, err
    for job in ("probe_logistic", "probe_brain_age"):
        assert f"  {job}: kept the table's constants (" in err, err
    assert "left out" not in err, err  # every run joined with its preflight entry


def panel_colours(png) -> dict:
    """How many pixels of the memory panel carry each of its colours (exact, +-2/255)."""
    import matplotlib.image
    import numpy as np

    rgb = matplotlib.image.imread(png)[..., :3]
    colours = {"band 20%": "E4E4E4", "band 15%": "C8C8C8", "embed": "4C72B0",
               "probe": "55A868", "out-of-memory kill": "C44E52"}
    counts = {"shape": rgb.shape[:2]}
    for name, hex_colour in colours.items():
        target = np.array([int(hex_colour[k:k + 2], 16) for k in (0, 2, 4)]) / 255
        counts[name] = int((np.abs(rgb - target).max(axis=-1) < 2 / 255).sum())
    return counts


def test_the_plan_loads_no_torch(tmp_path):
    """Every cluster job runs snakemake again inside its allocation: what the Snakefile imports
    at parse time counts against each job's request (the scheduler-processes term, ~300 MB).
    torch alone is ~220 MB; it once crept in through model_spec and got probe jobs killed."""
    code = ("import sys\n"
            f"sys.argv = ['snakemake', '-s', {str(PROJECT / 'Snakefile')!r}, '-n', 'demo', '-q']\n"
            "from snakemake.cli import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "heavy = [m for m in ('torch', 'braindecode', 'mne', 'h5py', 'sklearn')"
            " if m in sys.modules]\n"
            # VmHWM, not ru_maxrss: that one carries pytest's own peak across the exec
            "hwm = [line for line in open('/proc/self/status') if line.startswith('VmHWM')]\n"
            "print('HEAVY', heavy, int(hwm[0].split()[1]) // 1024)\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=tmp_path, timeout=300)
    line = [row for row in run.stdout.splitlines() if row.startswith("HEAVY")][-1]
    heavy, peak_mb = line.split(" ", 1)[1].rsplit(" ", 1)
    assert heavy == "[]", line
    assert int(peak_mb) < 250, line


def test_the_hypnogram_plan_waits_for_the_staging_folds(tmp_path, small_demo_config):
    """A fresh plan of demo_hypnogram holds the source benchmark's probe folds: it waits."""
    run = snakemake(tmp_path, "--configfile", small_demo_config, "-n", "demo_hypnogram")
    assert run.returncode == 0, run.stderr[-2000:]
    out = run.stdout + run.stderr
    stats = job_stats(out)
    assert stats["probe"] == 10 and stats["embed"] == 1  # 5 staging folds, 5 hypnogram folds
    assert "wildcards: benchmark=demo, dataset=sleep_edf_demo" in out


def test_rescoring_the_demo_rewrites_its_tables_byte_for_byte(demo_run, tmp_path):
    """`embedprobe rescore` on a copy of the demo's results: the metrics recomputed from the
    saved predictions are the ones the probes wrote, so each results.tsv keeps its bytes;
    a metric spoiled in a record comes back."""
    import shutil

    workdir, run = demo_run
    assert run.returncode == 0, run.stderr[-3000:]
    shutil.copytree(workdir / "results", tmp_path / "results")
    record_path = tmp_path / "results/demo/sleep_edf_demo/biot_random/fold2.json"
    record = json.loads(record_path.read_text())
    true_kappa = record["metrics"]["kappa"]
    record["metrics"]["kappa"] = -1.0
    record_path.write_text(json.dumps(record))
    env = {"EMBEDPROBE_RESULTS_ROOT": str(tmp_path / "results")}
    for benchmark in ("demo", "demo_brain_age"):
        table = tmp_path / f"results/{benchmark}/sleep_edf_demo/results.tsv"
        before = (workdir / f"results/{benchmark}/sleep_edf_demo/results.tsv").read_bytes()
        done = subprocess.run([sys.executable, "-m", "embedprobe.cli", "rescore", benchmark],
                              capture_output=True, text=True, timeout=300, cwd=PROJECT,
                              env={**os.environ, **env})
        assert done.returncode == 0, done.stderr + done.stdout
        assert f"rewrote {table}" in done.stdout
        assert table.read_bytes() == before
    rescored = json.loads(record_path.read_text())
    assert rescored["metrics"]["kappa"] == true_kappa
    assert rescored["rescored"]["previous_metrics"]["kappa"] == -1.0


def test_the_hypnogram_reads_the_staging_folds_and_embeds_nothing(demo_run, small_demo_config):
    """After the demo, demo_hypnogram runs its 5 folds on the staging predictions alone; the
    headline is one pooled value (no SD), every feature's r is a column, the figure is drawn
    and each fold's memory request covered its peak. (Last in the file: it adds runs.)"""
    workdir, _ = demo_run
    run = snakemake(workdir, "--configfile", small_demo_config, "--cores", "2",
                    "demo_hypnogram")
    assert run.returncode == 0, run.stderr[-3000:]
    stats = job_stats(run.stdout + run.stderr)
    assert stats["probe"] == 5 and "embed" not in stats and "check" not in stats
    table = pd.read_csv(workdir / "results/demo_hypnogram/sleep_edf_demo/results.tsv",
                        sep="\t")
    row = table.iloc[0]
    assert row["status"] == "ok" and row["folds"] == "5/5"
    assert -1 <= row["pearson_r_mean"] <= 1 and pd.isna(row["pearson_r_sd"])
    assert len([c for c in table.columns if c.startswith("r_")]) == 34
    fold = json.loads((workdir / "results/demo_hypnogram/sleep_edf_demo/biot_random/"
                                 "fold0.json").read_text())
    staging = json.loads((workdir / "results/demo/sleep_edf_demo/biot_random/fold0.json")
                         .read_text())
    assert fold["source"] == "demo" and fold["chosen"] == staging["chosen"]
    assert sum(r["n_epochs"] for r in fold["recordings"]) == staging["n_test"]
    assert (workdir / "results/demo_hypnogram/sleep_edf_demo/biot_random/features.png"
            ).stat().st_size > 10_000
    runs = pd.read_csv(workdir / "results/memory/runs.tsv", sep="\t")
    mine = runs[runs["job"].str.startswith("probe/demo_hypnogram/")]
    assert len(mine) == 5 and (mine["peak_mb"] < mine["request_mb"]).all()
