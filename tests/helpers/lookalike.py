"""Fixtures and checks every look-alike's tests share: a demo written once, same bytes again."""

from __future__ import annotations

import pytest


def demo_fixture(lookalike, settings: dict, folder: str):
    """A module-scoped `demo` fixture: (root, the files written, lookalike.plan(settings)),
    written once per test module (the look-alike is the slow part)."""

    @pytest.fixture(scope="module")
    def demo(tmp_path_factory):
        root = tmp_path_factory.mktemp(folder)
        return root, lookalike.write_lookalike(root, settings), lookalike.plan(settings)

    return demo


def written_thrice(lookalike, tmp_path, settings: dict, other_seed: int):
    """The look-alike's files written twice with `settings` (into tmp_path/a and /b) and once
    with another seed (/c), for the same-settings-same-bytes checks."""
    return (lookalike.write_lookalike(tmp_path / "a", settings),
            lookalike.write_lookalike(tmp_path / "b", settings),
            lookalike.write_lookalike(tmp_path / "c", settings | {"seed": other_seed}))
