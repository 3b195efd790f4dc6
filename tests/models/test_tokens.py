"""Token stores (`pooling: tokens`): one vector per time patch, in order, for every family that
has a patch grid; the mean over a window's tokens is its `mean` readout, so one store serves a
pooled probe and a flattened one. BIOT and BENDR have no grid to keep and are refused."""

from __future__ import annotations

import dataclasses
import os

import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing here may touch the network

from embedprobe.core.config import load_config  # noqa: E402
from embedprobe.core.errors import UsageError  # noqa: E402
from embedprobe.models.architectures import ARCHITECTURES, MEAN, TOKENS  # noqa: E402
from embedprobe.models.encoder import Encoder  # noqa: E402
from embedprobe.models.registry import model_spec  # noqa: E402

CHANNELS = ("FP1", "FP2", "C3", "C4", "O1", "O2")  # names and positions every family knows
ROOTS = {name: "/nonexistent" for name in ("data_root", "cache_root", "results_root",
                                           "weights_root")}
# family -> (model id, a short window in seconds: whole patches at the family's rate)
WITH_TOKENS = {
    "Labram": ("labram_random", 2), "CBraMod": ("cbramod_random", 2),
    "EEGPT": ("eegpt_random", 2), "SignalJEPA": ("signal_jepa_random", 4),
    "LUNA": ("luna_random", 2.5), "REVE": ("reve_random", 4),
    "CodeBrain": ("codebrain_random", 2), "EEGDINO": ("eegdino_random", 2),
    "STEEGFormer": ("steegformer_random", 2),
}


def test_every_architecture_says_whether_it_keeps_tokens():
    assert {name for name, arch in ARCHITECTURES.items() if arch.tokens} == set(WITH_TOKENS)
    for name, arch in ARCHITECTURES.items():
        assert (arch.tokens is None) == bool(arch.no_tokens), name


def encoders(model_id: str, seconds: float) -> tuple[Encoder, Encoder]:
    """The model read pooled (mean readout) and as tokens, the same random init."""
    spec = dataclasses.replace(model_spec(load_config(), model_id), window_seconds=seconds,
                               readout=MEAN)
    pooled = Encoder(spec, CHANNELS, ROOTS)
    tokens = Encoder(dataclasses.replace(spec, pooling=TOKENS), CHANNELS, ROOTS)
    tokens.model.load_state_dict(pooled.model.state_dict())
    return pooled, tokens


@pytest.mark.parametrize("family", sorted(WITH_TOKENS))
def test_the_mean_over_a_windows_tokens_is_its_mean_readout(family):
    model_id, seconds = WITH_TOKENS[family]
    pooled, tokens = encoders(model_id, seconds)
    n_times = pooled.spec.n_times
    # each epoch two model windows long: its tokens are the two windows' tokens in order
    epochs = np.random.default_rng(0).standard_normal((3, len(CHANNELS), 2 * n_times))
    epochs = epochs.astype(np.float32)
    vectors, grid = pooled(epochs), tokens(epochs)
    assert grid.ndim == 3 and grid.shape[0] == 3 and grid.shape[2] == vectors.shape[1]
    assert grid.shape[1] % 2 == 0 and grid.shape[1] >= 4  # two windows of at least 2 patches
    scale = np.abs(vectors).max()
    assert np.abs(grid.mean(axis=1) - vectors).max() <= 1e-5 * scale
    first = tokens(np.ascontiguousarray(epochs[:, :, :n_times]))
    half = grid.shape[1] // 2
    assert np.abs(grid[:, :half] - first).max() <= 1e-5 * np.abs(first).max()
    # and the tokens are not one vector repeated: time is kept apart
    assert np.abs(grid[:, 0] - grid[:, 1]).max() > 1e-3 * np.abs(grid).max()


@pytest.mark.parametrize(("model_id", "family"), [("biot_random", "BIOT"),
                                                  ("bendr_random", "BENDR")])
def test_a_family_without_a_patch_grid_refuses_tokens(model_id, family):
    config = load_config()
    config["models"][model_id]["pooling"] = TOKENS
    with pytest.raises(UsageError) as error:
        model_spec(config, model_id)
    assert f"pooling 'tokens' is not offered by {family}" in error.value.message
    assert ARCHITECTURES[family].no_tokens in error.value.message
    assert "remove `pooling: tokens`" in error.value.fix


def test_an_unknown_pooling_is_refused_with_the_closest_one():
    config = load_config()
    config["models"]["cbramod_random"]["pooling"] = "token"
    with pytest.raises(UsageError) as error:
        model_spec(config, "cbramod_random")
    assert "pooling 'token'" in error.value.message and "tokens" in error.value.message


def test_the_shipped_token_entries_are_their_familys_random_init_read_as_tokens():
    config = load_config()
    for model_id in ("labram_random_tokens", "cbramod_random_tokens", "eegpt_random_tokens"):
        spec, base = model_spec(config, model_id), model_spec(config, model_id[:-len("_tokens")])
        assert spec.pooling == TOKENS and base.pooling == MEAN
        same = {"architecture", "weights", "seed", "sfreq", "window_seconds", "scaling", "params"}
        assert {k: getattr(spec, k) for k in same} == {k: getattr(base, k) for k in same}
