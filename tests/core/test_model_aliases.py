"""Model aliases (core/model_aliases.py): all_pretrained, all_random, the reference's group
aliases (all_fm, all_ts, all_supervised), all and a family name expand to model ids in config
order wherever models are listed; a name after a minus removes its ids; unknown names are usage
errors."""

from __future__ import annotations

import subprocess

import pytest

from embedprobe.core.config import check_names, load_config
from embedprobe.core.errors import UsageError
from embedprobe.core.model_aliases import expand_models, model_aliases
from embedprobe.core.selection import check_selection, name_list, selected

from helpers.project import PROJECT, VENV_BIN

PRETRAINED = ["biot_pretrained", "biot_six_datasets", "biot_shhs_prest", "labram_pretrained",
              "cbramod_pretrained", "eegpt_pretrained", "bendr_pretrained",
              "signal_jepa_pretrained",
              "signal_jepa_without_chans_pretrained", "luna_base_pretrained",
              "luna_large_pretrained", "luna_huge_pretrained", "reve_base_pretrained",
              "steegformer_small_pretrained", "steegformer_base_pretrained",
              "steegformer_large_pretrained", "steegformer_largev2_pretrained",
              "codebrain_pretrained", "eegdino_small_pretrained", "eegdino_medium_pretrained"]
# the time-series foundation models (`group: ts_fm`)
CHRONOS = ["chronos_t5_tiny", "chronos_t5_small", "chronos_t5_base", "chronos_t5_large"]
MOMENT = ["moment_small", "moment_base", "moment_large"]
TIME_SERIES = CHRONOS + MOMENT
# the supervised models (`group: supervised`): EEGNet's motor-imagery checkpoints
EEGNET = [f"eegnetv4_{d}" for d in (
    "alex_mi", "bnci2014_001", "bnci2014_004", "bnci2015_001", "bnci2015_004", "cho2017",
    "lee2019_mi", "ofner2017", "physionet_mi", "schirrmeister2017", "weibo2014", "zhou2016")]
RANDOM = ["biot_random", "labram_random", "cbramod_random", "eegpt_random", "bendr_random",
          "signal_jepa_random", "luna_random", "reve_random", "steegformer_random",
          "codebrain_random", "eegdino_random", "chronos_random", "moment_random",
          "eegnetv4_random"]
TOKENS = ["labram_random_tokens", "cbramod_random_tokens", "eegpt_random_tokens"]


@pytest.fixture
def config():
    return load_config()


def test_the_shipped_models_aliases(config):
    every = [m for m in config["models"] if m in PRETRAINED + TIME_SERIES + EEGNET + RANDOM]
    assert model_aliases(config["models"]) == {
        "all_pretrained": PRETRAINED + TIME_SERIES + EEGNET, "all_random": RANDOM,
        "all_tokens": TOKENS, "all_fm": PRETRAINED, "all_ts": TIME_SERIES,
        "all_supervised": EEGNET, "all": every,
        "biot": ["biot_pretrained", "biot_six_datasets", "biot_shhs_prest"],
        "labram": ["labram_pretrained"],
        "cbramod": ["cbramod_pretrained"], "eegpt": ["eegpt_pretrained"],
        "bendr": ["bendr_pretrained"],
        "signal_jepa": ["signal_jepa_pretrained", "signal_jepa_without_chans_pretrained"],
        "luna": ["luna_base_pretrained", "luna_large_pretrained", "luna_huge_pretrained"],
        "reve": ["reve_base_pretrained"],
        "steegformer": ["steegformer_small_pretrained", "steegformer_base_pretrained",
                        "steegformer_large_pretrained", "steegformer_largev2_pretrained"],
        "codebrain": ["codebrain_pretrained"],
        "eegdino": ["eegdino_small_pretrained", "eegdino_medium_pretrained"],
        "chronos": CHRONOS, "moment": MOMENT, "eegnetv4": EEGNET}


def test_a_benchmark_list_expands_in_order_and_once(config):
    config["benchmarks"]["demo"]["models"] = ["labram_random", "all_random", "biot"]
    check_names(config)
    assert config["benchmarks"]["demo"]["models"] == [
        "labram_random", "biot_random", "cbramod_random", "eegpt_random", "bendr_random",
        "signal_jepa_random", "luna_random", "reve_random", "steegformer_random",
        "codebrain_random", "eegdino_random", "chronos_random", "moment_random",
        "eegnetv4_random", "biot_pretrained", "biot_six_datasets", "biot_shhs_prest"]
    check_names(config)  # ids stay ids: expanding again changes nothing
    assert config["benchmarks"]["demo"]["models"][:2] == ["labram_random", "biot_random"]


def test_only_models_takes_aliases(config):
    config["only_models"] = "cbramod,all_random"
    check_selection(config)
    assert name_list(config, "only_models") == ["cbramod_pretrained", *RANDOM]
    assert selected(config, "sleep_stage", "models") == [
        m for m in config["benchmarks"]["sleep_stage"]["models"]
        if m in ["cbramod_pretrained", *RANDOM]]


def test_a_model_id_spelled_like_an_alias_is_that_model():
    models = {"biot": {"family": "biot", "weights": "hf:org/biot"},
              "all_random": {"family": "x", "weights": "random"},
              "x_random": {"family": "x", "weights": "random"}}
    assert model_aliases(models) == {"all_pretrained": ["biot"], "all_tokens": [],
                                     "all_fm": ["biot"], "all_ts": [], "all_supervised": [],
                                     "all": ["biot", "all_random", "x_random"]}
    assert expand_models(["all_random", "biot"], models, "here") == ["all_random", "biot"]


def test_unknown_names_and_empty_aliases_are_usage_errors(config):
    config["benchmarks"]["demo"]["models"] = ["all_pretraind"]
    with pytest.raises(UsageError) as raised:
        check_names(config)
    assert raised.value.message == ("benchmark 'demo' names unknown model 'all_pretraind' (did "
                                    "you mean 'all_pretrained'?)")
    assert "biot_random" in raised.value.fix and "all_pretrained" in raised.value.fix
    only_random = {"a_random": {"family": "a", "weights": "random"}}
    with pytest.raises(UsageError, match="'all_pretrained', which stands for no model"):
        expand_models(["all_pretrained"], only_random, "config only_models")


def test_check_refuses_a_misspelt_alias_with_exit_2():
    cli = str(VENV_BIN / "embedprobe")
    done = subprocess.run([cli, "check", "--benchmark", "demo", "--model", "eegt"],
                          capture_output=True, text=True, cwd=PROJECT, timeout=300)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "error: --model names unknown model 'eegt' (did you mean 'eegpt'?)" in done.stderr
    assert "fix: " in done.stderr


def test_token_stores_stay_out_of_the_pooled_aliases():
    models = {"a_random": {"family": "a", "weights": "random"},
              "a_pretrained": {"family": "a", "weights": "hf:org/a"},
              "a_pretrained_tokens": {"family": "a", "weights": "hf:org/a", "pooling": "tokens"},
              "a_random_tokens": {"family": "a", "weights": "random", "pooling": "tokens"}}
    aliases = model_aliases(models)
    assert aliases == {"all_pretrained": ["a_pretrained"], "all_random": ["a_random"],
                       "all_tokens": ["a_pretrained_tokens", "a_random_tokens"],
                       "all_fm": ["a_pretrained"], "all_ts": [], "all_supervised": [],
                       "all": ["a_random", "a_pretrained"], "a": ["a_pretrained"]}
    assert expand_models(["all_tokens", "a"], models, "here") == [
        "a_pretrained_tokens", "a_random_tokens", "a_pretrained"]


GROUPS = {"fm_pretrained": {"family": "fm", "weights": "hf:org/fm"},
          "ts_pretrained": {"family": "ts", "weights": "hf:org/ts", "group": "ts_fm"},
          "sup_pretrained": {"family": "sup", "weights": "w.pt", "group": "supervised"},
          "fm_random": {"family": "fm", "weights": "random"},
          "ts_random": {"family": "ts", "weights": "random", "group": "ts_fm"}}


def test_the_group_aliases_take_each_groups_pretrained_models():
    aliases = model_aliases(GROUPS)
    assert aliases["all_fm"] == ["fm_pretrained"]  # no group: an EEG foundation model
    assert aliases["all_ts"] == ["ts_pretrained"] and aliases["all_supervised"] == [
        "sup_pretrained"]
    assert aliases["all"] == list(GROUPS)


def test_a_name_after_a_minus_removes_its_ids_wherever_it_stands(config):
    models = config["models"]
    assert expand_models(["-biot", "all_fm", "-luna_huge_pretrained"], models, "here") == [
        m for m in PRETRAINED if m not in ("biot_pretrained", "biot_six_datasets",
                                           "biot_shhs_prest", "luna_huge_pretrained")]
    assert expand_models(["all", "-all_random"], models, "here") == (PRETRAINED + TIME_SERIES
                                                                       + EEGNET)
    assert expand_models(["all_pretrained", "-all_ts", "-all_supervised"], models,
                         "here") == PRETRAINED
    config["only_models"] = "all_random,-biot_random"
    check_selection(config)
    assert name_list(config, "only_models") == RANDOM[1:]
    with pytest.raises(UsageError, match="only removes models") as raised:
        expand_models(["-biot"], models, "config only_models")
    assert raised.value.fix == "name what to keep first, e.g. [all_fm, -biot]"
    with pytest.raises(UsageError, match="unknown model 'bito'"):
        expand_models(["all_fm", "-bito"], models, "config only_models")


def test_an_empty_group_alias_says_which_group_a_model_would_need(config):
    models = {m: e for m, e in config["models"].items() if e.get("group") != "supervised"}
    with pytest.raises(UsageError, match="'all_supervised', which stands for no model") as raised:
        expand_models(["all_supervised"], models, "config only_models")
    assert "`group: supervised`" in raised.value.fix
    assert expand_models(["all_ts"], config["models"], "here") == TIME_SERIES
