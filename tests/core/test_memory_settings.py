"""The memory settings live under `memory:` (issue 48): the old flat `memory_*` keys are refused
by name with the new spelling, and a nested value set the way the fix says reaches the jobs'
requests, through the real embedprobe CLI and the real snakemake."""

import re
import subprocess
import sys

import yaml

from embedprobe.core.config import SCHEMA_PATH, load_config, memory_settings

from helpers.project import PROJECT, snakemake


def embedprobe(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "embedprobe.cli", *map(str, args)],
                          capture_output=True, text=True, timeout=300, cwd=PROJECT)


def test_every_old_key_names_a_memory_setting_of_the_schema():
    schema = yaml.safe_load(SCHEMA_PATH.read_text())
    assert set(memory_settings(schema)) == set(load_config()["memory"])


def test_embedprobe_refuses_an_old_key_from_a_file_or_the_command_line(tmp_path):
    old = tmp_path / "old.yaml"
    old.write_text("memory_on_cluster: true\nmemory_partitions: {gpu: 50000}\n")
    run = embedprobe("--configfile", old, "list", "benchmarks")
    assert run.returncode == 2 and run.stdout == "", run.stderr
    assert run.stderr.splitlines() == [
        "error: config keys memory_partitions, memory_on_cluster are now memory.partitions, "
        "memory.on_cluster: the memory settings are nested under `memory:`",
        "fix: write `memory: {on_cluster: true, partitions: {gpu: 50000}}` in the config file, "
        "or --config 'memory.partitions={gpu: 50000}' memory.on_cluster=true on embedprobe, or "
        "--config 'memory={on_cluster: true, partitions: {gpu: 50000}}' on snakemake"]
    run = embedprobe("list", "benchmarks", "--config", "memory_margin=0.2")
    assert run.returncode == 2 and run.stdout == ""
    assert "error: config key memory_margin is now memory.margin" in run.stderr
    # the fix's embedprobe form runs
    fixed = embedprobe("list", "benchmarks", "--config", "memory.margin=0.2")
    assert fixed.returncode == 0 and "sleep_stage" in fixed.stdout, fixed.stderr


def test_snakemake_refuses_an_old_key_and_runs_the_nested_one(tmp_path):
    refused = snakemake(tmp_path, "-n", "demo", config=["memory_small_job_mb=1234"])
    assert refused.returncode == 2, refused.stderr[-2000:]
    assert ("error: config key memory_small_job_mb is now memory.small_job_mb: the memory "
            "settings are nested under `memory:`") in refused.stderr
    assert "--config 'memory={small_job_mb: 1234}' on snakemake" in refused.stderr
    assert "rule index:" not in refused.stdout  # stopped before any job was planned
    # the fix's snakemake form (values read as text by snakemake, typed by the schema): the
    # small jobs ask for it
    planned = snakemake(tmp_path, "-n", "demo", config=["memory={small_job_mb: 1234}"])
    assert planned.returncode == 0, planned.stderr[-2000:]
    index = planned.stdout.split("rule index:")[1].split("\n\n")[0]
    assert re.search(r"\bmem_mb=1234\b", index), index

