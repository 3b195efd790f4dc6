"""What a run selects: only_models, only_datasets, folds, limit_batches, strict
(embedprobe/core/selection.py), checked as the plan checks them. only_datasets' quick and full
and the variants: tests/core/test_quick_and_variants.py."""

from __future__ import annotations

import pytest

from embedprobe.core.config import check_names, load_config, resolve_roots
from embedprobe.core.selection import (
    benchmark_folds,
    check_misplaced,
    check_selection,
    describe,
    fold_selection,
    has_work,
    in_job_config,
    name_list,
    parse_folds,
    selected,
)

from helpers.usage import usage_error


@pytest.fixture
def config():
    return load_config()


@pytest.mark.parametrize("value, folds", [
    (None, None), ("debug", [0]), ("DEBUG", [0]), (0, [0]), (3, [3]), ("0,2", [0, 2]),
    ("2, 0", [0, 2]), ([2, 0, 2], [0, 2]), (["0", "2"], [0, 2]),  # snakemake's --config [0,2]
])
def test_folds_are_read_in_every_spelling(value, folds):
    assert parse_folds(value) == folds


@pytest.mark.parametrize("value", ["x", "0,x", [-1], ["1.5"], True, [], ""])
def test_a_folds_value_that_names_no_fold_numbers_is_a_usage_error(value):
    error = usage_error(parse_folds, value)
    assert error.message.startswith("config folds: ")
    assert "folds=debug" in error.fix


def test_selected_folds_are_checked_against_each_benchmark(config):
    assert benchmark_folds(config, "demo") == [0, 1, 2, 3, 4]
    assert fold_selection(config, "demo") is None
    config["folds"] = "debug"
    assert benchmark_folds(config, "demo") == [0] == fold_selection(config, "demo")
    config["folds"] = [0, 4]
    assert benchmark_folds(config, "demo") == [0, 4]
    # bci_mi_bnci2014_001_demo has 4 folds: fold 4 is outside it, and only it
    error = usage_error(benchmark_folds, config, "bci_mi_bnci2014_001_demo")
    assert error.message == ("config folds: fold 4 is outside benchmark "
                             "'bci_mi_bnci2014_001_demo' (4 folds: 0-3)")
    assert error.fix.startswith("choose folds from 0 to 3")


def test_models_and_datasets_are_kept_in_the_benchmarks_order(config):
    assert selected(config, "epilepsy", "datasets") == ["siena", "chbmit", "sz2",
                                                        "helsinki_neonatal"]
    config["only_datasets"] = "siena"  # `a,b` from the command line
    config["only_models"] = ["biot_random", "labram_random"]
    assert selected(config, "epilepsy", "datasets") == ["siena"]
    assert selected(config, "epilepsy", "models") == ["biot_random"]
    assert has_work(config, "epilepsy") and not has_work(config, "demo")
    assert name_list(config, "only_models") == ["biot_random", "labram_random"]
    assert describe(config) == "only_models=biot_random,labram_random only_datasets=siena"


def test_an_unknown_name_is_a_usage_error_with_the_closest_one(config):
    config["only_models"] = ["biot_randon"]
    error = usage_error(check_selection, config)
    assert error.message == ("config only_models names unknown model 'biot_randon' (did you "
                             "mean 'biot_random'?)")
    assert "biot_random" in error.fix and "config/models.yaml" in error.fix
    config["only_models"] = None
    config["only_datasets"] = "sleep_edf_demo,chbmit_dem"
    error = usage_error(check_selection, config)
    assert "unknown dataset 'chbmit_dem' (did you mean 'chbmit_demo'?)" in error.message


def test_a_selection_that_leaves_every_benchmark_nothing_is_a_usage_error(config):
    config["only_models"] = ["codebrain_pretrained"]  # defined, but no benchmark runs it
    error = usage_error(check_selection, config)
    assert error.message == "only_models=codebrain_pretrained selects nothing of any benchmark"
    config["only_models"], config["folds"] = ["biot_random"], "0,2"
    check_selection(config)


def test_models_given_where_the_selection_belongs_is_refused_with_the_key_to_use(config):
    config["models"] = ["biot_random"]  # what `--config models=[biot_random]` leaves
    error = usage_error(check_misplaced, config)
    assert "would replace the model definitions" in error.message
    assert error.fix.endswith("--config only_models=[biot_random]")


def test_the_schema_takes_the_keys_with_their_defaults(config):
    assert {k: config[k] for k in ("only_models", "only_datasets", "variants", "folds",
                                   "limit_batches", "strict")} == {
        "only_models": None, "only_datasets": "full", "variants": "default", "folds": None,
        "limit_batches": None, "strict": False}
    config.update(folds=["0", "2"], only_models="biot_random", strict="true", limit_batches=2)
    check_names(config)  # as snakemake's --config hands them over
    assert config["strict"] is True
    config["limit_batches"] = 0
    error = usage_error(check_names, config)
    assert error.message.startswith("config limit_batches: 0 is less than the minimum of 1")


def test_a_capped_run_writes_to_sibling_roots(config):
    config.update(cache_root="/x/cache/", results_root="/x/results", data_root="/x/data",
                  weights_root="/x/weights")
    assert resolve_roots(config, environ={})["cache_root"] == "/x/cache"
    config["limit_batches"] = 2
    assert resolve_roots(config, environ={}) == {
        "data_root": "/x/data", "cache_root": "/x/cache_limited",
        "results_root": "/x/results_limited", "weights_root": "/x/weights"}
    # a job's config slice holds the roots the plan resolved: resolving them again keeps them
    config.update(resolve_roots(config, environ={}))
    assert resolve_roots(config, environ={})["cache_root"] == "/x/cache_limited"
    config.update(cache_root=None, results_root=None)  # from the environment, or the default
    roots = resolve_roots(config, environ={"EMBEDPROBE_CACHE_ROOT": "/scratch/cache"})
    assert (roots["cache_root"], roots["results_root"]) == ("/scratch/cache_limited",
                                                            "results_limited")


def test_the_selection_stays_out_of_job_configs_and_the_cap_only_when_set():
    assert not any(in_job_config(k, v) for k, v in (
        ("only_models", ["a"]), ("only_datasets", "full"), ("variants", "all"),
        ("folds", "debug"), ("strict", True),
        ("limit_batches", None)))
    assert in_job_config("limit_batches", 2) and in_job_config("allow_partial", False)
