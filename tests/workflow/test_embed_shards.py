"""Sharded embedding through the real snakemake: three shards joined read as the one-job store,
bit for bit, and a shard deleted (with the store) is the only one embedded again."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml

from embedprobe.pipeline.store import open_embeddings

from helpers.project import snakemake

pytestmark = pytest.mark.workflow

# Three recordings of 10 min of sleep (the look-alike's shortest), BIOT random: a few hundred
# windows, the smallest embed jobs the demo dataset makes.
COHORT = {"datasets": {"sleep_edf_demo": {"expected_recordings": 3,
                                          "generator": {"subjects": 3, "nights": 1,
                                                        "hours": 1 / 6, "seed": 0}}}}
SHARDS = 3
ONE_JOB = ("--set-threads", "embed=1", "embed_shard=1", "--cores", "2")


def job_stats(out: str) -> dict[str, int]:
    """Snakemake's `Job stats:` table: rule -> job count."""
    lines = out.split("Job stats:")[1].splitlines()
    rows = [line.split() for line in lines[3:]]
    return {row[0]: int(row[1]) for row in rows[:next(i for i, r in enumerate(rows)
                                                      if r[:1] == ["total"])]}


def read_store(path):
    with open_embeddings(path) as store:
        return store.load(), store.windows, store.identity


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The store embedded by one job, then by three shards, in the same folder."""
    workdir = tmp_path_factory.mktemp("shards")
    cohort = workdir / "cohort.yaml"
    cohort.write_text(yaml.safe_dump(COHORT))
    store = workdir / "cache/embeddings/sleep_edf_demo/biot_random.h5"

    def run(*args, shards=1):
        done = snakemake(workdir, "--configfile", str(cohort), *ONE_JOB, *args, str(store),
                         config=[f"embed={{shards: {shards}}}"])
        assert done.returncode == 0, done.stderr[-3000:]
        return done

    run()
    one_job = read_store(store)
    sharded = run(shards=SHARDS)
    return workdir, store, run, one_job, sharded


def test_three_shards_join_into_the_one_job_store_bit_for_bit(runs):
    _workdir, store, _run, (rows, windows, identity), sharded = runs
    # the index, check and preflight are kept: no job's config holds the shard count
    assert job_stats(sharded.stdout + sharded.stderr) == {"embed_shard": SHARDS,
                                                          "embed_join": 1}
    shard_rows, shard_windows, shard_identity = read_store(store)
    assert len(windows["recording"].unique()) == SHARDS and len(rows) > 100
    assert np.array_equal(rows.view(np.uint32), shard_rows.view(np.uint32))
    pd.testing.assert_frame_equal(windows, shard_windows)
    assert identity == shard_identity  # the store's key does not depend on the shard count


def test_a_deleted_shard_is_the_only_one_embedded_again(runs):
    """What a damaged shard's fix says: remove it and the store (Snakemake remakes a missing
    file only where something downstream is missing), then the same command."""
    _workdir, store, run, (rows, _windows, _identity), _sharded = runs
    shards = [store.with_name(f"{store.name[:-3]}.shards") / f"{k}-of-{SHARDS}.h5"
              for k in range(SHARDS)]
    kept = {path: path.stat().st_mtime_ns for path in shards}
    shards[1].unlink()
    store.unlink()
    plan = run("-n", shards=SHARDS)
    printed = plan.stdout + plan.stderr
    assert "Job stats:" in printed, printed[-3000:]
    assert job_stats(printed) == {"embed_join": 1, "embed_shard": 1}
    assert f"{shards[1].name}" in printed
    run(shards=SHARDS)
    assert shards[0].stat().st_mtime_ns == kept[shards[0]]
    assert shards[2].stat().st_mtime_ns == kept[shards[2]]
    assert np.array_equal(read_store(store)[0].view(np.uint32), rows.view(np.uint32))
