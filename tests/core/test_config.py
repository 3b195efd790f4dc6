import copy

import pytest

from embedprobe.core.config import check_names, load_config, resolve_roots
from embedprobe.core.errors import UsageError


@pytest.fixture
def config():
    return load_config()


def test_shipped_config_is_valid(config):
    check_names(config)
    assert set(config["benchmarks"]) >= {"sleep_stage", "demo"}


def test_unknown_model_in_benchmark_names_it_and_suggests(config):
    bad = copy.deepcopy(config)
    bad["benchmarks"]["demo"]["models"] = ["biot_randm"]
    with pytest.raises(UsageError) as err:
        check_names(bad)
    assert "biot_randm" in err.value.message
    assert "did you mean 'biot_random'" in err.value.message
    assert err.value.exit_code == 2 and "config/models.yaml" in err.value.fix


def test_misspelt_key_is_named_with_closest(config):
    bad = copy.deepcopy(config)
    bad["embed"]["batch_sise"] = 8
    with pytest.raises(UsageError, match=r"embed\.batch_sise.*did you mean 'batch_size'"):
        check_names(bad)
    bad = copy.deepcopy(config)
    bad["modles"] = {}
    with pytest.raises(UsageError, match=r"'modles'.*did you mean 'models'"):
        check_names(bad)


def test_misspelt_key_inside_a_named_entry(config):
    bad = copy.deepcopy(config)
    bad["models"]["biot_random"]["sfreqq"] = 100
    with pytest.raises(UsageError, match=r"models\.biot_random\.sfreqq.*'sfreq'"):
        check_names(bad)


def test_roots_config_over_environment_over_default():
    env = {"EMBEDPROBE_DATA_ROOT": "/env/data"}
    roots = resolve_roots({"cache_root": "/cfg/cache/"}, environ=env)
    assert roots == {"data_root": "/env/data", "cache_root": "/cfg/cache",
                     "results_root": "results", "weights_root": "weights"}


def test_a_bad_value_names_its_place_and_the_choices(config):
    bad = copy.deepcopy(config)
    bad["embed"]["device"] = "gpu"
    with pytest.raises(UsageError) as err:
        check_names(bad)
    assert err.value.message.startswith("config embed.device: 'gpu' is not one of")
    assert err.value.fix == "set embed.device to one of: cpu, cuda" and err.value.exit_code == 2
    bad = copy.deepcopy(config)
    bad["memory"]["margin"] = -0.5
    with pytest.raises(UsageError, match=r"config memory.margin: -0.5 is less than the minimum"):
        check_names(bad)


def test_a_root_with_a_brace_is_refused_with_its_name():
    """Snakemake would read it as a wildcard in every path below it (a KeyError deep inside)."""
    with pytest.raises(UsageError) as info:
        resolve_roots({"results_root": "/tmp/run ${HOME}"}, environ={})
    assert "results_root '/tmp/run ${HOME}' holds a brace" in str(info.value)
    assert "EMBEDPROBE_RESULTS_ROOT" in info.value.fix


def test_snakemake_refuses_a_root_with_a_brace_before_any_job(tmp_path):
    from helpers.project import snakemake

    run = snakemake(tmp_path, "-n", "demo", config=[f"cache_root={tmp_path}/c{{x}}"])
    assert run.returncode == 2, run.stderr
    assert "error: cache_root" in run.stderr and "holds a brace" in run.stderr
    assert "fix: choose a folder without { or } for cache_root" in run.stderr


def test_snakemake_refuses_a_bad_value_before_any_job(tmp_path):
    from helpers.project import snakemake

    run = snakemake(tmp_path, "-n", "demo", config=["embed={device: gpu}"])
    assert run.returncode == 2
    assert "error: config embed.device: 'gpu' is not one of ['cpu', 'cuda']" in run.stderr
    assert "fix: set embed.device to one of: cpu, cuda" in run.stderr
