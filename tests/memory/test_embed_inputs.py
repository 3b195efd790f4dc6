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
from embedprobe.pipeline.context import DatasetContext
from embedprobe.pipeline.filters import reach
from embedprobe.pipeline.protocol import preprocessing

from helpers.check_config import DATASET, make_config

WINDOWS = 10  # one recording's first ten 30-s windows: one part
HELD = ("parts in flight and being batched: their windows, and the signal each reader "
        "reads and filters (float64 copies; a recording's statistic streams it in part-sized "
        "stretches first), the larger")


def fake_check(model: str, n_chans: int) -> SimpleNamespace:
    """What embed_inputs reads of a passed check: the model inputs (windows.shape[1])."""
    return SimpleNamespace(model=model, n_chans=n_chans, n_times_epoch=6000, feature_dim=256,
                           n_params=1000, batch_activation_bytes=MIB, batch_size=32,
                           baseline_bytes=0, gpu_peaks=None)


@pytest.fixture(scope="module")
def demo(demo_root, tmp_path_factory):
    """The demo's config, roots, one recording's ten windows as an index, and the EEG
    samples of the longest recording and of that one as MNE reads the EDF headers (the
    oracle)."""
    config, roots = make_config(demo_root.parent, tmp_path_factory.mktemp("inputs"))
    files = sorted((demo_root / "sleep-cassette").glob("*-PSG.edf"))
    lengths = [mne.io.read_raw_edf(f, include=["EEG Fpz-Cz"], verbose="error").n_times
               for f in files]
    recording = files[0].name.removesuffix("-PSG.edf")
    table = pd.DataFrame({"recording": recording, "subject": recording[:5],
                          "start": np.arange(WINDOWS) * 3000, "label": 0, "sfreq": 100.0})
    return config, roots, table, SimpleNamespace(longest=max(lengths), own=lengths[0])


def stretch_samples(config: dict) -> int:
    """Ten 30-s windows at 100 Hz, resampled to 200 Hz: the resampling filter's reach (24
    recorded samples: preprocess._input_reach at 100 -> 200 Hz) and the filters' (the 0.5 Hz
    high-pass; the 50 Hz notch does not apply below 100 Hz) after the last one; none before
    the first, at the recording's start."""
    steps = preprocessing(config, DATASET, model_spec(config, "biot_random", DATASET)).filters
    assert [s.kind for s in steps] == ["highpass", "notch"]
    return WINDOWS * 3000 + 24 + reach(steps, 100.0)


def test_biot_reads_two_channels_for_sixteen_inputs_and_the_longest_recording_first(demo):
    config, roots, table, length = demo
    inputs = embed_inputs(DatasetContext.build(config, roots, DATASET),
                          fake_check("biot_random", 16), table)
    assert inputs["n_channels"] == 16  # the model inputs: windows and batches
    assert inputs["night_windows"] == WINDOWS
    # the read and filter terms: Fpz-Cz and Pz-Oz as float64, not 16 inputs
    assert inputs["recording_bytes"] == 2 * stretch_samples(config) * 8
    assert inputs["statistic_bytes"] == 2 * length.longest * 8
    assert inputs["resample_ratio"] == 2.0
    # its one part: the statistic reads its own recording whole, more than the stretch
    assert inputs["part_windows"] == [WINDOWS]
    assert inputs["part_signal_bytes"] == [2 * length.own * 8]
    assert length.own > stretch_samples(config)


def test_a_model_without_the_statistic_reads_only_its_stretch(demo):
    config, roots, table, _ = demo
    inputs = embed_inputs(DatasetContext.build(config, roots, DATASET),
                          fake_check("cbramod_random", 2), table)
    assert inputs["n_channels"] == 2
    assert inputs["recording_bytes"] == 2 * stretch_samples(config) * 8
    assert inputs["statistic_bytes"] == 0
    assert inputs["part_signal_bytes"] == [2 * stretch_samples(config) * 8]


def test_motor_imagery_reads_every_channel_of_its_average_reference():
    """BIOT's 4 slots on BNCI 2014-001 come from C3 and C4, but the common average reference
    reads all 22 EEG channels (the EOG ones are not EEG)."""
    config = load_config()
    spec = model_spec(config, "biot_random", "bnci2014_001")
    prep = preprocessing(config, "bnci2014_001", spec)
    assert len(prep.average_reference) == 22
    # no data is read: the contexts need no roots
    assert channels_read(DatasetContext.build(config, {}, "bnci2014_001"), spec, prep) == 22
    sleep_spec = model_spec(config, "biot_random", DATASET)
    assert channels_read(DatasetContext.build(config, {}, DATASET), sleep_spec,
                         preprocessing(config, DATASET, sleep_spec)) == 2


def reader_inputs(**overrides) -> dict:
    return {"batch_size": 32, "n_channels": 16, "n_samples": 6000, "feature_dim": 256,
            "weights_bytes": 0, "recording_bytes": 10 * MIB, "statistic_bytes": 0,
            "night_windows": 10, "n_workers": 2, "batch_activation_bytes": 0, **overrides}


PER_WINDOW = 16 * 6000 * 4  # a window of 16 inputs x 6000 float32
WINDOWS_BYTES = 10 * PER_WINDOW  # reader_inputs' part


def held(calibration: dict, **overrides) -> float:
    return estimate("embed_cpu", reader_inputs(**overrides), calibration, None).terms[HELD]


COPIES = {"jobs": {"embed_cpu": {"recording_copies": 3.0}}}


def test_each_reader_holds_the_larger_of_its_stretch_and_the_whole_recording():
    """Without the index's parts every part is the largest: two readers' parts, one made
    ahead and one batched as windows; each part being made adds what its reader's signal
    (3 copies) holds beyond its windows."""
    assert held(COPIES) == 4 * WINDOWS_BYTES + 2 * (3 * 10 * MIB - WINDOWS_BYTES)
    # the statistic's whole recording first, then the stretch: never both at once
    assert held(COPIES, statistic_bytes=25 * MIB) \
        == 4 * WINDOWS_BYTES + 2 * (3 * 25 * MIB - WINDOWS_BYTES)
    assert held(COPIES, statistic_bytes=4 * MIB) == held(COPIES)
    # the job's own thread reads the next part while the last one's windows are held
    assert held(COPIES, n_workers=0) == 2 * WINDOWS_BYTES + (3 * 10 * MIB - WINDOWS_BYTES)


def test_a_reader_s_windows_count_where_they_outgrow_its_signal():
    """BIOT on Sleep-EDF: 2 channels read become 16 model inputs; once the filters' copies
    are freed a reader holds the windows it writes, here the larger (36.6 MiB > 30 MiB)."""
    assert held(COPIES, night_windows=100) == 4 * 100 * PER_WINDOW


def test_the_index_s_parts_of_different_sizes_never_come_all_at_once():
    """Parts end at recording ends and every 512th row: the stream holds a part being
    batched and the three in flight after it, never four of the largest."""
    parts = [100, 10, 10, 100, 10]
    small = reader_inputs(night_windows=100, part_windows=parts,
                          part_signal_bytes=[MIB] * 5)  # 3 MiB < any part's windows
    assert estimate("embed_cpu", small, COPIES, None).terms[HELD] == 220 * PER_WINDOW
    # the last part's reader filters 40 MiB (x 3): batched the second part, in flight the
    # rest, that reader making the last: 130 windows and 120 MiB beyond its 10 windows
    late = {**small, "part_signal_bytes": [MIB] * 4 + [40 * MIB]}
    assert estimate("embed_cpu", late, COPIES, None).terms[HELD] \
        == 130 * PER_WINDOW + 3 * 40 * MIB - 10 * PER_WINDOW == 171_909_120
    # reader processes write into slots the size of the largest part, which stay
    gpu = {**late, "gpu_peaks": {1: MIB, 32: 2 * MIB}, "gpu_total_bytes": 80 * 1024 * MIB}
    assert estimate("embed_gpu", gpu, COPIES | {"jobs": {"embed_gpu": {
        "recording_copies": 3.0}}}, None).terms[HELD] == 4 * 100 * PER_WINDOW


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


ACTIVATIONS = "batch activations"


def test_a_forward_pass_grows_the_job_only_past_the_freed_heap_it_reuses():
    """check's growth x the factor, less reused_heap_bytes, never below zero: a small model's
    pass fits in the freed heap beside it, a large one's grows past it by the rest."""
    table = {"jobs": {"embed_cpu": {"activation_factor": 1.5, "reused_heap_bytes": 40 * MIB}}}

    def activations(grown_at_16: float) -> float:
        inputs = reader_inputs(batch_activation_bytes=grown_at_16, activation_batch_size=16)
        return estimate("embed_cpu", inputs, table, None).terms[ACTIVATIONS]

    assert activations(10 * MIB) == 0  # 2 x 10 MiB x 1.5 = 30 MiB, inside the 40 reused
    assert activations(100 * MIB) == 2 * 100 * MIB * 1.5 - 40 * MIB  # 260 MiB
    # without the constant (older tables) the whole growth counts, as before
    plain = estimate("embed_cpu", reader_inputs(batch_activation_bytes=100 * MIB,
                                                activation_batch_size=16),
                     {"jobs": {"embed_cpu": {"activation_factor": 1.5}}}, None)
    assert plain.terms[ACTIVATIONS] == 2 * 100 * MIB * 1.5


def test_a_family_with_its_own_activation_factor_replaces_the_fitted_one():
    """Chronos's embed growth is its check's (the fitted factor put its peaks 9-11% high):
    its factor 1.0 counts the growth once, less the reused heap; the rest keep the table's."""
    table = {"jobs": {"embed_cpu": {"activation_factor": 1.5, "reused_heap_bytes": 40 * MIB}}}
    inputs = reader_inputs(batch_activation_bytes=100 * MIB, activation_batch_size=32)
    fitted = estimate("embed_cpu", inputs, table, None).terms[ACTIVATIONS]
    own = estimate("embed_cpu", {**inputs, "family_activation_factor": 1.0}, table,
                   None).terms[ACTIVATIONS]
    assert (fitted, own) == (150 * MIB - 40 * MIB, 100 * MIB - 40 * MIB)


def test_only_chronos_brings_its_own_activation_factor(demo):
    config, roots, table, _ = demo
    context = DatasetContext.build(config, roots, DATASET)
    factors = {model: embed_inputs(context, fake_check(model, 2), table)
               ["family_activation_factor"]
               for model in ("chronos_random", "moment_random", "cbramod_random")}
    assert factors == {"chronos_random": 1.0, "moment_random": None, "cbramod_random": None}


def _activation_runs(truth: dict, grown: list[float]) -> list[dict]:
    runs = []
    for bytes_ in grown:
        inputs = reader_inputs(batch_activation_bytes=bytes_, recording_bytes=MIB)
        runs.append({"inputs": inputs,
                     "peak": float(estimate("embed_cpu", inputs, truth, None).total)})
    return runs


def test_the_fit_tells_the_reused_heap_from_the_factor_by_small_and_large_passes():
    """Peaks made by a known factor and reused heap, from passes below and above it: the
    envelope fit (convex in both: fitted on its tangents) finds both."""
    base = {"baseline_bytes": 100 * MIB, "window_copies": 0.0, "recording_copies": 1.0,
            "hdf5_buffer_bytes": 0, "window_row_bytes": 0.0, "input_copies": 0.0}
    truth = {"jobs": {"embed_cpu": {**base, "activation_factor": 1.3,
                                    "reused_heap_bytes": 50 * MIB}}}
    runs = _activation_runs(truth, [20 * MIB, 60 * MIB, 400 * MIB, 600 * MIB])
    values, over = fit_constants("embed_cpu", runs, ("activation_factor", "reused_heap_bytes"),
                                 {**base, "activation_factor": 1.0})
    assert values["activation_factor"] == pytest.approx(1.3, rel=1e-4)
    assert values["reused_heap_bytes"] == pytest.approx(50 * MIB, rel=1e-3)
    assert over == pytest.approx(0, abs=64 * 1024)


def test_the_fit_takes_a_repeated_runs_typical_peak_and_its_repeats_within_the_allowance():
    """A run measured three times: the fit covers its median, and its highest repeat only
    within REPEAT_ALLOWANCE of the estimate (the embed request's margin takes the spread)."""
    from embedprobe.memory.refit import REPEAT_ALLOWANCE

    base = {"baseline_bytes": 100 * MIB, "window_copies": 0.0, "recording_copies": 1.0,
            "hdf5_buffer_bytes": 0, "window_row_bytes": 0.0, "input_copies": 0.0,
            "reused_heap_bytes": 0.0}
    truth = {"jobs": {"embed_cpu": {**base, "activation_factor": 1.0}}}
    run = _activation_runs(truth, [400 * MIB])[0]
    typical = run["peak"]

    def fitted(peaks: list[float]) -> float:
        repeated = {**run, "peak": sorted(peaks)[1], "peaks": peaks}
        values, _ = fit_constants("embed_cpu", [repeated], ("activation_factor",), base)
        return estimate("embed_cpu", run["inputs"], {"jobs": {"embed_cpu": {**base, **values}}},
                        None).total

    # a repeat 5% high is inside the allowance: the estimate is the typical peak
    assert fitted([typical * 0.97, typical, typical * 1.05]) == pytest.approx(typical, rel=1e-4)
    # one 20% high is not: the estimate rises to the highest repeat / (1 + allowance)
    high = typical * 1.2
    assert fitted([typical * 0.97, typical, high]) == pytest.approx(
        high / (1 + REPEAT_ALLOWANCE), rel=1e-4)
    # a run measured once is covered whole, as before
    values, _ = fit_constants("embed_cpu", [{**run, "peak": high}], ("activation_factor",), base)
    assert estimate("embed_cpu", run["inputs"], {"jobs": {"embed_cpu": {**base, **values}}},
                    None).total == pytest.approx(high, rel=1e-4)
