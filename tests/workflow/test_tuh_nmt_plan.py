"""TUSZ and NMT in the real snakemake's dry run: the look-alikes' demo plans every job, and the
reference's benchmarks list both, skipping them with the fix where their data are absent. Dry
runs only; the readers: tests/datasets/test_tusz.py, test_nmt.py."""

from __future__ import annotations

from collections import Counter

import pytest

from embedprobe.smk.status import plan_rows

from helpers.project import snakemake

pytestmark = pytest.mark.workflow


def test_the_demo_plans_both_look_alikes_end_to_end(tmp_path):
    run = snakemake(tmp_path, "-n", "tuh_nmt_demo", timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    rows = plan_rows(run.stdout)
    jobs = Counter((r["rule"], r.get("dataset")) for r in rows)
    assert jobs[("demo_data", None)] == 2  # each look-alike written first
    for dataset in ("tusz_demo", "nmt_demo"):
        for rule in ("index", "check", "embed"):
            assert jobs[(rule, dataset)] == 1, (rule, dataset)
        assert jobs[("probe", dataset)] == 5


def test_the_references_benchmarks_list_them_and_skip_them_with_the_fix(tmp_path):
    run = snakemake(tmp_path, "-n", "epilepsy", "abnormal_eeg", timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    lines = run.stderr.splitlines()
    assert ("plan: epilepsy: datasets siena, chbmit, tusz, epilepsiae, helsinki_neonatal, sz1, "
            "sz2 "
            "(only_datasets=full; "
            "only_datasets=quick runs siena alone)") in lines
    assert ("plan: abnormal_eeg: datasets tuab, nmt, bonn (only_datasets=full; "
            "only_datasets=quick runs tuab alone)") in lines
    for dataset, folder, counted in (("tusz", "tuh_eeg_seizure/v2.0.3", "0/?"),
                                     ("nmt", "nmt_scalp_eeg_dataset", "0/2417")):
        at = lines.index(f"warning: {dataset} will be skipped: data not found in "
                         f"{tmp_path}/data/{folder} ({counted} recordings); the other datasets "
                         "run, and results.tsv and summary.md list its pairs as skipped")
        assert lines[at + 1].startswith(f"fix: put the {dataset} files under {tmp_path}/data/")
