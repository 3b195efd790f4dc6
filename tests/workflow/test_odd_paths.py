"""Roots may hold any character a Linux folder name may: the rules quote every path they hand
the shell (`{output:q}`, ...). The same tiny demo runs twice with the real snakemake, once under
plain roots and once under roots whose names hold a space, quotes, `$HOME` and command
substitutions; both must give the same results, and the commands in the names must never run.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import h5py
import numpy as np
import pytest
import yaml

from helpers.project import snakemake

pytestmark = pytest.mark.workflow

# 3 subjects x 1 night, 0.3 h each with 2 min of wake either side (~45 windows a night: embed's
# time goes with the windows), the sleep-staging demo at 3 folds (brain age needs at least
# 6 subjects) under a target group of its own: every rule a target group runs (demo data, index,
# check, both preflights, embed, probe, aggregate, pair figure, memory panel, summary,
# leaderboard) runs once or per fold.
TARGET = "odd_paths"
TINY = {
    "datasets": {"sleep_edf_demo": {"expected_recordings": 3, "trim_wake_minutes": 2,
                                    "generator": {"subjects": 3, "nights": 1, "hours": 0.3,
                                                  "seed": 2}}},
    "benchmarks": {"demo": {"folds": 3}},
    "target_groups": {TARGET: ["demo"]},
}
# Spaces, both quotes, a shell variable and two command substitutions: each would break or run
# in an unquoted shell line. An unmatched quote makes the whole line a syntax error before
# anything runs, so the substitutions sit in roots without quotes, where an unquoted line would
# run them. Legal in Linux folder names (no slash, no NUL); no braces: Snakemake reads them in a
# path as wildcards.
ODD = {
    "data": "My Data it's \"dq\" $HOME",
    "cache": "cache $HOME $(touch PWNED)",
    "results": "results `touch PWNED` $HOME",
    "weights": "weights it's \"dq\" $HOME $(touch PWNED) `touch PWNED`",
}
ROOTS = tuple(ODD)
EMBEDDINGS = "embeddings/sleep_edf_demo/biot_random.h5"


def run_demo(workdir: Path, config: Path, roots: dict[str, Path]):
    overrides = [f"{name}_root={path}" for name, path in roots.items()]
    # one core each: the two runs go side by side (a one-dataset run is mostly a chain of
    # one-job steps, which would leave the second core idle)
    return snakemake(workdir, "--configfile", str(config), "--cores", "1", TARGET,
                     config=overrides)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """(roots, completed process) of the plain run and the odd one, and the odd run's workdir."""
    config = tmp_path_factory.mktemp("odd_cfg") / "tiny.yaml"
    config.write_text(yaml.safe_dump(TINY))
    plain_dir = tmp_path_factory.mktemp("plain")
    plain_roots = {name: plain_dir / name for name in ROOTS}
    odd_dir = tmp_path_factory.mktemp("odd")
    odd_roots = {name: odd_dir / ODD[name] for name in ROOTS}
    with ThreadPoolExecutor(2) as pool:
        plain = pool.submit(run_demo, plain_dir, config, plain_roots)
        odd = pool.submit(run_demo, odd_dir, config, odd_roots)
        plain, odd = plain.result(), odd.result()
    return {"plain": (plain_roots, plain), "odd": (odd_roots, odd), "odd_dir": odd_dir}


def test_both_runs_succeed(runs):
    for kind in ("plain", "odd"):
        _, run = runs[kind]
        assert run.returncode == 0, (kind, run.stderr[-3000:])


def test_the_odd_roots_hold_every_output(runs):
    roots, _ = runs["odd"]
    assert (roots["data"] / "demo" / "sleep-edf" / "MANIFEST.tsv").is_file()
    assert len(list((roots["data"] / "demo" / "sleep-edf").rglob("*-PSG.edf"))) == 3
    assert (roots["cache"] / EMBEDDINGS).is_file()
    assert (roots["results"] / "demo" / "summary.md").is_file()
    assert (roots["results"] / "demo" / "sleep_edf_demo" / "biot_random"
            / "confusion.png").is_file()
    assert (roots["results"] / "leaderboard" / f"{TARGET}.md").is_file()
    # nothing fell back to the default roots of the working folder
    for name in ROOTS:
        assert not (runs["odd_dir"] / name).exists(), name


def test_results_are_the_same_under_odd_roots(runs):
    (plain_roots, _), (odd_roots, _) = runs["plain"], runs["odd"]
    table = "demo/sleep_edf_demo/results.tsv"
    plain = (plain_roots["results"] / table).read_bytes()
    assert plain.count(b"\n") == 2 and b"\tok" in plain, plain  # header + biot_random's row
    assert b"3/3" in plain, plain
    assert (odd_roots["results"] / table).read_bytes() == plain


def test_embeddings_are_the_same_under_odd_roots(runs):
    (plain_roots, _), (odd_roots, _) = runs["plain"], runs["odd"]
    # whole-file bytes differ: the store's `finished` attribute is a timestamp
    with h5py.File(plain_roots["cache"] / EMBEDDINGS) as a, \
            h5py.File(odd_roots["cache"] / EMBEDDINGS) as b:
        plain, odd = a["embeddings"][:], b["embeddings"][:]
    assert plain.ndim == 2 and plain.shape[0] > 100 and np.isfinite(plain).all()
    np.testing.assert_array_equal(odd, plain)


def test_no_command_in_a_root_name_ran(runs):
    for where in (runs["odd_dir"], Path.cwd()):
        assert not list(where.rglob("PWNED")), where
