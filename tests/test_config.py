import copy

import pytest

from embedprobe.config import check_names, load_config, resolve_roots
from embedprobe.errors import UsageError


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
