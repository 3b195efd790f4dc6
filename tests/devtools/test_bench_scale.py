"""scripts/bench_scale.py --quick through the real snakemake: the table's columns and steps,
every job's peak within its request; and the projection's inputs scaled as a fold and a night
split them (no timing is asserted)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from embedprobe.devtools.bench_plan_scale import PROJECT, child_env
from embedprobe.devtools.bench_scale import (
    QUICK_NIGHTS,
    STEPS,
    TABLE_COLUMNS,
    shhs_embed_inputs,
    shhs_probe_inputs,
)


def test_the_projection_splits_rows_as_a_fold_and_nights_in_parts():
    fold = shhs_probe_inputs({"n_train": 120, "n_val": 40, "n_test": 40, "dim": 256,
                              "streamed": 0}, 8_000_000, 1)
    assert (fold["n_train"], fold["n_val"], fold["n_test"]) == (4_800_000, 1_600_000, 1_600_000)
    assert fold["streamed"] == 1 and fold["dim"] == 256
    run = {"n_windows": 200, "night_windows": 10, "part_windows": [10] * 20,
           "part_signal_bytes": [288000] * 20, "statistic_bytes": 288000,
           "recording_bytes": 300000, "n_channels": 16}
    night = shhs_embed_inputs(run, 947, 3)
    assert night["n_windows"] == 2841 and night["night_windows"] == 947
    assert night["part_windows"] == [512, 435] * 3  # pipeline/window_parts.PART_WINDOWS
    assert night["part_signal_bytes"] == [512 * 28800, 435 * 28800] * 3
    assert night["statistic_bytes"] == 512 * 28800  # one part's stretch, not the night
    assert night["recording_bytes"] == 300000 * 947 // 10 and night["n_channels"] == 16
    assert shhs_embed_inputs({**run, "statistic_bytes": 0}, 947, 3)["statistic_bytes"] == 0


@pytest.mark.workflow
def test_quick_run_prints_every_step_with_each_peak_within_its_request(tmp_path):
    done = subprocess.run([sys.executable, "scripts/bench_scale.py", "--quick", "--workdir",
                           str(tmp_path)], cwd=PROJECT, env=child_env(), capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    summary = next(line for line in lines if line.startswith(f"{QUICK_NIGHTS} nights, "))
    assert summary.startswith(f"{QUICK_NIGHTS} nights, {QUICK_NIGHTS * 10} windows, 2 shards")
    header = lines.index("| " + " | ".join(TABLE_COLUMNS) + " |")
    rows = {}
    for line in lines[header + 2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0]] = dict(zip(TABLE_COLUMNS, cells, strict=True))
    assert [s for s in rows if s in STEPS] == list(STEPS)
    assert rows["embed_shard"]["jobs"] == "2" and rows["probe"]["jobs"] == "5"
    assert rows["plan: bare Snakemake, same DAG"]["jobs"] == rows["plan: snakemake -n"]["jobs"]
    for step in STEPS:  # the largest peak / request of the step's jobs
        assert 0 < float(rows[step]["peak_of_request"]) < 1, rows[step]
    for step in ("embed_shard", "probe"):  # their peaks beside the preflight's estimate
        assert float(rows[step]["estimate_mb"]) > 0
    assert "| SHHS embed, one checkpoint | 11.3 GPU-hours |" in lines
