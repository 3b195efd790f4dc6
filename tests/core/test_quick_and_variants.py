"""only_datasets (full, quick, names) and variants (default, all, names): which datasets and BCI
variants of each benchmark a run selects (embedprobe/core/selection.py), the plan's lines that
say so, and the usage errors of a bad value. The real snakemake's dry runs of the same:
tests/workflow/test_quick_full_plan.py."""

from __future__ import annotations

import copy
import json

import pytest

from embedprobe.core.config import check_names, load_config
from embedprobe.core.errors import UsageError
from embedprobe.core.selection import (
    benchmark_variants,
    check_selection,
    describe,
    has_work,
    selected,
    selection_lines,
)
from embedprobe.core.variants import VARIANTS, materialize

from helpers.usage import usage_error

# REFERENCE.md's table "datasets (first = its quick dataset)", for each benchmark that is not a
# look-alike demo: its quick dataset where it is here, else the one standing in for it.
REFERENCE_QUICK = {
    "sleep_stage": "sleep_edf_expanded", "brain_age": "sleep_edf_expanded",
    "sleep_hypnogram": "sleep_edf_expanded", "epilepsy": "siena",
    "bci_motor_imagery": "bnci2014_001", "bci_erp": "bi2013a", "bci_ssvep": "nakanishi2015",
    "bci_cognitive": "eegmat", "sleep_diagnosis": "dod", "abnormal_eeg": "tuab",
    "sleep_respiratory": "ucddb",
    # MASS's arousals are SS1's (mass_ss1); PhysioNet 2026 is not public: 2018 stands in
    "sleep_arousal": "mass_ss1", "sleep_limb": "physionet2018",
}
ALL_FOUR = list(VARIANTS)
MODEL = "cbramod_random"


@pytest.fixture
def config():
    return load_config()


def test_quick_runs_each_benchmarks_reference_quick_dataset(config):
    real = {b for b in config["benchmarks"] if "demo" not in b}
    assert real == set(REFERENCE_QUICK)
    config["only_datasets"] = "quick"
    for benchmark, dataset in REFERENCE_QUICK.items():
        assert selected(config, benchmark, "datasets") == [dataset], benchmark
    # the look-alike demos mirror their benchmark
    assert selected(config, "epilepsy_demo", "datasets") == ["siena_demo"]
    assert selected(config, "bci_mi_demo", "datasets") == ["bnci2014_001_demo"]


def test_full_runs_every_listed_dataset_and_names_keep_the_benchmarks_order(config):
    assert config["only_datasets"] == "full"  # the schema's default
    assert selected(config, "sleep_stage", "datasets") == [
        "sleep_edf_expanded", "cfs", "dcsm", "dod", "hmc", "homepap", "isruc", "mass", "mesa",
        "mros", "shhs", "stages", "ucddb", "wsc", "physionet2018"]
    config["only_datasets"] = ["ucddb", "dod"]
    assert selected(config, "sleep_stage", "datasets") == ["dod", "ucddb"]
    assert selected(config, "brain_age", "datasets") == []
    assert not has_work(config, "brain_age") and has_work(config, "sleep_stage")
    config["only_datasets"] = "full"
    assert selected(config, "sleep_stage", "datasets")[-1] == "physionet2018"


@pytest.mark.parametrize("value, message, fix", [
    ("quik", "config only_datasets names unknown dataset 'quik' (did you mean 'quick'?)",
     "use only_datasets=quick (each benchmark's quick dataset), only_datasets=full (every one "
     "it lists), or dataset ids: "),
    ("quick,siena", "config only_datasets: quick stands alone, not beside siena",
     "write only_datasets=quick alone, or name the datasets (only_datasets=[a,b])"),
    (["full", "dod"], "config only_datasets: full stands alone, not beside dod",
     "write only_datasets=full alone"),
])
def test_a_bad_only_datasets_names_the_setting_and_the_values_it_takes(config, value, message,
                                                                        fix):
    config["only_datasets"] = value
    error = usage_error(check_selection, config)
    assert error.message == message and error.fix.startswith(fix)
    if value == "quik":
        assert "siena, siena_bids, siena_bids_demo, siena_demo" in error.fix  # every id


def test_datasets_quick_where_only_datasets_belongs_is_refused_with_the_key(config):
    """`--config datasets=quick` replaces the dataset definitions (snakemake merges a word over
    the mapping): the plan stops before anything and names the key that chooses."""
    from embedprobe.core.selection import check_misplaced

    config["datasets"] = "quick"
    error = usage_error(check_misplaced, config)
    assert error.message == ("config datasets: 'quick' would replace the dataset definitions "
                             "(config/datasets.yaml)")
    assert error.fix == "to choose datasets, set only_datasets instead: --config " \
                        "only_datasets=quick"


def test_the_default_variant_runs_unless_others_are_named(config):
    models = config["benchmarks"]["bci_mi_demo"]["models"]
    assert models == [f"{v}/{MODEL}" for v in ALL_FOUR]  # what the benchmark can run
    assert config["variants"] == "default"
    assert selected(config, "bci_mi_demo", "models") == [f"default/{MODEL}"]
    config["variants"] = "all"
    assert selected(config, "bci_mi_demo", "models") == models
    config["variants"] = "no_filtering,default"  # in the benchmark's order
    assert selected(config, "bci_mi_demo", "models") == [f"default/{MODEL}",
                                                         f"no_filtering/{MODEL}"]
    config["variants"] = ["per_patch"]  # the reference's alias
    assert benchmark_variants(config, "bci_mi_demo") == ["no_filtering_token_flattening"]
    # a benchmark without variants runs its models whatever `variants` says
    assert selected(config, "demo", "models") == ["biot_random"]
    assert benchmark_variants(config, "demo") == []


def test_a_benchmark_without_the_default_variant_runs_its_first(config):
    changed = copy.deepcopy(config)
    changed["benchmarks"]["mine"] = {
        "task": "motor_imagery", "datasets": ["bnci2014_001_demo"], "models": [MODEL],
        "folds": 4, "fold_seed": 42, "variants": ["no_filtering", "token_flattening"]}
    materialize(changed)
    assert selected(changed, "mine", "models") == [f"no_filtering/{MODEL}"]
    changed["variants"] = ["token_flattening"]
    assert selected(changed, "mine", "models") == [f"token_flattening/{MODEL}"]
    changed["variants"] = ["no_filtering_token_flattening"]  # one it does not list
    assert selected(changed, "mine", "models") == [] and not has_work(changed, "mine")


@pytest.mark.parametrize("value, message", [
    ("nope", "config variants names unknown variant 'nope'"),
    ("no_filter", "config variants names unknown variant 'no_filter' (did you mean "
                  "'no_filtering'?)"),
    ("all,default", "config variants: all stands alone, not beside default"),
    ("", "config variants is empty"),
])
def test_a_bad_variants_value_names_the_setting_and_the_values_it_takes(config, value, message):
    config["variants"] = value
    error = usage_error(check_selection, config)
    assert error.message == message
    if "unknown" in message:
        assert error.fix.startswith(
            "use variants=default (each BCI benchmark's default variant), variants=all "
            "(every variant it lists), or some of: default, token_flattening, no_filtering, "
            "no_filtering_token_flattening (the reference's aliases too: ")


def test_a_list_from_the_command_line_is_checked_as_snakemake_hands_it_over(config):
    config.update(variants=["default", "token_flattening"], only_datasets=["siena"])
    check_names(config)  # the schema takes a list or a word
    check_selection(config)
    config["only_datasets"] = None  # not a choice: full is written out
    with pytest.raises(UsageError, match="config only_datasets: None is not of type"):
        check_names(config)


def test_the_plan_lines_say_what_runs_and_what_the_other_value_adds(config):
    assert selection_lines(config, "bci_mi_demo") == [
        "datasets bnci2014_001_demo, physionet_mi_demo (only_datasets=full; only_datasets=quick "
        "runs bnci2014_001_demo alone)",
        "variants default (variants=default; variants=all adds token_flattening, no_filtering, "
        "no_filtering_token_flattening)"]
    assert selection_lines(config, "demo") == ["datasets sleep_edf_demo (only_datasets=full)"]
    config.update(only_datasets="quick", variants="all")
    assert selection_lines(config, "bci_mi_demo") == [
        "datasets bnci2014_001_demo (only_datasets=quick; only_datasets=full adds "
        "physionet_mi_demo)",
        "variants default, token_flattening, no_filtering, no_filtering_token_flattening "
        "(variants=all)"]
    assert describe(config) == "only_datasets=quick variants=all"
    config.update(only_datasets=["chbmit"], variants=["no_filtering"])
    assert selection_lines(config, "bci_mi_demo") == [
        "datasets none (only_datasets=chbmit; only_datasets=full adds bnci2014_001_demo, "
        "physionet_mi_demo)",
        "variants no_filtering (variants=no_filtering; variants=all adds default, "
        "token_flattening, no_filtering_token_flattening)"]


def test_a_target_left_nothing_names_the_setting_that_emptied_it(config):
    from embedprobe.smk.plan import nothing_to_run

    config["only_datasets"] = ["siena"]
    members = ["bci_mi_demo", "bci_erp_demo"]
    error = nothing_to_run(config, "two", members)
    assert error.message == ("config only_datasets=siena names no dataset of target 'two' (its "
                             "datasets: bnci2014_001_demo, physionet_mi_demo, bnci2014_008_demo)")
    assert error.fix == ("use only_datasets=quick, full, or some of: bnci2014_001_demo, "
                         "physionet_mi_demo, bnci2014_008_demo")
    config["only_datasets"] = "full"
    config["benchmarks"]["bci_erp_demo"]["variants"] = ["token_flattening"]
    materialize(config)
    config["variants"] = ["no_filtering"]
    config["benchmarks"]["bci_mi_demo"]["variants"] = ["default"]
    materialize(config)
    error = nothing_to_run(config, "two", members)
    assert error.message == ("config variants=no_filtering names no variant of target 'two' "
                             "(its variants: default, token_flattening)")
    assert error.fix == "use variants=default, all, or some of: default, token_flattening"


def test_the_selection_changes_no_jobs_config_slice(config):
    """A job's slice leaves the selection out: `only_datasets=quick` or `variants=all` reruns
    no job that a full run made, and the next full run reuses the quick run's."""
    from embedprobe.smk.job_configs import job_config_json

    def slices(cfg):
        return [json.loads(job_config_json(cfg, "bci_mi_demo", "bnci2014_001_demo", model))
                for model in (None, f"default/{MODEL}")]

    before = slices(config)
    config.update(only_datasets="quick", variants="all")
    assert slices(config) == before
    assert not {"only_datasets", "variants"} & set(before[0])
