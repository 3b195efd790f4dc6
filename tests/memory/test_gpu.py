"""embed.device cuda: what check, preflight, embed and the scheduler get.

This machine has no GPU, so the device itself is exercised only by the last test (it runs where
torch sees CUDA). Everything around it runs for real here: check refuses cuda without a device
(with the fix), preflight turns a GPU check record (allocator peaks at two batch sizes, as
check writes them on a GPU) into a device estimate and a batch that fits, the embed job stops
before touching the cache, and snakemake plans one GPU per check and embed job.
"""

import dataclasses
import json
import subprocess
import sys

import pytest
import torch

from embedprobe.core.units import MIB
from embedprobe.memory import estimate as estimates
from embedprobe.memory.calibration import load_calibration
from embedprobe.pipeline.check import (
    FAILED,
    OK,
    check_pair,
    from_csv,
    read_result,
    to_csv,
    write_result,
)
from embedprobe.pipeline.context import DatasetContext
from embedprobe.smk.resources import gpu_resources

from helpers.check_config import DATASET, checked_pair
from helpers.project import PROJECT, snakemake

MODEL = "biot_random"
no_cuda = pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")


def cuda_config(config: dict, batch_size: int = 32) -> dict:
    return {**config, "embed": {**config["embed"], "device": "cuda", "batch_size": batch_size}}


@pytest.fixture(scope="module")
def pair(demo_root, tmp_path_factory):
    """The demo's config, roots and window index, and a passing CPU check of BIOT on it."""
    tmp = tmp_path_factory.mktemp("gpu")
    config, roots, index, check = checked_pair(demo_root, tmp, MODEL)
    return config, roots, index, check, tmp


def embedprobe(config: dict, *args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "embedprobe.cli", "--job-config", json.dumps(config),
         *map(str, args)],
        capture_output=True, text=True, timeout=600,
        env={"PYTHONPATH": str(PROJECT / "workflow"), "PATH": "/usr/bin:/bin"})


def cuda_preflight(config: dict, index, record, tmp_path):
    """preflight under embed.device cuda on a check record; (the run, its JSON path)."""
    check_path, out = tmp_path / "check.json", tmp_path / "preflight.json"
    write_result(record, check_path)
    run = embedprobe({**cuda_config(config), "benchmarks": {}}, "preflight", "--dataset",
                     DATASET, "--model", MODEL, "--check", check_path, "--index", index,
                     "--out", out)
    return run, out


@no_cuda
def test_check_on_cuda_without_a_gpu_fails_with_the_fix(pair, tmp_path):
    config, roots, _, _, _ = pair
    out = tmp_path / "check.json"
    run = embedprobe(cuda_config(config), "check", "--dataset", DATASET, "--model", MODEL,
                     "--out", out)
    assert run.returncode == 1, run.stderr[-2000:]
    result = read_result(out)
    assert result.status == FAILED and result.category == "device"
    assert "embed.device is cuda" in result.reason and "sees no CUDA device" in result.reason
    assert "device: cpu" in result.fix
    assert f"fix: {result.fix}" in run.stdout  # printed under the pair's row


def gpu_check_record(check, total_bytes: int, batch: int = 32):
    """The check record a GPU would give: 300 MiB at one window, 40 MiB per further window,
    measured at one window and at `batch` (the largest batch the GPU held)."""
    peaks = {1: 300 * MIB, batch: 300 * MIB + (batch - 1) * 40 * MIB}
    return dataclasses.replace(check, device="cuda (test)", gpu_peaks=peaks,
                               gpu_total_bytes=total_bytes, batch_size=batch)


def test_preflight_sizes_the_batch_to_the_gpu_that_check_measured(pair, tmp_path):
    config, roots, index, check, _ = pair
    config = cuda_config(config, batch_size=256)
    check_path, out = tmp_path / "check.json", tmp_path / "preflight.json"
    # 256 and 128 windows would not fit 4 GiB: check kept the largest batch that did
    write_result(gpu_check_record(check, 4096 * MIB, batch=64), check_path)
    run = embedprobe({**config, "benchmarks": {}}, "preflight", "--dataset", DATASET,
                     "--model", MODEL, "--check", check_path, "--index", index, "--out", out)
    assert run.returncode == 0, run.stderr[-2000:]
    embed = json.loads(out.read_text())["jobs"]["embed"]
    assert embed["job"] == "embed_gpu" and "batch activations" not in embed["terms"]
    device, batch = embed["device"], embed["knobs"]["batch_size"]
    assert device["job"] == "embed_gpu_device" and device["limit_mb"] == 4096
    assert device["request_mb"] <= 4096 and batch < 64
    assert embed["tried"][0] == "batch_size=32"  # halved from check's 64, not the config's 256
    # the batch is the largest of the halvings that fits: twice as many windows would not
    calibration = load_calibration()
    inputs = {"batch_size": 2 * batch, "n_channels": check.n_chans,
              "n_samples": check.n_times_epoch, "feature_dim": check.feature_dim,
              "weights_bytes": check.n_params * 4, "recording_bytes": 0, "night_windows": 0,
              "gpu_peaks": gpu_check_record(check, 0, batch=64).gpu_peaks,
              "gpu_total_bytes": 4096 * MIB}
    bigger = estimates.estimate("embed_gpu_device", inputs, calibration, 4096 * MIB,
                                device["margin"])
    assert bigger.request_mb > 4096
    # what the embed rule then sends HTCondor as gpus_minimum_memory
    callable_ = gpu_resources(config, "embed")["htcondor_gpus_min_mem_mb"]
    assert callable_(None, type("Input", (), {"estimate": str(out)})) == device["request_mb"]


def test_a_gpu_too_small_for_one_window_stops_preflight_with_the_fix(pair, tmp_path):
    config, roots, index, check, _ = pair
    run, out = cuda_preflight(config, index, gpu_check_record(check, 512 * MIB), tmp_path)
    assert run.returncode == 1 and not out.exists()
    assert "embed cannot fit" in run.stderr and "GPU with at least" in run.stderr
    assert "batch_size=1" in run.stderr  # every smaller batch was tried first


def test_preflight_refuses_a_check_made_on_another_device(pair, tmp_path):
    config, roots, index, check, _ = pair
    run, out = cuda_preflight(config, index, check, tmp_path)  # a check made on the CPU
    assert run.returncode == 2 and not out.exists()
    assert "embed.device is cuda, but the check of" in run.stderr and "ran on cpu" in run.stderr
    assert "fix: run the check again" in run.stderr


def test_a_gpu_check_record_round_trips_through_json_and_csv(pair, tmp_path):
    record = gpu_check_record(pair[3], 4096 * MIB, batch=64)
    write_result(record, tmp_path / "check.json")
    assert read_result(tmp_path / "check.json") == record
    assert from_csv(to_csv([record])) == [record]
    assert record.gpu_peaks == {1: 300 * MIB, 64: 300 * MIB + 63 * 40 * MIB}


@no_cuda
def test_embed_on_cuda_without_a_gpu_stops_before_the_cache(pair, tmp_path):
    config, roots, index, check, tmp = pair
    out = tmp_path / "store.h5"
    run = embedprobe(cuda_config(config), "embed", "--dataset", DATASET, "--model", MODEL,
                     "--index", index, "--out", out)
    assert run.returncode == 2, run.stderr[-2000:]
    assert "sees no CUDA device" in run.stderr and "fix:" in run.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["store.h5.failure.json"]


def resources_of(plan: str, rule: str) -> str:
    block = plan.split(f"rule {rule}:")[1]
    return next(line for line in block.splitlines() if "resources:" in line)


def test_the_plan_asks_for_a_gpu_exactly_when_the_config_says_cuda(tmp_path):
    cpu = snakemake(tmp_path, "-n", "demo")
    gpu = snakemake(tmp_path, "-n", "demo", config=["embed={device: cuda}"])
    assert cpu.returncode == 0 and gpu.returncode == 0, gpu.stderr[-2000:]
    for rule in ("check", "embed"):
        assert "gpu=1, request_gpus=1" in resources_of(gpu.stdout, rule)
        assert "gpu" not in resources_of(cpu.stdout, rule).replace("gpus_min", "")
    assert "htcondor_gpus_min_mem_mb=<TBD>" in resources_of(gpu.stdout, "embed")
    # check runs the model on the GPU: CUDA's host libraries (3 GiB) on top of a small job
    assert "mem_mb=2000," in resources_of(cpu.stdout, "check")
    assert "mem_mb=5072," in resources_of(gpu.stdout, "check")
    for rule in ("index", "preflight", "preflight_probe", "probe", "aggregate"):
        assert "gpu" not in resources_of(gpu.stdout, rule)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_check_on_a_gpu_measures_the_allocator_at_two_batch_sizes(pair, tmp_path):
    config, roots, index, _, _ = pair
    result = check_pair(DatasetContext.build(cuda_config(config), roots, DATASET), MODEL, 32)
    assert result.status == OK, result.note
    assert sorted(result.gpu_peaks) == [1, 32] and result.device.startswith("cuda")
    assert 0 < result.gpu_peaks[1] < result.gpu_peaks[32] < result.gpu_total_bytes
    # the reserve covers what was allocated; the context is measured per process (NVML)
    assert all(result.gpu_reserved_peaks[b] >= result.gpu_peaks[b] for b in (1, 32))
    assert 100 * MIB < result.gpu_context_bytes < 4096 * MIB, result.extra
    assert result.baseline_bytes > 0  # the host side of a CUDA process, measured here
    run, out = cuda_preflight(config, index, result, tmp_path)
    assert run.returncode == 0, run.stderr[-2000:]
    assert json.loads(out.read_text())["jobs"]["embed"]["job"] == "embed_gpu"


def test_preflight_takes_the_measured_context_reserve_and_host_baseline(pair, tmp_path):
    """A check made on a GPU node carries that node's numbers; preflight uses them over the
    shipped table: the CUDA context of its process, the allocator's reserved peaks, and the
    host baseline of a CUDA process."""
    config, roots, index, check, _ = pair
    reserved = {1: 320 * MIB, 32: 320 * MIB + 31 * 42 * MIB}
    record = dataclasses.replace(gpu_check_record(check, 80 * 1024 * MIB),
                                 gpu_reserved_peaks=reserved, gpu_context_bytes=530 * MIB,
                                 baseline_bytes=1403 * MIB)
    run, out = cuda_preflight(config, index, record, tmp_path)
    assert run.returncode == 0, run.stderr[-2000:]
    embed = json.loads(out.read_text())["jobs"]["embed"]
    assert embed["terms"]["interpreter and libraries, with the model built"] == 1403 * MIB
    terms = embed["device"]["terms"]
    assert terms["CUDA context"] == 530 * MIB
    line = reserved[1] + 31 * 42 * MIB  # the reserve at 32 windows, on the measured line
    assert terms["allocator peak at the smallest measured batch (weights, buffers, "
                 "activations)"] == reserved[1]
    assert abs(terms["allocator slack"] - 0.05 * line) <= 1
    assert embed["device"]["total"] == sum(terms.values())


def test_gpu_memory_readers_parse_and_say_why_they_cannot(monkeypatch):
    from embedprobe.measure import gpu

    apps = "4242, 1349\n4242, 10\n77, [N/A]\nno, thing\n"
    assert gpu.parse_compute_apps(apps) == {4242: 1359 * MIB}
    assert gpu.parse_gpu_used("719\n81559\n") == [719 * MIB, 81559 * MIB]
    monkeypatch.setenv("PATH", "/nonexistent")  # no nvidia-smi either
    with pytest.raises(gpu.GpuMemoryUnavailable) as caught:
        gpu.gpu_process_memory()
    text = str(caught.value)
    assert text.startswith("NVML: ") and "nvidia-smi: not on PATH" in text
    assert f"no entry for process {__import__('os').getpid()}" in text


@no_cuda
def test_the_gpu_validation_grid_refuses_without_a_gpu():
    run = subprocess.run([sys.executable, str(PROJECT / "scripts" / "validate_memory.py"),
                          "--device", "cuda"], capture_output=True, text=True, timeout=300,
                         env={"PYTHONPATH": str(PROJECT / "workflow"), "PATH": "/usr/bin:/bin"})
    assert run.returncode == 2, run.stderr[-2000:]
    assert "error: --device cuda needs an NVIDIA GPU" in run.stderr
    assert "\nfix: run it on a GPU node" in run.stderr
