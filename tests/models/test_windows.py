"""The model's window per dataset, as the reference suite (NeuroAtlas) takes it.

- LaBraM, CBraMod and EEGPT take each 30 s sleep epoch whole (its model wrappers' "adaptive
  epoch_seconds" for the _PAPER_PREPROC_DATASETS, the sleep sets), their 10 s pretraining-sized
  window elsewhere, and a shorter unit whole.
- EEGPT embeds a window as 4 s tiles (1024 samples at 256 Hz) and a shorter last tile, each the
  mean of its non-overlapping 64-sample patches, averaged weighted by the tiles' lengths
  (backbones/eegpt.py, _tile_boundaries and forward_features). The oracle below runs those
  tiles one by one through braindecode's EEGPT built for each tile's length.
- LaBraM's temporal embedding is fitted to the window: its first rows, or linearly interpolated
  (backbones/labram.py, _build_model).
"""

from __future__ import annotations

import copy
import dataclasses
import os

import numpy as np
import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing here may touch the network

from embedprobe.core.config import load_config  # noqa: E402
from embedprobe.core.errors import ModelError, UsageError  # noqa: E402
from embedprobe.models.encoder import Encoder  # noqa: E402
from embedprobe.models.registry import model_spec  # noqa: E402

CONFIG = load_config()
SLEEP, SEIZURE, TRIALS = "sleep_edf_expanded", "chbmit", "bnci2014_001"
PATCH_MODELS = ["labram_random", "labram_pretrained", "cbramod_random", "cbramod_pretrained",
                "eegpt_random", "eegpt_pretrained"]
EEGPT_CHANNELS = ("C3", "C4")


@pytest.mark.parametrize("model_id", PATCH_MODELS)
def test_patch_models_take_a_sleep_epoch_whole(model_id):
    rate = 256 if model_id.startswith("eegpt") else 200
    windows = {dataset: model_spec(CONFIG, model_id, dataset)
               for dataset in (SLEEP, "sleep_edf_demo", SEIZURE, "siena", TRIALS)}
    assert {d: (s.window_seconds, s.n_times) for d, s in windows.items()} == {
        SLEEP: (30, 30 * rate), "sleep_edf_demo": (30, 30 * rate),
        SEIZURE: (10, 10 * rate), "siena": (10, 10 * rate),
        TRIALS: (3, 3 * rate)}  # a 3 s trial is shorter than any window: taken whole
    assert model_spec(CONFIG, model_id).window_seconds == 10  # no dataset: the entry's own


def test_biot_keeps_its_window():
    assert [model_spec(CONFIG, "biot_pretrained", d).window_seconds
            for d in (SLEEP, SEIZURE, TRIALS)] == [30, 10, 3]


def test_a_window_for_an_unknown_task_is_refused():
    config = copy.deepcopy(CONFIG)
    config["models"]["cbramod_random"]["window_seconds_by_task"] = {"sleep_stagin": 30}
    with pytest.raises(UsageError) as caught:
        model_spec(config, "cbramod_random", SLEEP)
    assert caught.value.message == (
        "model 'cbramod_random': window_seconds_by_task names unknown labelling task(s) "
        "sleep_stagin (did you mean 'sleep_staging'?)")


# ------------------------------------------------------------------------------ EEGPT's tiles

def reference_tiles(n_samples: int, tile: int = 1024) -> list[tuple[int, int]]:
    """The reference's tiles: whole 1024-sample tiles, then what is left, if anything."""
    bounds = list(range(0, n_samples - tile + 1, tile))
    tiles = [(start, start + tile) for start in bounds]
    end = tiles[-1][1] if tiles else 0
    return tiles + ([(end, n_samples)] if end < n_samples else [])


def tile_means(state: dict, windows: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """(length, patch mean) of each tile, each run through braindecode's EEGPT built for the
    tile's length with non-overlapping patches (the reference's EEGTransformer: patch_stride
    None) and the given weights."""
    import braindecode.models
    from braindecode.models.eegpt import CHANNEL_DICT

    ids = torch.tensor([CHANNEL_DICT[name] for name in EEGPT_CHANNELS])
    x = torch.from_numpy(windows)
    means = []
    for start, stop in reference_tiles(windows.shape[-1]):
        model = braindecode.models.EEGPT(
            n_chans=len(EEGPT_CHANNELS), n_outputs=1, sfreq=256, n_times=stop - start,
            return_encoder_output=True, chan_proj_type="none", patch_stride=None)
        model.load_state_dict(state)
        with torch.no_grad():
            summary = model.eval().target_encoder(x[..., start:stop], ids)
        means.append((stop - start, summary.flatten(2).mean(dim=1).numpy()))
    return means


def duration_weighted(means: list[tuple[int, np.ndarray]]) -> np.ndarray:
    total = sum(length for length, _ in means)
    return sum(mean * (length / total) for length, mean in means)


def test_reference_tiles_of_a_sleep_epoch_and_a_seizure_window():
    assert reference_tiles(7680) == [(0, 1024), (1024, 2048), (2048, 3072), (3072, 4096),
                                     (4096, 5120), (5120, 6144), (6144, 7168), (7168, 7680)]
    assert reference_tiles(2560) == [(0, 1024), (1024, 2048), (2048, 2560)]
    assert reference_tiles(768) == [(0, 768)]  # a 3 s trial: one short tile


@pytest.mark.parametrize("dataset, n_samples", [(SLEEP, 7680), (SEIZURE, 2560)])
def test_eegpt_is_the_duration_weighted_mean_of_its_tiles(dataset, n_samples):
    spec = model_spec(CONFIG, "eegpt_random", dataset)
    assert spec.n_times == n_samples
    windows = np.random.default_rng(4).standard_normal((2, 2, n_samples)).astype(np.float32)
    encoder = Encoder(spec, EEGPT_CHANNELS, {})
    got = encoder(windows)
    means = tile_means(encoder.model.state_dict(), windows)
    expected = duration_weighted(means)
    assert got.shape == (2, 2048)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
    # the weights matter: the short last tile counts half a whole one
    unweighted = np.mean([mean for _, mean in means], axis=0)
    assert np.abs(got - unweighted).max() > 100 * np.abs(got - expected).max()


def test_braindecodes_overlapping_patches_would_not_be_the_reference():
    """braindecode's default patch stride (32) adds half-shifted patches: not the tiles."""
    spec = model_spec(CONFIG, "eegpt_random", SEIZURE)
    windows = np.random.default_rng(5).standard_normal((1, 2, 2560)).astype(np.float32)
    overlapping = Encoder(dataclasses.replace(spec, params={"patch_stride": 32}),
                          EEGPT_CHANNELS, {})
    got = overlapping(windows)
    expected = duration_weighted(tile_means(overlapping.model.state_dict(), windows))
    assert np.abs(got - expected).max() > 1e-3 * np.abs(expected).max()


def test_eegpt_refuses_a_window_that_is_not_whole_patches():
    spec = dataclasses.replace(model_spec(CONFIG, "eegpt_random", SEIZURE),
                               window_seconds=2500 / 256)
    encoder = Encoder(spec, EEGPT_CHANNELS, {})
    with pytest.raises(ModelError, match="whole 64-sample patches; a window of 2500 samples"):
        encoder(np.zeros((1, 2, 2500), np.float32))


# ------------------------------------------------------------------------------ LaBraM's time
# embedding

def labram_with_ramp_rows(tmp_path, rows: int, dataset: str) -> torch.Tensor:
    """The temporal embedding LaBraM holds for `dataset` after loading a checkpoint whose
    temporal embedding has `rows` rows, row j all j."""
    spec = model_spec(CONFIG, "labram_pretrained", dataset)
    model = Encoder(dataclasses.replace(spec, weights="random"), ("C3", "C4"), {}).model
    state = {k: v.clone() for k, v in model.state_dict().items()}
    state["temporal_embedding"] = torch.arange(rows, dtype=torch.float32)[None, :, None].expand(
        1, rows, 200).contiguous()
    torch.save(state, tmp_path / "labram.pt")
    encoder = Encoder(dataclasses.replace(spec, weights="labram.pt"), ("C3", "C4"),
                      {"weights_root": str(tmp_path)})
    out = encoder(np.random.default_rng(6).standard_normal(
        (1, 2, spec.n_times)).astype(np.float32))
    assert out.shape == (1, 200) and np.isfinite(out).all()
    return encoder.model.temporal_embedding.detach()[0, :, 0]


def test_labram_takes_the_first_rows_for_a_shorter_window(tmp_path):
    """The released checkpoint's 16 rows (CLS + 15 s) on 10 s windows: rows 0 to 10."""
    rows = labram_with_ramp_rows(tmp_path, 16, SEIZURE)
    assert rows.tolist() == list(range(11))


def test_labram_interpolates_its_rows_for_a_sleep_epoch(tmp_path):
    """16 rows to 31 (CLS + 30 s), linear with align_corners=False: row i reads the table at
    (i + 0.5) * 16 / 31 - 0.5, clamped to [0, 15]; on rows j = j that is the value itself."""
    rows = labram_with_ramp_rows(tmp_path, 16, SLEEP)
    where = np.clip((np.arange(31) + 0.5) * 16 / 31 - 0.5, 0, 15)
    np.testing.assert_allclose(rows.numpy(), where, rtol=1e-6, atol=1e-6)
