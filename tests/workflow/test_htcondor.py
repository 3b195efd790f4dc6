"""The htcondor profile through the real plugin (0.3.0) and the real htcondor2.Submit, with a fake
schedd behind them (tests/helpers/htcondor_fake/sitecustomize.py): no HTCondor pool can run here.

The fake runs every submitted job on this machine the way an execute point would with
`getenv = false`, so the workflow really runs; what is checked is what HTCondor would be asked
for: request_memory from the preflight estimate, request_cpus from the rule's threads, no GPU on
a CPU run, and no secret from the submitting shell in any submit description.
"""

import json
import re
from pathlib import Path

import pytest
import yaml

from helpers.project import PROJECT, snakemake

pytest.importorskip("snakemake_executor_plugin_htcondor")
pytest.importorskip("htcondor2")

pytestmark = pytest.mark.workflow

FAKE_SCHEDD = Path(__file__).resolve().parents[1] / "helpers" / "htcondor_fake"
# Tiny demo: 5 one-night subjects, 10 min of sleep and 2 min of wake on each side (~140 windows).
# The small jobs ask for a size no profile default has, so a rule that sends none shows.
SMALL_JOB_MB = 1500
TINY_DEMO = {"datasets": {"sleep_edf_demo": {
    "expected_recordings": 5, "trim_wake_minutes": 2,
    "generator": {"subjects": 5, "nights": 1, "hours": 1 / 6, "seed": 0}}},
    "memory_small_job_mb": SMALL_JOB_MB}
# What a user's shell may hold; none of it may reach a job.
SECRETS = {"AWS_SECRET_ACCESS_KEY": "aws-secret-4f1c9e", "HF_TOKEN": "hf_token_8d2b7a",
           "GITHUB_TOKEN": "ghp_token_61e0d3", "EMBEDPROBE_DB_PASSWORD": "db-password-93ac"}


def memory_mb(request_memory: str) -> int:
    """The plugin writes request_memory as <n>MB, or <n>GB when n MB is a whole number of GB."""
    match = re.fullmatch(r"(\d+)(MB|GB)", request_memory)
    assert match, f"unexpected request_memory {request_memory!r}"
    return int(match.group(1)) * (1024 if match.group(2) == "GB" else 1)


def run_through_condor(workdir: Path, settings: dict, env_extra: dict | None = None):
    """The pair's embed (and every job before it) submitted through profiles/htcondor to the
    fake schedd, with `settings` in a --configfile; (snakemake's result, the submits)."""
    configfile = workdir / "tiny_demo.yaml"
    configfile.write_text(yaml.safe_dump(settings))
    record = workdir / "submits.jsonl"
    target = workdir / "cache/embeddings/sleep_edf_demo/biot_random.h5"
    run = snakemake(
        workdir, "--profile", str(PROJECT / "profiles/htcondor"), f"--configfile={configfile}",
        "--seconds-between-status-checks", "1", str(target), timeout=600,
        # The profile's `config:` mapping is replaced by the --config the helper passes (roots).
        config=["memory_on_cluster=True"],
        env_extra={"PYTHONPATH": str(FAKE_SCHEDD), "CONDOR_CONFIG": "/dev/null",
                   "FAKE_HTCONDOR_RECORD": str(record), **(env_extra or {})})
    submits = [json.loads(line) for line in record.read_text().splitlines()] \
        if record.exists() else []
    return run, submits


@pytest.fixture(scope="module")
def condor_run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("htcondor")
    return workdir, *run_through_condor(workdir, TINY_DEMO, SECRETS)


def submits_of(submits: list[dict], rule: str) -> list[dict]:
    return [s["submit"] for s in submits if s["submit"]["batch_name"].startswith(f"{rule}-")]


def test_every_job_went_through_the_schedd_and_succeeded(condor_run):
    workdir, run, submits = condor_run
    assert run.returncode == 0, run.stderr[-3000:]
    rules = sorted(s["submit"]["batch_name"].rsplit("-", 1)[0] for s in submits)
    assert rules == ["check", "demo_data", "embed", "index", "preflight"]
    assert (workdir / "cache/embeddings/sleep_edf_demo/biot_random.h5").stat().st_size > 0


def test_embed_asks_for_the_preflight_estimate_and_its_threads(condor_run):
    workdir, run, submits = condor_run
    assert run.returncode == 0, run.stderr[-3000:]
    preflight = json.loads(
        (workdir / "results/preflight/sleep_edf_demo/biot_random.json").read_text())
    (embed,) = submits_of(submits, "embed")
    assert memory_mb(embed["request_memory"]) == preflight["jobs"]["embed"]["request_mb"]
    assert preflight["jobs"]["embed"]["terms"]["scheduler processes"] > 0  # memory_on_cluster
    assert embed["request_cpus"] == "2"  # config/config.yaml embed.threads
    assert "request_gpus" not in embed  # a CPU run asks for no GPU


def test_the_small_jobs_send_their_own_memory_request(condor_run):
    _, run, submits = condor_run
    assert run.returncode == 0, run.stderr[-3000:]
    for rule in ("demo_data", "index", "check", "preflight"):
        (submit,) = submits_of(submits, rule)
        assert memory_mb(submit["request_memory"]) == SMALL_JOB_MB, rule
        assert submit["request_cpus"] == "1", rule


def test_no_secret_reaches_a_submit_description(condor_run):
    _, run, submits = condor_run
    assert submits, run.stderr[-3000:]
    for entry in submits:
        submit = entry["submit"]
        assert submit["getenv"] == "False", "jobs must not copy the submitting environment"
        text = json.dumps(submit)
        leaked = [name for name, value in SECRETS.items() if value in text or name in text]
        assert not leaked, f"{submit['batch_name']} carries {leaked}"


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="this machine has a GPU")
def test_a_cuda_check_asks_for_a_gpu_and_reports_the_missing_device(tmp_path):
    """embed.device cuda: the check job is submitted with request_gpus = 1; on this GPU-less
    machine it runs, fails with the device fix, and nothing after it is submitted."""
    # In a config file: the plugin passes --config values to the job unquoted, so a value
    # with a space ("embed={device: cuda}") would be split on the execute point.
    run, submits = run_through_condor(tmp_path, {**TINY_DEMO, "embed": {"device": "cuda"}})
    assert run.returncode != 0
    checks = submits_of(submits, "check")  # the profile's retries resubmit it
    assert checks and all(str(check["request_gpus"]) == "1" for check in checks)
    for rule in ("demo_data", "index"):
        assert "request_gpus" not in submits_of(submits, rule)[0], rule
    assert not submits_of(submits, "preflight") and not submits_of(submits, "embed")
    log = (tmp_path / "results/logs/check/sleep_edf_demo/biot_random.log").read_text()
    assert "sees no CUDA device" in log and "fix: " in log and "device: cpu" in log
