"""EEGNet's motor-imagery checkpoints (models/eegnet.py): the published folder layout
(PierreGtch/EEGNetv4: `EEGNetv4_<dataset>/model-params.pkl`, braindecode 0.8's EEGNetv4 names)
fetched from a hub of local folders and loaded offline; the reference's input (0.5-40 Hz,
128 Hz, 385 centred samples) and feature (the map before the classifier, 192 values); its
channel slots in every map; `check` on a motor-imagery look-alike."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path

import huggingface_hub
import numpy as np
import pytest
import torch

from embedprobe.core.config import load_config
from embedprobe.core.reference_models import rule_out_reason
from embedprobe.datasets.physionet_mi import lookalike as physionet_lookalike
from embedprobe.datasets.registry import labelling_task_name
from embedprobe.models import eegnet
from embedprobe.models.encoder import Encoder
from embedprobe.models.registry import build_model, model_spec
from embedprobe.pipeline.channel_maps import CHANNEL_MAP_DIR, channel_plan
from embedprobe.pipeline.check import OK, check_pair
from embedprobe.pipeline.context import DatasetContext

from helpers.hub import FakeHub, fetch_cli
from helpers.results import roots_in

MODEL = "eegnetv4_bnci2014_001"
FOLDER = "EEGNetv4_BNCI2014001"
CLASSES = 4  # BNCI 2014-001's: the published classifier's width


def legacy_state(seed: int) -> tuple[torch.nn.Module, dict]:
    """A trained-looking EEGNet (4 classes, random weights and batch-norm statistics) and its
    state_dict in braindecode 0.8's EEGNetv4 names, as the published files hold it."""
    import braindecode.models

    torch.manual_seed(seed)
    source = braindecode.models.EEGNet(n_chans=3, n_outputs=CLASSES, n_times=eegnet.N_TIMES,
                                       sfreq=200)
    state = source.state_dict()
    for key in state:
        if key.endswith(("running_mean", "running_var")):
            state[key] = torch.rand_like(state[key]) + 0.5
    source.load_state_dict(state)
    legacy = {}
    for key, value in state.items():
        key = key.replace("conv_spatial.parametrizations.weight.original", "conv_spatial.weight")
        legacy[key.removeprefix("final_layer.")] = value
    return source.eval(), legacy


def source_features(source, windows: np.ndarray) -> np.ndarray:
    """What reaches the source's classifier in its own forward, flattened."""
    seen = []
    hook = source.final_layer.register_forward_hook(lambda m, args, out: seen.append(args[0]))
    try:
        with torch.inference_mode():
            logits = source(eegnet.prepare(torch.from_numpy(windows), 200.0))
    finally:
        hook.remove()
    assert logits.shape == (len(windows), CLASSES)
    return seen[0].reshape(len(windows), -1).numpy()


@pytest.fixture
def published(tmp_path, monkeypatch):
    config = load_config()
    config["weights_root"] = str(tmp_path / "weights")
    fake = FakeHub(tmp_path / "published")
    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake)
    source, legacy = legacy_state(seed=7)
    folder = fake.hub_dir / "PierreGtch/EEGNetv4" / FOLDER
    folder.mkdir(parents=True)
    torch.save(legacy, folder / "model-params.pkl")
    # the class pickled beside it: never fetched, never unpickled
    (folder / "kwargs.pkl").write_bytes(b"not to be read")
    return config, {"weights_root": config["weights_root"]}, source, legacy


def test_the_published_folder_loads_offline_and_embeds_its_pre_classifier_map(published):
    config, roots, source, legacy = published
    assert {"conv_spatial.weight", "conv_classifier.weight"} <= set(legacy)
    assert fetch_cli(config, MODEL) == 0
    spec = model_spec(config, MODEL, "bnci2014_001")
    assert spec.n_times == 600  # the default variant's 3 s trial at the reference's 200 Hz
    encoder = Encoder(spec, eegnet.SLOTS, roots)
    # loaded: the spatial filters are the published ones
    assert torch.equal(encoder.model.conv_spatial.parametrizations.weight.original,
                       legacy["conv_spatial.weight"])
    windows = np.random.default_rng(0).standard_normal((3, 3, 600)).astype(np.float32) * 20
    out = encoder(windows)
    assert out.shape == (3, eegnet.WIDTH) and out.dtype == np.float32
    np.testing.assert_allclose(out, source_features(source, windows), rtol=1e-5, atol=1e-6)
    fetched = sorted(Path(roots["weights_root"]).rglob("*.pkl"))
    assert [p.name for p in fetched] == ["model-params.pkl"]  # kwargs.pkl stays behind


def test_a_local_copy_of_the_file_loads_the_same(published, tmp_path):
    config, roots, source, legacy = published
    path = tmp_path / "weights" / FOLDER / "model-params.pkl"
    path.parent.mkdir(parents=True)
    torch.save(legacy, path)
    spec = dataclasses.replace(model_spec(config, MODEL, "bnci2014_001"), weights=str(path))
    windows = np.random.default_rng(1).standard_normal((2, 3, 600)).astype(np.float32) * 20
    np.testing.assert_allclose(Encoder(spec, eegnet.SLOTS, roots)(windows),
                               source_features(source, windows), rtol=1e-5, atol=1e-6)


def test_the_input_is_band_passed_resampled_and_centred_as_the_reference():
    rate, t = 200.0, np.arange(600) / 200.0
    alpha, line = np.sin(2 * np.pi * 10 * t), np.sin(2 * np.pi * 60 * t)
    x = torch.from_numpy(np.stack([alpha + line + 5.0] * 3)[None].astype(np.float32))
    out = eegnet.prepare(x, rate).numpy()[0, 0]
    assert out.shape == (eegnet.N_TIMES,)
    # 384 samples at 128 Hz (bins of 1/3 Hz) and one zero after them: the 10 Hz rhythm
    # kept, the 60 Hz line (as strong in the input) and the offset cut down
    assert out[384] == 0
    spectrum = np.abs(np.fft.rfft(out[:384]))
    line, offset = 384 / 2, 5.0 * 384  # their bins in the input (after resampling alone)
    assert spectrum[180] < 0.02 * line and spectrum[0] < 0.05 * offset
    assert spectrum[30] > 0.7 * line  # the 10 Hz rhythm, as strong as the line: most is left
    # a 1 s ERP epoch (128 samples at 128 Hz) sits in the middle of zeros; a 4 s trial (512)
    # gives its middle 385
    short = eegnet.prepare(torch.ones(1, 3, 200) * torch.linspace(-1, 1, 200), rate).numpy()
    assert not short[..., :128].any() and not short[..., 256:].any() and short[..., 128:256].any()
    long = np.random.default_rng(0).standard_normal((1, 3, 512)).astype(np.float32)
    np.testing.assert_array_equal(eegnet.centred(long, 385), long[..., 63:448])
    model, _ = build_model(model_spec(load_config(), "eegnetv4_random"), 3, {})
    for samples in (200, 600, 800):
        with torch.inference_mode():
            width = eegnet.features(model, torch.randn(2, 3, samples), eegnet.SLOTS).shape
        assert width == (2, eegnet.WIDTH)


def test_every_map_gives_eegnet_its_three_electrodes_or_a_reason():
    config = load_config()
    catalog = config["reference_models"]
    maps = {}
    for dataset, entry in config["datasets"].items():
        maps.setdefault(entry.get("channel_map", dataset), set()).add(
            labelling_task_name(entry))
    assert {p.stem for p in CHANNEL_MAP_DIR.glob("*.yaml")} == set(maps)
    filled = {}
    for name, tasks in maps.items():
        plan = channel_plan({"datasets": {name: {}}}, name, "eegnetv4")
        ruled_out = all(rule_out_reason(catalog, "eegnetv4", task) for task in tasks)
        if ruled_out or plan.ruled_out:
            assert plan.ruled_out and plan.reason, name
            continue
        assert plan.model_names == eegnet.SLOTS, name
        for source in plan.sources:  # each slot's electrode, however the files spell it
            electrode = source.plus.upper().removeprefix("EEG ").rstrip(".")
            assert (source.kind, electrode) == ("direct", eegnet.SLOTS[source.position]), name
        filled[name] = len(plan.sources)
    assert filled["bnci2014_001"] == filled["physionet_mi"] == filled["eegmat"] == 3
    assert filled["bnci2014_008"] == 1 and len(filled) == 15  # the BCI maps but Nakanishi's


def test_check_runs_the_random_init_on_a_motor_imagery_lookalike(tmp_path):
    config = copy.deepcopy(load_config())
    dataset = "physionet_mi_demo"
    config["datasets"][dataset].update(path=dataset)
    config["datasets"][dataset].pop("expected_recordings", None)
    physionet_lookalike.write_lookalike(tmp_path / dataset, {
        "subjects": 2, "runs": [4], "trials_per_run": 4, "seed": 0})
    roots = roots_in(tmp_path) | {"data_root": str(tmp_path)}
    result = check_pair(DatasetContext.build(config, roots, dataset), "eegnetv4_random", 4)
    assert result.status == OK, result.reason
    assert result.forward == f"(4, {eegnet.WIDTH}) finite"
    assert result.batch_activation_bytes > 0
