"""`embedprobe resume` and `submit`'s decisions (smk/resume.py) against a fake squeue: which jobs
to wait for, which marked outputs to keep and which to redo, when another controller may still
run, and the controller job's sbatch command. The real kill-and-resume on SLURM:
tests/workflow/test_resume_slurm.py."""

import os
import socket
import subprocess
import sys

import pytest

from embedprobe.cli import main
from embedprobe.core.paths import failure_record
from embedprobe.smk import resume, status

from helpers.markers import mark_incomplete
from helpers.project import PROJECT

RUN = "embedprobe_0f00aa11-2222-4333-8444-555566667777"
# squeue --me --states=all --noheader --Format=JobID:|,Name:|,State:|,Comment:|,WorkDir:|,...
LINES = {
    "embed": f"7|{RUN}|RUNNING|rule_embed_wildcards_d_m|{{W}}|0|None|",
    "probe0": f"10|{RUN}|PENDING|rule_probe_wildcards_b_d_m_0|{{W}}|0|Resources|",
    "probe1": f"12|{RUN}|COMPLETED|rule_probe_wildcards_b_d_m_1|{{W}}|0|None|",
    "probe2": f"6|{RUN}|FAILED|rule_probe_wildcards_b_d_m_2|{{W}}|256|NonZeroExitCode|",
    "controller": "20|embedprobe_controller|RUNNING|embedprobe_controller_b|{W}|0|None|",
    "elsewhere": f"3|{RUN}|RUNNING|rule_probe_wildcards_b_d_m_3|/elsewhere|0|None|",
}


def squeue(workdir, *names: str) -> list[status.SchedulerJob]:
    return status.parse_squeue("\n".join(LINES[n].format(W=workdir) for n in names))


def test_live_jobs_are_waited_for_completed_ones_kept_the_rest_redone(tmp_path):
    jobs = squeue(tmp_path, "embed", "probe0", "probe1", "probe2", "controller")
    incomplete = {"embed.h5": "7", "fold1.json": "12", "fold2.json": "6", "fold3.json": "99",
                  "fold4.json": None, "fold5.json": "12"}
    plan = resume.decide(incomplete, jobs, lambda output: output != "fold5.json")
    assert [j.job_id for j in plan.wait] == ["7", "10"]  # not the controller
    assert plan.adopt == ["fold1.json"]
    assert plan.rerun == [
        ("fold2.json", "its job 6 ended FAILED"),
        ("fold3.json", "its job 99 is no longer known to the scheduler"),
        ("fold4.json", "no scheduler job was recorded for it"),
        ("fold5.json", "its job 12 completed but the output is missing or its failure "
                       "record is newer"),
    ]


def test_an_output_counts_as_finished_without_a_newer_failure_record(tmp_path):
    finished = resume.output_finished(tmp_path)
    assert not finished("fold.json")
    (tmp_path / "fold.json").write_text("{}")
    assert finished("fold.json")
    failure_record(tmp_path / "fold.json").write_text("{}")
    os.utime(tmp_path / "fold.json", (1, 1))
    assert not finished("fold.json")


def test_another_controller_is_refused_and_a_dead_ones_lock_is_taken(tmp_path):
    here = socket.gethostname()

    def why(jobs=(), local=(), locked=False, record=None, unlock=False, own=None):
        return resume.refusal(tmp_path, list(jobs), True, list(local), locked, record,
                              unlock, own)

    assert "a Snakemake already runs in" in why(local=[4242], unlock=True)
    controller = squeue(tmp_path, "controller")
    assert "controller job 20 (RUNNING)" in why(controller, unlock=True)
    assert why(controller, own="20") is None  # the controller job itself
    assert why() is None
    # a lock: taken where the record proves its holder gone, else only with --unlock
    assert "cannot see it from here" in why(locked=True)
    assert why(locked=True, unlock=True) is None
    assert why(locked=True, record={"host": "node7", "slurm_job_id": "19"}) is None
    assert why(locked=True, record={"host": here, "pid": 1, "slurm_job_id": None}) is None
    assert "on login2" in why(locked=True, record={"host": "login2", "slurm_job_id": None})


def test_resume_waits_for_the_running_job_then_keeps_its_output(tmp_path, monkeypatch,
                                                                 capsys):
    (tmp_path / "embed.h5").write_bytes(b"store")
    mark_incomplete(tmp_path, "embed.h5", "7")
    done = LINES["embed"].replace("RUNNING", "COMPLETED")
    answers = iter([LINES["embed"]] * 3 + [done] * 2)
    monkeypatch.setattr(status, "scheduler_output", lambda argv: (
        next(answers).format(W=tmp_path) if argv[0] == "squeue" else None))
    monkeypatch.setattr(resume, "local_snakemakes", lambda workdir: [])
    calls = []
    monkeypatch.setattr(resume, "_snakemake", lambda argv, what: calls.append(argv))
    profile = PROJECT / "profiles/slurm"
    argv = resume.resume("demo", profile, tmp_path, assignments=["memory.margin=0.2"],
                         extra=["--keep-going"], poll_s=0)
    (cleanup,) = calls
    assert cleanup[cleanup.index("--cleanup-metadata") + 1:] == [
        "embed.h5", "--config", "memory={margin: 0.2}"]
    assert argv[argv.index("--profile"):] == [
        "--profile", str(profile), "--rerun-incomplete", "demo", "--keep-going", "--config",
        "memory={margin: 0.2}"]
    err = capsys.readouterr().err
    assert ("resume: waiting for 1 job(s) an earlier controller left on the scheduler: "
            "7 RUNNING rule_embed_wildcards_d_m") in err
    assert "resume: waited for 1 job(s); adopted 1 finished output(s) (embed.h5); 0 to redo" \
        in err
    assert resume.read_record(tmp_path)["host"] == socket.gethostname()


def test_a_snakemake_in_this_folder_is_found_but_not_a_jobs_own(tmp_path):
    program = tmp_path / "bin" / "snakemake"
    program.parent.mkdir()
    program.write_text("#!/bin/sh\nsleep 30\n")
    program.chmod(0o755)
    workdir = tmp_path / "work"
    workdir.mkdir()
    controller = subprocess.Popen([str(program), "--profile", "p"], cwd=workdir)
    job_side = subprocess.Popen([str(program), "--target-jobs", "embed:"], cwd=workdir)
    try:
        assert resume.local_snakemakes(workdir) == [controller.pid]
        assert resume.local_snakemakes(tmp_path) == []
    finally:
        for proc in (controller, job_side):
            proc.kill()
            proc.wait()


def test_the_controller_job_goes_where_the_profile_sends_jobs(tmp_path):
    profile = tmp_path / "profile"
    profile.mkdir()
    (profile / "config.yaml").write_text(
        "executor: slurm\ndefault-resources:\n  slurm_partition: \"'cpu'\"\n  mem_mb: 2000\n")
    argv = resume.controller_job("demo", profile, tmp_path, 1500, "2-00:00:00",
                                 configfiles=["c.yaml"], assignments=["folds=debug"],
                                 extra=["--keep-going"])
    wrapped = argv[argv.index("--wrap") + 1]
    assert argv[:argv.index("--wrap")] == [
        "sbatch", "--parsable", "--job-name", "embedprobe_controller", "--comment",
        "embedprobe_controller_demo", "--chdir", str(tmp_path), "--output",
        str(tmp_path / ".snakemake/slurm_logs/controller/%j.log"), "--ntasks=1",
        "--cpus-per-task=1", "--mem", "1500", "--partition", "cpu", "--time", "2-00:00:00"]
    assert wrapped == (f"{sys.executable} -m embedprobe.cli resume demo --profile {profile} "
                       f"--configfile {tmp_path.cwd() / 'c.yaml'} --config folds=debug -- "
                       "--keep-going")


@pytest.mark.parametrize("argv, message", [
    (["resume", "demo"], "resume needs a profile"),
    (["submit", "demo", "--profile", "profiles/none"], "profile 'profiles/none' is not a"),
    (["resume", "demoo", "--profile", "profiles/slurm"], "unknown target 'demoo'"),
    (["status", "demo", "--", "--keep-going"], "status takes no options after --"),
])
def test_bad_input_is_a_usage_error(argv, message, capsys, monkeypatch):
    monkeypatch.chdir(PROJECT)
    try:
        code = main(argv)
    except SystemExit as exit_:  # argparse's own errors
        code = exit_.code
    err = capsys.readouterr().err
    assert code == 2 and message in err, err
    if argv[0] != "status":
        assert "\nfix: " in err, err
