"""The time-series foundation models (models/time_series.py): Chronos through its own package.

Without the optional extra (chronos-forecasting) every Chronos pair is skipped, by check and
by the plan, with "package missing" and the install line. With it, the random init runs one
batch through check, and a checkpoint in the published layout (amazon/chronos-t5-*: a T5
seq2seq model's config.json with its `chronos_config`, and model.safetensors, written here by
transformers' save_pretrained with random weights) is fetched by `embedprobe fetch-weights`
from a hub made of local folders (helpers/hub.py) and loaded offline. The embeddings are
compared with the package's own `ChronosPipeline.embed`, one channel at a time.
"""

from __future__ import annotations

import importlib.util
import json

import huggingface_hub
import numpy as np
import pytest
import torch

from embedprobe.core.config import load_config
from embedprobe.core.errors import ModelError, WeightsError
from embedprobe.models import hub, time_series
from embedprobe.models.registry import build_model, missing_weights, model_spec
from embedprobe.pipeline.check import OK, SKIPPED, check_pair
from embedprobe.pipeline.context import DatasetContext
from embedprobe.smk.plan import known_skips

from helpers.hub import FakeHub, fetch_cli, tiny_night

DATASET = "sleep_edf_demo"
HAS_CHRONOS = importlib.util.find_spec("chronos") is not None
needs_chronos = pytest.mark.skipif(not HAS_CHRONOS, reason="the optional extra: "
                                   "scripts/install.sh .venv --time-series")
# A small Chronos in the published layout: chronos-t5-tiny's settings, fewer and narrower layers.
SMALL = {"d_model": 32, "d_ff": 64, "d_kv": 8, "num_heads": 2, "num_layers": 1,
         "num_decoder_layers": 1}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """One subject, one short night (Sleep-EDF demo format), indexed; the shipped config."""
    root = tmp_path_factory.mktemp("ts")
    config, _ = tiny_night(root, DATASET, ["chronos_random", "chronos_t5_tiny"])
    config["weights_root"] = str(root / "w")
    roots = {k: config[k] for k in ("data_root", "cache_root", "results_root", "weights_root")}
    return config, roots


@pytest.fixture
def hub_env(tiny, tmp_path, monkeypatch):
    """The tiny night's config with a fresh weights root, and a hub made of local folders."""
    config, roots = tiny
    roots = roots | {"weights_root": str(tmp_path / "weights")}
    fake = FakeHub(tmp_path / "published")
    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake)
    return config | {"weights_root": roots["weights_root"]}, roots, fake


def context(config, roots):
    return DatasetContext.build(config, roots, DATASET)


def test_the_shipped_chronos_entries_name_the_references_checkpoints():
    """The reference's four Chronos ids (NeuroAtlas models/chronos.py), its repos, and the
    all_ts group; each embeds 30 s at 100 Hz, amplitude left as it is (Chronos scales)."""
    models = load_config()["models"]
    chronos = {m: e for m, e in models.items() if e["architecture"] == "Chronos"}
    assert {m: e["weights"] for m, e in chronos.items()} == {
        "chronos_random": "random",
        **{f"chronos_t5_{size}": f"hf:amazon/chronos-t5-{size}"
           for size in ("tiny", "small", "base", "large")}}
    assert {(e["group"], e["sfreq"], e["window_seconds"], e["scaling"])
            for e in chronos.values()} == {("ts_fm", 100, 30, "none")}


def test_without_the_package_check_and_plan_skip_with_the_install_line(tiny, monkeypatch):
    config, roots = tiny
    monkeypatch.setitem(time_series.PACKAGES, "Chronos", ("no_such_module", "chronos-forecasting"))
    reason, fix = missing_weights(model_spec(config, "chronos_random"), roots)
    assert reason.startswith("package missing: chronos-forecasting")
    assert fix == time_series.INSTALL_LINE
    assert "--time-series" in fix and time_series.EXTRA_REQUIREMENTS in fix
    result = check_pair(context(config, roots), "chronos_random", 2)
    assert (result.status, result.category) == (SKIPPED, "package")
    assert result.reason.startswith("skipped: package missing: chronos-forecasting")
    assert result.fix == time_series.INSTALL_LINE
    skips = known_skips(config, "demo")
    assert set(skips) == {"chronos_random", "chronos_t5_tiny"}
    assert skips["chronos_random"]["reason"].startswith("package missing")
    with pytest.raises(ModelError, match="package missing: chronos-forecasting"):
        build_model(model_spec(config, "chronos_random"), 2, roots)


def reference_embedding(pipeline, windows: np.ndarray) -> np.ndarray:
    """The reference's readout through the package's public API: each channel's series
    embedded by ChronosPipeline.embed, its tokens averaged, then the channels averaged."""
    per_channel = [pipeline.embed(torch.from_numpy(windows[:, c]))[0].mean(dim=1)
                   for c in range(windows.shape[1])]
    return torch.stack(per_channel, dim=1).mean(dim=1).numpy()


@needs_chronos
def test_the_random_init_runs_one_batch_through_check(tiny):
    config, roots = tiny
    result = check_pair(context(config, roots), "chronos_random", 4)
    assert result.status == OK, result.note
    assert (result.feature_dim, result.n_chans, result.n_times_epoch) == (256, 2, 3000)
    assert result.n_params == 8_394_496  # chronos-t5-tiny's size (8 M, its model card)
    assert result.weights == "not needed for random init"


@needs_chronos
def test_a_window_is_its_channels_series_as_the_package_embeds_them(tiny):
    """Equal to ChronosPipeline.embed per channel, averaged; only the last 512 samples count
    (the tokenizer's context): a window that differs before them gives the same vector."""
    from chronos import ChronosPipeline

    from embedprobe.models.encoder import Encoder

    config, roots = tiny
    config = json.loads(json.dumps(config))
    config["models"]["chronos_random"]["params"] = SMALL  # quicker; the same code path
    encoder = Encoder(model_spec(config, "chronos_random"), ("A", "B", "C"), roots)
    windows = np.random.default_rng(1).standard_normal((2, 3, 3000)).astype(np.float32)
    ours = encoder(windows)
    inner = encoder.model
    pipeline = ChronosPipeline(tokenizer=inner.tokenizer, model=inner.chronos)
    np.testing.assert_allclose(ours, reference_embedding(pipeline, windows), rtol=1e-5,
                               atol=1e-6)
    earlier = windows.copy()
    earlier[..., :-512] *= 7.0
    np.testing.assert_array_equal(encoder(earlier), ours)
    later = windows.copy()
    later[..., -1] += 5.0
    assert not np.allclose(encoder(later), ours)


def publish_chronos(folder, seed: int = 4):
    """A repo as amazon/chronos-t5-* is published: T5ForConditionalGeneration's
    save_pretrained, its config carrying `chronos_config`."""
    from transformers import T5Config, T5ForConditionalGeneration

    torch.manual_seed(seed)
    model = T5ForConditionalGeneration(T5Config(**(time_series.CHRONOS_T5_TINY | SMALL)))
    model.save_pretrained(folder)
    return model


@needs_chronos
def test_a_published_checkpoint_is_fetched_then_loaded_offline(hub_env):
    from chronos import ChronosPipeline

    from embedprobe.models.encoder import Encoder

    config, roots, fake = hub_env
    source = fake.hub_dir / "amazon/chronos-t5-tiny"
    publish_chronos(source)
    assert sorted(p.name for p in source.iterdir()) == ["config.json",
                                                       "generation_config.json",
                                                       "model.safetensors"]
    spec = model_spec(config, "chronos_t5_tiny")
    reason, fix = missing_weights(spec, roots)
    assert reason.startswith("weights not fetched: amazon/chronos-t5-tiny at revision main")
    assert fix == "embedprobe fetch-weights chronos_t5_tiny"

    assert fetch_cli(config, "chronos_t5_tiny") == 0
    assert fake.calls == [("amazon/chronos-t5-tiny", "main", False)]
    assert missing_weights(spec, roots) is None
    assert fetch_cli(config, "chronos_t5_tiny") == 0  # fetched: nothing downloaded again
    assert len(fake.calls) == 1

    encoder = Encoder(spec, ("A", "B"), roots)
    state = hub.locate("amazon/chronos-t5-tiny", "main", roots)
    assert encoder.weights_sha256 == state.checkpoint.sha256
    windows = np.random.default_rng(2).standard_normal((3, 2, 3000)).astype(np.float32)
    published = ChronosPipeline.from_pretrained(str(source), dtype=torch.float32)
    np.testing.assert_allclose(encoder(windows), reference_embedding(published, windows),
                               rtol=1e-5, atol=1e-6)
    result = check_pair(context(config, roots), "chronos_t5_tiny", 4)
    assert result.status == OK, result.note
    assert result.feature_dim == SMALL["d_model"]


# ------------------------------------------------------------------------------------ MOMENT

MOMENT_SMALL = {"d_model": 32, "d_ff": 64, "d_kv": 8, "num_heads": 2, "num_layers": 1}
needs_transformers = pytest.mark.skipif(importlib.util.find_spec("transformers") is None,
                                        reason="the optional extra: scripts/install.sh .venv "
                                               "--time-series")


def test_the_shipped_moment_entries_name_the_references_checkpoints():
    models = load_config()["models"]
    moment = {m: e for m, e in models.items() if e["architecture"] == "MOMENT"}
    assert {m: e["weights"] for m, e in moment.items()} == {
        "moment_random": "random",
        **{f"moment_{size}": f"hf:AutonLab/MOMENT-1-{size}"
           for size in ("small", "base", "large")}}
    assert {(e["group"], e["sfreq"], e["window_seconds"], e["scaling"])
            for e in moment.values()} == {("ts_fm", 100, 30, "none")}


def test_moment_without_transformers_is_a_package_missing_skip(tiny, monkeypatch):
    config, roots = tiny
    monkeypatch.setitem(time_series.PACKAGES, "MOMENT", ("no_such_module", "transformers"))
    result = check_pair(context(config, roots), "moment_random", 2)
    assert (result.status, result.category) == (SKIPPED, "package")
    assert result.reason.startswith("skipped: package missing: transformers")
    assert result.fix == time_series.INSTALL_LINE


def publish_moment(folder, seed: int = 6) -> dict:
    """A repo as AutonLab/MOMENT-1-* is published: config.json (the model's settings with its
    T5 encoder's `t5_config`) and model.safetensors holding, by name, the patch embedding, the
    sinusoidal table, the T5 encoder stack (transformers' own names under `encoder.`) and the
    pretraining head. Random tensors in those names and shapes. Returns the tensors."""
    from safetensors.torch import save_file
    from transformers import T5Config, T5EncoderModel

    t5 = time_series.MOMENT_1_SMALL["t5_config"] | MOMENT_SMALL
    torch.manual_seed(seed)
    encoder = T5EncoderModel(T5Config.from_dict(t5)).get_encoder()
    d = t5["d_model"]
    state = {f"encoder.{k}": v.contiguous() for k, v in encoder.state_dict().items()}
    state |= {"patch_embedding.value_embedding.weight": torch.randn(d, 8),
              "patch_embedding.mask_embedding": torch.randn(d),
              "patch_embedding.position_embedding.pe": torch.randn(1, 5000, d),
              "head.linear.weight": torch.randn(8, d), "head.linear.bias": torch.randn(8)}
    folder.mkdir(parents=True)
    save_file(state, str(folder / "model.safetensors"))
    (folder / "config.json").write_text(json.dumps(
        {"task_name": "reconstruction", "model_name": "MOMENT", "transformer_type":
         "encoder_only", "d_model": None, "seq_len": 512, "patch_len": 8,
         "patch_stride_len": 8, "transformer_backbone": "google/flan-t5-small",
         "t5_config": t5, "revin_affine": False, "add_positional_embedding": True,
         "value_embedding_bias": False, "orth_gain": 1.41, "mask_ratio": 0.3}))
    return state


def moment_by_hand(state: dict, t5: dict, windows: np.ndarray) -> np.ndarray:
    """The reference's MOMENT embedding written out: per channel, RevIN (population SD +
    1e-5), 8-sample patches, value embedding + position table, the T5 encoder over every
    patch, the mean over patches; then the mean over channels."""
    from transformers import T5Config, T5EncoderModel

    encoder = T5EncoderModel(T5Config.from_dict(t5)).get_encoder().eval()
    encoder.load_state_dict({k[len("encoder."):]: v for k, v in state.items()
                             if k.startswith("encoder.")})
    x = torch.from_numpy(windows)
    n, c, t = x.shape
    series = x.reshape(n * c, t)
    mean = series.mean(-1, keepdim=True)
    sd = series.var(-1, unbiased=False, keepdim=True).sqrt() + 1e-5
    patches = ((series - mean) / sd).reshape(n * c, t // 8, 8)
    tokens = patches @ state["patch_embedding.value_embedding.weight"].T + \
        state["patch_embedding.position_embedding.pe"][:, :t // 8]
    with torch.inference_mode():
        hidden = encoder(inputs_embeds=tokens).last_hidden_state
    return hidden.mean(1).reshape(n, c, -1).mean(1).numpy()


@needs_transformers
def test_a_published_moment_checkpoint_is_fetched_then_loaded_offline(hub_env):
    from embedprobe.models.encoder import Encoder

    config, roots, fake = hub_env
    state = publish_moment(fake.hub_dir / "AutonLab/MOMENT-1-small")
    assert fetch_cli(config, "moment_small") == 0
    assert fake.calls == [("AutonLab/MOMENT-1-small", "main", False)]
    spec = model_spec(config, "moment_small")
    encoder = Encoder(spec, ("A", "B"), roots)
    assert encoder.weights_sha256 == hub.locate("AutonLab/MOMENT-1-small", "main",
                                                roots).checkpoint.sha256
    windows = np.random.default_rng(3).standard_normal((2, 2, 3000)).astype(np.float32) * 30
    t5 = time_series.MOMENT_1_SMALL["t5_config"] | MOMENT_SMALL
    np.testing.assert_allclose(encoder(windows), moment_by_hand(state, t5, windows),
                               rtol=1e-4, atol=1e-5)
    result = check_pair(context(config, roots), "moment_small", 4)
    assert result.status == OK, result.note
    assert result.feature_dim == MOMENT_SMALL["d_model"]


@needs_transformers
def test_a_moment_file_with_other_names_is_refused_with_the_fix(hub_env):
    from safetensors.torch import load_file, save_file

    config, roots, fake = hub_env
    folder = fake.hub_dir / "AutonLab/MOMENT-1-small"
    publish_moment(folder)
    state = load_file(str(folder / "model.safetensors"))
    state["patch_embedding.value_embedding.bias"] = torch.zeros(MOMENT_SMALL["d_model"])
    save_file(state, str(folder / "model.safetensors"))
    assert fetch_cli(config, "moment_small") == 0
    with pytest.raises(WeightsError, match="do not fit MOMENT") as raised:
        build_model(model_spec(config, "moment_small"), 2, roots)
    assert "value_embedding.bias" in str(raised.value)


@needs_transformers
def test_the_moment_random_init_runs_one_batch_through_check(tiny):
    config, roots = tiny
    config = json.loads(json.dumps(config))
    config["models"]["moment_random"]["params"] = MOMENT_SMALL  # quicker; the same code path
    result = check_pair(context(config, roots), "moment_random", 4)
    assert result.status == OK, result.note
    assert (result.feature_dim, result.n_chans, result.n_times_epoch) == (32, 2, 3000)
