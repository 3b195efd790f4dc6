"""The project's paths, and the ways tests run it: the real snakemake, local weights."""

from __future__ import annotations

import os
import runpy
import shutil
import subprocess
import sys
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[2]
PACKAGE = PROJECT / "workflow" / "embedprobe"
SCRIPTS = PROJECT / "scripts"
VENV_BIN = Path(sys.executable).parent


def script_main(name: str):
    """scripts/<name>.py's main, loaded from its file: the scripts are no package, and nothing
    puts their folder on sys.path."""
    return runpy.run_path(str(SCRIPTS / f"{name}.py"))["main"]


# A fixture's run ends there, failed: long enough for the bci_demo (243 s idle) on a loaded
# 2-core machine, where it took 850 s and over 900 s (the limit before; the import-race page's
# loaded runs, docs/measurements/2026-12-06-import-race.md), short of CI's 90 minutes.
WORKFLOW_TIMEOUT_S = 2400


def snakemake(workdir: Path, *args: str, config=(), timeout: int = WORKFLOW_TIMEOUT_S,
              env_extra=None) -> subprocess.CompletedProcess:
    """The real snakemake on the project's Snakefile, with every root inside `workdir`."""
    cmd = [
        str(VENV_BIN / "snakemake"), "-s", str(PROJECT / "Snakefile"), "--directory", str(workdir),
        "--config", f"data_root={workdir}/data", f"cache_root={workdir}/cache",
        f"results_root={workdir}/results", f"weights_root={workdir}/weights", *config, *args,
    ]
    env = dict(os.environ, PATH=f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    env.update(env_extra or {})
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env,
                          cwd=workdir)


# The look-alikes' embed and probe jobs are too small for their default 2 threads to pay off:
# each then holds both cores and they run one at a time. At 1 thread two run at once (bci_demo on
# 2 cores: 355 s -> 243 s, docs/measurements/2026-12-04-suite-time.md). The task fixtures run so;
# the demo's own test keeps the README's command as it is. (--set-threads takes every word up to
# the next option, a target too: --cores closes its list.)
SMALL_JOBS = ("--set-threads", "probe=1", "embed=1", "--cores", "2")


def have(tool: str) -> bool:
    return shutil.which(tool) is not None


# The hub entries of config/models.yaml (`weights: hf:...`: the `*_pretrained` ones and
# biot_six_datasets; tests/models/test_hub_weights.py) name hub checkpoints; the tests of the
# local-file path (copy a checkpoint under weights_root) use these files: BIOT's a torch pickle
# as its authors publish it, the others safetensors.
LOCAL_WEIGHTS = {"biot_pretrained": "biot_pretrained.pt",
                 "biot_six_datasets": "biot_six_datasets.pt"} | {
    f"{family}_pretrained": f"{family}_pretrained.safetensors"
    for family in ("labram", "cbramod", "eegpt")}


def with_local_weights(config: dict) -> dict:
    """The config with the hub entries of LOCAL_WEIGHTS reading a local file under
    weights_root (the other families' checkpoints: tests/models/test_hub_weights.py)."""
    for model, path in LOCAL_WEIGHTS.items():
        config["models"][model]["weights"] = path
        config["models"][model].pop("revision", None)
    return config
