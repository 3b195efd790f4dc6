"""The resources every rule asks for, as one dict a rule unpacks: `resources: **...`.

Three kinds of job: a small one (a fixed request and runtime), a small one that runs the model
(check: on a GPU it asks for one, and for the host memory CUDA takes), and one sized by its
preflight estimate (embed, probe: memory and runtime grow per attempt). The numbers are
memory/requests.py's; here they become what Snakemake calls. Snakemake reads a callable's
argument names (wildcards, input, attempt) to know what to pass it: keep them.
"""

from __future__ import annotations

from embedprobe.memory.requests import (
    check_memory_mb,
    gpu_request_mb,
    memory_request_mb,
    runtime_minutes,
)
from embedprobe.pipeline.device import embed_device

SIZED_JOBS = ("embed", "probe")


def gpu_resources(config: dict, job_key: str | None = None) -> dict:
    """What a check or embed job asks the scheduler for when the config says embed.device cuda:
    one GPU (SLURM `gpu` -> --gpus, HTCondor request_gpus) and, for a job with a preflight
    estimate, the GPU memory it predicted (HTCondor gpus_minimum_memory). Nothing on the CPU:
    HTCondor would otherwise be sent request_gpus = 0."""
    if embed_device(config) != "cuda":
        return {}
    resources = {"gpu": 1, "request_gpus": 1}
    if job_key is not None:
        resources["htcondor_gpus_min_mem_mb"] = lambda wildcards, input: gpu_request_mb(
            input.estimate, job_key)
    return resources


def small_job_resources(config: dict, minutes: int, runs_model: bool = False) -> dict:
    """A small job's memory (`memory_small_job_mb`) and runtime. One that runs the model
    (check) asks, on a GPU, for one and for the host memory CUDA's libraries take."""
    if runs_model:
        mem_mb = check_memory_mb(config, embed_device(config) == "cuda")
        return {**gpu_resources(config), "mem_mb": mem_mb, "htcondor_request_mem_mb": mem_mb,
                "runtime": minutes}
    return {"mem_mb": config["memory_small_job_mb"],
            "htcondor_request_mem_mb": config["memory_small_job_mb"], "runtime": minutes}


def probe_key(wildcards) -> str:
    from embedprobe.memory.records import job_key

    return job_key(wildcards.benchmark, wildcards.fold)


def estimated_resources(config: dict, job: str) -> dict:
    """An embed or probe job's resources from its preflight estimate (`input.estimate`): the
    memory request and runtime of each attempt, the attempt itself (the job is told it), and
    for embed the GPU (gpu_resources)."""
    if job not in SIZED_JOBS:
        raise ValueError(f"estimated_resources: job is one of {SIZED_JOBS}, not {job!r}")

    def key(wildcards) -> str:
        return "embed" if job == "embed" else probe_key(wildcards)

    def mem_mb(wildcards, input, attempt):
        return memory_request_mb(config, input.estimate, key(wildcards), attempt)

    def runtime(wildcards, input, attempt):
        return runtime_minutes(input.estimate, key(wildcards), attempt)

    def attempt_number(wildcards, attempt):
        return attempt

    gpu = gpu_resources(config, "embed") if job == "embed" else {}
    return {**gpu, "mem_mb": mem_mb, "htcondor_request_mem_mb": mem_mb, "runtime": runtime,
            "attempt_number": attempt_number}
