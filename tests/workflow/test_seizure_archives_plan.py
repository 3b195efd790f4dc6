"""SeizeIT1 and EPILEPSIAE in the real snakemake's dry run: seizure_archives_demo writes both
look-alikes and probes each on five folds, and `epilepsy` names the reference's seven seizure
datasets, each absent one skipped with its fix. Dry runs only; the readers:
tests/datasets/test_seizeit1.py and test_epilepsiae.py."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from embedprobe.smk.status import plan_rows

from helpers.project import snakemake

pytestmark = pytest.mark.workflow

REFERENCE_SEVEN = {"siena", "chbmit", "tusz", "epilepsiae", "helsinki_neonatal", "sz1", "sz2"}


def test_the_group_plans_both_lookalikes_five_folds_each(tmp_path):
    run = snakemake(tmp_path, "-n", "seizure_archives_demo", timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    rows = plan_rows(run.stdout)
    assert sorted(r["output"] for r in rows if r["rule"] == "demo_data") == [
        f"{tmp_path}/data/demo/{folder}/MANIFEST.tsv" for folder in ("epilepsiae", "sz1")]
    assert Counter((r["dataset"], r["model"]) for r in rows if r["rule"] == "probe") == {
        ("sz1_demo", "biot_random"): 5, ("epilepsiae_demo", "biot_random"): 5}


def test_epilepsy_names_the_references_seven_each_absent_one_with_its_fix(tmp_path):
    run = snakemake(tmp_path, "-n", "epilepsy", timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    lines = run.stderr.splitlines()
    assert ("plan: epilepsy: datasets siena, chbmit, tusz, epilepsiae, helsinki_neonatal, sz1, "
            "sz2 (only_datasets=full; only_datasets=quick runs siena alone)") in lines
    warned = {}
    for i, line in enumerate(lines):
        if m := re.match(r"warning: (\w+) will be", line):
            warned[m.group(1)] = (line, lines[i + 1])
    assert set(warned) == REFERENCE_SEVEN
    for dataset, folder in (("sz1", "SeizeIT1"), ("epilepsiae", "Epillepsie")):
        line, fix = warned[dataset]
        assert f"data not found in {tmp_path}/data/{folder} (0/? recordings)" in line
        assert fix.startswith(f"fix: put the {dataset} files under {tmp_path}/data/{folder}")
