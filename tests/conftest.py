import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent
sys.path.insert(0, str(PROJECT / "workflow"))


def snakemake(workdir: Path, *args: str, config=(), timeout: int = 900,
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


@pytest.fixture
def project():
    return PROJECT


@pytest.fixture(scope="session")
def demo_root(tmp_path_factory) -> Path:
    """A small generated Sleep-EDF demo (5 subjects x 2 nights x 1 h), written once per session."""
    from embedprobe.datasets.sleep_edf.lookalike import generate

    root = tmp_path_factory.mktemp("demo") / "sleep-edf"
    generate(root, n_subjects=5, nights=2, hours=1.0, seed=0)
    return root


def have(tool: str) -> bool:
    return shutil.which(tool) is not None


# The `*_pretrained` entries of config/models.yaml name hub checkpoints (tests/test_hub_weights.py);
# the tests of the local-file path (copy a checkpoint under weights_root) use these entries.
LOCAL_WEIGHTS = {
    "biot_pretrained": "biot_pretrained.pt",
    "labram_pretrained": "labram_pretrained.safetensors",
    "cbramod_pretrained": "cbramod_pretrained.safetensors",
    "eegpt_pretrained": "eegpt_pretrained.safetensors",
}


def with_local_weights(config: dict) -> dict:
    """The config with each `*_pretrained` entry reading a local file under weights_root."""
    for model, path in LOCAL_WEIGHTS.items():
        config["models"][model]["weights"] = path
        config["models"][model].pop("revision", None)
    return config
