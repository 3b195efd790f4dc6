"""What a job asks the scheduler for, in numbers: the memory of each attempt and the runtime
from the job's preflight estimate, the GPU memory it predicted, and the check job's memory.

smk/resources.py hands these to the rules as Snakemake resources. Light on purpose: the
Snakefile imports it while it builds the plan, and reads the estimates only when a job is sized.
"""

from __future__ import annotations

import math

from embedprobe.core.units import MIB
from embedprobe.memory.records import job_estimate


def memory_request_mb(config: dict, estimate_path, job_key: str, attempt: int) -> int:
    """The preflight request, scaled on retries (x memory.retry_factor per attempt) and capped
    at the limit; `memory.first_request_factor` < 1 shrinks the first attempt on purpose."""
    estimate = job_estimate(estimate_path, job_key)
    if attempt == 1:
        factor = float(config["memory"]["first_request_factor"])
    else:
        factor = float(config["memory"]["retry_factor"]) ** (attempt - 1)
    request = int(estimate["request_mb"] * factor)
    limit = estimate.get("limit_mb")
    return max(1, min(request, limit) if limit else request)


def runtime_minutes(estimate_path, job_key: str, attempt: int) -> int:
    """The preflight runtime, doubled on each retry (a timeout is a failure too)."""
    return int(job_estimate(estimate_path, job_key)["runtime_min"] * 2 ** (attempt - 1))


def gpu_request_mb(estimate_path, job_key: str) -> int:
    """The GPU memory the preflight predicted; 0 for an estimate made before the device was
    cuda (the HTCondor plugin then sets nothing)."""
    return (job_estimate(estimate_path, job_key).get("device") or {}).get("request_mb", 0)


def check_memory_mb(config: dict, on_gpu: bool) -> int:
    """The check job's request: a small job's, plus on a GPU the host memory CUDA's libraries
    take (the calibration's embed_gpu baseline), since check then runs the model there."""
    small = int(config["memory"]["small_job_mb"])
    if not on_gpu:
        return small
    from embedprobe.memory.calibration import calibration_path, load_calibration

    baseline = load_calibration(calibration_path(config))["jobs"]["embed_gpu"]["baseline_bytes"]
    return small + math.ceil(baseline / MIB)
