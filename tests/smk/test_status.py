"""`embedprobe status`: each job's verdict from its files, Snakemake's records and the scheduler.

The scheduler's answers are real squeue lines (the local SLURM, `--Format` as status asks) and
condor_q lines in the `-af:t` layout; Snakemake's summary and dry run are captured from a real
demo run. One test runs the real snakemake (`--summary`, `-n`) on a fresh folder; one asks the
local SLURM about a sleeping job.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from embedprobe.api import tables
from embedprobe.core.errors import OutOfMemory, write_failure_record
from embedprobe.core.paths import output_path
from embedprobe.pipeline.store_identity import CacheIdentity
from embedprobe.pipeline.store_writer import EmbeddingWriter
from embedprobe.pipeline.window_table import window_table_sha256
from embedprobe.smk import status

from helpers.markers import mark_incomplete
from helpers.results import roots_in
from helpers.slurm import require_slurm

# squeue --me --states=all --noheader --Format=JobID:|,Name:|,...: exit_code is the raw wait
# status (768: exit 3; 15: killed by SIGTERM).
SQUEUE_LINES = """\
6|embedprobe_0f00aa11-2222-4333-8444-555566667777|FAILED|rule_probe_wildcards_demo_sleep_edf_demo_biot_random_3|{W}|768|NonZeroExitCode|
7|embedprobe_0f00aa11-2222-4333-8444-555566667777|RUNNING|rule_embed_wildcards_sleep_edf_demo_biot_random|{W}|0|None|
9|embedprobe_0f00aa11-2222-4333-8444-555566667777|CANCELLED|rule_probe_wildcards_demo_sleep_edf_demo_biot_random_4|{W}|15|None|
10|embedprobe_0f00aa11-2222-4333-8444-555566667777|PENDING|rule_probe_wildcards_demo_brain_age_sleep_edf_demo_biot_random_0|{W}|0|Resources|
11|embedprobe_0f00aa11-2222-4333-8444-555566667777|OUT_OF_MEMORY|rule_probe_wildcards_demo_brain_age_sleep_edf_demo_biot_random_1|{W}|9|OutOfMemory|
3|embedprobe_test1|RUNNING|rule_probe_wildcards_demo_sleep_edf_demo_biot_random_2|/elsewhere|0|None|
"""
# condor_q -af:t ClusterId JobStatus ExitCode Iwd HoldReason Arguments Args
CONDOR_LINES = (
    "41\t2\tundefined\t{W}\tundefined\t-m snakemake --target-jobs 'embed:dataset=sleep_edf_demo,"
    "model=biot_random' --allowed-rules embed --cores 2\tundefined\n"
    "42\t5\tundefined\t{W}\tmemory usage exceeded request_memory\t-m snakemake --target-jobs "
    "'probe:benchmark=demo,dataset=sleep_edf_demo,model=biot_random,fold=3' --cores 1\t"
    "undefined\n"
    "43\t4\t1\t{W}\tundefined\tundefined\t-m snakemake --target-jobs "
    "'check:dataset=sleep_edf_demo,model=biot_random'\n"
)
# `snakemake --summary demo` after the demo ran (a selection of its rows: output, date, rule,
# log, status, plan; {R} is {W}/results, the date column shortened)
SUMMARY_ROWS = [
    ("{R}/demo/summary.md", "summary", "{R}/logs/summary/demo.log", "ok", "no update"),
    ("{R}/demo/figures/scores.png", "summary", "{R}/logs/summary/demo.log", "ok", "no update"),
    ("{R}/demo/sleep_edf_demo/results.tsv", "aggregate",
     "{R}/logs/aggregate/demo/sleep_edf_demo.log", "ok", "no update"),
    ("{R}/demo/sleep_edf_demo/biot_random/fold10.json", "probe",
     "{R}/logs/probe/demo/sleep_edf_demo/biot_random/fold10.log", "ok", "no update"),
    ("{R}/demo/sleep_edf_demo/biot_random/fold0.json", "probe",
     "{R}/logs/probe/demo/sleep_edf_demo/biot_random/fold0.log", "ok", "no update"),
    ("{R}/demo/sleep_edf_demo/biot_random/fold0.npz", "probe",
     "{R}/logs/probe/demo/sleep_edf_demo/biot_random/fold0.log", "ok", "no update"),
    ("{W}/cache/embeddings/sleep_edf_demo/biot_random.h5", "embed",
     "{R}/logs/embed/sleep_edf_demo/biot_random.log", "ok", "no update"),
    ("{R}/index/sleep_edf_demo.tsv", "index", "{R}/logs/index/sleep_edf_demo.log", "ok",
     "no update"),
    ("{R}/index/sleep_edf_demo.quality.tsv", "index", "{R}/logs/index/sleep_edf_demo.log", "ok",
     "no update"),
    ("{W}/data/demo/sleep-edf/MANIFEST.tsv", "demo_data", "{R}/logs/demo_data/demo/sleep-edf.log",
     "ok", "no update"),
    ("{R}/preflight/sleep_edf_demo/biot_random/demo.json", "preflight_probe",
     "{R}/logs/preflight/sleep_edf_demo/biot_random/demo.log", "params changed",
     "update pending"),
    ("{R}/leaderboard/demo.md", "leaderboard", "{R}/logs/leaderboard/demo.log", "missing",
     "update pending"),
]


def summary_text(workdir) -> str:
    lines = ["output_file\tdate\trule\tlog-file(s)\tstatus\tplan"]
    for output, rule, log, state, plan in SUMMARY_ROWS:
        filled = [x.format(R=f"{workdir}/results", W=workdir) for x in (output, log)]
        lines.append("\t".join([filled[0], "Wed Dec  2 06:48:37 2026", rule, filled[1], state,
                                plan]))
    return "\n".join(lines) + "\n"


# `snakemake -n --forcerun embed -- demo` (two of its jobs, and the lines around them)
DRY_RUN = """\
Building DAG of jobs...
Job stats:
job             count
------------  -------
embed               1
probe              10
total              20


[Wed Dec  2 06:49:33 2026]
rule embed:
    input: {W}/results/index/sleep_edf_demo.tsv, {W}/results/preflight/x/biot_random.json
    output: {W}/cache/embeddings/sleep_edf_demo/biot_random.h5
    log: {W}/results/logs/embed/sleep_edf_demo/biot_random.log
    jobid: 4
    benchmark: {W}/results/benchmarks/embed/sleep_edf_demo/biot_random.tsv
    reason: Forced execution
    wildcards: dataset=sleep_edf_demo, model=biot_random
    threads: 2
    resources: tmpdir=<TBD>, mem_mb=<TBD>
[Wed Dec  2 06:49:33 2026]
localrule probe:
    input: {W}/cache/embeddings/sleep_edf_demo/biot_random.h5
    output: {W}/results/demo_brain_age/d/m/fold2.json, {W}/results/demo_brain_age/d/m/fold2.npz
    jobid: 21
    reason: Input files updated by another job: {W}/cache/embeddings/sleep_edf_demo/biot_random.h5
    wildcards: benchmark=demo_brain_age, dataset=sleep_edf_demo, model=biot_random, fold=2
    threads: 2
Job stats:
This was a dry-run (flag -n). The order of jobs does not reflect the order of execution.
"""


def job(rule: str, output, **wildcards) -> dict:
    return {"rule": rule, "wildcards": wildcards, "output": str(output), "snakemake": "ok"}


def partial_store(path, rows: int, n_windows: int = 40) -> None:
    """A real embedding store left partial: `rows` durable rows of `n_windows`."""
    table = pd.DataFrame({"recording": ["r"] * n_windows, "subject": ["s"] * n_windows,
                          "start": np.arange(n_windows) * 3000, "label": [0] * n_windows})
    identity = CacheIdentity("d", "m", window_table_sha256(table), "{}", "w" * 64, "test")
    path.parent.mkdir(parents=True, exist_ok=True)
    writer = EmbeddingWriter(path, identity, n_windows, 8, table, chunk_rows=8)
    writer.append(np.ones((rows, 8), dtype=np.float32))
    writer.close()


@pytest.fixture
def pair(tmp_path):
    roots = roots_in(tmp_path)
    names = {"dataset": "sleep_edf_demo", "model": "biot_random"}
    paths = {"check": output_path("check", roots, **names),
             "embed": output_path("embeddings", roots, **names)}
    for k in range(6):
        paths[k] = output_path("fold_result", roots, benchmark="demo", fold=k, **names)
    jobs = [job("check", paths["check"], **names), job("embed", paths["embed"], **names)]
    jobs += [job("probe", paths[k], benchmark="demo", **names, fold=str(k)) for k in range(6)]
    return tmp_path, paths, jobs


def verdicts(rows) -> list[tuple]:
    return [(r["rule"], r["fold"], r["verdict"]) for r in rows]


def test_parse_squeue_lines_from_the_real_slurm(tmp_path):
    jobs = status.parse_squeue(SQUEUE_LINES.format(W=tmp_path))
    assert [(j.job_id, j.state, j.shown) for j in jobs] == [
        ("6", "FAILED", "exited 3"), ("7", "RUNNING", "running"), ("9", "CANCELLED", "removed"),
        ("10", "PENDING", "queued"), ("11", "OUT_OF_MEMORY", "exited signal 9"),
        ("3", "RUNNING", "running")]
    assert jobs[0].key == "rule_probe_wildcards_demo_sleep_edf_demo_biot_random_3"
    assert jobs[3].reason == "Resources" and jobs[0].work_dir == str(tmp_path)


def test_parse_condor_q_lines(tmp_path):
    jobs = status.parse_condor_q(CONDOR_LINES.format(W=tmp_path))
    assert [(j.job_id, j.state, j.shown, j.key) for j in jobs] == [
        ("41", "running", "running", "rule_embed_wildcards_sleep_edf_demo_biot_random"),
        ("42", "held", "stopped", "rule_probe_wildcards_demo_sleep_edf_demo_biot_random_3"),
        ("43", "completed", "exited 1", "rule_check_wildcards_sleep_edf_demo_biot_random")]
    assert jobs[1].reason == "memory usage exceeded request_memory"


def test_files_alone_give_done_failed_partial_and_missing(pair):
    workdir, paths, jobs = pair
    paths["check"].parent.mkdir(parents=True)
    paths["check"].write_text("{}")
    partial_store(paths["embed"], rows=24)
    paths[0].parent.mkdir(parents=True)
    paths[0].write_text("{}")
    write_failure_record(paths[1], OutOfMemory("fold 1 needs 9 GB\nmore", fix="ask for more"),
                         "probe")
    # an old failure, then the job succeeded: done
    write_failure_record(paths[2], OutOfMemory("old"), "probe")
    past = time.time() - 60
    os.utime(status.failure_record(paths[2]), (past, past))
    paths[2].write_text("{}")
    rows = status.verdict_rows(jobs, workdir, None)
    assert verdicts(rows) == [("check", None, "done"), ("embed", None, "partial"),
                              ("probe", "0", "done"), ("probe", "1", "failed"),
                              ("probe", "2", "done"), ("probe", "3", "missing"),
                              ("probe", "4", "missing"), ("probe", "5", "missing")]
    assert rows[1]["detail"] == "24/40 windows durable"
    assert rows[3]["detail"] == "probe failed (oom): fold 1 needs 9 GB"
    assert rows[3]["fix"] == "ask for more"
    text = status.format_status(rows).splitlines()
    assert text[0].split() == ["rule", "benchmark", "dataset", "model", "fold", "verdict",
                               "detail"]
    assert "  fix: ask for more" in text
    assert text[-1] == "8 jobs: 3 done, 1 partial, 1 failed, 3 missing"


def test_snakemake_records_say_running_under_a_lock_and_stopped_without(pair):
    workdir, paths, jobs = pair
    mark_incomplete(workdir, paths[3])
    mark_incomplete(workdir, paths["embed"])
    partial_store(paths["embed"], rows=8)
    rows = status.verdict_rows(jobs, workdir, None)
    assert rows[1]["verdict"] == "partial"
    assert rows[1]["detail"] == ("started, never finished (its run was interrupted or its "
                                 "job is gone); 8/40 windows durable")
    assert rows[5]["verdict"] == "stopped"
    locks = workdir / ".snakemake" / "locks"
    locks.mkdir()
    (locks / "0.output.lock").write_text(str(paths[3]))
    rows = status.verdict_rows(jobs, workdir, None)
    assert rows[1]["verdict"] == rows[5]["verdict"] == "running"


def test_the_scheduler_says_running_queued_exited_removed(pair):
    workdir, paths, jobs = pair
    found = status.parse_squeue(SQUEUE_LINES.format(W=workdir))
    more = [job("probe", output_path("fold_result", roots_in(workdir), benchmark="demo_brain_age",
                                     dataset="sleep_edf_demo", model="biot_random", fold=k),
                benchmark="demo_brain_age", dataset="sleep_edf_demo", model="biot_random",
                fold=str(k)) for k in (0, 1)]
    # fold 2's job ran in another folder (job 3): not ours. Fold 5: Snakemake's marker names
    # the job id (12), which the queue no longer knows: stopped, though a (stale) lock is left.
    mark_incomplete(workdir, paths[5], "12")
    (workdir / ".snakemake" / "locks").mkdir()
    (workdir / ".snakemake" / "locks" / "0.output.lock").write_text(str(paths[5]))
    rows = status.verdict_rows(jobs + more, workdir, [j for j in found
                                                       if j.work_dir == str(workdir)])
    assert [(r["fold"], r["verdict"], r["job_id"]) for r in rows] == [
        (None, "missing", None), (None, "running", "7"), ("0", "missing", None),
        ("1", "missing", None), ("2", "missing", None), ("3", "exited 3", "6"),
        ("4", "removed", "9"), ("5", "stopped", "12"), ("0", "queued", "10"),
        ("1", "exited signal 9", "11")]
    assert rows[8]["detail"] == "slurm job 10 PENDING (Resources)"
    # a failure record says more than the exit code
    write_failure_record(paths[3], OutOfMemory("out of memory at batch 7"), "probe")
    rows = status.verdict_rows(jobs, workdir, found)
    assert rows[5]["verdict"] == "failed" and "out of memory at batch 7" in rows[5]["detail"]


def test_scheduler_jobs_keep_this_folder_and_survive_a_silent_scheduler(tmp_path, monkeypatch):
    answers = {"squeue": SQUEUE_LINES.format(W=tmp_path), "condor_q": None}
    monkeypatch.setattr(status, "scheduler_output", lambda argv: answers[argv[0]])
    found, answered = status.scheduler_jobs(tmp_path)
    assert answered == ["SLURM"] and sorted(j.job_id for j in found) == ["10", "11", "6", "7",
                                                                          "9"]
    answers["squeue"] = None
    assert status.scheduler_jobs(tmp_path) == ([], [])


def test_the_summary_gives_one_job_per_rule_output(tmp_path):
    roots = roots_in(tmp_path)
    names = status.config_names(tables.settings()[0])
    jobs = status.job_outputs(status.parse_summary(summary_text(tmp_path)), roots, names)
    assert [(j["rule"], j["wildcards"], j["snakemake"]) for j in jobs] == [
        ("index", {"dataset": "sleep_edf_demo"}, "ok"),  # its .quality.tsv is the same job
        ("embed", {"dataset": "sleep_edf_demo", "model": "biot_random"}, "ok"),
        ("preflight_probe", {"dataset": "sleep_edf_demo", "model": "biot_random",
                             "benchmark": "demo"}, "params changed"),
        ("probe", {"benchmark": "demo", "dataset": "sleep_edf_demo", "model": "biot_random",
                   "fold": "0"}, "ok"),
        ("probe", {"benchmark": "demo", "dataset": "sleep_edf_demo", "model": "biot_random",
                   "fold": "10"}, "ok"),
        ("aggregate", {"benchmark": "demo", "dataset": "sleep_edf_demo"}, "ok"),
        ("summary", {"benchmark": "demo"}, "ok"),
        ("leaderboard", {"target": "demo"}, "missing")]
    assert jobs[1]["output"] == f"{tmp_path}/cache/embeddings/sleep_edf_demo/biot_random.h5"


def test_a_sharded_pairs_shards_and_join_are_jobs_each_saying_which(tmp_path):
    roots = roots_in(tmp_path)
    names = status.config_names(tables.settings()[0])
    shards = f"{tmp_path}/cache/embeddings/sleep_edf_demo/biot_random.shards"
    rows = "\n".join(["output_file\tdate\trule\tlog-file(s)\tstatus\tplan",
                      *(f"{shards}/{k}-of-3.h5\tWed Dec  2 06:48:37 2026\tembed_shard\tx.log\t"
                        f"{state}\tno update" for k, state in ((2, "ok"), (0, "ok"),
                                                               (1, "missing"))),
                      f"{tmp_path}/cache/embeddings/sleep_edf_demo/biot_random.h5\tWed Dec  2 "
                      "06:48:37 2026\tembed_join\tx.log\tmissing\tupdate pending"]) + "\n"
    jobs = status.job_outputs(status.parse_summary(rows), roots, names)
    assert [(j["rule"], j["wildcards"].get("shard"), j["snakemake"]) for j in jobs] == [
        ("embed_shard", "0", "ok"), ("embed_shard", "1", "missing"), ("embed_shard", "2", "ok"),
        ("embed_join", None, "missing")]
    assert jobs[0]["wildcards"] == {"dataset": "sleep_edf_demo", "model": "biot_random",
                                    "shard": "0", "shards": "3"}
    Path(shards).mkdir(parents=True)
    (Path(shards) / "0-of-3.h5").write_bytes(b"a finished shard")
    verdicts = status.verdict_rows(jobs, tmp_path, None)
    assert [(r["rule"], r["verdict"], r["detail"]) for r in verdicts] == [
        ("embed_shard", "done", "shard 1 of 3"), ("embed_shard", "missing", "shard 2 of 3"),
        ("embed_shard", "missing", "shard 3 of 3"), ("embed_join", "missing", "")]
    table = status.format_status(verdicts).splitlines()
    assert table[2].split()[:4] == ["embed_shard", "-", "sleep_edf_demo", "biot_random"]
    assert table[2].endswith("missing  shard 2 of 3")


def test_the_dry_run_gives_one_row_per_job(tmp_path):
    rows = status.plan_rows(DRY_RUN.format(W=tmp_path))
    assert [(r["rule"], r["jobid"], r["local"], r["benchmark"], r["fold"]) for r in rows] == [
        ("embed", 4, False, None, None), ("probe", 21, True, "demo_brain_age", "2")]
    assert rows[0]["reason"] == "Forced execution"
    assert rows[0]["resources"] == "tmpdir=<TBD>, mem_mb=<TBD>"
    assert rows[1]["output"] == f"{tmp_path}/results/demo_brain_age/d/m/fold2.json"


@pytest.mark.workflow
def test_status_and_plan_on_a_fresh_folder_with_the_real_snakemake(tmp_path):
    """Nothing ran yet, but a check failed and a fold exists: the command's JSON equals the
    API's frame, and the plan lists the demo's jobs."""
    roots = roots_in(tmp_path)
    settings = [f"{root}={path}" for root, path in roots.items()]
    names = {"dataset": "sleep_edf_demo", "model": "biot_random"}
    write_failure_record(output_path("check", roots, **names),
                         OutOfMemory("the batch needs 3 GB", fix="embed.batch_size=8"), "check")
    fold = output_path("fold_result", roots, benchmark="demo_brain_age", fold=4, **names)
    fold.parent.mkdir(parents=True)
    fold.write_text("{}")
    run = subprocess.run([sys.executable, "-m", "embedprobe.cli", "status", "demo",
                          "--no-scheduler", "--format", "json", "--config", *settings],
                         capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    printed = json.loads(run.stdout)
    frame = tables.status("demo", scheduler=False, config=settings, workdir=tmp_path)
    assert printed == frame.astype(object).where(frame.notna(), None).to_dict("records")
    counts = pd.Series([r["rule"] for r in printed]).value_counts().to_dict()
    assert counts == {"probe": 10, "preflight_probe": 2, "aggregate": 2, "summary": 2,
                      "index": 1, "check": 1, "preflight": 1, "embed": 1, "leaderboard": 1}
    by_job = {(r["rule"], r["benchmark"], r["fold"]): r for r in printed}
    assert by_job[("check", None, None)]["verdict"] == "failed"
    assert by_job[("check", None, None)]["fix"] == "embed.batch_size=8"
    assert by_job[("probe", "demo_brain_age", "4")]["verdict"] == "done"
    assert sum(r["verdict"] == "missing" for r in printed) == 19
    plan = tables.plan("demo", config=settings, workdir=tmp_path)
    # the fold that exists is redone too: the embeddings it was fitted on will be made anew
    assert plan["rule"].value_counts().to_dict() == {
        "probe": 10, "preflight_probe": 2, "aggregate": 2, "summary": 2, "memory_panel": 2,
        "demo_data": 1, "index": 1, "check": 1, "preflight": 1, "embed": 1, "pair_figure": 1,
        "leaderboard": 1, "demo": 1}
    (reason,) = plan[(plan["benchmark"] == "demo_brain_age") & (plan["fold"] == "4")]["reason"]
    assert reason.startswith("Input files updated by another job: ")
    assert str(output_path("embeddings", roots, **names)) in reason
    assert not (tmp_path / "data").exists(), "planning must not create data"


@pytest.mark.workflow
def test_an_unknown_target_is_a_usage_error(tmp_path):
    run = subprocess.run([sys.executable, "-m", "embedprobe.cli", "status", "dmeo"],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert run.returncode == 2 and "unknown target 'dmeo' (did you mean 'demo'?)" in run.stderr
    assert "fix: use one of: " in run.stderr


@pytest.mark.slurm
def test_a_sleeping_slurm_job_shows_as_running(tmp_path):
    require_slurm()
    roots = roots_in(tmp_path)
    names = {"dataset": "sleep_edf_demo", "model": "biot_random"}
    embed = job("embed", output_path("embeddings", roots, **names), **names)
    submitted = subprocess.run(
        ["sbatch", "--parsable", "-J", "embedprobe_status-test", "--mem", "100", "-o",
         "/dev/null", "--comment", "rule_embed_wildcards_sleep_edf_demo_biot_random", "-D",
         str(tmp_path), "--wrap", "sleep 120"], capture_output=True, text=True, check=True,
        timeout=60)
    job_id = submitted.stdout.strip().split(";")[0]
    try:
        deadline = time.monotonic() + 60
        while True:
            found, answered = status.scheduler_jobs(tmp_path)
            (row,) = status.verdict_rows([embed], tmp_path, found)
            if row["verdict"] == "running" or time.monotonic() > deadline:
                break
            assert row["verdict"] == "queued", row
            time.sleep(2)
        assert answered[0] == "SLURM"
        assert (row["verdict"], row["job_id"]) == ("running", job_id), row
    finally:
        subprocess.run(["scancel", job_id], timeout=60)
