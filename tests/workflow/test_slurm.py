"""The slurm profile on a real SLURM (scripts/local-slurm.sh start), with real snakemake processes:

- the demo benchmark: every job asked SLURM for the memory its preflight estimate gave, and the
  results equal a run on this machine (profiles/local);
- an out-of-memory kill: a first request made too small on purpose is killed by SLURM, the job is
  resubmitted with the scaled request and succeeds, and the runs table says so;
- a killed session: SIGKILL snakemake mid-embed, cancel what it left in the queue, rerun: the
  embed resumes from its durable rows; killed again after a fold finished, rerun: no finished
  fold is refitted, and the results equal the uninterrupted run.

What each job asked for is read back from the controller (`scontrol show job`), not from
Snakemake.
"""

import json
import re
import shutil
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import h5py
import numpy as np
import pandas as pd
import psutil
import pytest
import yaml

from helpers.project import PROJECT, snakemake
from helpers.slurm import cancel_jobs, require_slurm, slurm_jobs

pytestmark = pytest.mark.slurm

DATASET, MODEL, BENCH = "sleep_edf_demo", "biot_random", "demo"
FOLDS = 3
SMALL_JOB_MB = 1500  # no profile default has it: a rule that sends no request shows
FIRST_REQUEST_FACTOR = 0.2
# 5 one-night subjects, 10 min of sleep and 2 min of wake each side (~130 windows, 5 batches):
# the embed job stays within the plugin's third status check (~36 s after submission; the checks
# back off by 10 s while nothing finishes). Probes on one core: the 2-core node runs two at once.
SMALL_DEMO = {
    "datasets": {DATASET: {"expected_recordings": 5, "trim_wake_minutes": 2,
                           "generator": {"subjects": 5, "nights": 1, "hours": 1 / 6, "seed": 0}}},
    "benchmarks": {BENCH: {"folds": FOLDS}},
    "probe": {"threads": 1},
    "memory": {"small_job_mb": SMALL_JOB_MB},
}
# The profile's `config:` mapping is replaced by the --config the helper passes for the roots.
CLUSTER_CONFIG = ["memory={on_cluster: true}"]
# Status checks from 2 s after a submission (the profile keeps the plugin's 40 s).
FAST_POLL = ("--slurm-init-seconds-before-status-checks", "2")
LIVE = ("PENDING", "CONFIGURING", "RUNNING", "COMPLETING")


@pytest.fixture(scope="module", autouse=True)
def local_slurm():
    require_slurm()


@pytest.fixture(scope="module")
def small_demo(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("slurm_cfg") / "small_demo.yaml"
    path.write_text(yaml.safe_dump(SMALL_DEMO))
    return str(path)


@pytest.fixture(scope="module")
def local_demo(tmp_path_factory, small_demo):
    """The reference: the same demo on this machine. Its generated data serves every run."""
    workdir = tmp_path_factory.mktemp("local")
    run = snakemake(workdir, "--profile", str(PROJECT / "profiles/local"),
                    f"--configfile={small_demo}", str(results_file(workdir)))
    assert run.returncode == 0, run.stderr[-3000:]
    return workdir


def on_slurm(workdir: Path, small_demo: str, local_demo: Path, *args: str, config=()):
    return snakemake(workdir, "--profile", str(PROJECT / "profiles/slurm"), *FAST_POLL,
                     f"--configfile={small_demo}", *args, timeout=600,
                     config=[*CLUSTER_CONFIG, f"data_root={local_demo}/data", *config])


def results_file(workdir: Path) -> Path:
    """The demo benchmark's table: the target of every run here (no report rules)."""
    return workdir / f"results/{BENCH}/{DATASET}/results.tsv"


def preflight(workdir: Path, benchmark: str | None = None) -> dict:
    """The pair's preflight JSON (embed), or with a benchmark its probe folds'."""
    name = f"{MODEL}/{benchmark}" if benchmark else MODEL
    return json.loads((workdir / f"results/preflight/{DATASET}/{name}.json").read_text())


def runs_table(workdir: Path) -> pd.DataFrame:
    return pd.read_csv(workdir / "results/memory/runs.tsv", sep="\t", keep_default_na=False)


def fold_paths(workdir: Path) -> list[Path]:
    return [workdir / f"results/{BENCH}/{DATASET}/{MODEL}/fold{k}.json" for k in range(FOLDS)]


def assert_same_results(workdir: Path, reference: Path) -> None:
    assert results_file(workdir).read_text() == results_file(reference).read_text()
    for k in range(FOLDS):
        name = f"results/{BENCH}/{DATASET}/{MODEL}/fold{k}.npz"
        with np.load(workdir / name) as got, np.load(reference / name) as want:
            assert sorted(got.files) == sorted(want.files)
            for key in want.files:
                np.testing.assert_array_equal(got[key], want[key], err_msg=f"fold{k} {key}")


# ------------------------------------------------------------------------ the demo on SLURM


@pytest.fixture(scope="module")
def slurm_demo(tmp_path_factory, small_demo, local_demo):
    workdir = tmp_path_factory.mktemp("slurm_demo")
    run = on_slurm(workdir, small_demo, local_demo, str(results_file(workdir)))
    return workdir, run, slurm_jobs(workdir)


def after_preflight(tmp_path_factory, name: str, slurm_demo) -> Path:
    """A fresh workdir holding the SLURM demo's index, check and preflight (mtimes kept), so
    a scenario starts at embed. Without metadata for them, Snakemake keeps them as they are."""
    source, run, _ = slurm_demo
    assert run.returncode == 0, run.stderr[-3000:]
    workdir = tmp_path_factory.mktemp(name)
    for step in ("index", "check", "preflight"):
        shutil.copytree(source / "results" / step, workdir / "results" / step)
    return workdir


def test_every_job_asked_slurm_for_its_preflight_memory(slurm_demo):
    workdir, run, jobs = slurm_demo
    assert run.returncode == 0, run.stderr[-3000:]
    estimate = preflight(workdir)
    assert estimate["jobs"]["embed"]["terms"]["scheduler processes"] > 0, "memory.on_cluster"
    expected = {  # rule and wildcards -> (--mem in MB, CPUs)
        ("index", DATASET): (SMALL_JOB_MB, 1),
        ("check", DATASET, MODEL): (SMALL_JOB_MB, 1),
        ("preflight", DATASET, MODEL): (SMALL_JOB_MB, 1),
        ("preflight_probe", BENCH, DATASET, MODEL): (SMALL_JOB_MB, 1),
        ("embed", DATASET, MODEL): (estimate["jobs"]["embed"]["request_mb"], 2),
        ("aggregate", BENCH, DATASET): (SMALL_JOB_MB, 1),
    }
    probes = preflight(workdir, BENCH)
    for k in range(FOLDS):
        expected[("probe", BENCH, DATASET, MODEL, str(k))] = (
            probes["jobs"][f"probe/{BENCH}/fold{k}"]["request_mb"], 1)
    asked = {}
    for key, _ in expected.items():
        matching = [j for j in jobs if j.is_rule(*key)]
        assert len(matching) == 1, (key, jobs)
        (job,) = matching
        assert job.state == "COMPLETED", job
        asked[key] = (job.mem_mb, job.cpus)
    assert asked == expected
    assert len(jobs) == len(expected), [j.comment for j in jobs]
    # Each job recorded the same request it was given.
    table = runs_table(workdir)
    assert table.set_index("job")["request_mb"].to_dict() == {
        "embed": expected[("embed", DATASET, MODEL)][0],
        **{f"probe/{BENCH}/fold{k}": expected[("probe", BENCH, DATASET, MODEL, str(k))][0]
           for k in range(FOLDS)}}


def test_slurm_results_equal_a_local_run(slurm_demo, local_demo):
    workdir, run, _ = slurm_demo
    assert run.returncode == 0, run.stderr[-3000:]
    assert_same_results(workdir, local_demo)


# ------------------------------------------------------------------- out of memory on SLURM


def test_out_of_memory_kill_is_rerun_with_the_scaled_request(tmp_path_factory, small_demo,
                                                             local_demo, slurm_demo):
    workdir = after_preflight(tmp_path_factory, "slurm_oom", slurm_demo)
    target = workdir / f"cache/embeddings/{DATASET}/{MODEL}.h5"
    run = on_slurm(workdir, small_demo, local_demo, str(target),
                   config=[f"memory={{first_request_factor: {FIRST_REQUEST_FACTOR}}}"])
    assert run.returncode == 0, run.stderr[-3000:]
    request = preflight(workdir)["jobs"]["embed"]["request_mb"]
    jobs = slurm_jobs(workdir)
    assert all(j.is_rule("embed", DATASET, MODEL) for j in jobs), jobs
    killed, rerun = jobs
    # Polling enforcement ends a killed job FAILED, cgroup enforcement OUT_OF_MEMORY.
    assert killed.state in ("FAILED", "OUT_OF_MEMORY"), killed
    assert killed.mem_mb == int(request * FIRST_REQUEST_FACTOR)
    assert rerun.state == "COMPLETED" and rerun.mem_mb == int(request * 1.5), rerun
    slurm_log = workdir / f".snakemake/slurm_logs/rule_embed/{DATASET}_{MODEL}/{killed.job_id}.log"
    assert re.search(r"exceeded memory limit|oom.kill", slurm_log.read_text(), re.I)
    rows = runs_table(workdir).query("job == 'embed'")
    attempts = rows[["attempt", "request_mb", "status", "category"]].to_dict("records")
    assert attempts == [
        {"attempt": 1, "request_mb": killed.mem_mb, "status": "oom", "category": "oom"},
        {"attempt": 2, "request_mb": rerun.mem_mb, "status": "ok", "category": ""},
    ]
    assert target.stat().st_size > 0


# ------------------------------------------------------------------------ a killed session


def durable_rows(partial: Path) -> int:
    """Rows the embed store counts as durable (read beside the live SWMR writer)."""
    try:
        with h5py.File(partial, "r", swmr=True, locking=False) as store:
            return int(store["state"][0])
    except (OSError, KeyError):
        return 0


def finished_outputs(workdir: Path, rule: str) -> list[Path]:
    """First outputs of the jobs of `rule` that the live session's log reports as finished."""
    logs = sorted((workdir / ".snakemake/log").glob("*.snakemake.log"))
    if not logs:
        return []
    text = logs[-1].read_text()
    first_output = {}  # jobid -> first output, from each job's block in the log
    for block in re.split(r"\n(?=\[)", text):
        if re.search(rf"^rule {rule}:$", block, re.M):
            output = re.search(r"^\s+output: ([^,\n]+)", block, re.M)
            jobid = re.search(r"^\s+jobid: (\d+)$", block, re.M)
            if output and jobid:
                first_output[jobid.group(1)] = Path(output.group(1))
    done = re.findall(rf"^Finished jobid: (\d+) \(Rule: {rule}\)$", text, re.M)
    return [first_output[j] for j in done if j in first_output]


def kill_session_when(workdir: Path, run, ready, timeout: float = 400) -> None:
    """Start `run()` (a snakemake session) and SIGKILL its snakemake once `ready()` holds."""
    with ThreadPoolExecutor(1) as pool:
        session = pool.submit(run)
        deadline = time.monotonic() + timeout
        while not ready():
            if session.done():
                pytest.fail("the session ended before the kill point:\n"
                            + session.result().stderr[-3000:])
            if time.monotonic() > deadline:
                break
            time.sleep(0.2)
        processes = [p for p in psutil.Process().children()
                     if str(workdir) in " ".join(p.cmdline())]
        assert len(processes) == 1, processes
        processes[0].kill()
        result = session.result()
    assert result.returncode == -9, result.stderr[-3000:]
    assert time.monotonic() <= deadline, "the kill point was not reached in time"


def cancel_leftovers(workdir: Path) -> list[int]:
    """What the README says to do after a killed session: cancel its jobs, wait till gone."""
    cancelled = cancel_jobs(workdir)
    for _ in range(120):
        if not any(j.state in LIVE for j in slurm_jobs(workdir)):
            return cancelled
        time.sleep(0.5)
    raise AssertionError(f"jobs still live after scancel: {slurm_jobs(workdir)}")


def test_killed_session_resumes_embed_and_refits_no_finished_fold(
        tmp_path_factory, small_demo, local_demo, slurm_demo):
    workdir = after_preflight(tmp_path_factory, "slurm_crash", slurm_demo)
    target = str(results_file(workdir))

    def session():
        return on_slurm(workdir, small_demo, local_demo, target)

    def unlock():
        # A SIGKILLed snakemake leaves its lock behind (README: Running on a cluster).
        result = on_slurm(workdir, small_demo, local_demo, "--unlock", target)
        assert result.returncode == 0, result.stderr[-3000:]

    # 1. Killed in the middle of embed; its SLURM job keeps running until cancelled.
    partial = workdir / f"cache/embeddings/{DATASET}/{MODEL}.h5.partial"
    kill_session_when(workdir, session, lambda: durable_rows(partial) > 0)
    embed_jobs = [j for j in slurm_jobs(workdir) if j.is_rule("embed", DATASET, MODEL)]
    assert [j.state for j in embed_jobs] == ["RUNNING"], embed_jobs
    assert cancel_leftovers(workdir) == [embed_jobs[0].job_id]
    durable = durable_rows(partial)
    n_windows = len(pd.read_csv(workdir / f"results/index/{DATASET}.tsv", sep="\t"))
    assert 0 < durable < n_windows

    # 2. Rerun: the embed resumes; killed again once the session has a finished fold.
    unlock()
    kill_session_when(workdir, session, lambda: finished_outputs(workdir, "probe"))
    embed_log = (workdir / f"results/logs/embed/{DATASET}/{MODEL}.log").read_text()
    assert re.search(rf"note: resuming \S+ at window {durable} of {n_windows}\b", embed_log), \
        embed_log[-2000:]
    finished = finished_outputs(workdir, "probe")
    cancel_leftovers(workdir)
    assert finished and set(finished) <= set(fold_paths(workdir)), finished
    # A fold whose SLURM job completed between the kill and the cancel was never logged as
    # finished: Snakemake may take its output or refit it (its metadata may be incomplete).
    unlogged_done = {path for path in fold_paths(workdir)
                     if path.exists() and path not in finished}
    before = {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in finished}
    last_job = max(j.job_id for j in slurm_jobs(workdir))

    # 3. Rerun to the end: the finished folds are neither resubmitted nor rewritten.
    unlock()
    final = session()
    assert final.returncode == 0, final.stderr[-3000:]
    resubmitted = [j for j in slurm_jobs(workdir) if j.job_id > last_job]
    refit = [path for k, path in enumerate(fold_paths(workdir))
             if any(j.is_rule("probe", BENCH, DATASET, MODEL, str(k)) for j in resubmitted)]
    expected = [path for path in fold_paths(workdir) if path not in finished]
    assert set(expected) - unlogged_done <= set(refit) <= set(expected), (refit, expected)
    for path in finished:
        assert (path.stat().st_mtime_ns, path.read_bytes()) == before[path]
    table = runs_table(workdir)
    probe_rows = table.query("rule == 'probe' and status == 'ok'")
    jobs = sorted(probe_rows["job"])
    assert sorted(set(jobs)) == [f"probe/{BENCH}/fold{k}" for k in range(FOLDS)], jobs
    # an unlogged fold that Snakemake refit ran twice to its end: two rows, both ok
    twice = {job for job in jobs if jobs.count(job) > 1}
    assert twice <= {f"probe/{BENCH}/fold{k}" for k, path in enumerate(fold_paths(workdir))
                     if path in unlogged_done and path in refit}, jobs
    assert_same_results(workdir, local_demo)
    assert_same_results(workdir, slurm_demo[0])
    # The embed attempt cancelled with its session was killed from outside, not out of memory.
    embed_rows = table.query("job == 'embed'")
    assert embed_rows["status"].tolist() == ["killed", "ok"], embed_rows.to_dict("records")


def test_local_slurm_script_reports_status():
    script = PROJECT / "scripts/local-slurm.sh"
    status = subprocess.run([str(script), "status"], capture_output=True, text=True, timeout=60)
    assert status.returncode == 0, status.stderr
    assert re.search(r"^debug\*\s+up\b.*\b(idle|mixed|allocated)\b", status.stdout, re.M)
