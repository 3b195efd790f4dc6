"""`--config only_datasets=quick|full` and `variants=default|all|NAMES` in the real snakemake's
dry run: the jobs it plans (read with the package's own parser of `snakemake -n`, which
`embedprobe plan` uses), the `plan:` lines that say which datasets and variants run, and the
exit 2 of a bad value. Dry runs only; the selection itself: tests/core/test_quick_and_variants.py.
"""

from __future__ import annotations

from collections import Counter

import pytest

from embedprobe.smk.status import plan_rows

from helpers.project import snakemake

pytestmark = pytest.mark.workflow

MODEL = "cbramod_random"
VARIANTS = ("default", "token_flattening", "no_filtering", "no_filtering_token_flattening")
# each variant's store (core/variants.embedding_id): the default reads the model's own,
# token_flattening config/models.yaml's token entry, the no_filtering ones stores of their own
STORES = {"default": MODEL, "token_flattening": f"{MODEL}_tokens",
          "no_filtering": f"no_filtering/{MODEL}",
          "no_filtering_token_flattening": f"no_filtering_token_flattening/{MODEL}"}
MI_FOLDS = {"bnci2014_001_demo": 4, "physionet_mi_demo": 5}  # LOSO: one per subject


def dry_run(workdir, target: str, *settings: str):
    run = snakemake(workdir, "-n", target, config=settings, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    rows = plan_rows(run.stdout)
    probes = Counter((r["dataset"], r["model"]) for r in rows if r["rule"] == "probe")
    stores = {(r["dataset"], r["model"]) for r in rows if r["rule"] == "embed"}
    plan = [line for line in run.stderr.splitlines() if line.startswith("plan: ")]
    return probes, stores, plan


def test_by_default_a_bci_benchmark_plans_every_dataset_in_its_default_variant(tmp_path):
    probes, stores, plan = dry_run(tmp_path, "bci_mi_demo")
    assert probes == {(d, f"default/{MODEL}"): n for d, n in MI_FOLDS.items()}
    assert stores == {(d, MODEL) for d in MI_FOLDS}
    assert plan[:2] == [
        "plan: bci_mi_demo: datasets bnci2014_001_demo, physionet_mi_demo (only_datasets=full; "
        "only_datasets=quick runs bnci2014_001_demo alone)",
        "plan: bci_mi_demo: variants default (variants=default; variants=all adds "
        "token_flattening, no_filtering, no_filtering_token_flattening)"]


def test_quick_plans_the_quick_dataset_and_all_every_variant(tmp_path):
    probes, stores, plan = dry_run(tmp_path, "bci_mi_demo", "only_datasets=quick",
                                   "variants=all")
    assert probes == {("bnci2014_001_demo", f"{v}/{MODEL}"): 4 for v in VARIANTS}
    assert stores == {("bnci2014_001_demo", store) for store in STORES.values()}
    assert plan == [
        "plan: bci_mi_demo: datasets bnci2014_001_demo (only_datasets=quick; only_datasets=full "
        "adds physionet_mi_demo)",
        "plan: bci_mi_demo: variants default, token_flattening, no_filtering, "
        "no_filtering_token_flattening (variants=all)",
        "plan: bci_mi_demo: bnci2014_001_demo LOSO (4): one fold per subject"]


def test_quick_on_a_target_group_plans_each_benchmarks_own_quick_dataset(tmp_path):
    """Each benchmark of the group keeps its first dataset (the reference's quick dataset;
    every benchmark's: tests/core/test_quick_and_variants.py)."""
    probes, _, plan = dry_run(tmp_path, "recording_level_demo", "only_datasets=quick")
    assert {dataset for dataset, _ in probes} == {"dod_demo", "tuab_demo"}
    assert plan == [
        "plan: sleep_diagnosis_demo: datasets dod_demo (only_datasets=quick; "
        "only_datasets=full adds isruc_demo)",
        "plan: abnormal_eeg_demo: datasets tuab_demo (only_datasets=quick; only_datasets=full "
        "adds bonn_demo)"]


@pytest.mark.parametrize("setting, error, fix", [
    ("only_datasets=quik",
     "error: config only_datasets names unknown dataset 'quik' (did you mean 'quick'?)",
     "fix: use only_datasets=quick (each benchmark's quick dataset), only_datasets=full "
     "(every one it lists), or dataset ids: bi2013a, "),
    ("only_datasets=siena_demo",
     "error: config only_datasets=siena_demo names no dataset of target 'bci_mi_demo' (its "
     "datasets: bnci2014_001_demo, physionet_mi_demo)",
     "fix: use only_datasets=quick, full, or some of: bnci2014_001_demo, physionet_mi_demo"),
    ("variants=nope", "error: config variants names unknown variant 'nope'",
     "fix: use variants=default (each BCI benchmark's default variant), variants=all (every "
     "variant it lists), or some of: default, token_flattening, no_filtering, "
     "no_filtering_token_flattening"),
])
def test_a_bad_value_stops_the_plan_with_exit_2_and_the_values_it_takes(tmp_path, setting,
                                                                          error, fix):
    run = snakemake(tmp_path, "-n", "bci_mi_demo", config=[setting], timeout=300)
    assert run.returncode == 2, run.stderr[-2000:]
    lines = run.stderr.splitlines()
    at = lines.index(error)
    assert lines[at + 1].startswith(fix), lines[at + 1]
    assert "rule probe:" not in run.stdout
