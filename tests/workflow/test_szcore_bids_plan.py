"""The SzCORE BIDS layouts in the real snakemake's dry run: epilepsy_bids_demo writes and runs
both BIDS look-alikes, and `epilepsy` names SeizeIT2, skipped with its fix when it is absent.
Dry runs only; the reader and its labels: tests/datasets/test_szcore_bids.py."""

from __future__ import annotations

from collections import Counter

import pytest

from embedprobe.smk.status import plan_rows

from helpers.project import snakemake

pytestmark = pytest.mark.workflow


def test_the_bids_demo_plans_both_lookalikes_five_folds_each(tmp_path):
    run = snakemake(tmp_path, "-n", "epilepsy_bids_demo", timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    rows = plan_rows(run.stdout)
    assert sorted(r["output"] for r in rows if r["rule"] == "demo_data") == [
        f"{tmp_path}/data/demo/{name}/MANIFEST.tsv" for name in ("chbmit_bids", "siena_bids")]
    assert Counter((r["dataset"], r["model"]) for r in rows if r["rule"] == "probe") == {
        ("siena_bids_demo", "biot_random"): 5, ("chbmit_bids_demo", "biot_random"): 5}


def test_epilepsy_names_seizeit2_and_skips_it_with_the_fix_when_absent(tmp_path):
    run = snakemake(tmp_path, "-n", "epilepsy", timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    lines = run.stderr.splitlines()
    assert ("plan: epilepsy: datasets siena, chbmit, tusz, epilepsiae, helsinki_neonatal, sz1, "
            "sz2 "
            "(only_datasets=full; only_datasets=quick runs siena alone)") in lines
    warning = next(i for i, line in enumerate(lines) if line.startswith("warning: sz2 will be"))
    assert f"data not found in {tmp_path}/data/ds005873 (0/? recordings)" in lines[warning]
    assert lines[warning + 1].startswith(f"fix: put the sz2 files under {tmp_path}/data/ds005873")
