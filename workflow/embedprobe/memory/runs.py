"""The runs table: every embed and probe attempt's measured peak beside its estimate.

A job killed for memory gets SIGKILL and cannot write its own row. So each attempt keeps a
small sidecar file with its request, its SLURM job id and the peak seen so far (sampled every
half second); the next attempt of the same job finds it unfinished and records that attempt:
as the scheduler saw it where SLURM still knows the job (OUT_OF_MEMORY, or FAILED with the
memory-limit message in its log: oom; CANCELLED: killed), else oom when its last sampled peak
had reached 80% of its request, else killed.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import threading
import time
from pathlib import Path

from embedprobe.core.paths import output_path
from embedprobe.core.units import MIB
from embedprobe.measure.limits import job_owns_cgroup
from embedprobe.measure.peaks import cgroup_memory_peak, self_peak_rss

SAMPLE_SECONDS = 0.5
OOM_SHARE = 0.8


OOM_MESSAGES = ("exceeded memory limit", "oom-kill", "out of memory", "out_of_memory")


# ------------------------------------------------------------------------------ the writer


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value).replace("\t", " ").replace("\n", " ")


def append_runs_row(path: str | Path, row: dict) -> None:
    """Append one row to a TSV runs table; safe when several jobs append at once.

    An exclusive flock serialises writers; the first writer writes the header (the row's keys).
    Later rows follow that header: missing columns stay empty, unknown keys are refused (a
    silently dropped column is how measurements get lost).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+", encoding="utf-8") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            handle.seek(0)
            header_line = handle.readline()
            if header_line:
                columns = header_line.rstrip("\n").split("\t")
                unknown = sorted(set(row) - set(columns))
                if unknown:
                    raise ValueError(
                        f"{path}: columns {unknown} are not in its header {columns}; "
                        "write them to a new runs table"
                    )
                text = ""
            else:
                columns = list(row)
                text = "\t".join(columns) + "\n"
            text += "\t".join(_cell(row.get(column)) for column in columns) + "\n"
            handle.seek(0, os.SEEK_END)
            handle.write(text)
            handle.flush()
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


# ------------------------------------------------------------------------------ the attempts


def slurm_verdict(job_id: str | None) -> str | None:
    """'oom' or 'killed' for a finished SLURM job, from `scontrol` (and its log); else None."""
    if not job_id or shutil.which("scontrol") is None:
        return None
    try:
        out = subprocess.run(["scontrol", "show", "job", "-o", str(job_id)], capture_output=True,
                             text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    state = re.search(r"JobState=(\S+)", out)
    if state is None:
        return None
    if state.group(1) == "OUT_OF_MEMORY":
        return "oom"
    if state.group(1) == "CANCELLED":
        return "killed"
    log = re.search(r"StdOut=(\S+)", out)
    if state.group(1) == "FAILED" and log and Path(log.group(1)).is_file():
        text = Path(log.group(1)).read_text(errors="replace").lower()
        return "oom" if any(m in text for m in OOM_MESSAGES) else "killed"
    return None


class JobRecord:
    """Context manager around one attempt of one job; appends its row when it ends."""

    def __init__(self, results_root: str | Path, rule: str, job: str, dataset: str, model: str,
                 attempt: int, estimate_mb: float | None, request_mb: int | None):
        self.table = output_path("runs", {"results_root": results_root})
        safe = job.replace("/", "_")
        self.sidecar_dir = Path(results_root) / "memory" / "attempts" / rule / dataset / model
        self.sidecar = self.sidecar_dir / f"{safe}.attempt{attempt}.json"
        self.base = {"rule": rule, "job": job, "dataset": dataset, "model": model}
        self.attempt, self.estimate_mb, self.request_mb = attempt, estimate_mb, request_mb
        self.started = time.monotonic()
        self._stop = threading.Event()
        self._sampler: threading.Thread | None = None
        self._safe = safe

    def row(self, attempt, peak_mb, status, category, seconds, request_mb=None) -> dict:
        ratio = (peak_mb / self.estimate_mb) if self.estimate_mb and peak_mb else None
        return {"time": time.strftime("%Y-%m-%dT%H:%M:%S"), "host": os.uname().nodename,
                **self.base, "attempt": attempt, "estimate_mb": self.estimate_mb,
                "request_mb": request_mb if request_mb is not None else self.request_mb,
                "peak_mb": round(peak_mb, 1) if peak_mb else None,
                "ratio": round(ratio, 3) if ratio else None, "status": status,
                "category": category, "seconds": round(seconds, 1)}

    def _record_killed_attempts(self) -> None:
        """Earlier attempts whose sidecar was never finished were killed from outside."""
        for stale in sorted(self.sidecar_dir.glob(f"{self._safe}.attempt*.json")):
            try:
                state = json.loads(stale.read_text())
            except (OSError, json.JSONDecodeError):
                continue
            peak, request = state.get("peak_mb") or 0, state.get("request_mb")
            verdict = slurm_verdict(state.get("slurm_job_id"))
            if verdict is None:
                verdict = "oom" if request and peak >= OOM_SHARE * request else "killed"
            append_runs_row(self.table, self.row(state["attempt"], peak, verdict, verdict,
                                                 state.get("seconds", 0), request))
            stale.unlink(missing_ok=True)

    def _peak_mb(self) -> float:
        peak = self_peak_rss()
        if job_owns_cgroup():
            peak = max(peak, cgroup_memory_peak() or 0)
        return peak / MIB

    def _write_sidecar(self) -> None:
        state = {"attempt": self.attempt, "request_mb": self.request_mb,
                 "slurm_job_id": os.environ.get("SLURM_JOB_ID"),
                 "peak_mb": round(self._peak_mb(), 1),
                 "seconds": round(time.monotonic() - self.started, 1)}
        tmp = self.sidecar.with_suffix(".tmp")
        tmp.write_text(json.dumps(state))
        tmp.replace(self.sidecar)

    def _sample(self) -> None:
        while not self._stop.wait(SAMPLE_SECONDS):
            self._write_sidecar()

    def __enter__(self) -> JobRecord:
        self.sidecar_dir.mkdir(parents=True, exist_ok=True)
        self._record_killed_attempts()
        self._write_sidecar()
        self._sampler = threading.Thread(target=self._sample, daemon=True)
        self._sampler.start()
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self._stop.set()
        if self._sampler is not None:
            self._sampler.join()
        status = "ok" if exc is None else "failed"
        category = "" if exc is None else getattr(exc, "category", type(exc).__name__)
        if category == "oom":
            status = "oom"
        append_runs_row(self.table, self.row(self.attempt, self._peak_mb(), status, category,
                                             time.monotonic() - self.started))
        self.sidecar.unlink(missing_ok=True)
