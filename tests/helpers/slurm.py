"""What the SLURM tests ask the real scheduler (scripts/local-slurm.sh): is it up, which jobs ran
for a workdir, with how much memory, and cancelling a killed session's leftovers.

Without an accounting database `sacct` does not answer; `scontrol show job` does, for every job
younger than the cluster's MinJobAge (600 s on the local cluster), finished ones included.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

# how long a node may stay `completing` a finished job before the tests count it as down
NODE_SETTLE_SECONDS = 120
_UNIT_MB = {"K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024}


def slurm_unavailable() -> str | None:
    """Why the SLURM tests cannot run here, or None when a controller answers and a node is up."""
    if shutil.which("sbatch") is None or shutil.which("scontrol") is None:
        return "no SLURM client tools (run scripts/local-slurm.sh start)"
    ping = subprocess.run(["scontrol", "ping"], capture_output=True, text=True, timeout=30)
    if "UP" not in ping.stdout:
        return "slurmctld does not answer `scontrol ping` (run scripts/local-slurm.sh start)"
    # The SLURM tests run back to back on one test worker (tests/conftest.py): the node may
    # still be completing the previous test's job, which takes seconds.
    settled_by = time.monotonic() + NODE_SETTLE_SECONDS
    while True:
        nodes = [state.rstrip("*") for state in subprocess.run(
            ["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, timeout=30).stdout.split()]
        if any(state in ("idle", "mixed", "allocated") for state in nodes):
            return None
        if not nodes or "completing" not in nodes or time.monotonic() > settled_by:
            return f"no SLURM node is up (sinfo says {nodes or 'nothing'})"
        time.sleep(2)


def require_slurm() -> None:
    """Skip the calling test where no controller answers; fail it instead where
    EMBEDPROBE_REQUIRE_SLURM is set (CI), so the SLURM tests cannot pass by skipping there."""
    import pytest

    reason = slurm_unavailable()
    if reason and os.environ.get("EMBEDPROBE_REQUIRE_SLURM"):
        pytest.fail(f"EMBEDPROBE_REQUIRE_SLURM is set (CI) but {reason}")
    if reason:
        pytest.skip(reason)


def quick_failing_conf(folder: Path) -> Path | None:
    """Where the SLURM client tools are installed but no controller answers: a copy of their
    config that gives up on the controller after 1 s, not 10, or None where nothing is to gain.

    Snakemake imports every executor plugin at start, and the SLURM plugin then asks
    `scontrol show config`, which waits MessageTimeout (10 s) for a controller that is down
    (../shared/FACTS.md): every `snakemake` a test starts would pay it. With no controller no
    SLURM test runs, so nothing else reads the copy."""
    conf = Path(os.environ.get("SLURM_CONF", "/etc/slurm/slurm.conf"))
    if shutil.which("scontrol") is None or not conf.is_file():
        return None
    ping = subprocess.run(["scontrol", "ping"], capture_output=True, text=True, timeout=30)
    if "UP" in ping.stdout:
        return None
    lines = [line for line in conf.read_text().splitlines()
             if not line.strip().lower().startswith("messagetimeout")]
    copy = folder / "slurm.conf"
    copy.write_text("\n".join([*lines, "MessageTimeout=1", ""]))
    return copy


def memory_mb(text: str) -> float:
    """SLURM's memory notation (300M, 2G, 1.50G) in MB."""
    match = re.fullmatch(r"([\d.]+)([KMGT]?)", text.strip())
    if match is None:
        raise ValueError(f"not a SLURM memory size: {text!r}")
    return float(match.group(1)) * _UNIT_MB[match.group(2) or "M"]


@dataclass(frozen=True)
class SlurmJob:
    job_id: int
    name: str  # the plugin's run id: one per snakemake session
    state: str  # COMPLETED, FAILED, OUT_OF_MEMORY, RUNNING, PENDING, CANCELLED, ...
    comment: str  # the plugin's rule_<rule>_wildcards_<values joined by _>
    mem_mb: float  # what the job asked for (sbatch --mem), as SLURM recorded it
    cpus: int
    work_dir: str
    exit_code: str  # "<code>:<signal>"

    def is_rule(self, rule: str, *wildcard_values: str) -> bool:
        expected = f"rule_{rule}"
        if wildcard_values:
            expected += "_wildcards_" + "_".join(str(v) for v in wildcard_values)
        return self.comment == expected


def _fields(line: str) -> dict[str, str]:
    # Values may hold spaces (Comment, Reason): split only before the next `Key=`.
    pairs = re.findall(r"(\w[\w:/]*)=(.*?)(?=\s+\w[\w:/]*=|$)", line.strip())
    return dict(pairs)


def slurm_jobs(workdir: Path) -> list[SlurmJob]:
    """Every job the controller still knows that ran in `workdir`, oldest first."""
    out = subprocess.run(["scontrol", "show", "job", "--oneliner"], capture_output=True,
                         text=True, timeout=60)
    jobs = []
    for line in out.stdout.splitlines():
        if not line.startswith("JobId="):
            continue
        f = _fields(line)
        if Path(f.get("WorkDir", "")).resolve() != Path(workdir).resolve():
            continue
        jobs.append(SlurmJob(
            job_id=int(f["JobId"]), name=f.get("JobName", ""), state=f.get("JobState", ""),
            comment=f.get("Comment", ""), mem_mb=memory_mb(f.get("MinMemoryNode", "0")),
            cpus=int(f.get("NumCPUs", "0")), work_dir=f.get("WorkDir", ""),
            exit_code=f.get("ExitCode", ""),
        ))
    return sorted(jobs, key=lambda job: job.job_id)


def cancel_jobs(workdir: Path) -> list[int]:
    """scancel every queued or running job of `workdir` (what a killed session leaves behind)."""
    live = [j.job_id for j in slurm_jobs(workdir) if j.state in ("PENDING", "RUNNING")]
    if live:
        subprocess.run(["scancel", *map(str, live)], check=True, timeout=60)
    return live
