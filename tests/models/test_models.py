"""The model registry: every registered model builds offline and embeds generated EEG; the
pretrained path loads only tensors, records the file's sha256 and refuses anything else."""

from __future__ import annotations

import dataclasses
import hashlib
import os
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing here may touch the network

from embedprobe.core.config import load_config  # noqa: E402
from embedprobe.core.errors import ModelError, WeightsError  # noqa: E402
from embedprobe.core.reference_models import rule_out_reason  # noqa: E402
from embedprobe.datasets.sleep_edf import lookalike as demo_data  # noqa: E402
from embedprobe.devtools.make_weights import write_weights  # noqa: E402
from embedprobe.models.architectures import ARCHITECTURES  # noqa: E402
from embedprobe.models.encoder import Encoder  # noqa: E402
from embedprobe.models.registry import model_spec, weights_path  # noqa: E402
from embedprobe.pipeline.channel_maps import (  # noqa: E402
    CHANNEL_MAP_DIR,
    channel_map_path,
    channel_plan,
    map_entries,
)
from embedprobe.pipeline.preprocess import cut_windows, resample, scale  # noqa: E402
from embedprobe.pipeline.window_recipe import NORMALISERS, whole_statistic  # noqa: E402

from helpers.project import LOCAL_WEIGHTS, script_main, with_local_weights  # noqa: E402

DATASET = "sleep_edf_demo"
# Feature widths as documented (REFERENCE.md), independent of the code under test.
WIDTH = {"biot": 256, "labram": 200, "cbramod": 200, "eegpt": 2048, "bendr": 512,
         "signal_jepa": 64, "luna": 256, "reve": 512, "steegformer": 512, "codebrain": 200,
         "eegdino": 200,
         # the random inits' sizes: chronos-t5-tiny's d_model, MOMENT-1-small's
         "chronos": 256, "moment": 512,
         # the reference's preclassifier_flat: 16 filters x 12 steps
         "eegnetv4": 192}
RATE = {"biot": 200, "labram": 200, "cbramod": 200, "eegpt": 256, "bendr": 256,
        "signal_jepa": 128, "luna": 256, "reve": 200, "steegformer": 128, "codebrain": 200,
        "eegdino": 200, "chronos": 100, "moment": 100, "eegnetv4": 200}
CONFIG = with_local_weights(load_config())
# Every family's random init, and the local-file path of the first four families' checkpoints
# (every family's hub checkpoint: tests/models/test_hub_weights.py).
# token stores (pooling: tokens) are their random init read another way: tests/models/test_tokens.py
# EEGNet's motor-imagery classifiers are ruled out of sleep staging (their tests:
# tests/models/test_eegnet.py).
SLEEP_RULED_OUT = {family for family in CONFIG["reference_models"]
                   if rule_out_reason(CONFIG["reference_models"], family, "sleep_staging")}
MODEL_IDS = sorted(m for m, e in CONFIG["models"].items()
                   if (e["weights"] == "random" or m in LOCAL_WEIGHTS)
                   and e.get("pooling", "mean") == "mean" and e["family"] not in SLEEP_RULED_OUT)


@pytest.fixture(scope="module")
def night():
    """A generated night (demo synthesis), EEG in volts as MNE reads it, and its stages."""
    plan = demo_data.plan(n_subjects=1, nights=1, hours=0.5, seed=3)[0]
    eeg = {c.label: c.data for c in demo_data.synthesize(plan) if c.label.startswith("EEG")}
    signals = np.stack([eeg["EEG Fpz-Cz"], eeg["EEG Pz-Oz"]]).astype(np.float64) * 1e-6
    return signals, plan.stages


def epochs_for(spec, signals, stages, wanted=("W", "3")) -> np.ndarray:
    """One 30 s epoch per wanted stage, through the real resample / cut / scale steps."""
    starts = np.array([int(np.flatnonzero(stages == s)[0]) for s in wanted]) * 30 * 100
    resampled = resample(signals, 100, spec.sfreq)
    ratio = spec.sfreq / 100
    windows = cut_windows(resampled, np.round(starts * ratio).astype(np.int64),
                          int(30 * spec.sfreq))
    if spec.scaling in NORMALISERS:  # a normalisation by a statistic of the recording
        normalise = NORMALISERS[spec.scaling][1]
        return normalise(windows.astype(np.float32), whole_statistic(spec.scaling, resampled))
    return scale(windows, spec.scaling)


@pytest.fixture(scope="module")
def weights_root(tmp_path_factory):
    return tmp_path_factory.mktemp("weights")


def roots_for(weights_root: Path) -> dict:
    return {"weights_root": str(weights_root)}


@pytest.mark.parametrize("model_id", MODEL_IDS)
def test_each_model_embeds_generated_eeg(model_id, night, weights_root):
    spec = model_spec(CONFIG, model_id, DATASET)  # a sleep epoch: one 30 s window per family
    assert spec.sfreq == RATE[spec.family] and spec.window_seconds == 30
    plan = channel_plan(CONFIG, DATASET, spec.family)
    path = weights_path(spec, roots_for(weights_root))
    if path is not None:  # pretrained: a file written by scripts/make_weights.py, seed 7, for
        # the channels the map gives the model (BIOT: its slots), and the entry's own 10 s
        # window (LaBraM's temporal embedding is fitted to 30 s: models/checkpoints.py)
        write_weights(model_id, path, seed=7, n_chans=len(plan.model_names))
    encoder = Encoder(spec, plan.model_names, roots_for(weights_root))
    # The random variant covers the architecture on two stages; the pretrained one (same
    # architecture, loaded weights) one epoch, to keep EEGPT's share of the time small.
    stages = ("W", "3") if path is None else ("3",)
    out = encoder(epochs_for(spec, *night, wanted=stages))
    assert out.shape == (len(stages), WIDTH[spec.family]) and out.dtype == np.float32
    assert np.isfinite(out).all()
    assert out.std(axis=1).min() > 1e-6  # not constant across features
    if path is None:
        assert np.abs(out[0] - out[1]).max() > 1e-4 * np.abs(out).max()  # wake != N3
        assert encoder.weights_sha256 == f"random:{spec.seed}"
    else:
        assert encoder.weights_sha256 == hashlib.sha256(path.read_bytes()).hexdigest()


def test_scaling_follows_each_models_convention(night):
    signals, stages = night
    raw = cut_windows(signals.astype(np.float32), np.array([0]), 3000)
    # LaBraM and CBraMod in units of 100 uV (CBraMod clipped at +-100 uV), EEGPT in uV x 1000
    for model_id, factor, clip in [("labram_random", 1e4, np.inf), ("cbramod_random", 1e4, 1.0),
                                   ("eegpt_random", 1e9, np.inf)]:
        spec = model_spec(CONFIG, model_id)
        np.testing.assert_allclose(scale(raw, spec.scaling), np.clip(raw * factor, -clip, clip),
                                   rtol=1e-6)
    biot = scale(raw, model_spec(CONFIG, "biot_random").scaling)
    np.testing.assert_allclose(np.quantile(np.abs(biot), 0.95, axis=-1), 1.0, rtol=1e-3)
    # LUNA: each channel of each window to mean 0, SD 1; BENDR: each window, its channels
    # together, to [-1, 1]
    luna = scale(raw, model_spec(CONFIG, "luna_random").scaling)
    np.testing.assert_allclose(luna.mean(axis=-1), 0, atol=1e-5)
    np.testing.assert_allclose(luna.std(axis=-1), 1, rtol=1e-4)
    bendr = scale(raw, model_spec(CONFIG, "bendr_random").scaling)
    assert (bendr.min(axis=(1, 2)), bendr.max(axis=(1, 2))) == (-1, 1)
    expected = (raw - raw.min()) / (raw.max() - raw.min()) * 2 - 1
    np.testing.assert_allclose(bendr, expected, atol=1e-6)
    flat = scale(np.zeros((1, 2, 100), np.float32), "window_zscore")
    assert (flat == 0).all() and (scale(np.ones((1, 2, 100), np.float32),
                                        "window_minmax") == 0).all()


@pytest.mark.parametrize("model_id, clip", [("reve_random", 15.0), ("steegformer_random", None)])
def test_reve_and_steegformer_are_z_scored_by_their_recording(model_id, clip):
    """The reference's REVE and ST-EEGFormer inputs: each channel z-scored with the whole
    recording's mean and SD (REVE's clipped at +-15 SD), the same statistic for every window."""
    rng = np.random.default_rng(0)
    recording = rng.standard_normal((2, 20_000)) * np.array([[20e-6], [5e-6]]) + 3e-6
    recording[0, 500] = 1e-3  # a spike of 50 SD
    scaling = model_spec(CONFIG, model_id).scaling
    windows = cut_windows(recording.astype(np.float32), np.array([0, 10_000]), 1_000)
    out = NORMALISERS[scaling][1](windows.astype(np.float32), whole_statistic(scaling, recording))
    z = (windows - recording.mean(axis=1)[:, None]) / recording.std(axis=1)[:, None]
    np.testing.assert_allclose(out, z if clip is None else np.clip(z, -clip, clip), rtol=1e-4,
                               atol=1e-4)
    assert out.max() == (15.0 if clip else pytest.approx(z.max(), rel=1e-4))


@pytest.fixture(scope="module")
def cbramod(weights_root):
    """The pretrained CBraMod spec, pointed at a .pt file (the config names .safetensors)."""
    spec = dataclasses.replace(model_spec(CONFIG, "cbramod_pretrained"),
                               weights="cbramod_test.pt")
    return spec, roots_for(weights_root), weights_path(spec, roots_for(weights_root))


def read_tensors(path: Path) -> dict:
    if path.suffix == ".safetensors":
        from safetensors.torch import load_file

        return load_file(str(path))
    return torch.load(path, weights_only=True)


@pytest.mark.parametrize("suffix", [".pt", ".safetensors"])
def test_pretrained_loads_the_file_it_was_given(suffix, cbramod, tmp_path):
    spec, _, _ = cbramod
    path = tmp_path / f"ckpt{suffix}"
    digest = write_weights("cbramod_pretrained", path, seed=11)  # the spec builds from seed 0
    assert digest == hashlib.sha256(path.read_bytes()).hexdigest()
    spec = dataclasses.replace(spec, weights=str(path))  # absolute: weights_root not used
    encoder = Encoder(spec, ("EEG Fpz-Cz", "EEG Pz-Oz"), roots_for(tmp_path / "unused"))
    assert encoder.weights_sha256 == digest
    loaded, saved = encoder.model.state_dict(), read_tensors(path)
    assert sorted(loaded) == sorted(saved)
    assert all(torch.equal(loaded[key], saved[key]) for key in saved)


def test_missing_weights_name_the_path(cbramod):
    spec, roots, path = cbramod
    path.unlink(missing_ok=True)
    with pytest.raises(WeightsError) as err:
        Encoder(spec, ("EEG Fpz-Cz", "EEG Pz-Oz"), roots)
    assert str(path) in err.value.message and "weights_root" in err.value.fix


def test_wrong_shapes_are_refused(cbramod):
    spec, roots, path = cbramod
    write_weights("cbramod_pretrained", path)
    state = torch.load(path, weights_only=True)
    state["proj_out.0.weight"] = torch.zeros(3, 3)
    torch.save(state, path)
    with pytest.raises(WeightsError, match=r"do not fit CBraMod.*size mismatch for proj_out\.0"):
        Encoder(spec, ("EEG Fpz-Cz", "EEG Pz-Oz"), roots)


def test_weights_of_another_architecture_are_refused(cbramod):
    spec, roots, path = cbramod
    write_weights("biot_pretrained", path)
    with pytest.raises(WeightsError, match="do not fit CBraMod.*Missing key"):
        Encoder(spec, ("EEG Fpz-Cz", "EEG Pz-Oz"), roots)


class _RunsCodeWhenUnpickled:
    """A checkpoint that would create a file if its pickle were executed."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def test_pickled_code_is_refused_and_never_runs(cbramod, tmp_path):
    spec, roots, path = cbramod
    marker = tmp_path / "code-ran"
    torch.save({"state_dict": _RunsCodeWhenUnpickled(marker)}, path)  # a valid torch file
    assert not marker.exists()
    with pytest.raises(WeightsError, match="cannot load weights.*Weights only load failed"):
        Encoder(spec, ("EEG Fpz-Cz", "EEG Pz-Oz"), roots)
    assert not marker.exists()


def test_corrupt_safetensors_is_a_weights_error(cbramod, tmp_path):
    spec, roots, _ = cbramod
    path = tmp_path / "broken.safetensors"
    path.write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json}")
    with pytest.raises(WeightsError, match="cannot load weights"):
        Encoder(dataclasses.replace(spec, weights=str(path)), ("a", "b"), roots)


@pytest.mark.parametrize("architecture", ["Labram", "EEGPT"])
def test_named_channel_models_refuse_unknown_names(architecture):
    # Refused before the model is touched (None stands in for it): no fallback embedding.
    forward = ARCHITECTURES[architecture].forward
    with pytest.raises(ModelError, match=r"no channel embedding for \['EEG Fpz-Cz'\]") as err:
        forward(None, torch.zeros(1, 2, 2560), ("EEG Fpz-Cz", "PZ"))  # recorded, not renamed
    assert "channel_maps" in err.value.fix


def test_channel_maps_cover_every_family_and_the_demo_shares_sleep_edfs():
    expanded = CHANNEL_MAP_DIR / "sleep_edf_expanded.yaml"
    assert channel_map_path(CONFIG, DATASET) == expanded  # channel_map: in datasets.yaml
    assert channel_map_path(CONFIG, "sleep_edf_expanded") == expanded  # named after the id
    families = {entry["family"] for entry in CONFIG["models"].values()}
    assert families == set(WIDTH)
    # every dataset's map has an entry, usable or ruled out with its reason, for every family
    for path in sorted(CHANNEL_MAP_DIR.glob("*.yaml")):
        assert set(map_entries(path)) == families, path.name  # a like: map as resolved
    assert families == set(yaml.safe_load(expanded.read_text()))
    for family in families:
        plan = channel_plan(CONFIG, DATASET, family)
        if family in SLEEP_RULED_OUT:
            assert plan.ruled_out and "sleep" in plan.reason, family
            continue
        assert plan.recorded == ("EEG Fpz-Cz", "EEG Pz-Oz"), family
    assert channel_plan(CONFIG, DATASET, "labram").model_names == ("FPZ", "PZ")


def test_make_weights_cli(tmp_path, capsys):
    make_weights_main = script_main("make_weights")
    out = tmp_path / "w" / "biot.pt"
    assert make_weights_main(["biot_pretrained", str(out)]) == 0
    digest = hashlib.sha256(out.read_bytes()).hexdigest()
    assert digest in capsys.readouterr().out
    state = torch.load(out, weights_only=True)
    assert all(isinstance(v, torch.Tensor) for v in state.values())
    assert make_weights_main(["biot_pretrianed", str(tmp_path / "x.pt")]) == 2
    assert "did you mean 'biot_pretrained'" in capsys.readouterr().err
    assert not (tmp_path / "x.pt").exists()


def test_luna_drops_the_part_patch_of_a_trial(weights_root):
    """A 3 s trial at 256 Hz is 19.2 of LUNA's 40-sample patches; its frequency embedding takes
    whole patches only (braindecode raises on the rest): the part patch is dropped."""
    spec = dataclasses.replace(model_spec(CONFIG, "luna_random"), window_seconds=3)
    encoder = Encoder(spec, ("C3", "C4"), roots_for(weights_root))
    trials = np.random.default_rng(0).standard_normal((2, 2, 768)).astype(np.float32)
    out = encoder(trials)
    with torch.inference_mode():
        whole = ARCHITECTURES["LUNA"].forward(encoder.model, torch.from_numpy(trials[..., :760]),
                                              ("C3", "C4"), "mean").numpy()
    assert out.shape == (2, 256) and np.isfinite(out).all()
    np.testing.assert_allclose(out, whole, rtol=1e-5, atol=1e-6)
