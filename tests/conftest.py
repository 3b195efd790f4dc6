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


# The test files with a SLURM test: they share the one local cluster, and one restarts its
# controller, so they run one after another on one worker.
SLURM_FILES = frozenset(
    path.relative_to(PROJECT).as_posix() for path in (PROJECT / "tests").rglob("test_*.py")
    if "pytest.mark.slurm" in path.read_text())


def worker_group(nodeid: str) -> str:
    """Tests of one group run on one worker: a file's, so its module fixture (often a whole
    workflow run) runs once; or every SLURM test's."""
    file = nodeid.split("::")[0]
    return "slurm" if file in SLURM_FILES else file


def pytest_xdist_make_scheduler(config, log):
    """pyproject runs the suite on two pytest-xdist workers; each takes whole groups."""
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return worker_group(nodeid)

    return GroupScheduling(config, log)


def pytest_collection_modifyitems(config, items):
    """The long groups (a snakemake run or a SLURM job each) first, so that neither worker
    ends the run alone on one; the order within a file stays."""
    def long(item) -> bool:
        return bool(item.get_closest_marker("slurm") or item.get_closest_marker("workflow"))

    long_groups = {worker_group(item.nodeid) for item in items if long(item)}
    items.sort(key=lambda item: (worker_group(item.nodeid) != "slurm",
                                 worker_group(item.nodeid) not in long_groups))


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
