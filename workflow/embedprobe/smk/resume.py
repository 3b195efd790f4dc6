"""A cluster run that survives its controller: `embedprobe resume` and `embedprobe submit`.

Snakemake does not re-attach to the jobs of a killed session: a job that was still queued or
running keeps its `.snakemake/incomplete/` marker, and `--rerun-incomplete` deletes its output
and submits it again, beside the first copy (../../docs/usage.md#after-a-crash). A job that
finishes while no controller runs clears its own marker (its job-side Snakemake does), so only
the jobs still on the scheduler and the ones that ended without clearing it need care.

`resume TARGET --profile P`, before Snakemake starts:

1. refuses while another controller of this folder may live: a Snakemake process working in
   this folder on this host, a live controller job (`submit`'s), or a lock in `.snakemake/locks`
   that no record explains (`--unlock` says none runs);
2. waits while the scheduler still holds jobs of this folder, queued or running (`embedprobe
   status`'s view of the queue: squeue's work folder), so none is started twice;
3. adopts each output still marked incomplete whose scheduler job ended COMPLETED, with the
   output present and no newer failure record: `snakemake --cleanup-metadata` clears its marker,
   so its result is kept; every other marked output is left to `--rerun-incomplete`;
4. records itself (`.snakemake/embedprobe_controller.json`: host, pid, SLURM job) and becomes
   `snakemake --profile P --rerun-incomplete TARGET`.

`submit` runs `resume` as a small SLURM job (`sbatch`): the login session can close, and the
same command after that job ended, for whatever reason, picks up where it stopped.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from embedprobe.core.errors import EmbedprobeError, UsageError
from embedprobe.core.overrides import for_snakemake
from embedprobe.core.paths import failure_record
from embedprobe.smk.status import LIVE, SchedulerJob, scheduler_jobs, snakemake_records

# The name and comment prefix of a controller job: the slurm plugin names the jobs it submits
# by its run id (`embedprobe_<uuid>`) and comments them `rule_<rule>_wildcards_<values>`.
CONTROLLER = "embedprobe_controller"
RECORD = Path(".snakemake/embedprobe_controller.json")
PROFILE_FILES = ("config.yaml", "config.v8+.yaml", "profile.yaml")
# Snakemakes that are no controller: a cluster job's own, and the short queries
ONE_SHOT = ("slurm-jobstep", "--target-jobs", "--unlock", "--summary", "-n", "--dry-run",
            "--cleanup-metadata", "--lint")


@dataclass
class ResumePlan:
    """What resume does with the jobs and markers an earlier controller left."""

    wait: list[SchedulerJob] = field(default_factory=list)  # still queued or running
    adopt: list[str] = field(default_factory=list)  # marked outputs whose job completed
    rerun: list[tuple[str, str]] = field(default_factory=list)  # (marked output, why)


def is_controller(job: SchedulerJob) -> bool:
    return job.key.startswith(CONTROLLER)


def decide(incomplete: dict[str, str | None], jobs: list[SchedulerJob],
           finished: Callable[[str], bool]) -> ResumePlan:
    """The plan from Snakemake's incomplete markers (output -> the external job id it
    recorded), the scheduler's jobs of this folder and `finished(output)` (the output exists
    and no newer failure record says its job failed)."""
    plan = ResumePlan(wait=[j for j in jobs if j.verdict in LIVE and not is_controller(j)])
    by_id = {j.job_id: j for j in jobs}
    for output, job_id in sorted(incomplete.items()):
        job = by_id.get(str(job_id)) if job_id else None
        if job is not None and job.verdict in LIVE:
            continue  # decided once it has ended
        if job is None:
            why = (f"its job {job_id} is no longer known to the scheduler" if job_id
                   else "no scheduler job was recorded for it")
            plan.rerun.append((output, why))
        elif job.verdict != "done":
            plan.rerun.append((output, f"its job {job.job_id} ended {job.state}"))
        elif not finished(output):
            plan.rerun.append((output, f"its job {job.job_id} completed but the output is "
                                       "missing or its failure record is newer"))
        else:
            plan.adopt.append(output)
    return plan


def output_finished(workdir: Path) -> Callable[[str], bool]:
    def finished(output: str) -> bool:
        path = Path(output) if Path(output).is_absolute() else workdir / output
        record = failure_record(path)
        return path.exists() and not (record.is_file()
                                      and record.stat().st_mtime >= path.stat().st_mtime)
    return finished


# ------------------------------------------------------------------ other controllers


def local_snakemakes(workdir: Path) -> list[int]:
    """Pids of the Snakemake controllers working in `workdir` on this host (not the job-side
    Snakemakes a cluster job runs: `--executor slurm-jobstep`, `--target-jobs`)."""
    import psutil

    found = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        argv = proc.info["cmdline"] or []
        if proc.info["pid"] == os.getpid() or not any(
                Path(a).name == "snakemake" for a in argv[:3]):
            continue
        if any(word in argv for word in ONE_SHOT):
            continue
        try:
            folder = (argv[argv.index("--directory") + 1] if "--directory" in argv
                      else proc.cwd())
        except (psutil.Error, IndexError):
            continue
        if _same(folder, workdir):
            found.append(proc.info["pid"])
    return found


def _same(a, b) -> bool:
    try:
        return Path(a).resolve() == Path(b).resolve()
    except OSError:
        return False


def read_record(workdir: Path) -> dict | None:
    try:
        return json.loads((workdir / RECORD).read_text())
    except (OSError, json.JSONDecodeError):
        return None


def refusal(workdir: Path, jobs: list[SchedulerJob], answered: bool, local: list[int],
            locked: bool, record: dict | None, unlock: bool, own_job: str | None
            ) -> str | None:
    """Why another controller may still run in this folder, or None."""
    if local:
        return (f"a Snakemake already runs in {workdir} on this host (pid "
                f"{', '.join(map(str, local))})")
    live = [j for j in jobs if is_controller(j) and j.verdict in LIVE and j.job_id != own_job]
    if live:
        return (f"controller job {live[0].job_id} ({live[0].state}) already runs this "
                f"folder's workflow")
    if not locked or unlock:
        return None
    if record and record.get("slurm_job_id") and answered:
        return None  # its job is not live (above): it ended
    if record and record.get("host") == socket.gethostname():
        return None  # its process is not among this host's Snakemakes (above): it ended
    where = (f" on {record['host']}" if record else "")
    return (f"{workdir}/.snakemake/locks says a Snakemake may still run in this folder"
            f"{where}, and this command cannot see it from here")


# ------------------------------------------------------------------------ the commands


def profile_folder(profile: str | None, command: str, target: str) -> Path:
    """The profile folder (a path, or a name under ./profiles), with its config file."""
    fix = f"embedprobe {command} {target} --profile profiles/slurm"
    if not profile:
        raise UsageError(f"{command} needs a profile: the scheduler its jobs go to", fix=fix)
    for folder in (Path(profile), Path("profiles") / profile):
        if any((folder / name).is_file() for name in PROFILE_FILES):
            return folder.resolve()
    raise UsageError(f"profile '{profile}' is not a folder with a {PROFILE_FILES[0]}",
                     fix=f"{fix}   # or profiles/local, profiles/htcondor")


def snakemake_program() -> str:
    beside = Path(sys.executable).parent / "snakemake"
    return str(beside) if beside.is_file() else "snakemake"


def _settings(configfiles=(), assignments=()) -> list[str]:
    argv = []
    for path in configfiles:
        argv += ["--configfile", str(path)]
    return argv + (["--config", *map(for_snakemake, assignments)] if assignments else [])


def _base(workdir: Path) -> list[str]:
    from embedprobe.core.config import PROJECT_ROOT

    return [snakemake_program(), "-s", str(PROJECT_ROOT / "Snakefile"), "--directory",
            str(workdir)]


def _snakemake(argv: list[str], what: str) -> None:
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    done = subprocess.run(argv, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        last = (done.stderr + done.stdout).strip().splitlines()[-3:]
        raise EmbedprobeError(f"snakemake could not {what} (exit {done.returncode}): "
                              + " | ".join(last), fix="run it to see why: " + shlex.join(argv))


def say(text: str) -> None:
    print(f"resume: {text}", file=sys.stderr, flush=True)


def wait_for_jobs(workdir: Path, poll_s: float) -> tuple[list[SchedulerJob], bool, int]:
    """Poll the scheduler until it holds no queued or running job of this folder (but
    controllers): (its jobs of this folder then, whether one answered, jobs waited for)."""
    waited: set[str] = set()
    shown = None
    while True:
        jobs, answered = scheduler_jobs(workdir)
        live = decide({}, jobs, lambda _: False).wait
        if not live:
            return jobs, bool(answered), len(waited)
        waited |= {j.job_id for j in live}
        now = sorted((j.job_id, j.state, j.key) for j in live)
        if now != shown:
            say(f"waiting for {len(live)} job(s) an earlier controller left on the scheduler: "
                + ", ".join(f"{i} {s} {k}" for i, s, k in now))
            shown = now
        time.sleep(poll_s)


def resume(target: str, profile: Path, workdir: Path, configfiles=(), assignments=(),
           extra=(), unlock: bool = False, poll_s: float = 30.0) -> list[str]:
    """Steps 1-3 of the module's docstring; returns the Snakemake command to become."""
    workdir = workdir.resolve()
    own_job = os.environ.get("SLURM_JOB_ID")
    incomplete, locked = snakemake_records(workdir)
    jobs, answered = scheduler_jobs(workdir)
    reason = refusal(workdir, jobs, bool(answered), local_snakemakes(workdir), locked,
                     read_record(workdir), unlock, own_job)
    if reason:
        error = EmbedprobeError(reason, fix="wait for it to end (`embedprobe status "
                                f"{target}`), or stop it; if none runs any more: "
                                f"embedprobe resume {target} --profile {profile} --unlock")
        raise error
    if not answered:
        say("no scheduler answered (squeue, condor_q): nothing to wait for")
    jobs, answered, waited = wait_for_jobs(workdir, poll_s)
    incomplete, locked = snakemake_records(workdir)
    plan = decide(incomplete, jobs, output_finished(workdir))
    settings = _settings(configfiles, assignments)
    if locked:
        _snakemake([*_base(workdir), "--unlock", *settings], "remove the stale lock")
    if plan.adopt:
        _snakemake([*_base(workdir), "--cleanup-metadata", *plan.adopt, *settings],
                   "clear the incomplete markers of finished outputs")
    for output, why in plan.rerun:
        say(f"will redo {output}: {why}")
    say(f"waited for {waited} job(s); adopted {len(plan.adopt)} finished output(s)"
        + "".join(f" ({o})" for o in plan.adopt) + f"; {len(plan.rerun)} to redo")
    (workdir / RECORD).parent.mkdir(parents=True, exist_ok=True)
    (workdir / RECORD).write_text(json.dumps({
        "host": socket.gethostname(), "pid": os.getpid(), "slurm_job_id": own_job,
        "target": target, "started": time.strftime("%Y-%m-%dT%H:%M:%S")}, indent=1))
    return [*_base(workdir), "--profile", str(profile), "--rerun-incomplete", target,
            *extra, *settings]


def profile_resources(profile: Path) -> dict:
    """The profile's default-resources (slurm_partition, slurm_account), quotes removed."""
    path = next(profile / n for n in PROFILE_FILES if (profile / n).is_file())
    resources = (yaml.safe_load(path.read_text()) or {}).get("default-resources") or {}
    return {k: str(v).strip("'\"") for k, v in resources.items()}


def controller_job(target: str, profile: Path, workdir: Path, mem_mb: int,
                   time_limit: str | None, configfiles=(), assignments=(), extra=(),
                   unlock: bool = False) -> list[str]:
    """The sbatch command that runs `embedprobe resume` as a job of the profile's partition."""
    resume_argv = [sys.executable, "-m", "embedprobe.cli", "resume", target, "--profile",
                   str(profile), *(["--unlock"] if unlock else []),
                   *_settings([Path(f).resolve() for f in configfiles], assignments),
                   "--", *extra]
    logs = workdir / ".snakemake/slurm_logs/controller"
    argv = ["sbatch", "--parsable", "--job-name", CONTROLLER, "--comment",
            f"{CONTROLLER}_{target}".replace("/", "_"), "--chdir", str(workdir),
            "--output", str(logs / "%j.log"), "--ntasks=1", "--cpus-per-task=1",
            "--mem", str(mem_mb)]
    resources = profile_resources(profile)
    for key, option in (("slurm_partition", "--partition"), ("slurm_account", "--account")):
        if resources.get(key):
            argv += [option, resources[key]]
    if time_limit:
        argv += ["--time", time_limit]
    return [*argv, "--wrap", shlex.join(resume_argv)]


def submit(target: str, profile: Path, workdir: Path, mem_mb: int, time_limit: str | None,
           configfiles=(), assignments=(), extra=(), unlock: bool = False) -> str:
    """Submit the controller job; its id. Refused while one of this folder is live."""
    if shutil.which("sbatch") is None:
        raise UsageError("submit needs SLURM's sbatch, which is not on PATH here",
                         fix=f"run it on the cluster's login node; elsewhere: embedprobe "
                             f"resume {target} --profile {profile}")
    workdir = workdir.resolve()
    jobs, _ = scheduler_jobs(workdir)
    live = [j for j in jobs if is_controller(j) and j.verdict in LIVE]
    if live:
        raise EmbedprobeError(f"controller job {live[0].job_id} ({live[0].state}) already runs "
                              "this folder's workflow",
                              fix=f"follow it: embedprobe status {target}; or stop it: "
                                  f"scancel {live[0].job_id}")
    argv = controller_job(target, profile, workdir, mem_mb, time_limit, configfiles,
                          assignments, extra, unlock)
    (workdir / ".snakemake/slurm_logs/controller").mkdir(parents=True, exist_ok=True)
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise EmbedprobeError(f"sbatch refused the controller job: {done.stderr.strip()}",
                              fix="run it to see why: " + shlex.join(argv))
    return done.stdout.strip().split(";")[0]
