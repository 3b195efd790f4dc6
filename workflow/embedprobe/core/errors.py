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


class CacheError(EmbedprobeError):
    """An embedding store is damaged, incomplete or belongs to other inputs."""

    category = "cache"


def write_failure_record(output: str | Path, error: BaseException, step: str) -> Path:
    """Write `<output>.failure.json` beside the output so tools read structure, not strings."""
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
    }
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
