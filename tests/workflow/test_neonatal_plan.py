"""The Helsinki neonatal set in the real snakemake's dry run: epilepsy_neonatal_demo writes and
runs its look-alike, and `epilepsy` names helsinki_neonatal, skipped with its fix when absent.
Dry runs only; the reader and its consensus: tests/datasets/test_helsinki.py."""

from __future__ import annotations

from collections import Counter

import pytest

from embedprobe.smk.status import plan_rows

from helpers.project import snakemake

pytestmark = pytest.mark.workflow


def test_the_neonatal_demo_plans_its_lookalike_five_folds(tmp_path):
    run = snakemake(tmp_path, "-n", "epilepsy_neonatal_demo", timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    rows = plan_rows(run.stdout)
    assert [r["output"] for r in rows if r["rule"] == "demo_data"] == [
        f"{tmp_path}/data/demo/helsinki_neonatal/MANIFEST.tsv"]
    assert Counter((r["dataset"], r["model"]) for r in rows if r["rule"] == "probe") == {
        ("helsinki_neonatal_demo", "biot_random"): 5}


def test_epilepsy_skips_an_absent_helsinki_neonatal_with_the_fix(tmp_path):
    run = snakemake(tmp_path, "-n", "epilepsy", timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    lines = run.stderr.splitlines()
    warning = next(i for i, line in enumerate(lines)
                   if line.startswith("warning: helsinki_neonatal will be"))
    assert f"data not found in {tmp_path}/data/helsinki_neonatal (0/79 recordings)" \
        in lines[warning]
    assert lines[warning + 1].startswith("fix: ")
