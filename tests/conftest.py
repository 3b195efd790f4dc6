"""Fixtures shared by every test folder; the builders they use live in tests/helpers/."""

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from helpers.project import PACKAGE, PROJECT
from helpers.slurm import quick_failing_conf

_SLURM_CONF_FOLDER = None


def require_this_checkouts_package() -> None:
    """The package under test is this checkout's: its editable install, or PYTHONPATH where the
    venv holds another checkout's (nothing here edits sys.path). Else every test would run
    other code, and each child process it starts too."""
    import embedprobe

    found = Path(embedprobe.__file__).resolve().parent
    if found != PACKAGE:
        raise pytest.UsageError(
            f"embedprobe imports from {found}, not from this checkout's {PACKAGE}\n"
            f"fix: export PYTHONPATH={PACKAGE.parent}, or install this checkout: "
            "bash scripts/install.sh .venv --test")


def pytest_configure(config):
    """This checkout's package under test; and without a SLURM controller, every snakemake a
    test starts gives up on it in 1 s, not 10 (helpers/slurm.py; the SLURM tests skip there)."""
    require_this_checkouts_package()
    global _SLURM_CONF_FOLDER
    _SLURM_CONF_FOLDER = tempfile.mkdtemp(prefix="embedprobe-slurm-conf-")
    conf = quick_failing_conf(Path(_SLURM_CONF_FOLDER))
    if conf is not None:
        os.environ["SLURM_CONF"] = str(conf)


def pytest_unconfigure(config):
    if _SLURM_CONF_FOLDER:
        shutil.rmtree(_SLURM_CONF_FOLDER, ignore_errors=True)


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
