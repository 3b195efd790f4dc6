"""Retries only where more memory or time can help (core/attempts.py).

- by hand: an embed attempt after the first, whose predecessor failed for bad data, stops with
  that error before reading its configuration; after an out-of-memory failure it goes on;
- on the local SLURM (profiles/slurm, 2 retries): a damaged EDF fails the pair's embed for bad
  data; SLURM runs the two retries Snakemake submits, and each stops within seconds with the
  same error, having read nothing;
- on this machine (profiles/local, 1 retry): an out-of-memory failure (EMBEDPROBE_FAULT_OOM_ABOVE)
  still reruns, with 1.5x the memory. The SLURM kill of a job over its --mem (no record at all)
  is tests/workflow/test_slurm.py's out-of-memory test.
"""

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest
import yaml

from embedprobe import cli
from embedprobe.core.errors import DataError, write_failure_record

from helpers.project import PROJECT, snakemake
from helpers.slurm import require_slurm, slurm_jobs

DATASET, MODEL = "sleep_edf_demo", "biot_random"
# 5 one-night subjects, 10 min of sleep and 2 min of wake each side (~130 windows)
SMALL_DEMO = {
    "datasets": {DATASET: {"expected_recordings": 5, "trim_wake_minutes": 2,
                           "generator": {"subjects": 5, "nights": 1, "hours": 1 / 6, "seed": 0}}},
    "memory": {"small_job_mb": 1500},
}
CLUSTER_CONFIG = ["memory={on_cluster: true}"]  # as the SLURM profile sets it
DAMAGED = "SC4021E0-PSG.edf"  # the third subject's night: embed has stored rows before it


# ------------------------------------------------------------------------------ by hand


def embed_args(out: Path, attempt: int) -> list[str]:
    missing = out.parent / "missing"  # read by a job that runs: this one must not
    return ["--job-config", str(missing / "job.json"), "embed", "--dataset", DATASET,
            "--model", MODEL, "--index", str(missing / "index.tsv"), "--out", str(out),
            "--estimate", str(missing / "preflight.json"), "--attempt", str(attempt)]


def test_a_retry_after_bad_data_stops_before_reading_anything(tmp_path, capsys):
    out = tmp_path / "cache" / "biot_random.h5"
    record = write_failure_record(out, DataError("x.edf: truncated", fix="download it again"),
                                  "embed")
    before = record.read_bytes()
    assert cli.main(embed_args(out, 2)) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: x.edf: truncated\nfix: download it again\n"
                          "note: attempt 2 stopped without running: the failure before it (data")
    assert record.read_bytes() == before
    assert not (tmp_path / "cache" / "results").exists() and sorted(
        p.name for p in out.parent.iterdir()) == [record.name]


def test_a_retry_after_out_of_memory_runs(tmp_path):
    out = tmp_path / "biot_random.h5"
    record = out.with_name(out.name + ".failure.json")
    record.write_text(json.dumps({"step": "embed", "category": "oom", "message": "m"}))
    with pytest.raises(FileNotFoundError, match="job.json"):  # it went on to read its config
        cli.main(embed_args(out, 2))
    assert json.loads(record.read_text())["exception"] == "FileNotFoundError"  # its own record


# ------------------------------------------------------------------ real snakemake runs


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    """The small demo up to the pair's preflight (run here, as a cluster profile's config
    would size it): each scenario starts at embed from a copy."""
    workdir = tmp_path_factory.mktemp("retries_prepared")
    configfile = workdir / "small_demo.yaml"
    configfile.write_text(yaml.safe_dump(SMALL_DEMO))
    target = workdir / f"results/preflight/{DATASET}/{MODEL}.json"
    run = snakemake(workdir, "--configfile", str(configfile), "--cores", "2", str(target),
                    config=CLUSTER_CONFIG)
    assert run.returncode == 0, run.stderr[-3000:]
    return workdir


def scenario(prepared: Path, tmp_path: Path) -> Path:
    """A copy of the prepared workdir (mtimes kept: nothing before embed reruns)."""
    workdir = tmp_path / "run"
    shutil.copytree(prepared, workdir)
    (workdir / "small_demo.yaml").write_text(yaml.safe_dump(SMALL_DEMO))
    return workdir


def damage(edf: Path) -> None:
    """Cut the file to half, its mtime kept: the index and check (which read it before) do not
    rerun, and embed meets a truncated EDF."""
    stat = edf.stat()
    with open(edf, "r+b") as handle:
        handle.truncate(stat.st_size // 2)
    os.utime(edf, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def runs_of(workdir: Path, job: str) -> list[dict]:
    table = pd.read_csv(workdir / "results/memory/runs.tsv", sep="\t", keep_default_na=False)
    return table.query("job == @job")[["attempt", "request_mb", "status", "category"]].to_dict(
        "records")


def run_seconds(job_id: int) -> int:
    """The SLURM job's RunTime ([D-]HH:MM:SS), from the controller."""
    out = subprocess.run(["scontrol", "show", "job", str(job_id), "--oneliner"],
                         capture_output=True, text=True, timeout=60).stdout
    days, _, clock = re.search(r"\bRunTime=(\S+)", out).group(1).rpartition("-")
    h, m, s = (int(part) for part in clock.split(":"))
    return (int(days) if days else 0) * 86400 + h * 3600 + m * 60 + s


@pytest.mark.slurm
def test_bad_data_on_slurm_ends_its_retries_in_seconds(prepared, tmp_path):
    require_slurm()
    workdir = scenario(prepared, tmp_path)
    edf = next((workdir / "data").rglob(DAMAGED))
    damage(edf)
    target = workdir / f"cache/embeddings/{DATASET}/{MODEL}.h5"
    run = snakemake(workdir, "--profile", str(PROJECT / "profiles/slurm"),
                    "--slurm-init-seconds-before-status-checks", "2",
                    f"--configfile={workdir / 'small_demo.yaml'}", str(target), timeout=600,
                    config=CLUSTER_CONFIG)
    assert run.returncode != 0
    jobs = slurm_jobs(workdir)
    assert [j.comment for j in jobs] == [f"rule_embed_wildcards_{DATASET}_{MODEL}"] * 3, jobs
    assert all(j.state == "FAILED" for j in jobs), jobs
    assert jobs[0].mem_mb < jobs[1].mem_mb < jobs[2].mem_mb  # Snakemake's retries, scaled
    logs = [(workdir / f".snakemake/slurm_logs/rule_embed/{DATASET}_{MODEL}/{j.job_id}.log")
            .read_text() for j in jobs]
    error = re.search(rf"^error: \S+{DAMAGED}: truncated: .*\nfix: .*$", logs[0], re.M)
    assert error, logs[0][-3000:]
    assert "stopped without running" not in logs[0]
    for attempt, (job, log) in enumerate(zip(jobs[1:], logs[1:], strict=True), start=2):
        assert error.group(0) in log, log[-3000:]
        assert f"note: attempt {attempt} stopped without running: the failure before it " \
               "(data" in log
        # nothing of the embed step ran: no model, no EDF opened, no progress line
        assert "Creating raw.info" not in log and f"{DATASET} {MODEL}:" not in log
        assert "braindecode" not in log
        assert run_seconds(job.job_id) < 30, job
    # only attempt 1 reached the job's own accounting; its record is what stays
    assert runs_of(workdir, "embed") == [
        {"attempt": 1, "request_mb": jobs[0].mem_mb, "status": "failed", "category": "data"}]
    record = json.loads((target.parent / f"{MODEL}.h5.failure.json").read_text())
    assert record["category"] == "data" and DAMAGED in record["message"]


@pytest.mark.workflow
def test_out_of_memory_still_reruns_with_more_memory(prepared, tmp_path):
    workdir = scenario(prepared, tmp_path)
    target = workdir / f"cache/embeddings/{DATASET}/{MODEL}.h5"
    run = snakemake(workdir, "--profile", str(PROJECT / "profiles/local"),
                    f"--configfile={workdir / 'small_demo.yaml'}", str(target),
                    config=CLUSTER_CONFIG, env_extra={"EMBEDPROBE_FAULT_OOM_ABOVE": "0"})
    assert run.returncode != 0
    request = json.loads((workdir / f"results/preflight/{DATASET}/{MODEL}.json").read_text())[
        "jobs"]["embed"]["request_mb"]
    assert runs_of(workdir, "embed") == [  # the profile's one retry ran, with 1.5x the memory
        {"attempt": 1, "request_mb": request, "status": "oom", "category": "oom"},
        {"attempt": 2, "request_mb": int(request * 1.5), "status": "oom", "category": "oom"}]
    assert run.stderr.count("error: out of memory even at batch size 1") >= 2
    assert "stopped without running" not in run.stderr
