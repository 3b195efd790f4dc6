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


def xdist_group_of(item) -> str:
    """The worker group of a test: every SLURM test in one (they share the one local cluster,
    and one restarts its controller), else its file, so a module's fixture (often a whole
    workflow run) runs once, on one worker."""
    return "slurm" if item.get_closest_marker("slurm") else item.nodeid.split("::")[0]


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """pyproject runs the suite on two workers (`-n 2 --dist loadgroup`); this names each test's
    group before xdist reads it, and sends the long groups (a snakemake run each) first, so
    neither worker ends the run alone on one."""
    groups = {}
    for item in items:
        groups.setdefault(xdist_group_of(item), []).append(item)
    long_groups = {name for name, members in groups.items()
                   if any(m.get_closest_marker("slurm") or m.get_closest_marker("workflow")
                          for m in members)}
    for item in items:
        item.add_marker(pytest.mark.xdist_group(xdist_group_of(item)))
    items.sort(key=lambda item: (xdist_group_of(item) != "slurm",
                                 xdist_group_of(item) not in long_groups))


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
