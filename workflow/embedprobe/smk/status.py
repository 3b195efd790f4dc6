"""Where each job of a target stands, and what a target would run: `embedprobe status`, and the
API's `status()` and `plan()`.

The jobs are Snakemake's own: `snakemake --summary TARGET` lists every output of the target's
plan with its rule (done or not), `snakemake -n TARGET` the jobs a run would start. Each job's
verdict comes from, in this order:

- the scheduler (SLURM `squeue`, HTCondor `condor_q`), when it answers: `queued`, `running`;
- the job's own files: `failed` (its `<output>.failure.json`: category, message, fix), `done`
  (its output exists);
- the scheduler's word on the job's last attempt: `exited N`, `stopped` (time limit, held,
  suspended, preempted), `removed` (cancelled);
- Snakemake's records in `.snakemake/`: a job marked incomplete is `running` while a Snakemake
  holds this folder's lock, else `stopped` (its run was interrupted); an embed job with durable
  rows in its partial store is `partial`;
- else `missing`: not made yet.

A SLURM job is matched to its output by the external job id Snakemake records in its incomplete
marker, else by the comment the SLURM plugin gives every job (`rule_<rule>_wildcards_<values
joined by _>`); an HTCondor job by the `--target-jobs` of its arguments. Scheduler calls go
through `scheduler_output` (tests replace it).
"""

from __future__ import annotations

import base64
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from embedprobe.core.errors import EmbedprobeError, UsageError, read_failure_record
from embedprobe.core.paths import failure_record, pattern
from embedprobe.core.text import aligned_rows

# The rules whose jobs `status` lists, and the output (core/paths.py name) that stands for the job.
STATUS_RULES = {
    "index": "index",
    "check": "check",
    "preflight": "preflight",
    "embed": "embeddings",
    # a sharded pair's jobs (embed.shards): each shard, then the join that is its store
    "embed_shard": "embedding_shard",
    "embed_join": "embeddings",
    "preflight_probe": "preflight_probe",
    "probe": "fold_result",
    "aggregate": "results",
    "summary": "summary",
    "leaderboard": "leaderboard",
}
WILDCARD_COLUMNS = ("target", "benchmark", "dataset", "model", "fold")
VERDICTS = ("done", "partial", "failed", "running", "queued", "exited", "stopped", "removed",
            "missing")
SQUEUE = ["squeue", "--me", "--states=all", "--noheader",
          "--Format=JobID:|,Name:|,State:|,Comment:|,WorkDir:|,exit_code:|,Reason:|"]
CONDOR_Q = ["condor_q", "-af:t", "ClusterId", "JobStatus", "ExitCode", "Iwd", "HoldReason",
            "Arguments", "Args"]
# SLURM job states (squeue's long names) -> verdict
SLURM_STATES = {
    "PENDING": "queued", "CONFIGURING": "queued", "REQUEUED": "queued",
    "REQUEUE_HOLD": "queued", "REQUEUE_FED": "queued", "RESV_DEL_HOLD": "queued",
    "RUNNING": "running", "COMPLETING": "running", "STAGE_OUT": "running",
    "SIGNALING": "running", "RESIZING": "running",
    "COMPLETED": "done",
    "FAILED": "exited", "OUT_OF_MEMORY": "exited", "NODE_FAIL": "exited", "BOOT_FAIL": "exited",
    "TIMEOUT": "stopped", "PREEMPTED": "stopped", "SUSPENDED": "stopped", "STOPPED": "stopped",
    "DEADLINE": "stopped",
    "CANCELLED": "removed", "REVOKED": "removed", "SPECIAL_EXIT": "removed",
}
# HTCondor JobStatus -> (its name, verdict)
CONDOR_STATES = {1: ("idle", "queued"), 2: ("running", "running"), 3: ("removed", "removed"),
                 4: ("completed", "done"), 5: ("held", "stopped"),
                 6: ("transferring output", "running"), 7: ("suspended", "stopped")}
LIVE = ("queued", "running")


@dataclass(frozen=True)
class SchedulerJob:
    """One job as its scheduler reports it."""

    scheduler: str  # slurm or htcondor
    job_id: str
    state: str  # the scheduler's word: RUNNING, OUT_OF_MEMORY, held, ...
    verdict: str  # queued, running, done, exited, stopped, removed
    key: str  # rule_<rule>_wildcards_<values joined by _> (the SLURM plugin's comment)
    work_dir: str
    exit_code: str = ""
    reason: str = ""  # SLURM's pending reason, HTCondor's hold reason

    @property
    def shown(self) -> str:
        """The verdict as status prints it: `exited N` carries the exit code."""
        if self.verdict == "exited":
            return f"exited {self.exit_code or '?'}"
        return self.verdict


# ------------------------------------------------------------------------ the scheduler


def scheduler_output(argv: list[str]) -> str | None:
    """What a scheduler command prints, or None when it is not installed or does not answer
    (no controller, no schedd). The one place status talks to a scheduler."""
    if shutil.which(argv[0]) is None:
        return None
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def parse_squeue(text: str) -> list[SchedulerJob]:
    """squeue's lines in the SQUEUE format: id|name|state|comment|workdir|exit code|reason|."""
    jobs = []
    for line in text.splitlines():
        parts = line.rstrip("\n").split("|")
        if len(parts) < 7 or not parts[0].strip():
            continue
        job_id, _name, state, comment, work_dir, exit_code, reason = (
            p.strip() for p in parts[:7])
        state = state.split()[0].rstrip("+") if state else ""
        jobs.append(SchedulerJob("slurm", job_id, state, SLURM_STATES.get(state, "running"),
                                 comment, work_dir, _slurm_exit(exit_code), reason))
    return jobs


def _slurm_exit(text: str) -> str:
    """squeue's exit_code is the raw wait status (768: exit 3; 9: killed by signal 9); sacct
    and scontrol write `code:signal`."""
    code, _, signal = text.partition(":")
    if not code.isdigit():
        return ""
    if signal:
        return f"signal {signal}" if code == "0" and signal not in ("", "0") else code
    status = int(code)
    return f"signal {status & 0x7F}" if status & 0x7F else str(status >> 8)


_TARGET_JOB = re.compile(r"--target-jobs\s+'?([\w.-]+):([^'\s]*)'?")


def parse_condor_q(text: str) -> list[SchedulerJob]:
    """condor_q's `-af:t` lines in the CONDOR_Q order: cluster id, JobStatus, ExitCode, Iwd,
    HoldReason, Arguments, Args (tab-separated; `undefined` where a job has none)."""
    jobs = []
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) < 5 or not parts[0].strip().isdigit():
            continue
        cluster, status, exit_code, work_dir, hold = (p.strip() for p in parts[:5])
        arguments = " ".join(parts[5:])
        found = _TARGET_JOB.search(arguments)
        key = ""
        if found:
            values = [item.partition("=")[2] for item in found.group(2).split(",") if item]
            key = f"rule_{found.group(1)}" + (f"_wildcards_{'_'.join(values)}" if values else "")
        state, verdict = CONDOR_STATES.get(int(status) if status.isdigit() else 0,
                                           (status, "running"))
        code = exit_code if exit_code.lstrip("-").isdigit() else ""
        if verdict == "done" and code not in ("", "0"):
            verdict = "exited"
        jobs.append(SchedulerJob("htcondor", cluster, state, verdict, key, work_dir, code,
                                 "" if hold == "undefined" else hold))
    return jobs


def scheduler_jobs(workdir: Path) -> tuple[list[SchedulerJob], list[str]]:
    """(every job SLURM and HTCondor report for this working folder, which schedulers
    answered)."""
    jobs, answered = [], []
    for name, argv, parse in (("SLURM", SQUEUE, parse_squeue),
                              ("HTCondor", CONDOR_Q, parse_condor_q)):
        text = scheduler_output(argv)
        if text is None:
            continue
        answered.append(name)
        jobs += [j for j in parse(text) if _same_dir(j.work_dir, workdir)]
    return jobs, answered


def _same_dir(a: str, b: Path) -> bool:
    try:
        return Path(a).resolve() == Path(b).resolve()
    except OSError:
        return False


# ------------------------------------------------------------------- Snakemake's records


def snakemake_records(workdir: Path) -> tuple[dict[str, str | None], bool]:
    """(output path -> external job id of every job Snakemake marked incomplete, whether a
    Snakemake holds this folder's lock now)."""
    folder = Path(workdir) / ".snakemake"
    incomplete: dict[str, str | None] = {}
    root = folder / "incomplete"
    for path in root.rglob("*") if root.is_dir() else ():
        if not path.is_file() or path.name == "migration_underway":
            continue
        parts = path.relative_to(root).parts  # long names are split into @-prefixed folders
        encoded = "".join(p.removeprefix("@") for p in parts)
        try:
            name = base64.urlsafe_b64decode(encoded).decode()
        except (ValueError, UnicodeDecodeError):
            continue
        try:
            incomplete[name] = json.loads(path.read_text() or "{}").get("external_jobid")
        except (OSError, json.JSONDecodeError):
            incomplete[name] = None
    locks = folder / "locks"
    locked = locks.is_dir() and any(p.suffix == ".lock" for p in locks.iterdir())
    return incomplete, locked


# -------------------------------------------------------------------------- the verdicts


def output_regex(name: str, roots: dict, names: dict[str, list[str]]) -> re.Pattern:
    """The regex of an output pattern, each wildcard a named group admitting exactly the names
    the config gives it (as the rules' wildcard constraints do: index's `<d>.tsv` is not read
    as dataset `<d>.quality`), a fold and a shard digits, any other field one path component."""
    regex = ""
    for piece in re.split(r"(\{\w+\})", pattern(name, roots)):
        field = re.fullmatch(r"\{(\w+)\}", piece)
        if field is None:
            regex += re.escape(piece)
            continue
        key = field.group(1)
        allowed = (r"\d+" if key in ("fold", "shard", "shards") else
                   "|".join(re.escape(n) for n in sorted(names[key], key=len, reverse=True))
                   if names.get(key) else "[^/]+")
        regex += f"(?P<{key}>{allowed})"
    return re.compile(regex + "$")


def job_outputs(summary: list[dict], roots: dict, names: dict[str, list[str]]) -> list[dict]:
    """The jobs of STATUS_RULES in `snakemake --summary`'s rows, in STATUS_RULES order: rule,
    wildcards (in the output's order: Snakemake's), the output that stands for the job, and
    Snakemake's status of it. `names`: the config's benchmark, dataset, model, target names."""
    patterns = {rule: output_regex(name, roots, names) for rule, name in STATUS_RULES.items()}
    jobs = []
    for row in summary:
        regex = patterns.get(row.get("rule", ""))
        found = regex.match(row["output_file"]) if regex else None
        if found:
            jobs.append({"rule": row["rule"], "wildcards": found.groupdict(),
                         "output": row["output_file"], "snakemake": row.get("status", "")})
    order = list(STATUS_RULES)
    return sorted(jobs, key=lambda j: (
        order.index(j["rule"]), *(j["wildcards"].get(c, "") for c in WILDCARD_COLUMNS[:-1]),
        int(j["wildcards"].get("shard", 0)), int(j["wildcards"].get("fold", 0))))


def config_names(config: dict) -> dict[str, list[str]]:
    """The names each wildcard may take: the config's benchmarks, datasets, models, targets."""
    return {"benchmark": list(config["benchmarks"]), "dataset": list(config["datasets"]),
            "model": list(config["models"]),
            "target": [*config["benchmarks"], *(config.get("target_groups") or {}), "all"]}


def verdict_rows(jobs: list[dict], workdir: Path, scheduler: list[SchedulerJob] | None
                 ) -> list[dict]:
    """One row per job: its verdict and what it rests on. `scheduler`: the jobs the schedulers
    that answered listed for this folder; None when none was asked or none answered."""
    incomplete, locked = snakemake_records(workdir)
    by_id = {j.job_id: j for j in scheduler or ()}
    by_key: dict[str, SchedulerJob] = {}
    for job in sorted(scheduler or (), key=lambda j: _job_number(j.job_id)):
        by_key[job.key] = job  # the newest attempt wins
    rows = []
    for job in jobs:
        output = job["output"]
        values = "_".join(job["wildcards"].values())
        key = f"rule_{job['rule']}" + (f"_wildcards_{values}" if values else "")
        marked = output in incomplete
        attempt = by_id.get(str(incomplete.get(output))) if marked else None
        attempt = attempt or by_key.get(key)
        path = Path(output) if Path(output).is_absolute() else Path(workdir) / output
        # a job Snakemake submitted that a queue we can read no longer holds: not running,
        # even where a killed Snakemake left its lock behind
        gone = bool(marked and incomplete.get(output) and scheduler is not None
                    and attempt is None)
        verdict, detail, fix = _verdict(job, path, attempt, marked, locked and not gone)
        rows.append({"rule": job["rule"],
                     **{c: job["wildcards"].get(c) for c in WILDCARD_COLUMNS},
                     "verdict": verdict, "detail": _shard_named(job, detail), "fix": fix,
                     "job_id": attempt.job_id if attempt else (incomplete.get(output) or None),
                     "output": output})
    return rows


def _verdict(job: dict, output: Path, attempt: SchedulerJob | None, marked: bool,
             locked: bool) -> tuple[str, str, str]:
    """(verdict, detail, fix) of one job, in the order the module's docstring gives."""
    if attempt and attempt.verdict in LIVE:
        return attempt.shown, _scheduler_detail(attempt) + _partial_detail(job, output), ""
    record = failure_record(output)
    exists = output.exists()
    if record.is_file() and (not exists or record.stat().st_mtime >= output.stat().st_mtime):
        failure = read_failure_record(output) or {}
        message = (failure.get("message") or "").splitlines()
        return ("failed", f"{failure.get('step', job['rule'])} failed "
                f"({failure.get('category', '?')}): {message[0] if message else record}",
                failure.get("fix") or "")
    if exists:
        stale = job.get("snakemake", "ok")
        return "done", "" if stale in ("", "ok") else f"will rerun: {stale}", ""
    if attempt and attempt.verdict not in ("done",):
        return attempt.shown, _scheduler_detail(attempt) + _partial_detail(job, output), ""
    if marked:
        partial = _partial_detail(job, output)
        if locked:
            return "running", "Snakemake marked it started" + partial, ""
        return ("partial" if partial else "stopped",
                "started, never finished (its run was interrupted or its job is gone)"
                + partial, "")
    partial = _partial_detail(job, output)
    if partial:
        return "partial", partial.removeprefix("; "), ""
    return "missing", "", ""


def _scheduler_detail(job: SchedulerJob) -> str:
    text = f"{job.scheduler} job {job.job_id} {job.state}"
    return text + (f" ({job.reason})" if job.reason and job.reason != "None" else "")


def _shard_named(job: dict, detail: str) -> str:
    """An embed_shard job's detail, led by which shard it is (`shard 2 of 3`)."""
    if "shard" not in job["wildcards"]:
        return detail
    which = f"shard {int(job['wildcards']['shard']) + 1} of {job['wildcards']['shards']}"
    return f"{which}; {detail}" if detail else which


def _partial_detail(job: dict, output: Path) -> str:
    """`; N/M windows durable` for an embed or embed_shard job with a partial store, else ``."""
    if job["rule"] not in ("embed", "embed_shard"):
        return ""
    from embedprobe.pipeline.store import inspect
    from embedprobe.pipeline.store_format import partial_path

    if not partial_path(output).exists():
        return ""
    info = inspect(output)
    if info["state"] != "partial" or not info["rows"]:
        return ""
    return f"; {info['rows']:,}/{info['n_windows']:,} windows durable"


def _job_number(job_id: str) -> tuple[int, str]:
    head = re.match(r"\d+", job_id)
    return (int(head.group()) if head else -1, job_id)


def job_status(target: str, config: dict, roots: dict, workdir: Path, configfiles=(),
               assignments=(), scheduler: bool = True) -> tuple[list[dict], list[str]]:
    """(one row per job of the target's plan with its verdict, notes for stderr)."""
    argv = snakemake_argv(target, ["--summary"], workdir, configfiles, assignments)
    jobs = job_outputs(parse_summary(run_snakemake(argv, target)), roots, config_names(config))
    notes, found = [], None
    if scheduler:
        found, answered = scheduler_jobs(workdir)
        if not answered:
            found = None
            notes.append("note: no scheduler answered (squeue, condor_q): the verdicts come "
                         "from the jobs' files and Snakemake's records")
    return verdict_rows(jobs, workdir, found), notes


def planned_jobs(target: str, workdir: Path, configfiles=(), assignments=()) -> list[dict]:
    """One row per job `snakemake -n TARGET` would start (none when all is up to date)."""
    argv = snakemake_argv(target, ["-n"], workdir, configfiles, assignments)
    return plan_rows(run_snakemake(argv, target))


def counts_line(rows: list[dict]) -> str:
    """`N jobs: a done, b running, ...` in VERDICTS order."""
    counted = Counter(r["verdict"].split()[0] for r in rows)
    parts = [f"{counted[v]} {v}" for v in VERDICTS if counted[v]]
    return f"{len(rows)} jobs: " + ", ".join(parts)


def format_status(rows: list[dict]) -> str:
    """An aligned table, one line per job (the fix under a failed one), then the counts."""
    columns = ["rule", "benchmark", "dataset", "model", "fold", "verdict", "detail"]
    shown = [{**r, "benchmark": r["benchmark"] or r["target"]} for r in rows]  # leaderboard's
    cells = [[str(r[c]) if r[c] not in (None, "") else "-" for c in columns] for r in shown]
    header, *body = aligned_rows(columns, cells)
    lines = [header]
    for row, line in zip(rows, body, strict=True):
        lines.append(line)
        if row["fix"]:
            lines.append(f"  fix: {row['fix']}")
    return "\n".join([*lines, counts_line(rows)])


# ---------------------------------------------------------------------- Snakemake itself


def snakemake_argv(target: str, mode: list[str], workdir: Path, configfiles=(),
                   assignments=()) -> list[str]:
    """The snakemake command that prints `mode` (--summary, -n) for `target` in `workdir`,
    with the settings the embedprobe command was given."""
    from embedprobe.core.config import PROJECT_ROOT

    beside = Path(sys.executable).parent / "snakemake"
    program = str(beside) if beside.is_file() else "snakemake"
    argv = [program, "-s", str(PROJECT_ROOT / "Snakefile"), "--directory", str(workdir),
            "--nocolor", *mode, target]
    for path in configfiles:
        argv += ["--configfile", str(path)]
    return argv + (["--config", *assignments] if assignments else [])


def run_snakemake(argv: list[str], target: str) -> str:
    """Snakemake's output (stdout and stderr); a plan it refuses is an error with its reason."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=900, env=env)
    except FileNotFoundError:
        raise UsageError("snakemake is not installed beside this Python or on PATH",
                         fix="bash scripts/install.sh .venv   # then use .venv/bin/embedprobe"
                         ) from None
    if done.returncode != 0:
        text = done.stderr + done.stdout
        errors = [line for line in text.splitlines()
                  if line.startswith(("error:", "Error", "MissingInputException",
                                      "WorkflowError", "Target rules may not"))]
        fixes = [line.removeprefix("fix: ") for line in text.splitlines()
                 if line.startswith("fix: ")]
        last = text.strip().splitlines()[-1:] or ["no output"]
        error = EmbedprobeError(
            f"snakemake could not build the plan of '{target}' (exit {done.returncode}): "
            + ("; ".join(errors[:3]) or last[0]),
            fix=fixes[0] if fixes else "run it to see why: " + shlex.join(argv))
        error.exit_code = 2 if done.returncode == 2 or "Target rules may not" in text else 1
        raise error
    return done.stdout + done.stderr


def parse_summary(text: str) -> list[dict]:
    """`snakemake --summary`'s table (output_file, date, rule, log-file(s), status, plan)."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("output_file\t")), None)
    if start is None:
        return []
    header = lines[start].split("\t")
    rows = []
    for line in lines[start + 1:]:
        parts = line.split("\t")
        if len(parts) != len(header):
            continue
        rows.append(dict(zip(header, parts, strict=True)))
    return rows


_JOB_HEAD = re.compile(r"^(local)?(rule|checkpoint) (\S+):$")
_JOB_FIELD = re.compile(r"^    (\w[\w ]*): (.*)$")


def parse_dry_run(text: str) -> list[dict]:
    """`snakemake -n`'s job blocks (`rule NAME:` then indented `key: value` lines), one dict
    each: rule, local, and the block's fields (jobid, input, output, log, reason, wildcards,
    threads, resources)."""
    jobs, current = [], None
    for line in text.splitlines():
        head = _JOB_HEAD.match(line)
        if head:
            current = {"rule": head.group(3), "local": bool(head.group(1))}
            jobs.append(current)
            continue
        field = _JOB_FIELD.match(line) if current is not None else None
        if field:
            current[field.group(1)] = field.group(2)
        elif current is not None and not line.startswith("    "):
            current = None
    return jobs


def plan_rows(text: str) -> list[dict]:
    """One row per job the dry run would start: rule, jobid, the wildcards as columns (and as
    text), its first output, reason, threads, resources."""
    rows = []
    for job in parse_dry_run(text):
        wildcards = dict(item.split("=", 1) for item in
                         job.get("wildcards", "").split(", ") if "=" in item)
        rows.append({"rule": job["rule"], "jobid": int(job["jobid"]) if job.get("jobid",
                                                                             "").isdigit()
                     else None, "local": job["local"],
                     **{c: wildcards.get(c) for c in WILDCARD_COLUMNS},
                     "wildcards": job.get("wildcards", ""),
                     "output": job.get("output", "").split(", ")[0],
                     "reason": job.get("reason", ""), "threads": job.get("threads", ""),
                     "resources": job.get("resources", "")})
    return sorted(rows, key=lambda r: (r["jobid"] is None, r["jobid"] or 0))
