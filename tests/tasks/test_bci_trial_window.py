"""Motor imagery's trial window per BCI variant: the reference's confound-filtering variants
embed 1-4 s after each cue, its no_filtering variants the whole trial, from the cue to 4 s
after it (run/default_runs.sh's BCI notes; guide "BCI variants"). ERP keeps its window in both.
Checked on windows the project's own index and window code cut from look-alike files."""

from __future__ import annotations

import copy
from dataclasses import replace

import numpy as np
import pytest

from embedprobe.core.config import load_config
from embedprobe.core.variants import CONFOUND, NO_FILTERING, variant_entry, variant_model
from embedprobe.datasets.bnci2014_001 import lookalike as bnci_lookalike
from embedprobe.datasets.physionet_mi import lookalike as physionet_lookalike
from embedprobe.datasets.registry import FORMATS, entry_window, find_dataset_recordings
from embedprobe.models.registry import model_spec
from embedprobe.pipeline.channel_maps import channel_plan
from embedprobe.pipeline.context import DatasetContext
from embedprobe.pipeline.embed import preprocessing_key
from embedprobe.pipeline.index import build_index
from embedprobe.pipeline.protocol import Preprocessing
from embedprobe.pipeline.window_recipe import make_windows
from embedprobe.pipeline.window_source import WindowSource
from embedprobe.tasks.registry import labelling_task

from helpers.results import roots_in

LOOKALIKES = {
    "bnci2014_001_demo": (bnci_lookalike, {"subjects": 2, "sessions": ["T"],
                                           "runs_per_session": 1, "trials_per_run": 8,
                                           "seed": 0}),
    "physionet_mi_demo": (physionet_lookalike, {"subjects": 2, "runs": [4, 6],
                                                "trials_per_run": 6, "seed": 0}),
}
MODEL = "cbramod_random"  # reads the recorded channels as they are, in order


@pytest.fixture(scope="module", params=sorted(LOOKALIKES))
def demo(request, tmp_path_factory):
    dataset = request.param
    root = tmp_path_factory.mktemp(dataset)
    config = copy.deepcopy(load_config())
    entry = config["datasets"][dataset]
    entry.update(path=dataset)
    entry.pop("expected_recordings", None)
    lookalike, settings = LOOKALIKES[dataset]
    lookalike.write_lookalike(root / dataset, settings)
    roots = roots_in(root) | {"data_root": str(root)}
    return dataset, config, roots, build_index(DatasetContext.build(config, roots, dataset))


def sources(demo):
    dataset, config, roots, index = demo
    spec = model_spec(config, MODEL, dataset)
    plan = channel_plan(config, dataset, spec.family)
    return {filtering: WindowSource(DatasetContext.build(config, roots, dataset),
                                    replace(spec, bci_filtering=filtering), plan, index)
            for filtering in (CONFOUND, NO_FILTERING)}


def test_the_variants_windows_start_at_the_cue_plus_1_s_and_at_the_cue(demo):
    dataset, config, roots, index = demo
    reader = FORMATS[config["datasets"][dataset]["format"]].reader
    by_variant = sources(demo)
    default, unfiltered = by_variant[CONFOUND], by_variant[NO_FILTERING]
    assert (default.recipe.start_seconds, default.epoch_seconds) == (0.0, 3.0)
    assert (unfiltered.recipe.start_seconds, unfiltered.epoch_seconds) == (-1.0, 4.0)
    rate = default.spec.sfreq
    assert (default.window_samples, unfiltered.window_samples) == (3 * rate, 4 * rate)
    # raw windows at the recorded rate: the samples each variant's window holds
    raw = Preprocessing(resampling="continuous")
    for rec in find_dataset_recordings(config, roots, dataset):
        rows = index[index["recording"] == rec.recording]
        assert len(rows)
        sfreq = float(rows["sfreq"].iloc[0])
        cues = [round(e.onset * sfreq) for e in reader.read_events(rec)
                if e.description in labelling_task(config, dataset).classes]
        assert len(cues) == len(rows)
        np.testing.assert_array_equal(rows["start"], np.array(cues) + round(sfreq))
        signal = reader.read_signals(rec, list(default.recipe.channels)).data
        for source, first, seconds in ((default, 1, 3), (unfiltered, 0, 4)):
            recipe = replace(source.recipe, sfreq=sfreq, preprocessing=raw)
            got = make_windows(recipe, rec, rows["start"].to_numpy(), index_sfreq=sfreq)
            n = round(seconds * sfreq)
            assert got.shape[-1] == n
            assert got.shape == (len(cues), len(recipe.channels), n)
            for window, cue in zip(got, cues, strict=True):
                first_sample = cue + round(first * sfreq)
                np.testing.assert_array_equal(window, signal[:, first_sample:first_sample + n])


def test_the_two_windows_have_two_store_keys(demo):
    by_variant = sources(demo)
    keys = {f: preprocessing_key(s.spec, s.plan, s.epoch_seconds, None, s.recipe.preprocessing,
                                 s.recipe.start_seconds) for f, s in by_variant.items()}
    assert keys[CONFOUND] != keys[NO_FILTERING]
    assert "window_start_seconds" in keys[NO_FILTERING]
    assert "window_start_seconds" not in keys[CONFOUND]  # the default's key is as it was


def test_erp_and_ssvep_keep_their_window_in_every_variant():
    config = load_config()
    for dataset in ("bnci2014_008_demo", "nakanishi2015_demo"):
        entry = config["datasets"][dataset]
        assert entry_window(entry, NO_FILTERING) == entry_window(entry, CONFOUND)
        assert entry_window(entry, NO_FILTERING)[0] == 0.0


def test_no_filtering_mi_trial_starts_at_the_cue_whatever_the_entry_offset():
    """The confound control's 1 s is taken back, never more than the entry's cue offset."""
    mi = {"format": "bnci2014_001"}
    assert entry_window(mi, CONFOUND) == (0.0, 3.0)
    assert entry_window(mi, NO_FILTERING) == (-1.0, 4.0)
    assert entry_window(mi | {"trial_offset_seconds": 0.5, "epoch_seconds": 2},
                        NO_FILTERING) == (-0.5, 2.5)
    assert entry_window(mi | {"trial_offset_seconds": 1.5, "epoch_seconds": 3},
                        NO_FILTERING) == (-1.0, 4.0)


@pytest.mark.parametrize("model", ["biot_random", "cbramod_random", "labram_random",
                                   "eegpt_random"])
def test_each_family_embeds_the_no_filtering_trial_whole(model):
    """The model's window follows the variant's trial (check refused a 4 s trial against a
    3 s model window when only the window source knew the variant)."""
    config = copy.deepcopy(load_config())
    for variant in ("default", "no_filtering"):
        config["models"][variant_model(variant, model)] = variant_entry(
            config["models"][model], variant)
    dataset = "bnci2014_001_demo"
    default = model_spec(config, variant_model("default", model), dataset)
    unfiltered = model_spec(config, variant_model("no_filtering", model), dataset)
    assert default.window_seconds == 3.0
    assert unfiltered.window_seconds == 4.0
    assert unfiltered.n_times == 4 * unfiltered.sfreq
