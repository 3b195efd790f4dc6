"""Retries only where more memory or time can help.

Snakemake resubmits a failed job whatever the reason (the profiles' `retries:`), each attempt
with a larger memory request and runtime (smk/resources.py). nf-core's base config retries only
on the exit statuses of a kill; embedprobe decides from the failure record instead: an attempt
after the first (`--attempt N`, N > 1) first reads its predecessor's `<output>.failure.json`
(core/errors.py):

- no record: the job was killed from outside (SLURM's or HTCondor's memory limit, a time limit:
  SLURM's TIMEOUT is a SIGTERM and then a SIGKILL, which leave no record, a lost node). The retry
  runs, with the larger request.
- category `oom`, or a MemoryError or torch's OutOfMemoryError that escaped: out of memory. The
  retry runs.
- category `startup`, once: the job crashed while a module was being imported (a module
  body's frame in the traceback, core/errors.crashed_import), which no input of the job
  explains: two threads importing one package at once can do it on a loaded node. It is told
  apart from a deterministic failure by repetition: the record counts the start-up crashes in
  a row (`startup_crashes`), and only the first is retried; a second one in a row would come
  a third time, so it stops like the rest. A missing package (ModuleNotFoundError) is not a
  start-up crash: it stops at once.
- anything else (data, usage, weights, model, device, cache, a bug): it would fail the same way
  again. The attempt stops at once, before reading any configuration or data, with that
  record's message and fix and exit status 1, and leaves the record as it is (the results
  table and `embedprobe`'s users read it).

An attempt that goes ahead removes the record it read (and attempt 1 a record of an earlier
run), so the next attempt reads only what this one leaves.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from embedprobe.core.errors import STARTUP, read_failure_record
from embedprobe.core.paths import failure_record

RETRY_CATEGORIES = frozenset({"oom"})
# Memory errors that reach the record as a plain exception (category "exception")
RETRY_EXCEPTIONS = frozenset({"MemoryError", "OutOfMemoryError"})
STARTUP_RETRIES = 1  # start-up crashes in a row that are retried (module docstring)


@dataclass(frozen=True)
class AttemptStart:
    """begin_attempt's answer: `refusal` is None to run this attempt, else the text to print
    before exiting 1; `startup_crashes` counts the start-up crashes in a row before it."""

    refusal: str | None = None
    startup_crashes: int = 0


def worth_retrying(record: dict | None) -> bool:
    """Whether another attempt may succeed where this record's failed: more memory or time, or
    a first start-up crash (None: the job was killed from outside and left no record)."""
    if record is None:
        return True
    if record.get("category") == STARTUP:
        return int(record.get("startup_crashes", 1)) <= STARTUP_RETRIES
    return (record.get("category") in RETRY_CATEGORIES
            or record.get("exception") in RETRY_EXCEPTIONS)


def refusal(record: dict, path: Path, attempt: int) -> str:
    """What a refused attempt prints: the earlier failure's error and fix, then why it stops."""
    lines = [f"error: {record.get('message') or '(no message recorded)'}"]
    if record.get("fix"):
        lines.append(f"fix: {record['fix']}")
    lines.append(
        f"note: attempt {attempt} stopped without running: the failure before it "
        f"({record.get('category', 'unknown')}, {record.get('time', 'time unknown')}) is not "
        f"one that more memory or time can fix, so it would fail the same way; its record "
        f"stays at {path}. Fix the cause, then run snakemake again.")
    return "\n".join(lines)


def begin_attempt(output: str | Path, attempt: int) -> AttemptStart:
    """Before an embed or probe job does anything: whether this attempt runs (its
    predecessor's record, if any, removed) or the text to print and exit 1 with (module
    docstring)."""
    path = failure_record(output)
    record = read_failure_record(output) if attempt > 1 else None
    if record is not None and not worth_retrying(record):
        return AttemptStart(refusal=refusal(record, path, attempt))
    path.unlink(missing_ok=True)
    crashes = int(record.get("startup_crashes", 0)) if record is not None else 0
    return AttemptStart(startup_crashes=crashes)
