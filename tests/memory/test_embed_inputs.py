"""The embed estimate's inputs (preflight.embed_inputs) and the reader terms they feed: the
channels read size the read and filter terms, the model inputs the windows; BIOT's recording
statistic reads the whole longest recording first. Known answers on conftest's generated
Sleep-EDF demo (5 subjects x 2 nights), without a check run."""

from __future__ import annotations

from types import SimpleNamespace

import mne
import numpy as np
import pandas as pd
import pytest

from embedprobe.core.config import load_config
from embedprobe.core.units import MIB
from embedprobe.memory import estimate as estimates
from embedprobe.memory.estimate import estimate
from embedprobe.memory.preflight import channels_read, embed_inputs
from embedprobe.memory.refit import fit_constants
from embedprobe.models.registry import model_spec
from embedprobe.pipeline.filters import reach
from embedprobe.pipeline.protocol import preprocessing

from helpers.check_config import DATASET, make_config

WINDOWS = 10  # one recording's first ten 30-s windows: one part
READER = ("nights in flight: each reader's part, the larger of its signal read and filtered "
          "(float64 copies; the whole recording first for the recording statistic) and the "
          "windows it makes")


def fake_check(model: str, n_chans: int) -> SimpleNamespace:
    """What embed_inputs reads of a passed check: the model inputs (windows.shape[1])."""
    return SimpleNamespace(model=model, n_chans=n_chans, n_times_epoch=6000, feature_dim=256,
                           n_params=1000, batch_activation_bytes=MIB, batch_size=32,
                           baseline_bytes=0, gpu_peaks=None)


@pytest.fixture(scope="module")
def demo(demo_root, tmp_path_factory):
    """The demo's config, roots, one recording's ten windows as an index, and the longest
    recording's EEG samples as MNE reads the EDF headers (the oracle)."""
    config, roots = make_config(demo_root.parent, tmp_path_factory.mktemp("inputs"))
    files = sorted((demo_root / "sleep-cassette").glob("*-PSG.edf"))
    longest = max(mne.io.read_raw_edf(f, include=["EEG Fpz-Cz"], verbose="error").n_times
                  for f in files)
    recording = files[0].name.removesuffix("-PSG.edf")
    table = pd.DataFrame({"recording": recording, "subject": recording[:5],
                          "start": np.arange(WINDOWS) * 3000, "label": 0, "sfreq": 100.0})
    return config, roots, table, longest


def stretch_samples(config: dict) -> int:
    """Ten 30-s windows at 100 Hz, resampled to 200 Hz: the resampling filter's reach (24
    recorded samples: preprocess._input_reach at 100 -> 200 Hz) and the filters' (the 0.5 Hz
    high-pass; the 50 Hz notch does not apply below 100 Hz) after the last one; none before
    the first, at the recording's start."""
    steps = preprocessing(config, DATASET, model_spec(config, "biot_random", DATASET)).filters
    assert [s.kind for s in steps] == ["highpass", "notch"]
    return WINDOWS * 3000 + 24 + reach(steps, 100.0)


def test_biot_reads_two_channels_for_sixteen_inputs_and_the_longest_recording_first(demo):
    config, roots, table, longest = demo
    inputs = embed_inputs(config, roots, DATASET, fake_check("biot_random", 16), table)
    assert inputs["n_channels"] == 16  # the model inputs: windows and batches
    assert inputs["night_windows"] == WINDOWS
    # the read and filter terms: Fpz-Cz and Pz-Oz as float64, not 16 inputs
    assert inputs["recording_bytes"] == 2 * stretch_samples(config) * 8
    assert inputs["statistic_bytes"] == 2 * longest * 8
    assert inputs["resample_ratio"] == 2.0


def test_a_model_without_the_statistic_reads_only_its_stretch(demo):
    config, roots, table, _ = demo
    inputs = embed_inputs(config, roots, DATASET, fake_check("cbramod_random", 2), table)
    assert inputs["n_channels"] == 2
    assert inputs["recording_bytes"] == 2 * stretch_samples(config) * 8
    assert inputs["statistic_bytes"] == 0


def test_motor_imagery_reads_every_channel_of_its_average_reference():
    """BIOT's 4 slots on BNCI 2014-001 come from C3 and C4, but the common average reference
    reads all 22 EEG channels (the EOG ones are not EEG)."""
    config = load_config()
    spec = model_spec(config, "biot_random", "bnci2014_001")
    prep = preprocessing(config, "bnci2014_001", spec)
    assert len(prep.average_reference) == 22
    assert channels_read(config, "bnci2014_001", spec, prep) == 22
    assert channels_read(config, DATASET, model_spec(config, "biot_random", DATASET),
                         preprocessing(config, DATASET, model_spec(config, "biot_random",
                                                                   DATASET))) == 2


def reader_inputs(**overrides) -> dict:
    return {"batch_size": 32, "n_channels": 16, "n_samples": 6000, "feature_dim": 256,
            "weights_bytes": 0, "recording_bytes": 10 * MIB, "statistic_bytes": 0,
            "night_windows": 10, "n_workers": 2, "batch_activation_bytes": 0, **overrides}


WINDOWS_BYTES = 10 * 16 * 6000 * 4  # a part's windows: 10 x 16 inputs x 6000 float32


def test_each_reader_holds_the_larger_of_its_stretch_and_the_whole_recording():
    calibration = {"jobs": {"embed_cpu": {"recording_copies": 3.0}}}

    def reader_part(**overrides) -> float:
        return estimate("embed_cpu", reader_inputs(**overrides), calibration, None).terms[READER]

    assert reader_part() == 2 * 10 * MIB * 3.0  # two readers, each its stretch x 3 copies
    # the statistic's whole recording first, then the stretch: never both at once
    assert reader_part(statistic_bytes=25 * MIB) == 2 * 25 * MIB * 3.0
    assert reader_part(statistic_bytes=4 * MIB) == 2 * 10 * MIB * 3.0
    assert reader_part(n_workers=0) == 10 * MIB * 3.0  # the job's own thread reads


def test_a_reader_s_windows_count_where_they_outgrow_its_signal():
    """BIOT on Sleep-EDF: 2 channels read become 16 model inputs; once the filters' copies
    are freed a reader holds the windows it writes, which can be larger."""
    calibration = {"jobs": {"embed_cpu": {"recording_copies": 3.0}}}
    many = reader_inputs(night_windows=100)  # 100 x 16 x 6000 x 4 = 36.6 MiB > 30 MiB
    terms = estimate("embed_cpu", many, calibration, None).terms
    assert terms[READER] == 2 * 10 * WINDOWS_BYTES
    assert terms["windows of the night being batched"] == 10 * WINDOWS_BYTES


def test_the_fit_covers_each_run_through_the_larger_of_signal_and_windows():
    """The reader part is convex in recording_copies: the envelope fit, linearised on its
    tangents, finds the factor the signal-bound run needs and still covers the window-bound
    one (where the factor does not count)."""
    base = {"baseline_bytes": 100 * MIB, "window_copies": 0.0, "activation_factor": 1.0,
            "hdf5_buffer_bytes": 0, "window_row_bytes": 0.0, "input_copies": 0.0}
    signal_bound = reader_inputs(recording_bytes=40 * MIB)  # 2 x 40 x 3.5 = 280 MiB
    window_bound = reader_inputs(recording_bytes=MIB, night_windows=200)  # windows 73 MiB
    runs = []
    for inputs, copies in ((signal_bound, 3.5), (window_bound, 3.5)):
        truth = {"jobs": {"embed_cpu": {**base, "recording_copies": copies}}}
        runs.append({"inputs": inputs,
                     "peak": float(estimate("embed_cpu", inputs, truth, None).total)})
    values, over = fit_constants("embed_cpu", runs, ("recording_copies",), base)
    assert values["recording_copies"] == pytest.approx(3.5, rel=1e-6)
    assert over == pytest.approx(0, abs=1024)


def test_every_embed_job_type_without_the_statistic_defaults_it_to_zero():
    for job in ("embed_cpu", "embed_gpu", "embed_gpu_device"):
        assert estimates.JOB_TYPES[job].defaults["statistic_bytes"] == 0
