"""Embed shards running at once keep their own runs-table records: on one job key each shard,
starting, took the others' unfinished attempt files for killed attempts (seen at the first
two-shard run of scripts/bench_scale.py: a `killed` row of 170 MB beside two `ok` ones)."""

from __future__ import annotations

import pandas as pd

from embedprobe.memory.records import shard_job_key
from embedprobe.memory.refit import join_runs
from embedprobe.memory.report import read_runs
from embedprobe.memory.runs import JobRecord


def record(tmp_path, job: str) -> JobRecord:
    # a request no test process nears: the stale attempt reads as killed, not as oom
    return JobRecord(tmp_path, "embed", job, "shhs", "biot_random", 1, 1000.0, 10**6)


def test_shards_running_at_once_record_each_its_own_attempt(tmp_path):
    keys = [shard_job_key(k, 3) for k in range(3)]
    with record(tmp_path, keys[0]), record(tmp_path, keys[1]), record(tmp_path, keys[2]):
        pass
    runs = read_runs(tmp_path / "memory" / "runs.tsv")
    assert sorted(runs["job"]) == ["embed/0-of-3", "embed/1-of-3", "embed/2-of-3"]
    assert set(runs["status"]) == {"ok"} and set(runs["estimate_mb"]) == {1000.0}


def test_one_key_for_every_shard_records_a_running_one_as_killed(tmp_path):
    """Why the keys differ: the same key is what an attempt killed from outside looks like."""
    with record(tmp_path, "embed"), record(tmp_path, "embed"):
        pass
    runs = read_runs(tmp_path / "memory" / "runs.tsv")
    assert sorted(runs["status"]) == ["killed", "ok", "ok"]


def test_the_refit_leaves_shards_out_with_the_reason(tmp_path):
    rows = pd.DataFrame([{"rule": "embed", "job": shard_job_key(1, 2), "dataset": "shhs",
                          "model": "biot_random", "attempt": 1, "estimate_mb": 1000.0,
                          "peak_mb": 900.0, "status": "ok"}])
    joined = join_runs(rows, tmp_path)
    assert joined.runs == {}
    assert joined.skipped == {"an embed shard (sized by its pair's whole estimate)": 1}
