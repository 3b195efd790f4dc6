"""Errors that carry a category and a remedy, and the JSON failure record every step writes."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from embedprobe.core.paths import failure_record


class EmbedprobeError(Exception):
    """A failure with a category (for tools), a message and a `fix:` line (for people)."""

    category = "error"
    exit_code = 1

    def __init__(self, message: str, fix: str | None = None):
        super().__init__(message)
        self.message = message
        self.fix = fix

    def render(self) -> str:
        lines = [f"error: {self.message}"]
        if self.fix:
            lines.append(f"fix: {self.fix}")
        return "\n".join(lines)


class UsageError(EmbedprobeError):
    """Bad configuration, unknown names, refused input: exit code 2."""

    category = "usage"
    exit_code = 2


class DataError(EmbedprobeError):
    """A data file is missing, malformed or inconsistent: a usage error (the user must fix it)."""

    category = "data"
    exit_code = 2


class WeightsError(EmbedprobeError):
    """A checkpoint is missing or cannot be loaded safely."""

    category = "weights"
    exit_code = 2


class ModelError(EmbedprobeError):
    """A model failed at build or forward time, or produced unusable output."""

    category = "model"


class DeviceError(EmbedprobeError):
    """The configured device (embed.device) is not there: a usage error on this machine."""

    category = "device"
    exit_code = 2


class OutOfMemory(EmbedprobeError):
    """Memory ran out even after the cheaper remedies (smaller batch, fewer fits)."""

    category = "oom"


class DownloadError(EmbedprobeError):
    """A dataset's download failed: the server, the connection, a checksum or the disk."""

    category = "download"


class CacheError(EmbedprobeError):
    """An embedding store is damaged, incomplete or belongs to other inputs."""

    category = "cache"


STARTUP = "startup"  # the category of a crash while a module was being imported


def crashed_import(error: BaseException) -> tuple[str, str] | None:
    """(the module the job imported, the one that raised) when `error` escaped from a module
    being imported (a module body's frame in its traceback), else None.

    Such a crash depends on no input of the job: the import reads no data or setting. It is
    what a half-initialised module looks like when two threads import one package at once
    (core/thread_imports.py). A missing package (ModuleNotFoundError) and the project's own
    errors are not counted: they say what is wrong, and they happen again."""
    if isinstance(error, EmbedprobeError | ModuleNotFoundError):
        return None
    bodies = []
    frame = error.__traceback__
    while frame is not None:
        if frame.tb_frame.f_code.co_name == "<module>":
            bodies.append(frame.tb_frame.f_globals.get("__name__", "?"))
        frame = frame.tb_next
    return (bodies[0], bodies[-1]) if bodies else None


def startup_fields(error: BaseException, earlier_startup_crashes: int) -> dict:
    """A start-up crash's record fields, in words: what crashed, and how often in a row ({}
    for any other failure)."""
    modules = crashed_import(error)
    if modules is None:
        return {}
    asked, raised = modules
    where = asked if asked == raised else f"{asked} (in {raised})"
    count = earlier_startup_crashes + 1
    return {
        "category": STARTUP,
        "message": (f"the job crashed at start-up while importing {where}: "
                    f"{type(error).__name__}: {error}. No input of the job explains it (the "
                    "import reads no data or setting); two threads importing one package at "
                    "once can cause it on a loaded node"),
        "fix": ("nothing to change: Snakemake's retry runs the job once more. If it crashes "
                "again the same way, run the job's command by hand to see the whole traceback"
                if count == 1 else
                "it crashed the same way twice in a row, so it is not left to chance: run the "
                "job's command by hand to see the whole traceback, and check the installation "
                "(scripts/install.sh)"),
        "module": asked,
        "startup_crashes": count,
    }


def write_failure_record(output: str | Path, error: BaseException, step: str,
                         earlier_startup_crashes: int = 0) -> Path:
    """Write `<output>.failure.json` beside the output so tools read structure, not strings.
    `earlier_startup_crashes`: how many start-up crashes in a row came before this attempt
    (core/attempts.py retries one)."""
    out = Path(output)
    record_path = failure_record(out)
    record_path.parent.mkdir(parents=True, exist_ok=True)
    record = {
        "step": step,
        "output": str(out),
        "category": getattr(error, "category", "exception"),
        "message": getattr(error, "message", str(error)),
        "fix": getattr(error, "fix", None),
        "exception": type(error).__name__,
        "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "host": os.uname().nodename,
    } | startup_fields(error, earlier_startup_crashes)
    record_path.write_text(json.dumps(record, indent=2) + "\n")
    return record_path


def read_failure_record(output: str | Path) -> dict | None:
    """The failure record of `output`, or None when there is none; one that cannot be read
    counts as none (a job killed while writing it)."""
    try:
        record = json.loads(failure_record(output).read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def remove_failure_record(output: str | Path) -> None:
    """A step that now succeeded drops the record of its earlier failure."""
    failure_record(output).unlink(missing_ok=True)
