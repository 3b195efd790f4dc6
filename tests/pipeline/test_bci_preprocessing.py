"""Motor imagery's preprocessing under the reference protocol (pipeline/protocol.py
`bci_filters`, `bci_average_reference`; pipeline/filters.py `mne_notch`, `average_reference`):
the steps of the reference's default BCI variant for each model family, and the filtered run
against MNE's own filters of the whole recording.

The reference (kkontras/NeuroAtlas at 87363ae, the commit of its user guide):
- docs/guide/benchmarks.md "BCI variants": EEGPT 0.5-70 Hz at 256 Hz with the dataset's line
  frequency as notch; ST-EEGFormer and SleepFM 0.1-64 Hz at 128 Hz, line frequency; every other
  model 0.1-75 Hz at 200 Hz, 50 Hz notch; "the notch covers the line frequency and its
  harmonics, and every trial is average-referenced"; confound filtering (the default) "keeps
  the model's rate and notch and changes the band": motor imagery 4-40 Hz, the trial from 1 s
  to 4 s after the cue.
- src/neuroatlas/extensions/datasets/dataio/bci_formats.py FORMATS / FAMILY_FORMAT: labram
  (0.1, 75, 200, 50), bendr (0.5, 70, 256, line), steegformer (0.1, 64, 128, line); eegpt ->
  bendr, steegformer and sleepfm -> steegformer, any other family -> labram.
- src/neuroatlas/extensions/datasets/dataio/moabb_loader.py load_and_preprocess_moabb, in this
  order: pick("eeg"); x 1e6; notch_filter(freqs=np.arange(notch, native_sfreq / 2, notch));
  filter(l_freq=fmin, h_freq=fmax), (fmin, fmax) = CONFOUND_FILTERING["mi"] = (4, 40) under
  confound filtering, else the format's band; set_eeg_reference(ref_channels="average",
  ch_type="eeg"); resample(format rate). All MNE defaults otherwise (FIR, zero phase, hamming,
  firwin, reflect_limited padding), all at the recorded rate.
"""

import copy
import dataclasses

import mne
import numpy as np
import pytest

from embedprobe.core.config import load_config
from embedprobe.core.errors import UsageError
from embedprobe.datasets.bnci2014_001 import reader as bnci
from embedprobe.datasets.physionet_mi import reader as physionet
from embedprobe.datasets.registry import labelling_task_name
from embedprobe.models.registry import model_spec
from embedprobe.pipeline.filters import FilterStep, apply_filters, average_reference, reach
from embedprobe.pipeline.protocol import bci_average_reference, bci_filters, preprocessing

# Ours against MNE's float64 pipeline: we cast to float32 after each step (as the window maker
# does), MNE keeps float64 throughout. Bound: one float32 rounding step (2**-23) of the
# recording's peak |x|; measured at most 0.94 * 2**-24 on these runs.
FLOAT32_TOLERANCE = 2.0**-23
# BIOT's 18 BNCI 2014-001 channels (config/channel_maps/bnci2014_001.yaml)
BIOT_CHANNELS = ("FC3", "C5", "CP3", "CP1", "FC4", "C6", "CP4", "CP2", "FC1", "C1", "FCz",
                 "CPz", "FC2", "C2", "Cz", "Pz", "C3", "C4")
DEFAULT_BAND = FilterStep("mne_bandpass", (4.0, 40.0))


@pytest.fixture(scope="module")
def config():
    return load_config()


def steps(config, dataset, model, filtering="confound"):
    """The model's BCI filters on the dataset; filtering "none": its no_filtering variants'."""
    spec = dataclasses.replace(model_spec(config, model, dataset), bci_filtering=filtering)
    return bci_filters(config, dataset, spec, labelling_task_name(config["datasets"][dataset]))


# --------------------------------------------------------------------------- the steps


@pytest.mark.parametrize("dataset, eegpt_notch", [
    ("physionet_mi", 60.0), ("physionet_mi_demo", 60.0),  # USA (bci.py physionet_mi_eegpt)
    ("bnci2014_001", 50.0), ("bnci2014_001_demo", 50.0),  # Austria (bci.py _BROAD_MI_SPECS)
])
def test_each_family_is_notched_as_its_format_then_band_passed_at_4_40_hz(config, dataset,
                                                                         eegpt_notch):
    # labram format (BIOT, LaBraM, CBraMod): 50 Hz whatever the dataset; bendr (EEGPT): the
    # dataset's line frequency (bci_formats.py FORMATS; benchmarks.md "BCI variants")
    notch = {"biot_random": 50.0, "labram_random": 50.0, "cbramod_random": 50.0,
             "eegpt_random": eegpt_notch}
    for model, hz in notch.items():
        assert steps(config, dataset, model) == (FilterStep("mne_notch", (hz,)), DEFAULT_BAND)


def test_no_filtering_gives_each_family_its_own_band(config):
    band = {"biot_pretrained": (0.1, 75.0), "labram_pretrained": (0.1, 75.0),
            "cbramod_pretrained": (0.1, 75.0), "eegpt_pretrained": (0.5, 70.0)}
    for model, hz in band.items():
        assert steps(config, "physionet_mi", model, "none")[1] == FilterStep("mne_bandpass", hz)
    spec = model_spec(config, "eegpt_pretrained", "bnci2014_001")
    unfiltered = dataclasses.replace(spec, bci_filtering="none")
    assert (preprocessing(config, "bnci2014_001", unfiltered).key()
            != preprocessing(config, "bnci2014_001", spec).key())


def test_the_no_filtering_protocol_option_names_the_variant_that_replaced_it(config):
    changed = copy.deepcopy(config) | {"protocol_options": ["no_filtering"]}
    spec = model_spec(config, "cbramod_random", "bnci2014_001")
    with pytest.raises(UsageError, match="BCI variant") as error:
        preprocessing(changed, "bnci2014_001", spec)
    assert "--config variants=no_filtering" in error.value.fix


@pytest.mark.parametrize("family", ["steegformer", "sleepfm"])
def test_st_eegformer_and_sleepfm_read_0_1_64_hz_at_128_hz_with_the_line_notch(config, family):
    spec = dataclasses.replace(model_spec(config, "eegpt_random", "physionet_mi"),
                               family=family, sfreq=128.0)
    assert bci_filters(config, "physionet_mi", spec) == (FilterStep("mne_notch", (60.0,)),
                                                         DEFAULT_BAND)
    unfiltered = dataclasses.replace(spec, bci_filtering="none")
    assert bci_filters(config, "physionet_mi", unfiltered)[1] == \
        FilterStep("mne_bandpass", (0.1, 64.0))


def test_a_family_at_another_rate_than_its_format_is_refused(config):
    spec = dataclasses.replace(model_spec(config, "labram_random", "bnci2014_001"), sfreq=256.0)
    with pytest.raises(UsageError, match="256 Hz.*200 Hz") as error:
        bci_filters(config, "bnci2014_001", spec)
    assert "BCI_FAMILY_FORMAT" in error.value.fix


def test_only_a_line_frequency_notch_needs_the_datasets_line_freq(config):
    changed = copy.deepcopy(config)
    del changed["datasets"]["bnci2014_001"]["line_freq"]
    assert steps(changed, "bnci2014_001", "biot_random")[0] == FilterStep("mne_notch", (50.0,))
    with pytest.raises(UsageError, match="'bnci2014_001' has no line_freq"):
        steps(changed, "bnci2014_001", "eegpt_random")


def test_motor_imagery_filters_whole_runs_with_these_steps(config):
    for dataset in ("physionet_mi_demo", "bnci2014_001_demo"):
        for model in ("biot_random", "eegpt_random"):
            got = preprocessing(config, dataset, model_spec(config, model, dataset))
            assert got.whole_recordings
            assert got.filters == steps(config, dataset, model)


def test_the_average_reference_is_every_eeg_channel_of_the_recording(config):
    # moabb_loader.py: pick("eeg") keeps BNCI 2014-001's 22 EEG channels (not EOG1-3);
    # bci.py: PhysionetMI's pick_channels(CHANNELS_PHYSIONET_MI) keeps all 64
    assert bci_average_reference(config, "bnci2014_001") == bnci.EEG_CHANNELS
    assert len(bnci.EEG_CHANNELS) == 22 and "EOG1" not in bnci.EEG_CHANNELS
    assert bci_average_reference(config, "physionet_mi_demo") == physionet.CHANNELS
    assert len(physionet.CHANNELS) == 64


def test_average_reference_subtracts_the_reference_rows_mean_from_them_only():
    data = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 9.0]], np.float32)
    got = average_reference(data, ("a", "b", "eog"), ("a", "b"))  # mean of a, b: [2, 3]
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, [[-1.0, -1.0], [1.0, 1.0], [5.0, 9.0]])


def test_the_mne_steps_run_over_whole_recordings_only():
    with pytest.raises(ValueError, match="whole recordings only"):
        reach((FilterStep("mne_notch", (50.0,)),), 250.0)


def test_the_notch_takes_the_line_harmonics_below_nyquist():
    sfreq = 250.0
    t = np.arange(int(60 * sfreq)) / sfreq
    tones = np.stack([np.sin(2 * np.pi * f * t) for f in (50.0, 100.0, 30.0)]).astype(np.float32)
    out = apply_filters(tones, sfreq, (FilterStep("mne_notch", (50.0,)),))
    inner = slice(int(10 * sfreq), int(50 * sfreq))
    assert np.abs(out[:2, inner]).max() < 0.01  # 50 Hz and its harmonic at 100 Hz
    assert np.abs(out[2, inner]).max() == pytest.approx(1.0, abs=0.01)  # 30 Hz kept
    # PhysioNet at 160 Hz: 60 Hz only (np.arange(60, 80, 60)); at 100 Hz nothing to remove
    assert np.array_equal(apply_filters(tones, 100.0, (FilterStep("mne_notch", (60.0,)),)),
                          tones)


# --------------------------------------------------------------------- the filtered run


def recorded_run(sfreq: float, n_eeg: int, seconds: float, line: float, seed: int = 0):
    """(n_eeg + 3, samples) float32 µV: EEG with drift, a common hum at the line frequency and
    its harmonic, alpha; three EOG rows of blinks-like noise after them."""
    rng = np.random.default_rng(seed)
    n = int(sfreq * seconds)
    t = np.arange(n) / sfreq
    common = (rng.standard_normal(n).cumsum() * 2 + 20 * np.sin(2 * np.pi * line * t)
              + 5 * np.sin(2 * np.pi * 2 * line * t))
    eeg = (rng.standard_normal((n_eeg, n)).cumsum(-1) * 0.5 + rng.standard_normal((n_eeg, n))
           * 10 + common + 15 * np.sin(2 * np.pi * 10 * t))
    eog = rng.standard_normal((3, n)).cumsum(-1) * 5
    return np.concatenate([eeg, eog]).astype(np.float32)


def ours(run, names, sfreq, reference, read, filters):
    """As the window maker is to make a run: the average reference over the recorded EEG
    channels, the channels the model reads picked, then the filters at the recorded rate."""
    referenced = average_reference(run, names, reference)
    return apply_filters(referenced[[names.index(n) for n in read]], sfreq, filters)


def mne_filters(run, sfreq, line, band):
    """MNE's functions with the reference's arguments, in its order, float64 throughout:
    notch (line and harmonics below Nyquist), band-pass, average over the EEG rows."""
    x = mne.filter.notch_filter(run.astype(np.float64), sfreq,
                                np.arange(line, sfreq / 2, line), verbose="error")
    return mne.filter.filter_data(x, sfreq, band[0], band[1], verbose="error")


CASES = {  # dataset, model, bci_filtering -> the recorded run's rate, EEG channels, line frequency
    "bnci-labram-default": ("bnci2014_001", "labram_random", "confound", bnci.SFREQ,
                            bnci.CHANNELS),
    "bnci-eegpt-nofilter": ("bnci2014_001", "eegpt_random", "none", bnci.SFREQ,
                            bnci.CHANNELS),
    "physionet-eegpt-default": ("physionet_mi", "eegpt_random", "confound", physionet.SFREQ,
                                physionet.CHANNELS + ("X1", "X2", "X3")),
    "physionet-cbramod-nofilter": ("physionet_mi", "cbramod_random", "none",
                                   physionet.SFREQ, physionet.CHANNELS + ("X1", "X2", "X3")),
}


@pytest.mark.parametrize("case", CASES)
def test_the_filtered_run_is_mnes_filtering_of_the_whole_recording(config, case):
    dataset, model, filtering, sfreq, names = CASES[case]
    filters = steps(config, dataset, model, filtering)
    (line,), band = filters[0].freqs, filters[1].freqs
    reference = bci_average_reference(config, dataset)
    run = recorded_run(sfreq, len(reference), 120, line)
    expected = mne_filters(run, sfreq, line, band)
    rows = [names.index(n) for n in reference]
    expected = expected[rows] - expected[rows].mean(axis=0)
    got = ours(run, names, sfreq, reference, reference, filters)
    assert got.dtype == np.float32
    assert np.abs(got - expected).max() <= FLOAT32_TOLERANCE * np.abs(run).max()


def test_the_run_is_the_references_mne_raw_pipeline_for_the_channels_a_model_reads(config):
    """The reference's braindecode Preprocessors on an MNE Raw (22 EEG + 3 EOG at 250 Hz, in
    volts as MOABB hands it over), against ours for BIOT's 18 channels."""
    filters = steps(config, "bnci2014_001", "biot_random")
    reference = bci_average_reference(config, "bnci2014_001")
    run = recorded_run(bnci.SFREQ, 22, 120, 50.0)
    info = mne.create_info(list(bnci.CHANNELS), bnci.SFREQ, ["eeg"] * 22 + ["eog"] * 3)
    raw = mne.io.RawArray(run.astype(np.float64) * 1e-6, info, verbose="error")
    raw.pick("eeg")
    raw.apply_function(lambda x: x * 1e6)
    raw.notch_filter(freqs=np.arange(50.0, bnci.SFREQ / 2, 50.0), verbose="error")
    raw.filter(l_freq=4.0, h_freq=40.0, verbose="error")
    raw.set_eeg_reference(ref_channels="average", ch_type="eeg", verbose="error")
    expected = raw.get_data(picks=list(BIOT_CHANNELS))
    got = ours(run, bnci.CHANNELS, bnci.SFREQ, reference, BIOT_CHANNELS, filters)
    assert np.abs(got - expected).max() <= FLOAT32_TOLERANCE * np.abs(run).max()
    # averaged over BIOT's 18 channels only, the run is not the reference's
    alone = ours(run, bnci.CHANNELS, bnci.SFREQ, BIOT_CHANNELS, BIOT_CHANNELS, filters)
    assert np.abs(alone - expected).max() > 1e3 * FLOAT32_TOLERANCE * np.abs(run).max()


# --------------------------------------------------------------------------- other paradigms


@pytest.mark.parametrize("task, default", [
    # the reference's confound filtering per paradigm (moabb_loader.py CONFOUND_FILTERING; its
    # guide, "BCI variants"): ERP 0.5-40 Hz, SSVEP the format's high-pass and no low-pass,
    # cognitive 4-40 Hz
    ("bci_erp", FilterStep("mne_bandpass", (0.5, 40.0))),
    ("bci_ssvep", FilterStep("mne_highpass", (0.1,))),
    ("bci_cognitive", FilterStep("mne_bandpass", (4.0, 40.0))),
])
def test_each_paradigm_has_its_confound_band_and_no_filtering_the_models_own(config, task,
                                                                            default):
    spec = model_spec(config, "cbramod_random", "bnci2014_001")
    assert bci_filters(config, "bnci2014_001", spec, task) == (
        FilterStep("mne_notch", (50.0,)), default)
    eegpt = model_spec(config, "eegpt_random", "bnci2014_001")
    if task == "bci_ssvep":  # EEGPT's format high-passes at 0.5 Hz
        assert bci_filters(config, "bnci2014_001", eegpt, task)[1] == FilterStep(
            "mne_highpass", (0.5,))
    unfiltered = dataclasses.replace(spec, bci_filtering="none")
    assert bci_filters(config, "bnci2014_001", unfiltered, task)[1] == FilterStep(
        "mne_bandpass", (0.1, 75.0))


def test_a_high_pass_alone_is_mnes_high_pass():
    rng = np.random.default_rng(0)
    data = rng.normal(size=(3, 4000)).astype(np.float32)
    got = apply_filters(data, 250.0, (FilterStep("mne_highpass", (0.5,)),))
    expected = mne.filter.filter_data(data.astype(np.float64), 250.0, 0.5, None,
                                      verbose="error")
    assert np.abs(got - expected).max() <= FLOAT32_TOLERANCE * np.abs(data).max() * 4
    # the low frequencies are gone, the high ones stay (no low-pass)
    spectrum = np.abs(np.fft.rfft(got[0] - data[0]))
    assert spectrum[-100:].mean() < 0.05 * np.abs(np.fft.rfft(data[0]))[-100:].mean()
