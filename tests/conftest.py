"""Fixtures shared by every test folder; the builders they use live in tests/helpers/."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow"))

from helpers.project import PROJECT  # noqa: E402


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
