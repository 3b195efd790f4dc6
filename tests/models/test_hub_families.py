"""Every family's hub checkpoint in its published layout, fetched and loaded offline, embeds as
braindecode's own model with those weights does.

Each repo is written here as its publisher writes it (braindecode's save_pretrained, or LUNA's
original-name file with no config.json), small (one or two layers) so that the test is quick;
the model entry gets the same sizes as `params:`. The companions a family needs besides its
weights (REVE's position bank, ST-EEGFormer's slot names) are published in their own repos and
fetched by the same `fetch-weights`. Nothing reaches the network: the hub is a folder
(helpers/hub.py) and, while models are built, opening a socket fails the test.
"""

from __future__ import annotations

import json
import socket

import huggingface_hub
import numpy as np
import pytest
import torch

from embedprobe.core.config import load_config
from embedprobe.core.errors import ModelError, WeightsError
from embedprobe.models import electrodes, hub
from embedprobe.models.architectures import ARCHITECTURES
from embedprobe.models.encoder import Encoder
from embedprobe.models.registry import build_model, missing_weights, model_spec
from embedprobe.pipeline.check import RULED_OUT, check_pair
from embedprobe.pipeline.context import DatasetContext

from helpers.hub import FakeHub, fetch_cli

NAMES = ("FZ", "CZ", "PZ")  # three electrodes every family here has a name or position for
SMALL = {
    "bendr_pretrained": {"encoder_h": 32, "transformer_layers": 1, "transformer_heads": 2,
                         "contextualizer_hidden": 64},
    "signal_jepa_pretrained": {"transformer__num_encoder_layers": 1},
    "signal_jepa_without_chans_pretrained": {"transformer__num_encoder_layers": 1},
    "luna_base_pretrained": {"embed_dim": 16, "num_queries": 2, "depth": 1},
    "reve_base_pretrained": {"embed_dim": 32, "depth": 1, "heads": 2, "head_dim": 8},
    "steegformer_small_pretrained": {"embed_dim": 32, "depth": 1, "num_heads": 2},
    "codebrain_pretrained": {"num_res_layers": 1},
    "eegdino_small_pretrained": {"n_layer": 1},
}


@pytest.fixture
def hub_env(tmp_path, monkeypatch):
    config = load_config()
    config["weights_root"] = str(tmp_path / "weights")
    roots = {"weights_root": config["weights_root"]}
    fake = FakeHub(tmp_path / "published")
    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake)
    for model_id, params in SMALL.items():
        config["models"][model_id]["params"] = {**config["models"][model_id].get("params", {}),
                                                **params}
    return config, roots, fake


@pytest.fixture
def no_network(monkeypatch):
    """Any connection attempt (braindecode's downloads, the hub) fails the test."""
    def refuse(*args, **kwargs):
        raise AssertionError("a model build tried to reach the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)


def source_model(config, model_id: str, n_chans: int, names, seed: int = 3):
    """braindecode's model as the publisher built it (random weights, `seed`)."""
    import braindecode.models

    spec = model_spec(config, model_id)
    arch = ARCHITECTURES[spec.architecture]
    torch.manual_seed(seed)
    kwargs = arch.build_kwargs(n_chans, spec.sfreq, spec.n_times) | spec.params
    return spec, arch, getattr(braindecode.models, arch.class_name), kwargs


def windows_for(spec, n_chans: int, n: int = 3) -> np.ndarray:
    return np.random.default_rng(0).standard_normal((n, n_chans, spec.n_times)).astype(
        np.float32)


def embeddings(arch, model, spec, names, windows) -> np.ndarray:
    with torch.inference_mode():
        return arch.forward(model.eval(), torch.from_numpy(windows), tuple(names),
                            spec.readout).numpy()


def loaded_and_compared(config, roots, model_id, source, names):
    """Our model from the fetched repo; its embeddings equal the source model's."""
    spec = model_spec(config, model_id)
    arch = ARCHITECTURES[spec.architecture]
    windows = windows_for(spec, len(names))
    ours = Encoder(spec, tuple(names), roots)
    np.testing.assert_array_equal(ours(windows), embeddings(arch, source, spec, names, windows))
    return ours


def test_bendr_loads_for_its_20_channels_and_is_ruled_out_for_others(hub_env, no_network):
    from braindecode.models.bendr import BENDR_CHANNEL_ORDER

    config, roots, fake = hub_env
    spec, arch, cls, kwargs = source_model(config, "bendr_pretrained", 20, BENDR_CHANNEL_ORDER)
    source = cls(**kwargs)
    source.save_pretrained(fake.hub_dir / "braindecode/braindecode-bendr")
    assert fetch_cli(config, "bendr_pretrained") == 0
    loaded_and_compared(config, roots, "bendr_pretrained", source, BENDR_CHANNEL_ORDER)
    result = check_pair(DatasetContext.build(config, roots, "sleep_edf_demo"),
                        "bendr_pretrained", 4)
    assert result.status == RULED_OUT, result.reason
    assert "it takes exactly 20 inputs (the 19 10-20 electrodes and SCALE" in result.reason
    assert "the channel map gives 2" in result.reason


@pytest.mark.parametrize("model_id, repo, aligned", [
    ("signal_jepa_pretrained", "braindecode/signal-jepa", True),
    ("signal_jepa_without_chans_pretrained", "braindecode/signal-jepa_without-chans", False),
])
def test_signal_jepa_loads_with_or_without_its_channel_embedding(hub_env, no_network,
                                                                  model_id, repo, aligned):
    from safetensors.torch import load_file, save_file

    config, roots, fake = hub_env
    spec, arch, cls, kwargs = source_model(config, model_id, len(NAMES), NAMES)
    source = cls(**kwargs, chs_info=electrodes.chs_info(NAMES, "SignalJEPA"))
    folder = fake.hub_dir / repo
    source.save_pretrained(folder)
    spatial = "pos_encoder.pos_encoder_spat.weight"
    state = load_file(str(folder / "model.safetensors"))
    assert state[spatial].shape[0] == (62 if aligned else len(NAMES))
    if not aligned:  # the published file leaves the channel embedding out
        save_file({k: v for k, v in state.items() if k != spatial},
                  str(folder / "model.safetensors"))
    assert fetch_cli(config, model_id) == 0
    ours = loaded_and_compared(config, roots, model_id, source, NAMES)
    assert torch.equal(ours.model.state_dict()[spatial], source.state_dict()[spatial])
    if aligned:  # a channel outside its 62 pretraining channels has no row
        with pytest.raises(ModelError, match=r"no channel embedding for \['IZ'\]"):
            Encoder(model_spec(config, model_id), ("FZ", "IZ"), roots)


def test_luna_loads_its_original_file_without_a_config(hub_env, no_network):
    """PulpBio/LUNA: one file per size, LUNA's original names (braindecode's class `mapping`
    renames them), its pretraining decoder included, no config.json."""
    from safetensors.torch import save_file

    config, roots, fake = hub_env
    spec, arch, cls, kwargs = source_model(config, "luna_base_pretrained", len(NAMES), NAMES)
    source = cls(**kwargs, chs_info=electrodes.chs_info(NAMES, "LUNA"))
    original = {v: k for k, v in source.mapping.items()}
    state = {original.get(k, k): v.contiguous() for k, v in source.state_dict().items()
             if not k.startswith("final_layer.")}
    pretraining = cls(**(kwargs | {"n_outputs": 0}), chs_info=electrodes.chs_info(NAMES, "LUNA"))
    state |= {k: v.contiguous() for k, v in pretraining.state_dict().items()
              if k.startswith(("decoder_head.", "channel_emb."))}
    assert "channel_location_embedder.0.fc1.weight" in state
    folder = fake.hub_dir / "PulpBio/LUNA"
    folder.mkdir(parents=True)
    save_file(state, str(folder / "LUNA_base.safetensors"))
    assert fetch_cli(config, "luna_base_pretrained") == 0
    manifest = json.loads(hub.manifest_path(roots).read_text())[
        hub.manifest_key("PulpBio/LUNA", "main", "LUNA_base.safetensors")]  # one per size
    assert sorted(manifest["files"]) == ["LUNA_base.safetensors"]  # no config.json to fetch
    ours = loaded_and_compared(config, roots, "luna_base_pretrained", source, NAMES)
    assert ours.weights_sha256 == manifest["files"]["LUNA_base.safetensors"]


def test_reve_reads_the_fetched_position_bank(hub_env, no_network, monkeypatch, tmp_path):
    """REVE's positions come from the bank fetched with its weights (here: the template,
    shifted, so that it cannot be mistaken for it), never from a download."""
    config, roots, fake = hub_env
    bank = {name.title(): [x + 0.01, y, z] for name, (x, y, z) in
            electrodes.template_positions().items()}
    (fake.hub_dir / "brain-bzh/reve-positions").mkdir(parents=True)
    (fake.hub_dir / "brain-bzh/reve-positions/positions.json").write_text(json.dumps(bank))
    source_bank = tmp_path / "bank"
    source_bank.mkdir()
    (source_bank / "reve_positions.json").write_text(json.dumps(bank))
    monkeypatch.setenv("REVE_POSITIONS_PATH", str(source_bank))
    spec, arch, cls, kwargs = source_model(config, "reve_base_pretrained", len(NAMES), NAMES)
    source = cls(**kwargs, chs_info=[{"ch_name": name.title()} for name in NAMES])
    assert torch.allclose(source.default_pos[0], torch.tensor(bank["Fz"]))
    source.save_pretrained(fake.hub_dir / "brain-bzh/reve-base")
    reason, fix = missing_weights(model_spec(config, "reve_base_pretrained"), roots)
    assert reason.startswith("weights not fetched: brain-bzh/reve-base at revision main")
    assert fix == "embedprobe fetch-weights reve_base_pretrained"
    assert fetch_cli(config, "reve_base_pretrained") == 0
    assert {call[0] for call in fake.calls} == {"brain-bzh/reve-base", "brain-bzh/reve-positions"}
    ours = loaded_and_compared(config, roots, "reve_base_pretrained", source, NAMES)
    assert torch.equal(ours.model.default_pos, source.default_pos)


def test_steegformer_places_channels_by_the_fetched_vocabulary(hub_env, no_network):
    config, roots, fake = hub_env
    slots = [100, 7, 42]  # not the identity that braindecode's fallback would give
    vocabulary = [f"E{i}" for i in range(145)]
    for slot, name in zip(slots, ("Fz", "Cz", "Pz"), strict=True):  # the vocabulary's spelling
        vocabulary[slot] = name
    spec, arch, cls, kwargs = source_model(config, "steegformer_small_pretrained", len(NAMES),
                                           NAMES)
    source = cls(**kwargs, chan_pos_idx=slots)
    folder = fake.hub_dir / "braindecode/STEEGFormer-small"
    source.save_pretrained(folder)
    (folder / "steegformer_channels.json").write_text(json.dumps(vocabulary))
    assert fetch_cli(config, "steegformer_small_pretrained") == 0
    ours = loaded_and_compared(config, roots, "steegformer_small_pretrained", source, NAMES)
    assert ours.model.channel_indices.tolist() == slots
    with pytest.raises(ModelError, match=r"STEEGFormer has no channel embedding for \['XX'\]"):
        Encoder(model_spec(config, "steegformer_small_pretrained"), ("FZ", "XX"), roots)


def test_steegformer_large_v2_is_refused_for_its_unnamed_slots(hub_env, no_network):
    config, roots, fake = hub_env
    config["models"]["steegformer_largev2_pretrained"]["params"] = {
        "embed_dim": 32, "depth": 1, "num_heads": 2, "n_chans_pos": 256}
    spec, arch, cls, kwargs = source_model(config, "steegformer_largev2_pretrained", 3, NAMES)
    cls(**kwargs, chan_pos_idx=[0, 1, 2]).save_pretrained(
        fake.hub_dir / "braindecode/STEEGFormer-largeV2")
    (fake.hub_dir / "braindecode/STEEGFormer-small").mkdir(parents=True)
    (fake.hub_dir / "braindecode/STEEGFormer-small/steegformer_channels.json").write_text(
        json.dumps([f"E{i}" for i in range(145)]))
    assert fetch_cli(config, "steegformer_largev2_pretrained") == 0
    with pytest.raises(ModelError, match="256 channel slots") as caught:
        build_model(model_spec(config, "steegformer_largev2_pretrained"), 3, roots, NAMES)
    assert "largeV2's 256-slot HBN vocabulary has no published electrode names" in \
        caught.value.fix


@pytest.mark.parametrize("model_id, repo", [
    ("codebrain_pretrained", "braindecode/codebrain-pretrained"),
    ("eegdino_small_pretrained", "braindecode/eegdino-small-pretrained"),
])
def test_a_checkpoint_for_19_channels_serves_fewer(hub_env, no_network, model_id, repo):
    """CodeBrain and EEG-DINO published for 19 channels x 30 s (their pretraining shape): the
    encoder serves a 3-channel montage; CodeBrain's head, sized by channels x patches, is left
    out. EEG-DINO refuses more channels than its 19 slots."""
    config, roots, fake = hub_env
    spec, arch, cls, kwargs = source_model(config, model_id, 19, ())
    source = cls(**kwargs)
    source.save_pretrained(fake.hub_dir / repo)
    assert fetch_cli(config, model_id) == 0
    loaded_and_compared(config, roots, model_id, source, NAMES)
    if model_id.startswith("eegdino"):
        with pytest.raises(ModelError, match="EEG-DINO has 19 channel slots; the channel map "
                                             "gives it 20 channels"):
            Encoder(model_spec(config, model_id), tuple(f"E{i}" for i in range(20)), roots)


@pytest.mark.parametrize("model_id", ["reve_random", "steegformer_random", "luna_random",
                                      "signal_jepa_random"])
def test_random_init_builds_without_the_network(model_id, no_network, tmp_path, monkeypatch):
    """REVE's constructor downloads its position bank and ST-EEGFormer's its slot names when
    they are not given: random-init models are given them (the template, slot i)."""
    monkeypatch.delenv("REVE_POSITIONS_PATH", raising=False)
    (tmp_path / "mne-data").mkdir()  # braindecode would download REVE's bank into it
    monkeypatch.setenv("MNE_DATA", str(tmp_path / "mne-data"))
    spec = model_spec(load_config(), model_id, "sleep_edf_demo")
    out = Encoder(spec, ("FPZ", "PZ"), {"weights_root": str(tmp_path)})(
        windows_for(spec, 2, n=2))
    assert out.shape == (2, ARCHITECTURES[spec.architecture].width) and np.isfinite(out).all()


def test_a_companion_not_fetched_is_a_skip_with_the_fetch_fix(hub_env):
    """REVE's bank fetched without its weights (an interrupted fetch): not fetched, and the
    fix is the fetch command."""
    config, roots, fake = hub_env
    spec, arch, cls, kwargs = source_model(config, "reve_base_pretrained", 3, NAMES)
    (fake.hub_dir / "brain-bzh/reve-positions").mkdir(parents=True)
    (fake.hub_dir / "brain-bzh/reve-positions/positions.json").write_text(
        json.dumps({name: list(xyz) for name, xyz in electrodes.template_positions().items()}))
    spec = model_spec(config, "reve_base_pretrained")
    hub.fetch("brain-bzh/reve-positions", "main", roots, "positions.json",
              patterns=["positions.json"])
    with pytest.raises(WeightsError, match="not fetched: brain-bzh/reve-base"):
        build_model(spec, 3, roots, NAMES)
