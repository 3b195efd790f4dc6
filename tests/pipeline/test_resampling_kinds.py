"""The reference's two resampling kinds (pipeline/preprocess.py): each window on its own with
scipy's resample_poly (its model wrappers) and a whole run with MNE's Raw.resample (its BCI
loaders); our continuous resampling is the named option continuous_resampling."""

import copy

import mne
import numpy as np
import pytest
from scipy.signal import resample_poly

from embedprobe.core.config import load_config
from embedprobe.core.errors import UsageError
from embedprobe.models.registry import model_spec
from embedprobe.pipeline.preprocess import resample_whole_mne, windows_resampled_each
from embedprobe.pipeline.protocol import CONTINUOUS, EACH_WINDOW, WHOLE_MNE, preprocessing


@pytest.mark.parametrize("sfreq, to_sfreq, seconds", [(100, 200, 30), (256, 200, 10),
                                                      (512, 200, 10), (100, 256, 30)])
def test_each_window_is_resample_poly_of_that_window_alone(sfreq, to_sfreq, seconds):
    rng = np.random.default_rng(sfreq)
    signals = (rng.standard_normal((2, sfreq * 600)) * 3e-5 + 1e-5).astype(np.float32)
    length_in, length = sfreq * seconds, to_sfreq * seconds
    starts = np.array([0, 7 * sfreq, 99 * sfreq + 3, sfreq * 600 - length_in])
    from fractions import Fraction
    ratio = Fraction(to_sfreq, sfreq)
    for centre in (False, True):
        expected = []
        for start in starts:
            window = signals[:, start:start + length_in].copy()
            if centre:
                window -= window.mean(axis=-1, keepdims=True, dtype=np.float64).astype(np.float32)
            expected.append(resample_poly(window, ratio.numerator, ratio.denominator, axis=-1))
        expected = np.stack(expected).astype(np.float32)
        got = windows_resampled_each(signals, sfreq, to_sfreq, starts, length, centre=centre)
        assert got.shape == (4, 2, length) and got.dtype == np.float32
        assert got.tobytes() == expected.tobytes()
        # from a stretch that begins later: the same windows
        first = 5 * sfreq
        part = windows_resampled_each(signals[:, first:], sfreq, to_sfreq, starts[1:], length,
                                      first_sample=first, centre=centre)
        assert part.tobytes() == expected[1:].tobytes()


def test_a_window_that_does_not_resample_to_its_length_is_refused():
    with pytest.raises(UsageError, match="resamples to"):
        windows_resampled_each(np.zeros((1, 1000), np.float32), 100, 256, np.array([0]), 7)


def test_a_whole_run_is_resampled_as_mnes_raw_resample():
    """BNCI's 250 Hz and PhysioNet's 160 Hz runs to 200 Hz, as the reference's loaders call
    raw.resample(200) before cutting trials."""
    rng = np.random.default_rng(4)
    for sfreq in (250.0, 160.0):
        data = (rng.standard_normal((3, int(sfreq * 95))) * 2e-5).astype(np.float32)
        raw = mne.io.RawArray(data.astype(np.float64),
                              mne.create_info(3, sfreq, "eeg"), verbose="error")
        expected = raw.resample(200.0, verbose="error").get_data()
        got = resample_whole_mne(data, sfreq, 200.0)
        assert got.shape == expected.shape and got.dtype == np.float32
        assert np.abs(got - expected).max() <= 2.0 ** -23 * np.abs(expected).max()


def test_the_protocol_picks_the_references_kind_and_the_option_ours():
    config = load_config()

    def kind(cfg, dataset, model):
        return preprocessing(cfg, dataset, model_spec(cfg, model, dataset)).resampling

    assert kind(config, "sleep_edf_demo", "biot_random") == EACH_WINDOW
    assert kind(config, "chbmit", "eegpt_random") == EACH_WINDOW
    assert kind(config, "bnci2014_001", "labram_random") == WHOLE_MNE
    ours = copy.deepcopy(config) | {"protocol_options": ["continuous_resampling"]}
    assert kind(ours, "sleep_edf_demo", "biot_random") == CONTINUOUS
    assert kind(ours, "bnci2014_001", "labram_random") == CONTINUOUS
