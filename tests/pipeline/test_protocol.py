"""Which preprocessing a (dataset, model) pair gets under the protocol (pipeline/protocol.py):
the reference's by default, named deviations only when asked for, clear errors otherwise."""

import copy

import pytest

from embedprobe.core.config import load_config
from embedprobe.core.errors import UsageError
from embedprobe.models.registry import model_spec
from embedprobe.pipeline.filters import FilterStep
from embedprobe.pipeline.protocol import RECORDING_Q95, preprocessing


@pytest.fixture(scope="module")
def config():
    return load_config()


def prep(config, dataset, model):
    return preprocessing(config, dataset, model_spec(config, model, dataset))


@pytest.mark.parametrize("dataset, line", [("sleep_edf_expanded", 50.0), ("chbmit", 60.0),
                                           ("siena", 50.0), ("sleep_edf_demo", 50.0)])
def test_sleep_and_seizure_data_are_high_passed_and_notched_at_their_powerline(config, dataset,
                                                                               line):
    for model in ("biot_random", "labram_random", "eegpt_random"):
        got = prep(config, dataset, model)
        assert got.filters == (FilterStep("highpass", (0.5,)), FilterStep("notch", (line,)))
        assert not got.whole_recordings


def test_biot_is_centred_and_divided_by_the_recordings_95th_percentile(config):
    got = prep(config, "sleep_edf_demo", "biot_random")
    assert got.centre_windows and got.normalisation == RECORDING_Q95 and got.scaling == "none"


def test_the_other_families_keep_their_amplitude_scale_and_no_recording_statistic(config):
    # the reference's wrappers: LaBraM µV / 100, CBraMod clipped at +-100 µV then / 100,
    # EEGPT µV x 1000 (backbones/{labram,cbramod,eegpt}.py)
    scales = {"labram_random": "0.1mV", "cbramod_random": "0.1mV_clip",
              "eegpt_random": "nanovolts"}
    for model, scaling in scales.items():
        got = prep(config, "chbmit", model)
        assert (got.scaling, got.normalisation, got.centre_windows) == (scaling, None, False)


def test_window_percentile_is_a_named_option_that_changes_the_key(config):
    changed = copy.deepcopy(config) | {"protocol_options": ["window_percentile"]}
    got = prep(changed, "sleep_edf_demo", "biot_random")
    assert got.scaling == "percentile95" and got.normalisation is None
    assert got.key() != prep(config, "sleep_edf_demo", "biot_random").key()


def test_an_unknown_option_or_protocol_is_refused_with_a_fix(config):
    with pytest.raises(UsageError, match="unknown 'nope'") as error:
        prep(copy.deepcopy(config) | {"protocol_options": ["nope"]}, "chbmit", "biot_random")
    assert "window_percentile" in error.value.fix
    with pytest.raises(UsageError, match="protocol"):
        prep(copy.deepcopy(config) | {"protocol": "mine"}, "chbmit", "biot_random")


def test_a_dataset_without_line_freq_is_refused_naming_it(config):
    changed = copy.deepcopy(config)
    del changed["datasets"]["siena"]["line_freq"]
    with pytest.raises(UsageError, match="'siena' has no line_freq") as error:
        prep(changed, "siena", "biot_random")
    assert "line_freq: 50" in error.value.fix and "config/datasets.yaml" in error.value.fix


def test_every_shipped_dataset_names_its_powerline(config):
    assert {name: entry.get("line_freq") for name, entry in config["datasets"].items()} == {
        "sleep_edf_expanded": 50, "sleep_edf_demo": 50, "sleep_edf_families_demo": 50,
        "chbmit": 60, "siena": 50, "chbmit_demo": 60, "siena_demo": 50, "physionet_mi": 60,
        "bnci2014_001": 50, "physionet_mi_demo": 60, "bnci2014_001_demo": 50,
        "dod": 50, "dod_demo": 50, "ucddb": 50, "ucddb_demo": 50, "isruc": 50, "isruc_demo": 50,
        "tuab": 60, "tuab_demo": 60, "physionet2018": 60, "physionet2018_demo": 60,
        "bonn": 50, "bonn_demo": 50, "bnci2014_008": 50, "bnci2014_008_demo": 50,
        "bi2013a": 50, "bi2013a_demo": 50, "nakanishi2015": 60, "nakanishi2015_demo": 60,
        "eegmat": 50, "eegmat_demo": 50,
        # DREAMER: Paisley, Scotland
        "dreamer_valence": 50, "dreamer_arousal": 50, "dreamer_demo": 50,
        # through MOABB: BNCI 2014-004 and 2015-001 (Graz) 50 Hz
        "bnci2014_004": 50, "bnci2015_001": 50, "moabb_demo": 50, "moabb_erp_demo": 50,
        "moabb_ssvep_demo": 60,
        # the reference's other BCI sets through MOABB: its notch where dataio/bci.py sets one
        # (Dreyer, Weibo 50 Hz; Shin 2017 A 60 Hz), else the site's (Liu: China, Brain Invaders:
        # Grenoble, EPFL: Lausanne 50 Hz; ERP CORE: Davis, Kim 2025: South Korea 60 Hz)
        "dreyer2023": 50, "liu2024": 50, "shin2017a": 60, "weibo2014": 50, "bi2014a": 50,
        "epflp300": 50, "erpcore2021_n170": 60, "kim2025betarange": 60,
        # the sleep cohorts: NSRR's (US), WSC, STAGES and MASS (Canada) 60 Hz; HMC, DCSM 50 Hz
        "shhs": 60, "mesa": 60, "mros": 60, "cfs": 60, "homepap": 60, "wsc": 60, "stages": 60,
        "wsc_demo": 60, "stages_demo": 60, "shhs_demo": 60, "mesa_demo": 60, "mros_demo": 60,
        "cfs_demo": 60, "homepap_demo": 60, "hmc": 50, "hmc_demo": 50, "dcsm": 50, "dcsm_demo": 50,
        "mass": 60, "mass_ss1": 60, "mass_demo": 60, "mass_ss1_demo": 60,
        # SzCORE BIDS: CHB-MIT (Boston) and its look-alike 60 Hz; Siena, SeizeIT2 (Leuven) 50 Hz
        "chbmit_bids": 60, "chbmit_bids_demo": 60, "siena_bids": 50, "siena_bids_demo": 50,
        "sz2": 50, "tusz": 60, "tusz_demo": 60, "nmt": 50, "nmt_demo": 50,
        "helsinki_neonatal": 50, "helsinki_neonatal_demo": 50, "sz2_demo": 50,
        # SeizeIT1 (Leuven) and EPILEPSIAE (Freiburg, Coimbra, Paris): 50 Hz
        "sz1": 50, "sz1_demo": 50, "epilepsiae": 50, "epilepsiae_demo": 50}


def test_motor_imagery_trials_are_scaled_as_the_references_bci_wrappers(config):
    """BIOT: each trial centred and divided by its own 95th percentile; EEGPT: µV / 1000."""
    biot = prep(config, "bnci2014_001", "biot_random")
    assert (biot.centre_windows, biot.normalisation, biot.scaling) == (True, None,
                                                                       "percentile95")
    assert prep(config, "bnci2014_001", "eegpt_random").scaling == "millivolts"
    assert prep(config, "bnci2014_001", "labram_random").scaling == "0.1mV"
