"""Readouts: how a window's tokens become its vector, chosen per model and per labelling task.

The reference suite (NeuroAtlas, backbones/labram.py) embeds BCI trials with LaBraM as the CLS
token next to the mean of the patch tokens, both after the final norm (400 values). The oracle
here is the model's own final norm, read with a forward hook: its output holds every token,
CLS first.
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
from embedprobe.core.errors import UsageError  # noqa: E402
from embedprobe.models.encoder import Encoder  # noqa: E402
from embedprobe.models.registry import model_spec  # noqa: E402

CHANNELS = ("C3", "C4")  # names LaBraM has position embeddings for
MI_DATASET = "bnci2014_001"  # labelling task motor_imagery, 4 s trials


def config_with(model: str, **entry) -> dict:
    """The shipped config with `entry` set on one model (the schema is not consulted) and
    4 s motor-imagery trials."""
    config = copy.deepcopy(load_config())
    config["models"][model].update(entry)
    config["datasets"][MI_DATASET]["epoch_seconds"] = 4
    return config


def final_norm_tokens(encoder: Encoder, windows: np.ndarray) -> tuple[np.ndarray, torch.Tensor]:
    """The encoder's vectors and what its model's final norm put out on the way (every token:
    CLS first, then the patch tokens)."""
    assert encoder.model.fc_norm is None  # the final norm is the last step of the tokens
    seen = []
    hook = encoder.model.norm.register_forward_hook(lambda _m, _i, out: seen.append(out.clone()))
    try:
        vectors = encoder(windows)
    finally:
        hook.remove()
    return vectors, torch.cat(seen)


def test_readout_follows_the_datasets_labelling_task():
    config = config_with("labram_random", readout="cls",
                         readout_by_task={"motor_imagery": "cls_mean"})
    assert model_spec(config, "labram_random", MI_DATASET).readout == "cls_mean"
    assert model_spec(config, "labram_random", "sleep_edf_expanded").readout == "cls"
    assert model_spec(config, "labram_random", "chbmit").readout == "cls"
    assert model_spec(config, "labram_random").readout == "cls"  # no dataset: the entry's
    # an entry without either is today's mean over the tokens
    assert model_spec(load_config(), "cbramod_random", MI_DATASET).readout == "mean"


def test_cls_mean_is_the_cls_token_then_the_patch_token_mean():
    """Two 4 s trials (4 patches per channel): 400 values, the CLS token after the final norm,
    then the mean of the 2 x 4 patch tokens after it."""
    config = config_with("labram_random", readout_by_task={"motor_imagery": "cls_mean"})
    spec = model_spec(config, "labram_random", MI_DATASET)
    assert (spec.readout, spec.n_times) == ("cls_mean", 800)
    trials = np.random.default_rng(0).standard_normal((2, 2, 800)).astype(np.float32)
    vectors, tokens = final_norm_tokens(Encoder(spec, CHANNELS, {}), trials)
    assert tokens.shape == (2, 1 + 2 * 4, 200)
    by_hand = torch.cat([tokens[:, 0], tokens[:, 1:].mean(dim=1)], dim=1).numpy()
    assert vectors.shape == (2, 400) and vectors.dtype == np.float32
    np.testing.assert_allclose(vectors, by_hand, rtol=1e-6, atol=1e-6)
    assert np.abs(vectors[:, :200] - vectors[:, 200:]).max() > 1e-2  # two different halves


def test_each_readout_on_subwindows_averages_each_part():
    """An 8 s epoch is two 4 s model windows: each part of the vector is averaged over them.
    `cls` is the CLS token alone, `mean` (every entry's default) the patch tokens' mean."""
    spec = dataclasses.replace(model_spec(load_config(), "labram_random"), window_seconds=4)
    epochs = np.random.default_rng(1).standard_normal((3, 2, 1600)).astype(np.float32)
    got = {}
    for readout in ("mean", "cls", "cls_mean"):
        encoder = Encoder(dataclasses.replace(spec, readout=readout), CHANNELS, {})
        got[readout], tokens = final_norm_tokens(encoder, epochs)
    tokens = tokens.reshape(3, 2, 1 + 2 * 4, 200)  # (epoch, model window, token, feature)
    cls = tokens[:, :, 0].mean(dim=1).numpy()
    mean = tokens[:, :, 1:].mean(dim=2).mean(dim=1).numpy()
    np.testing.assert_allclose(got["cls"], cls, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(got["mean"], mean, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(got["cls_mean"], np.concatenate([cls, mean], axis=1),
                               rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("model, entry, message", [
    ("biot_random", {"readout": "cls"}, "model 'biot_random': readout 'cls' is not offered by "
                                        "BIOT"),
    ("eegpt_random", {"readout_by_task": {"motor_imagery": "cls_mean"}},
     "model 'eegpt_random': readout 'cls_mean' is not offered by EEGPT"),
    ("labram_random", {"readout": "cls_men"},
     "model 'labram_random': readout 'cls_men' is unknown (did you mean 'cls_mean'?)"),
    ("labram_random", {"readout_by_task": {"motor_imagry": "cls_mean"}},
     "model 'labram_random': readout_by_task names unknown labelling task(s) motor_imagry "
     "(did you mean 'motor_imagery'?)"),
])
def test_a_readout_the_architecture_lacks_is_refused(model, entry, message):
    with pytest.raises(UsageError) as caught:
        model_spec(config_with(model, **entry), model, "sleep_edf_expanded")
    assert caught.value.message == message
    assert "config/models.yaml" in caught.value.fix
