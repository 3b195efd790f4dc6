"""A run that survives its controller, on the real local SLURM (scripts/local-slurm.sh start):
`embedprobe submit` runs the Snakemake controller as a SLURM job; it is SIGKILLed while the
embed job runs on SLURM; a second `submit` waits for that job, keeps its store and runs the rest.
Each job ran once: counted from the controller's own records (`scontrol show job`) and from the
runs table the jobs write themselves, not from Snakemake.
"""

import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pandas as pd
import psutil
import pytest
import yaml

from helpers.project import PROJECT, VENV_BIN
from helpers.slurm import cancel_jobs, require_slurm, slurm_jobs

pytestmark = [pytest.mark.slurm, pytest.mark.workflow]

DATASET, MODEL, BENCH, FOLDS = "sleep_edf_demo", "biot_random", "demo", 3
# The test_slurm.py demo at one thread a job: the controller job holds one of the node's 2 cores.
SMALL_DEMO = {
    "datasets": {DATASET: {"expected_recordings": 5, "trim_wake_minutes": 2,
                           "generator": {"subjects": 5, "nights": 1, "hours": 1 / 6, "seed": 0}}},
    "benchmarks": {BENCH: {"folds": FOLDS}},
    "probe": {"threads": 1},
    "embed": {"threads": 1},
    "memory": {"small_job_mb": 1500},
}
LIVE = ("PENDING", "CONFIGURING", "RUNNING", "COMPLETING")
CONTROLLER = "embedprobe_controller"


@pytest.fixture(scope="module", autouse=True)
def local_slurm():
    require_slurm()


def submit(workdir: Path, configfile: Path) -> str:
    env = dict(os.environ, PATH=f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
               EMBEDPROBE_FAULT_SLOW_BATCH_S="2")  # the embed job outlives the kill
    done = subprocess.run(
        [sys.executable, "-m", "embedprobe.cli", "submit", str(results_file(workdir)),
         "--profile", str(PROJECT / "profiles/slurm"), "--configfile", str(configfile),
         "--config", f"data_root={workdir}/data", f"cache_root={workdir}/cache",
         f"results_root={workdir}/results", f"weights_root={workdir}/weights",
         "memory={on_cluster: true}", "--", "--slurm-init-seconds-before-status-checks", "2"],
        capture_output=True, text=True, timeout=120, env=env, cwd=workdir)
    assert done.returncode == 0, done.stderr
    job = done.stdout.split()[3]
    assert done.stdout.startswith(f"submitted controller job {job} for "), done.stdout
    return job


def results_file(workdir: Path) -> Path:
    return workdir / f"results/{BENCH}/{DATASET}/results.tsv"


def wait_until(ready, timeout: float, what: str, log: Path | None = None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = ready()
        if value:
            return value
        time.sleep(0.5)
    tail = log.read_text()[-3000:] if log and log.is_file() else ""
    raise AssertionError(f"timed out waiting for {what}\n{tail}")


def job(workdir: Path, job_id: str):
    return next(j for j in slurm_jobs(workdir) if j.job_id == int(job_id))


def controller_log(workdir: Path, job_id: str) -> Path:
    return workdir / f".snakemake/slurm_logs/controller/{job_id}.log"


def controller_process(workdir: Path) -> psutil.Process | None:
    """The controller's snakemake (not a job's own: `--executor slurm-jobstep`)."""
    for proc in psutil.process_iter(["cmdline"]):
        argv = proc.info["cmdline"] or []
        if "--profile" in argv and str(workdir) in argv and "slurm-jobstep" not in argv:
            return proc
    return None


def test_killed_controller_job_is_resumed_and_no_job_runs_twice(tmp_path):
    workdir = tmp_path.resolve()
    configfile = workdir / "small_demo.yaml"
    configfile.write_text(yaml.safe_dump(SMALL_DEMO))
    embed_key = f"rule_embed_wildcards_{DATASET}_{MODEL}"
    try:
        first = submit(workdir, configfile)
        log = controller_log(workdir, first)

        # 1. The controller dies (SIGKILL) while the embed job runs on SLURM.
        def embed_running():
            return [j for j in slurm_jobs(workdir)
                    if j.comment == embed_key and j.state == "RUNNING"]

        (embed,) = wait_until(embed_running, 900, "the embed job to run", log)
        process = controller_process(workdir)
        assert process is not None, log.read_text()[-3000:]
        process.kill()
        wait_until(lambda: job(workdir, first).state not in LIVE, 60, "the controller job end")
        assert job(workdir, embed.job_id).state == "RUNNING", slurm_jobs(workdir)

        # 2. The same command again: a new controller waits for the embed job, keeps it.
        second = submit(workdir, configfile)
        log = controller_log(workdir, second)
        wait_until(lambda: job(workdir, second).state not in LIVE, 480,
                   "the second controller to finish", log)
        text = log.read_text()
        assert job(workdir, second).state == "COMPLETED", text[-3000:]
        assert f"resume: waiting for 1 job(s) an earlier controller left on the scheduler: " \
               f"{embed.job_id} RUNNING {embed_key}" in text, text[-3000:]
        assert "resume: waited for 1 job(s)" in text and "to redo" in text, text[-3000:]
    finally:
        cancel_jobs(workdir)

    # 3. Every result is there, and the scheduler ran each job once, to completion.
    assert results_file(workdir).stat().st_size > 0
    for k in range(FOLDS):
        assert (workdir / f"results/{BENCH}/{DATASET}/{MODEL}/fold{k}.json").is_file()
    jobs = [j for j in slurm_jobs(workdir) if j.name != CONTROLLER]
    runs = Counter(j.comment for j in jobs)
    assert runs[embed_key] == 1 and max(runs.values()) == 1, runs
    assert {f"rule_probe_wildcards_{BENCH}_{DATASET}_{MODEL}_{k}" for k in range(FOLDS)} \
        <= set(runs), runs
    assert {j.state for j in jobs} == {"COMPLETED"}, jobs
    # The jobs' own records: one attempt each, none killed.
    table = pd.read_csv(workdir / "results/memory/runs.tsv", sep="\t", keep_default_na=False)
    assert sorted(table["job"]) == sorted(["embed", *(f"probe/{BENCH}/fold{k}"
                                                      for k in range(FOLDS))]), table
    assert set(table["status"]) == {"ok"} and set(table["attempt"]) == {1}, table
