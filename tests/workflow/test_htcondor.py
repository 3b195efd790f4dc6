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

from embedprobe.smk.resources import (
    FALLBACK_CAPABILITY,
    lowest_capability,
    min_cuda_capability,
)

from helpers.project import PROJECT, snakemake

pytest.importorskip("snakemake_executor_plugin_htcondor")
pytest.importorskip("htcondor2")

pytestmark = pytest.mark.workflow

FAKE_SCHEDD = Path(__file__).resolve().parents[1] / "helpers" / "htcondor_fake"
# Tiny demo: 5 one-night subjects, 10 min of sleep and 2 min of wake on each side (~140 windows).
# The small jobs ask for a size no profile default has, so a rule that sends none shows.
# on_cluster: a pool's job finds itself under HTCondor (_CONDOR_JOB_AD), the fake's do not;
# set in the --configfile, as the profile says memory settings go (not --config).
SMALL_JOB_MB = 1500
TINY_DEMO = {"datasets": {"sleep_edf_demo": {
    "expected_recordings": 5, "trim_wake_minutes": 2,
    "generator": {"subjects": 5, "nights": 1, "hours": 1 / 6, "seed": 0}}},
    "memory": {"small_job_mb": SMALL_JOB_MB, "on_cluster": True}}
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
    assert preflight["jobs"]["embed"]["terms"]["scheduler processes"] > 0  # memory.on_cluster
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
    """embed.device cuda: the check job is submitted with request_gpus = 1 and the lowest
    compute capability the installed torch runs on; on this GPU-less machine it runs, fails with
    the device fix, is not retried (a check's request never grows), and nothing after it is
    submitted."""
    # In a config file: the plugin passes --config values to the job unquoted, so a value
    # with a space ("embed={device: cuda}") would be split on the execute point.
    run, submits = run_through_condor(tmp_path, {**TINY_DEMO, "embed": {"device": "cuda"}})
    assert run.returncode != 0
    (check,) = submits_of(submits, "check")
    assert str(check["request_gpus"]) == "1"
    # this torch is a CPU build: the lowest capability of the pinned CUDA builds
    assert check["gpus_minimum_capability"] == min_cuda_capability() == FALLBACK_CAPABILITY
    for rule in ("demo_data", "index"):
        assert "request_gpus" not in submits_of(submits, rule)[0], rule
        assert "gpus_minimum_capability" not in submits_of(submits, rule)[0], rule
    assert not submits_of(submits, "preflight") and not submits_of(submits, "embed")
    log = (tmp_path / "results/logs/check/sleep_edf_demo/biot_random.log").read_text()
    assert "sees no CUDA device" in log and "fix: " in log and "device: cpu" in log


# --------------------------------------------------- the compute capability a GPU job asks for

# torch.cuda.get_arch_list() of PyTorch's CUDA 12.6 and 12.8 builds (its CUDA support matrix)
CU126_ARCHS = "sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90"
CU128_ARCHS = "sm_75 sm_80 sm_86 sm_90 sm_100 sm_120 compute_120"


def test_the_lowest_compiled_architecture_is_the_capability():
    assert lowest_capability(CU126_ARCHS.split()) == "5.0"
    assert lowest_capability(CU128_ARCHS.split()) == "7.5"
    assert lowest_capability(["sm_120", "sm_90a", "sm_100"]) == "9.0"
    assert lowest_capability(["compute_90"]) is None and lowest_capability([]) is None


@pytest.fixture
def fake_torch(tmp_path, monkeypatch):
    """A Python that answers as a torch of the given version would (min_cuda_capability asks a
    child process); `asked` says whether it was run."""
    import importlib.metadata
    import sys

    def install(version: str, answer: str, status: int = 0) -> Path:
        asked = tmp_path / "asked"
        asked.unlink(missing_ok=True)
        python = tmp_path / "python"
        python.write_text(f"#!/bin/sh\ntouch {asked}\nprintf '{answer}'\nexit {status}\n")
        python.chmod(0o755)
        monkeypatch.setattr(sys, "executable", str(python))
        monkeypatch.setattr(importlib.metadata, "version", lambda name: version)
        min_cuda_capability.cache_clear()
        return asked

    yield install
    min_cuda_capability.cache_clear()


def test_a_cuda_torch_is_asked_for_its_architectures(fake_torch):
    asked = fake_torch("2.13.0+cu128", f"12.8\\n{CU128_ARCHS}\\n")
    assert min_cuda_capability() == "7.5" and asked.exists()
    fake_torch("2.13.0", f"12.6\\n{CU126_ARCHS}\\n")  # PyPI's CUDA torch has no label
    assert min_cuda_capability() == "5.0"


def test_without_an_architecture_list_the_build_or_the_fallback_decides(fake_torch):
    fake_torch("2.13.0+cu130", "13.0\\n\\n")
    assert min_cuda_capability() == "7.5"
    fake_torch("2.13.0+cu999", "99.9\\n\\n")  # a build this table does not know
    assert min_cuda_capability() == FALLBACK_CAPABILITY
    fake_torch("2.13.0+cu128", "", status=1)  # torch fails to import
    assert min_cuda_capability() == FALLBACK_CAPABILITY
    asked = fake_torch("2.13.0+cpu", "12.8\\nsm_75\\n")
    assert min_cuda_capability() == FALLBACK_CAPABILITY and not asked.exists()
