"""Fixed inputs for every memory job type, and what an estimates module makes of them.

tests/memory/test_estimates_identity.py compares today's module with numbers recorded from the
module
before the job types became one object each (a pure refactor must not move a byte).
"""

from __future__ import annotations

import hashlib
import json

from embedprobe.core.units import MIB

GiB = 1 << 30

# Constants that differ from the code's defaults for some job types (merging is exercised).
TABLE = {"jobs": {
    "common": {"cluster_wrapper_bytes": 314_572_800},
    "embed_cpu": {"baseline_bytes": 429_449_216, "recording_copies": 1.482, "window_copies": 0.0,
                  "activation_factor": 1.289},
    "embed_gpu": {"baseline_bytes": 3_221_225_472, "reader_server_bytes": 73_400_320},
    "embed_gpu_device": {"cuda_context_bytes": 629_145_600},
    "probe_logistic": {"baseline_bytes": 127_664_128, "overhead_bytes": 7_213_626,
                       "embeddings_copies": 1.704, "window_row_bytes": 362,
                       "workspace_factor": 19.15, "block_rows": 26_720.0,
                       "square_copies": 1.582},
    "probe_ridge": {"baseline_bytes": 179_826_688, "data_copies": 4.808, "gram_factor": 4.7,
                    "kernel_factor": 3.267},
    "aggregate_subject_mean": {"chunk_copies": 1.76, "index_row_bytes": 189},
    "probe_brain_age": {"baseline_bytes": 179_826_688, "chunk_copies": 1.098,
                        "gram_factor": 0.0},
}}

_EMBED = {"batch_size": 32, "n_channels": 2, "n_samples": 6000, "feature_dim": 256,
          "weights_bytes": 13_000_000, "recording_bytes": 2 * 8 * 3600 * 100 * 8,
          "resample_ratio": 2.0, "n_workers": 2, "n_windows": 200_000, "night_windows": 960,
          "batch_activation_bytes": 120 * MIB, "activation_batch_size": 32}
_GPU = {**_EMBED, "batch_size": 256, "n_workers": 4, "gpu_peaks": {1: 300 * MIB, 64: 2 * GiB},
        "gpu_total_bytes": 80 * GiB}
_LOGISTIC = {"n_train": 160_000, "n_val": 20_000, "n_test": 20_000, "dim": 256, "n_classes": 5,
             "n_jobs": 2, "n_fits": 6}
_MEANS = {"dim": 256, "chunk_rows": 65_536, "n_subjects": 78, "n_rows": 200_000}

# (job type, label, inputs, limit in MiB for fit_knobs)
CASES = [
    ("embed_cpu", "biot 8 h", _EMBED, 1_000),
    ("embed_cpu", "no readers, measured, cluster",
     {**_EMBED, "n_workers": 0, "measured_baseline_bytes": 512 * MIB, "on_cluster": True,
      "activation_batch_size": 8, "batch_activation_bytes": 40 * MIB, "min_batch_size": 4},
     900),
    ("embed_cpu", "defaults filled",
     {k: v for k, v in _EMBED.items() if k not in ("n_workers", "n_windows", "resample_ratio",
                                                  "activation_batch_size")}, None),
    ("embed_gpu", "reserved peaks, context", {**_GPU, "gpu_reserved_peaks": {1: 320 * MIB,
                                                                             64: 2.2 * GiB},
                                              "gpu_context_bytes": 700 * MIB}, 6_000),
    ("embed_gpu", "small gpu", {**_GPU, "gpu_total_bytes": 4 * GiB}, 64_000),
    ("embed_gpu", "below the smallest measured", {**_GPU, "batch_size": 1,
                                                  "gpu_peaks": {8: GiB, 32: 3 * GiB}}, None),
    ("embed_gpu_device", "allocated peaks", _GPU, None),
    ("embed_gpu_device", "reserved peaks", {**_GPU, "gpu_reserved_peaks": {1: 320 * MIB,
                                                                           64: 2.2 * GiB}},
     3_000),
    ("probe_logistic", "staging fold", _LOGISTIC, None),
    ("probe_logistic", "six fits at once", {**_LOGISTIC, "n_train": 400_000, "dim": 1024,
                                            "n_jobs": 6}, 9_000),
    ("probe_logistic", "float64, measured, cluster",
     {**_LOGISTIC, "dtype_bytes": 8, "measured_baseline_bytes": 150 * MIB, "on_cluster": True,
      "n_jobs": 9, "n_fits": 3}, 200),
    ("probe_ridge", "wide (dual)", {"n": 80, "p": 20_000}, None),
    ("probe_ridge", "tall (primal)", {"n": 200_000, "p": 256, "n_jobs": 3}, 1_000),
    ("probe_ridge", "forced primal, wide", {"n": 2_000, "p": 60_000, "ridge_form": "primal",
                                            "n_jobs": 2}, 40_000),
    ("aggregate_subject_mean", "sleep-edf", _MEANS, None),
    ("aggregate_subject_mean", "chunk over rows", {**_MEANS, "chunk_rows": 500_000,
                                                   "n_rows": 10_000, "on_cluster": True}, 10),
    ("probe_brain_age", "78 subjects", {**_MEANS, "n": 62, "p": 256, "n_fits": 32}, None),
    ("probe_brain_age", "wide, forced", {**_MEANS, "n": 3_000, "p": 20_000, "n_jobs": 4,
                                         "ridge_form": "primal", "dim": 20_000}, 30_000),
]


def outcome(estimates, calibration: dict, job: str, inputs: dict, limit_mb) -> dict:
    """What the estimate and the knob search give: every number a caller reads."""

    def numbers(result) -> dict:
        return {"terms": list(result.terms.items()), "total": result.total,
                "request_mb": result.request_mb, "verdict": result.verdict,
                "knobs": result.knobs, "tried": result.tried, "fix": result.fix,
                "inputs": result.inputs,
                "device": None if result.device is None else numbers(result.device)}

    plain = estimates.estimate(job, inputs, calibration, None)
    out = {"estimate": numbers(plain)}
    if limit_mb is not None:
        fitted = estimates.fit_knobs(job, inputs, calibration, limit_mb * MIB, 0.15,
                                     {"standard": 64_000, "bigmem": 512_000})
        out["fit_knobs"] = numbers(fitted)
    return out


def all_outcomes(estimates) -> dict:
    """{"<job>/<label>/<calibration>": outcome} for every case under both calibrations."""
    calibrations = {"defaults": {"jobs": estimates.DEFAULT_CONSTANTS}, "table": TABLE}
    return {f"{job}/{label}/{name}": outcome(estimates, cal, job, inputs, limit)
            for job, label, inputs, limit in CASES for name, cal in calibrations.items()}


def digest(value) -> str:
    """sha256 of the outcome as canonical JSON (terms, inputs, fix text: everything)."""
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:16]


def summary(outcomes: dict) -> dict:
    """Per case: (estimate total, total after the knob search, its request MB, verdict, device
    total, knobs, digest of the whole outcome)."""
    out = {}
    for key, result in outcomes.items():
        final = result.get("fit_knobs", result["estimate"])
        device = final["device"]
        out[key] = (result["estimate"]["total"], final["total"], final["request_mb"],
                    final["verdict"], None if device is None else device["total"],
                    final["knobs"], digest(json.loads(json.dumps(result))))
    return out
