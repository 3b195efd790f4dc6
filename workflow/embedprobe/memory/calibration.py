"""The memory calibration table: the fitted constants of the formulas, by job type.

config/memory_calibration.yaml is shipped (scripts/calibrate_memory.py fits it on the
project's real jobs); the config key `memory.calibration` names another one (e.g. one that
`embedprobe calibrate --from-runs` refitted from this cluster's runs).
"""

from __future__ import annotations

import copy
import shlex
from pathlib import Path

import yaml

from embedprobe.core.errors import UsageError
from embedprobe.memory.estimate import DEFAULT_CONSTANTS, job_constants
from embedprobe.memory.formulas import embed_baseline

CALIBRATION_PATH = Path(__file__).resolve().parents[3] / "config" / "memory_calibration.yaml"


def calibration_path(config: dict) -> Path:
    """The table the config names (`memory.calibration`), else the shipped one."""
    return Path(config["memory"]["calibration"] or CALIBRATION_PATH)


def embed_baseline_from_table(config: dict, cuda: bool, weights_bytes: int) -> int:
    """The embed baseline the calibration table in use gives (for comparing a measured one)."""
    calibration = load_calibration(calibration_path(config))
    job = "embed_gpu" if cuda else "embed_cpu"
    c = job_constants(job, calibration)
    return int(embed_baseline({"weights_bytes": weights_bytes}, c))


def table_baseline_of_check(config: dict, result) -> int:
    """What the calibration table in use takes for the embed baseline `check` measured on this
    node (a pipeline.check.CheckResult; 0 where the forward pass did not run)."""
    if not result.baseline_bytes:
        return 0
    return embed_baseline_from_table(config, result.device.startswith("cuda"),
                                     result.n_params * 4)


def load_calibration(path: str | Path = CALIBRATION_PATH) -> dict:
    """The calibration table; constants it lacks are filled from the defaults and listed.

    Returns {"environment": ..., "jobs": {job: {constant: value}}, "defaulted": [...], ...}.
    """
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"memory calibration table {path} not found",
                         fix=f"python scripts/calibrate_memory.py --quick --out "
                             f"{shlex.quote(str(path))}   # in the project folder")
    try:
        table = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as exc:
        raise UsageError(f"memory calibration table {path} is not valid YAML: {exc}",
                         fix="rerun scripts/calibrate_memory.py to rewrite it") from exc
    if not isinstance(table.get("jobs", {}), dict):
        raise UsageError(f"{path}: 'jobs' must map job types to constants",
                         fix="rerun scripts/calibrate_memory.py to rewrite it")
    table = copy.deepcopy(table)
    jobs = table.setdefault("jobs", {})
    defaulted = []
    for job, constants in DEFAULT_CONSTANTS.items():
        have = jobs.setdefault(job, {})
        for name, value in constants.items():
            if name not in have:
                have[name] = value
                defaulted.append(f"{job}.{name}")
    table["defaulted"] = defaulted
    return table
