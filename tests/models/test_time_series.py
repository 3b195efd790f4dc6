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
from embedprobe.core.errors import ModelError
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
def test_a_published_checkpoint_is_fetched_then_loaded_offline(tiny, tmp_path, monkeypatch):
    from chronos import ChronosPipeline

    from embedprobe.models.encoder import Encoder

    config, roots = tiny
    roots = roots | {"weights_root": str(tmp_path / "weights")}
    config = config | {"weights_root": roots["weights_root"]}
    fake = FakeHub(tmp_path / "published")
    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake)
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
