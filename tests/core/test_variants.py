"""The BCI variants (core/variants.py) and `folds: loso` (core/selection.py): what a benchmark's
`variants:` list and its fold count become before anything runs."""

from __future__ import annotations

import copy
import json

import pytest

from embedprobe.core.config import check_names, load_config
from embedprobe.core.errors import UsageError
from embedprobe.core.selection import benchmark_folds, fold_count, selected
from embedprobe.core.variants import (
    VARIANTS,
    embedding_id,
    for_task,
    materialize,
    split_variant,
    variant_model,
)
from embedprobe.models.registry import model_spec


@pytest.fixture
def config():
    return load_config()


def bench_config(config, **bench):
    """The config with one more motor-imagery benchmark, its variants made (as check_names)."""
    changed = copy.deepcopy(config)
    changed["benchmarks"]["mi_variants"] = {
        "task": "motor_imagery", "datasets": ["bnci2014_001_demo"], "folds": 4,
        "fold_seed": 42, "models": ["cbramod_random", "biot_random"]} | bench
    return materialize(changed)


def test_each_model_runs_once_per_variant_under_its_own_id(config):
    changed = bench_config(config, variants=list(VARIANTS))
    models = changed["benchmarks"]["mi_variants"]["models"]
    assert models == [f"{v}/{m}" for v in VARIANTS for m in ("cbramod_random", "biot_random")]
    base = changed["models"]["cbramod_random"]
    for variant, spec in VARIANTS.items():
        entry = changed["models"][variant_model(variant, "cbramod_random")]
        assert entry["bci_filtering"] == spec.filtering
        assert entry.get("pooling", "mean") == ("tokens" if spec.flatten_tokens else "mean")
        # nothing else of the model changes: same weights, rate, window
        assert {k: v for k, v in entry.items() if k not in ("bci_filtering", "pooling")} == \
            {k: v for k, v in base.items() if k != "pooling"}
    assert split_variant("no_filtering_token_flattening/cbramod_random") == (
        "no_filtering_token_flattening", "cbramod_random")
    assert split_variant("cbramod_random") == (None, "cbramod_random")


def test_making_the_variants_twice_changes_nothing(config):
    once = bench_config(config, variants=["default", "per_patch"])
    twice = materialize(copy.deepcopy(once))
    assert json.dumps(once, sort_keys=True) == json.dumps(twice, sort_keys=True)
    # the reference's alias is read as its variant
    assert once["benchmarks"]["mi_variants"]["variants"] == [
        "default", "no_filtering_token_flattening"]


def test_each_variant_id_embeds_with_its_own_preprocessing_and_pooling(config):
    from embedprobe.pipeline.protocol import preprocessing

    changed = bench_config(config, variants=list(VARIANTS))
    keys = {}
    for variant in VARIANTS:
        spec = model_spec(changed, variant_model(variant, "cbramod_random"), "bnci2014_001_demo")
        keys[variant] = (json.dumps(preprocessing(changed, "bnci2014_001_demo", spec).key()),
                         spec.pooling)
    assert len(set(keys.values())) == 4
    assert keys["default"][0] == keys["token_flattening"][0]  # same filters, other pooling
    plain = model_spec(changed, "cbramod_random", "bnci2014_001_demo")
    assert json.dumps(preprocessing(changed, "bnci2014_001_demo", plain).key()) == \
        keys["default"][0]


def test_a_variant_reads_the_store_of_the_listed_model_it_equals(config):
    """One store per (dataset, model, preprocessing, pooling): the default variant of a model
    is that model; token_flattening of cbramod_random is cbramod_random_tokens (config/
    models.yaml lists it); a variant no listed model equals gets a store of its own."""
    changed = bench_config(config, variants=list(VARIANTS))
    models = changed["models"]
    assert embedding_id(models, "default/cbramod_random") == "cbramod_random"
    assert embedding_id(models, "token_flattening/cbramod_random") == "cbramod_random_tokens"
    assert embedding_id(models, "no_filtering/cbramod_random") == "no_filtering/cbramod_random"
    assert embedding_id(models, "cbramod_random") == "cbramod_random"
    # another seed is another model: its own store
    models["cbramod_random_tokens"]["seed"] = 1
    assert embedding_id(models, "token_flattening/cbramod_random") == \
        "token_flattening/cbramod_random"


def test_variants_on_a_task_that_has_none_or_a_token_entry_are_refused(config):
    changed = copy.deepcopy(config)
    changed["benchmarks"]["demo"]["variants"] = ["default"]
    with pytest.raises(UsageError, match="variants.*BCI tasks") as error:
        materialize(changed)
    assert "remove variants" in error.value.fix
    with pytest.raises(UsageError, match="token store") as error:
        bench_config(config, variants=["default"], models=["cbramod_random_tokens"])
    assert "pooled entry" in error.value.fix
    bad = copy.deepcopy(config)
    bad["benchmarks"]["bci_motor_imagery"]["variants"] = ["default", "tokens"]
    with pytest.raises(UsageError) as error:
        check_names(bad)
    assert "token_flattening" in error.value.fix


def test_only_models_selects_a_models_variants_with_it(config):
    changed = bench_config(config, variants=["default", "no_filtering"])
    changed["only_models"] = ["cbramod_random"]
    changed["variants"] = "all"  # a run's default is the default variant alone
    assert selected(changed, "mi_variants", "models") == [
        "default/cbramod_random", "no_filtering/cbramod_random"]


def test_the_bci_group_names_every_bci_task_in_a_models_by_task_settings(config):
    assert for_task({"bci": "millivolts"}, "bci_erp") == "millivolts"
    assert for_task({"bci": "millivolts", "bci_ssvep": "none"}, "bci_ssvep") == "none"
    assert for_task({"bci": "millivolts"}, "sleep_staging") is None
    for task_dataset in ("bnci2014_001_demo", "physionet_mi_demo"):
        assert model_spec(config, "eegpt_random", task_dataset).scaling == "millivolts"
        assert model_spec(config, "labram_random", task_dataset).readout == "cls_mean"
    assert model_spec(config, "labram_random", "sleep_edf_demo").readout != "cls_mean"


# --------------------------------------------------------------------------- folds: loso


def test_loso_counts_the_subjects_of_each_dataset(config):
    changed = bench_config(config, folds="loso", datasets=["bnci2014_001_demo",
                                                           "physionet_mi_demo"])
    assert fold_count(changed, "mi_variants", "bnci2014_001_demo") == 4  # its generator's
    assert fold_count(changed, "mi_variants", "physionet_mi_demo") == 5
    assert fold_count(changed, "mi_variants") == "loso"
    assert benchmark_folds(changed, "mi_variants", "physionet_mi_demo") == [0, 1, 2, 3, 4]
    assert fold_count(config, "bci_motor_imagery", "physionet_mi") == 103  # its `subjects`
    changed["folds"] = [4]
    with pytest.raises(UsageError, match="outside"):
        benchmark_folds(changed, "mi_variants", "bnci2014_001_demo")
    assert benchmark_folds(changed, "mi_variants", "physionet_mi_demo") == [4]


def test_loso_on_a_dataset_that_does_not_count_its_subjects_is_refused(config):
    changed = bench_config(config, folds="loso")
    del changed["datasets"]["bnci2014_001_demo"]["generator"]["subjects"]
    with pytest.raises(UsageError, match="does not say how many subjects") as error:
        fold_count(changed, "mi_variants", "bnci2014_001_demo")
    assert "subjects: N" in error.value.fix


def test_a_jobs_config_slice_holds_the_datasets_fold_count(config):
    from embedprobe.smk.job_configs import job_config_json

    changed = bench_config(config, folds="loso", variants=["default"])
    sliced = json.loads(job_config_json(changed, "mi_variants", "bnci2014_001_demo",
                                        "default/cbramod_random"))
    assert sliced["benchmarks"]["mi_variants"]["folds"] == 4
    assert list(sliced["models"]) == ["default/cbramod_random"]
    assert changed["benchmarks"]["mi_variants"]["folds"] == "loso"  # the config is unchanged


def test_a_family_without_tokens_has_its_flattened_variants_skipped_with_the_reason(config):
    """BIOT pools inside its encoder: its token_flattening id gets no jobs, and the results
    list it as skipped with the reason (BIOT's default variant runs)."""
    from embedprobe.smk.plan import not_run_pairs, runnable_models

    changed = bench_config(config, variants=["default", "token_flattening"],
                           models=["biot_random"])
    changed["variants"] = "all"
    assert runnable_models(changed, "mi_variants", "bnci2014_001_demo") == [
        "default/biot_random"]
    skips = not_run_pairs(changed, "mi_variants", "bnci2014_001_demo")
    assert list(skips) == ["token_flattening/biot_random"]
    assert skips["token_flattening/biot_random"]["status"] == "skipped"
    assert "pooling 'tokens' is not offered by BIOT" in skips[
        "token_flattening/biot_random"]["reason"]


def test_an_override_after_loading_shows_in_the_variant_ids(config):
    """`--config` and `--configfile` apply after load_config made the ids (the embedprobe
    commands): check_names makes them again from the overridden models and variants, as
    Snakemake's one pass sees them."""
    config["benchmarks"]["bci_erp_demo"]["variants"] = ["default"]
    config["models"]["cbramod_random"]["seed"] = 7
    check_names(config)
    assert config["benchmarks"]["bci_erp_demo"]["models"] == ["default/cbramod_random"]
    assert config["models"]["default/cbramod_random"]["seed"] == 7
    assert "token_flattening/cbramod_random" in config["models"]  # other benchmarks' ids
    assert embedding_id(config["models"], "default/cbramod_random") == "cbramod_random"
    config["benchmarks"]["bci_erp_demo"]["models"] = ["biot_random"]
    check_names(config)
    assert config["benchmarks"]["bci_erp_demo"]["models"] == ["default/biot_random"]


def test_a_step_run_by_hand_sees_its_datasets_loso_count():
    """`embedprobe probe|preflight|aggregate --benchmark B --dataset D` without a job config
    reads `folds: loso` as D's count, as the rules' job slices hold it."""
    from argparse import Namespace

    from embedprobe import cli

    args = Namespace(job_config=None, configfile=None, config=None, benchmark="bci_mi_demo",
                     dataset="physionet_mi_demo")
    config, _ = cli.job_config(args)
    assert config["benchmarks"]["bci_mi_demo"]["folds"] == 5
    config, _ = cli.job_config(Namespace(**{**vars(args), "dataset": None}))
    assert config["benchmarks"]["bci_mi_demo"]["folds"] == "loso"


def test_a_fold_selection_outside_a_loso_dataset_names_the_dataset(config):
    changed = bench_config(config, folds="loso", datasets=["bnci2014_001_demo",
                                                           "physionet_mi_demo"])
    changed["folds"] = "4"
    with pytest.raises(UsageError) as error:
        benchmark_folds(changed, "mi_variants", "bnci2014_001_demo")
    assert error.value.message == ("config folds: fold 4 is outside benchmark 'mi_variants' on "
                                   "dataset 'bnci2014_001_demo' (4 folds: 0-3)")


def test_partial_results_pass_over_a_dataset_the_selected_folds_do_not_reach(config, tmp_path):
    """The onerror hook after a failed `snakemake bci_mi_physionet_demo --config folds=4`:
    every benchmark is looked at, and bci_mi_demo's 4-subject dataset has no fold 4."""
    from embedprobe.core.config import resolve_roots
    from embedprobe.smk.partial import partial_results

    for key in ("data_root", "cache_root", "results_root", "weights_root"):
        config[key] = str(tmp_path / key)
    config["folds"] = "4"
    assert partial_results(config, resolve_roots(config), since=0.0) == []


def test_the_config_offers_only_the_protocol_options_the_code_takes():
    """config/config.yaml's comment, the schema's enum and protocol.PROTOCOL_OPTIONS agree;
    no_filtering is a BCI variant, not a protocol option (MOVED_OPTIONS names the fix)."""
    import re
    from pathlib import Path

    import yaml

    from embedprobe.pipeline.protocol import MOVED_OPTIONS, PROTOCOL_OPTIONS

    root = Path(__file__).resolve().parents[2]
    schema = yaml.safe_load((root / "workflow/schemas/config.schema.yaml").read_text())
    enum = schema["properties"]["protocol_options"]["items"]["enum"]
    assert set(enum) == set(PROTOCOL_OPTIONS)
    text = (root / "config/config.yaml").read_text()
    block = text[text.index("# The protocol every recording"):text.index("protocol_options: ")]
    offered = set(re.findall(r"\b([a-z]+_[a-z_]+) \(", block))
    assert offered == set(PROTOCOL_OPTIONS)
    assert not offered & set(MOVED_OPTIONS)


_SHIPPED = load_config()
BCI_DATASETS = sorted({d for b in _SHIPPED["target_groups"]["bci_demo"]
                       for d in _SHIPPED["benchmarks"][b]["datasets"]})


@pytest.mark.parametrize("dataset", BCI_DATASETS)
def test_every_bci_demo_dataset_filters_in_its_confound_variants_only(config, dataset):
    """Each paradigm's look-alike: the default and token_flattening variants embed with the
    paradigm's confound filters, the two no_filtering ones with none (the workflow test runs
    every variant on the motor-imagery and ERP look-alikes alone, tests/tasks/
    test_task_benchmarks.py; this keeps the other paradigms' filters checked)."""
    from embedprobe.pipeline.protocol import preprocessing

    changed = materialize(copy.deepcopy(config))
    filters = {}
    for variant in VARIANTS:
        spec = model_spec(changed, variant_model(variant, "cbramod_random"), dataset)
        filters[variant] = json.dumps(preprocessing(changed, dataset, spec).key()["filters"])
    assert filters["default"] == filters["token_flattening"] != filters["no_filtering"]
    assert filters["no_filtering"] == filters["no_filtering_token_flattening"]
