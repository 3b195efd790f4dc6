"""The resources every rule asks for, as one dict a rule unpacks: `resources: **...`.

Three kinds of job: a small one (a fixed request and runtime), a small one that runs the model
(check: on a GPU it asks for one, and for the host memory CUDA takes), and one sized by its
preflight estimate (embed, probe: memory and runtime grow per attempt). The numbers are
memory/requests.py's; here they become what Snakemake calls. Snakemake reads a callable's
argument names (wildcards, input, attempt) to know what to pass it: keep them.
"""

from __future__ import annotations

import functools
import importlib.metadata
import re
import subprocess
import sys

from embedprobe.memory.requests import (
    check_memory_mb,
    gpu_request_mb,
    memory_request_mb,
    runtime_minutes,
)
from embedprobe.pipeline.device import embed_device

SIZED_JOBS = ("embed", "embed_shard", "probe")

# The lowest compute capability each CUDA build of the pinned torch runs on (scripts/install.sh
# installs cu126, cu128 or cu130; PyTorch's CUDA support matrix, pytorch/pytorch#172352):
# for a CUDA torch that cannot list its architectures. A CPU torch here (a login node without a
# GPU) cannot say which build the jobs run: FALLBACK_CAPABILITY, the lowest of them.
CUDA_BUILD_CAPABILITY = {"12.6": "5.0", "12.8": "7.5", "13.0": "7.5"}
FALLBACK_CAPABILITY = "5.0"
_ASK_TORCH = ("import torch; print(torch.version.cuda or ''); "
              "print(' '.join(torch.cuda.get_arch_list()))")


def lowest_capability(arch_list) -> str | None:
    """The lowest compute capability of torch's compiled architectures, as X.Y ('sm_75' ->
    '7.5', 'sm_120' -> '12.0'); None without an sm_ entry (compute_XY is PTX for newer GPUs)."""
    found = [(int(m[1]), int(m[2])) for m in
             (re.fullmatch(r"sm_(\d+)(\d)[a-z]?", arch) for arch in arch_list) if m]
    return "{}.{}".format(*min(found)) if found else None


@functools.cache
def min_cuda_capability() -> str:
    """The lowest compute capability the installed torch supports: torch.cuda.get_arch_list()
    (a CUDA build lists it without a GPU), else the constant of its CUDA build, else
    FALLBACK_CAPABILITY. Asked in a child process, once per Snakemake process: torch never
    enters Snakemake's own, which every cluster job runs again inside its memory request. A
    torch labelled +cpu is not asked: it lists nothing."""
    try:
        if importlib.metadata.version("torch").endswith("+cpu"):
            return FALLBACK_CAPABILITY
    except importlib.metadata.PackageNotFoundError:
        return FALLBACK_CAPABILITY
    try:
        answer = subprocess.run([sys.executable, "-c", _ASK_TORCH], capture_output=True,
                                text=True, timeout=300, check=True).stdout.splitlines()
    except (OSError, subprocess.SubprocessError):
        return FALLBACK_CAPABILITY
    cuda, archs = (answer + ["", ""])[:2]
    return (lowest_capability(archs.split()) or CUDA_BUILD_CAPABILITY.get(cuda)
            or FALLBACK_CAPABILITY)


def gpu_resources(config: dict, job_key: str | None = None) -> dict:
    """What a check or embed job asks the scheduler for when the config says embed.device cuda:
    one GPU (SLURM `gpu` -> --gpus, HTCondor request_gpus) of a compute capability the installed
    torch runs on (HTCondor gpus_minimum_capability; asked only when such a job is planned)
    and, for a job with a preflight estimate, the GPU memory it predicted (HTCondor
    gpus_minimum_memory). Nothing on the CPU: HTCondor would otherwise be sent
    request_gpus = 0."""
    if embed_device(config) != "cuda":
        return {}
    resources = {"gpu": 1, "request_gpus": 1,
                 "gpus_minimum_capability": lambda wildcards: min_cuda_capability()}
    if job_key is not None:
        resources["htcondor_gpus_min_mem_mb"] = lambda wildcards, input: gpu_request_mb(
            input.estimate, job_key)
    return resources


def small_job_resources(config: dict, minutes: int, runs_model: bool = False) -> dict:
    """A small job's memory (`memory.small_job_mb`) and runtime. One that runs the model
    (check) asks, on a GPU, for one and for the host memory CUDA's libraries take."""
    mem_mb = check_memory_mb(config, runs_model and embed_device(config) == "cuda")
    gpu = gpu_resources(config) if runs_model else {}
    return {**gpu, "mem_mb": mem_mb, "htcondor_request_mem_mb": mem_mb, "runtime": minutes}


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
        return "embed" if job.startswith("embed") else probe_key(wildcards)

    def mem_mb(wildcards, input, attempt):
        # a shard asks for the pair's memory: its peak is set by a recording and a batch, not
        # by the row count (docs/usage.md, "Sharded embedding")
        return memory_request_mb(config, input.estimate, key(wildcards), attempt)

    def runtime(wildcards, input, attempt):
        # a shard's share of the pair's runtime (shards are cut at equal window counts)
        minutes = runtime_minutes(input.estimate, key(wildcards), attempt)
        return -(-minutes // int(wildcards.shards)) if job == "embed_shard" else minutes

    def attempt_number(wildcards, attempt):
        return attempt

    gpu = gpu_resources(config, "embed") if job.startswith("embed") else {}
    return {**gpu, "mem_mb": mem_mb, "htcondor_request_mem_mb": mem_mb, "runtime": runtime,
            "attempt_number": attempt_number}
