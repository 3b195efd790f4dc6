"""Hub checkpoints by name (`weights: hf:org/name`, `revision:`): fetched once, loaded offline.

No network: the hub is a local folder of repos written by braindecode's own `save_pretrained`
(random weights), and `huggingface_hub.snapshot_download` is replaced by a copy from it into the
hub's own cache layout (`models--org--name/snapshots/<commit>/`, `refs/<revision>`); lookups
with `local_files_only=True` go to the real function. check, and embed as a real job, load
through the same code path with HF_HUB_OFFLINE=1.
"""

import dataclasses
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import h5py
import huggingface_hub
import numpy as np
import pytest
import torch

from embedprobe import cli
from embedprobe.core.config import load_config
from embedprobe.core.errors import WeightsError
from embedprobe.core.variants import listed_models
from embedprobe.datasets.sleep_edf.lookalike import generate
from embedprobe.models import checkpoints, hub, time_series
from embedprobe.models.architectures import ARCHITECTURES
from embedprobe.models.encoder import Encoder
from embedprobe.models.registry import RANDOM, build_model, model_spec
from embedprobe.pipeline.channel_maps import channel_plan
from embedprobe.pipeline.check import FAILED, OK, RULED_OUT, SKIPPED, check_pair
from embedprobe.pipeline.context import DatasetContext
from embedprobe.smk import plan as smk_plan
from embedprobe.smk.job_configs import not_run_file
from embedprobe.smk.plan import known_skips, runnable_models

from helpers.hub import NO_HUB, FakeHub, commit_of, fetch_cli, publish, tiny_night

DATASET = "sleep_edf_demo"
# biot_pretrained: the reference suite's PREST checkpoint; biot_six_datasets and
# biot_shhs_prest: the two 18-token ones.
BIOT_REPO = "braindecode/biot-pretrained-prest-16chs"
SIX_DATASETS_REPO = "braindecode/biot-pretrained-six-datasets-18chs"
SHHS_PREST_REPO = "braindecode/biot-pretrained-shhs-prest-18chs"
# The published BIOT layouts: channel tokens (braindecode's test_pretrained_hub_models: 16 for
# -prest-16chs, 18 for the others), 200 Hz and the 10 s pretraining window (NeuroAtlas
# backbones/biot.py: "BIOT's pretraining window is 10 s"); the rest BIOT's defaults.
BIOT_LAYOUTS = {BIOT_REPO: dict(n_chans=16, sfreq=200, n_times=2000),
                SIX_DATASETS_REPO: dict(n_chans=18, sfreq=200, n_times=2000),
                SHHS_PREST_REPO: dict(n_chans=18, sfreq=200, n_times=2000)}
EEGPT_REPO = "braindecode/eegpt-pretrained"
# A small EEGPT (the published one is 8 x 512): what its checkpoint and the model entry share.
SMALL_EEGPT = {"depth": 1, "embed_dim": 64, "num_heads": 4}


def publish_biot(hub_dir: Path, repo: str, seed: int = 5) -> Path:
    """A BIOT repo in its published layout, written by braindecode's save_pretrained."""
    import braindecode.models

    torch.manual_seed(seed)
    model = braindecode.models.BIOT(n_outputs=2, **BIOT_LAYOUTS[repo])
    folder = hub_dir / repo
    if folder.exists():
        shutil.rmtree(folder)
    model.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """One subject, one short night (Sleep-EDF demo format), indexed; the shipped config."""
    root = tmp_path_factory.mktemp("hub")
    config, index = tiny_night(root, DATASET, ["biot_random", "biot_pretrained"])
    return root, config, index


@pytest.fixture
def env(tiny, tmp_path, monkeypatch):
    """A fresh weights root, a fake hub publishing BIOT's PREST checkpoint (16 tokens)."""
    root, config, index = tiny
    config = json.loads(json.dumps(config)) | {"weights_root": str(tmp_path / "weights")}
    roots = {k: config[k] for k in ("data_root", "cache_root", "results_root", "weights_root")}
    fake = FakeHub(tmp_path / "published")
    publish_biot(fake.hub_dir, BIOT_REPO)
    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake)
    monkeypatch.setenv("EMBEDPROBE_WEIGHTS_ROOT", roots["weights_root"])
    return config, roots, fake, index


# ------------------------------------------------------------------------------ the names


# A repo a docstring names as a variant of the one it spells out.
DOCUMENTED_AS = {"braindecode/eegdino-medium-pretrained":
                 '"braindecode/eegdino-small-pretrained",  # or -medium-pretrained'}


def test_the_shipped_repos_are_those_braindecode_documents():
    """config/models.yaml's hub entries name the repos that the installed braindecode's own
    docstrings load with from_pretrained (the source the README cites for each name); BIOT's
    is the reference suite's PREST 16-channel checkpoint, the 18-token one has its own id."""
    import braindecode
    import braindecode.models

    config = load_config()
    # (the time-series models' repos are their packages': tests/models/test_time_series.py;
    # the supervised models' are the reference's: tests/models/test_eegnet.py)
    pretrained = {m: e for m, e in listed_models(config["models"]).items()
                  if hub.hub_repo(e["weights"]) and e["architecture"] not in time_series.PACKAGES
                  and e.get("group") != "supervised"}
    assert {m: hub.hub_repo(e["weights"]) for m, e in pretrained.items()} == {
        "biot_pretrained": BIOT_REPO,
        "biot_six_datasets": SIX_DATASETS_REPO,
        "biot_shhs_prest": SHHS_PREST_REPO,
        "labram_pretrained": "braindecode/labram-pretrained",
        "cbramod_pretrained": "braindecode/cbramod-pretrained",
        "eegpt_pretrained": EEGPT_REPO,
        "bendr_pretrained": "braindecode/braindecode-bendr",
        "signal_jepa_pretrained": "braindecode/signal-jepa",
        "signal_jepa_without_chans_pretrained": "braindecode/signal-jepa_without-chans",
        "luna_base_pretrained": "PulpBio/LUNA",
        "luna_large_pretrained": "PulpBio/LUNA",
        "luna_huge_pretrained": "PulpBio/LUNA",
        "reve_base_pretrained": "brain-bzh/reve-base",
        "steegformer_small_pretrained": "braindecode/STEEGFormer-small",
        "steegformer_base_pretrained": "braindecode/STEEGFormer-base",
        "steegformer_large_pretrained": "braindecode/STEEGFormer-large",
        "steegformer_largev2_pretrained": "braindecode/STEEGFormer-largeV2",
        "codebrain_pretrained": "braindecode/codebrain-pretrained",
        "eegdino_small_pretrained": "braindecode/eegdino-small-pretrained",
        "eegdino_medium_pretrained": "braindecode/eegdino-medium-pretrained",
    }
    assert braindecode.__version__ == "1.8.1"
    for entry in pretrained.values():
        cls = getattr(braindecode.models, ARCHITECTURES[entry["architecture"]].class_name)
        repo = hub.hub_repo(entry["weights"])
        assert DOCUMENTED_AS.get(repo, repo) in cls.__doc__, cls.__name__
        assert entry.get("hub_file", hub.WEIGHTS_FILE) in cls.__doc__ + hub.WEIGHTS_FILE
        assert entry["revision"] == "main"


# ------------------------------------------------------------------------------ fetching


def test_fetch_records_hashes_and_a_rerun_downloads_nothing(env, capsys):
    config, roots, fake, _ = env
    assert fetch_cli(config, "biot_pretrained") == 0
    assert len(fake.calls) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"biot_pretrained: fetched {BIOT_REPO}@main (commit ")
    entry = json.loads(hub.manifest_path(roots).read_text())[f"{BIOT_REPO}@main"]
    snapshot = (Path(roots["weights_root"]) / "hub" / "models--braindecode--biot-pretrained-"
                "prest-16chs" / "snapshots" / entry["commit"])
    assert sorted(entry["files"]) == ["config.json", "model.safetensors"]  # allow_patterns
    # the revision and the commit it resolved to, as the hub's own refs/ file has it
    assert (entry["revision"], entry["commit"]) == ("main", commit_of(BIOT_REPO))
    assert (snapshot.parents[1] / "refs" / "main").read_text() == entry["commit"]
    assert entry["files"]["model.safetensors"] == hashlib.sha256(
        (snapshot / "model.safetensors").read_bytes()).hexdigest()
    assert fetch_cli(config, "biot_pretrained") == 0
    assert len(fake.calls) == 1  # the re-run found everything in place
    assert "already fetched" in capsys.readouterr().out


def test_fetch_of_an_unknown_revision_is_an_error_with_its_fix(env, capsys):
    config, roots, fake, _ = env
    config["models"]["biot_pretrained"]["revision"] = "v9"
    assert fetch_cli(config, "biot_pretrained") == 2
    err = capsys.readouterr().err
    assert f"error: cannot fetch {BIOT_REPO} at revision v9" in err
    assert "fix: check the repo and revision in config/models.yaml" in err


# ------------------------------------------------------------------------------ loading offline


def test_check_and_embed_load_the_fetched_checkpoint_offline(env, tmp_path):
    config, roots, fake, index = env
    assert fetch_cli(config, "biot_pretrained") == 0
    result = check_pair(DatasetContext.build(config, roots, DATASET), "biot_pretrained", 8)
    assert result.status == OK, result.note
    assert result.weights == "found" and result.forward == "(8, 256) finite"
    assert os.environ["HF_HUB_OFFLINE"] == "1"
    assert huggingface_hub.constants.HF_HUB_OFFLINE  # read at import: told as well
    assert known_skips(config, "demo") == {}
    assert runnable_models(config, "demo", DATASET) == ["biot_random", "biot_pretrained"]
    # embed as the workflow runs it: a job of its own, the hub offline, weights from the cache
    out = tmp_path / "biot_pretrained.h5"
    job = subprocess.run(
        [sys.executable, "-m", "embedprobe.cli", "--job-config", json.dumps(config), "embed",
         "--dataset", DATASET, "--model", "biot_pretrained", "--index", str(index), "--out",
         str(out), "--batch-size", "16", "--threads", "1"],
        capture_output=True, text=True, timeout=300, env=dict(os.environ, **NO_HUB))
    assert job.returncode == 0, job.stderr
    entry = json.loads(hub.manifest_path(roots).read_text())[f"{BIOT_REPO}@main"]
    with h5py.File(out, "r") as f:
        assert json.dumps(dict(f.attrs), default=str).count(entry["files"]["model.safetensors"])
        assert np.isfinite(f["embeddings"][:]).all()


def test_the_prest_checkpoint_has_16_tokens_and_the_six_datasets_one_18(env):
    """The three BIOT checkpoints fetched in their published layouts: biot_pretrained (PREST)
    is built with its 16 channel tokens, biot_six_datasets and biot_shhs_prest with 18, for a
    2-channel dataset as for any; an 18-channel montage is ruled out for the first and served
    by the others."""
    from safetensors.torch import load_file

    config, roots, fake, _ = env
    publish_biot(fake.hub_dir, SIX_DATASETS_REPO)
    publish_biot(fake.hub_dir, SHHS_PREST_REPO, seed=6)
    assert fetch_cli(config, "biot_pretrained", "biot_six_datasets", "biot_shhs_prest") == 0
    montage = tuple(f"E{i}" for i in range(18))
    mismatches = {}
    for model_id, repo, tokens in [("biot_pretrained", BIOT_REPO, 16),
                                   ("biot_six_datasets", SIX_DATASETS_REPO, 18),
                                   ("biot_shhs_prest", SHHS_PREST_REPO, 18)]:
        checkpoint = hub.locate(repo, "main", roots).checkpoint
        published = checkpoint.config()
        assert (published["n_chans"], published["sfreq"], published["n_times"]) == (
            tokens, 200, 2000)
        spec = model_spec(config, model_id, DATASET)
        model, digest = build_model(spec, 2, roots)
        assert digest == checkpoint.sha256
        loaded = model.encoder.channel_tokens.weight
        assert tuple(loaded.shape) == (tokens, 256)
        saved = load_file(str(fake.hub_dir / repo / "model.safetensors"))
        assert torch.equal(loaded, saved["encoder.channel_tokens.weight"])
        mismatches[model_id] = checkpoints.checkpoint_mismatch(spec, published, 18, montage)
    assert mismatches == {
        "biot_pretrained": "it has 16 channel tokens, the channel map gives 18 channels "
                           f"({', '.join(montage)})",
        "biot_six_datasets": "", "biot_shhs_prest": ""}


def test_the_shhs_prest_checkpoint_loads_offline_and_embeds_a_batch(env):
    """biot_shhs_prest, fetched from a repo written in its published layout (random tensors
    under the real key names and shapes), passes check offline: one real batch, its weights'
    sha256 the manifest's, and the plan runs it."""
    config, roots, fake, _ = env
    publish_biot(fake.hub_dir, SHHS_PREST_REPO, seed=6)
    assert fetch_cli(config, "biot_shhs_prest") == 0
    config["benchmarks"]["demo"]["models"] = ["biot_random", "biot_shhs_prest"]
    result = check_pair(DatasetContext.build(config, roots, DATASET), "biot_shhs_prest", 8)
    assert os.environ["HF_HUB_OFFLINE"] == "1"
    assert result.status == OK, result.note
    assert result.weights == "found" and result.forward == "(8, 256) finite"
    entry = json.loads(hub.manifest_path(roots).read_text())[f"{SHHS_PREST_REPO}@main"]
    _, digest = build_model(model_spec(config, "biot_shhs_prest", DATASET), 2, roots)
    assert digest == entry["files"]["model.safetensors"]
    assert runnable_models(config, "demo", DATASET) == ["biot_random", "biot_shhs_prest"]


def test_not_fetched_is_a_skip_in_check_and_in_the_plan(env):
    config, roots, _, _ = env
    result = check_pair(DatasetContext.build(config, roots, DATASET), "biot_pretrained", 8)
    assert (result.status, result.category, result.weights) == (SKIPPED, "weights", "not fetched")
    assert result.reason.startswith(f"skipped: weights not fetched: {BIOT_REPO} at revision main")
    assert result.fix == "embedprobe fetch-weights biot_pretrained"
    skip = known_skips(config, "demo")["biot_pretrained"]
    assert skip["reason"].startswith("weights not fetched")
    assert skip["fix"].startswith("embedprobe fetch-weights biot_pretrained")
    assert runnable_models(config, "demo", DATASET) == ["biot_random"]


def test_a_revision_not_fetched_is_a_skip(env):
    config, roots, _, _ = env
    assert fetch_cli(config, "biot_pretrained") == 0
    config["models"]["biot_pretrained"]["revision"] = "0123456789abcdef0123456789abcdef01234567"
    result = check_pair(DatasetContext.build(config, roots, DATASET), "biot_pretrained", 8)
    assert result.status == SKIPPED and "weights not fetched" in result.reason
    assert "at revision 0123456789ab" in result.reason
    assert result.fix == "embedprobe fetch-weights biot_pretrained"


def test_a_damaged_file_fails_with_the_fetch_fix_and_fetch_repairs_it(env):
    config, roots, fake, _ = env
    assert fetch_cli(config, "biot_pretrained") == 0
    state = hub.locate(BIOT_REPO, "main", roots)
    data = bytearray(state.checkpoint.weights.read_bytes())
    data[-10] ^= 0xFF
    state.checkpoint.weights.write_bytes(bytes(data))
    spec = model_spec(config, "biot_pretrained")
    with pytest.raises(WeightsError, match="are damaged") as caught:
        build_model(spec, 2, roots)
    assert caught.value.fix.startswith("embedprobe fetch-weights biot_pretrained")
    result = check_pair(DatasetContext.build(config, roots, DATASET), "biot_pretrained", 8)
    assert (result.status, result.category) == (FAILED, "weights")
    assert fetch_cli(config, "biot_pretrained") == 0
    assert fake.calls[-1] == (BIOT_REPO, "main", True)  # downloaded again, forced
    assert check_pair(DatasetContext.build(config, roots, DATASET),
                      "biot_pretrained", 8).status == OK


def test_a_missing_file_is_a_skip_with_the_fetch_fix(env):
    config, roots, _, _ = env
    assert fetch_cli(config, "biot_pretrained") == 0
    hub.locate(BIOT_REPO, "main", roots).checkpoint.weights.unlink()
    result = check_pair(DatasetContext.build(config, roots, DATASET), "biot_pretrained", 8)
    assert result.status == SKIPPED and "model.safetensors missing" in result.reason
    assert result.fix == "embedprobe fetch-weights biot_pretrained"


@pytest.mark.parametrize("n_chans, changes, reason", [
    # {n} and {names}: what the dataset's channel map gives BIOT
    (1, {}, "it has 1 channel tokens, the channel map gives {n} channels ({names})"),
    (16, {"sfreq": 256}, "sfreq 256 in the checkpoint, 200 from the model entry"),
    (16, {"params": {"embed_dim": 128}},
     "embed_dim 128 in the checkpoint, 256 from braindecode's default"),
])
def test_a_checkpoint_that_cannot_serve_the_dataset_is_ruled_out(env, n_chans, changes, reason,
                                                                  capsys, monkeypatch):
    config, roots, fake, _ = env
    names = channel_plan(config, DATASET, "biot").model_names
    reason = reason.format(n=len(names), names=", ".join(names))
    publish(fake.hub_dir, BIOT_REPO, model_spec(config, "biot_pretrained"), n_chans, **changes)
    assert fetch_cli(config, "biot_pretrained") == 0
    result = check_pair(DatasetContext.build(config, roots, DATASET), "biot_pretrained", 8)
    assert (result.status, result.category, result.data) == (RULED_OUT, "weights", "not read")
    assert reason in result.reason and result.reason.startswith(
        f"ruled out: checkpoint {BIOT_REPO} cannot serve {DATASET}")
    monkeypatch.setattr(smk_plan, "_WARNED", set())  # the plan warns once per process
    capsys.readouterr()
    assert runnable_models(config, "demo", DATASET) == ["biot_random"]
    assert f"warning: {DATASET}/biot_pretrained is ruled out: checkpoint {BIOT_REPO} cannot " \
           f"serve it: " in capsys.readouterr().err
    with pytest.raises(WeightsError, match="cannot serve"):
        build_model(model_spec(config, "biot_pretrained"), 2, roots)


# ------------------------------------------------------------------------------ original files


def original_biot(state: dict, prefix: str) -> dict:
    """braindecode's BIOT names -> the original repo's (BIOTClassifier under `prefix`)."""
    out = {}
    for key, value in state.items():
        if key.startswith("encoder."):
            out[prefix + "biot." + key[len("encoder."):]] = value
        elif key.startswith("final_layer.classification_head."):
            out[prefix + "classifier.clshead.1." + key.rsplit(".", 1)[1]] = value
    out[prefix + "biot.index"] = torch.arange(2)  # the original keeps it as a parameter
    return out


@pytest.mark.parametrize("container", ["lightning_ckpt", "pth_model", "bare_encoder"])
def test_an_original_biot_file_embeds_like_braindecodes_layout(env, tmp_path, container):
    config, roots, _, _ = env
    spec = model_spec(config, "biot_pretrained")
    model, _ = build_model(dataclasses.replace(spec, weights=RANDOM, seed=9), 2, roots)
    state = model.state_dict()
    weights = Path(roots["weights_root"])
    weights.mkdir(parents=True, exist_ok=True)
    torch.save(state, weights / "biot_bd.pt")
    if container == "lightning_ckpt":
        torch.save({"state_dict": original_biot(state, "model."), "epoch": 3,
                    "global_step": 70, "pytorch-lightning_version": "1.6.0"},
                   weights / "biot_orig.ckpt")
        name = "biot_orig.ckpt"
    elif container == "pth_model":
        torch.save({"model": original_biot(state, "")}, weights / "biot_orig.pth")
        name = "biot_orig.pth"
    else:  # BIOT's released pretrained-models/*.ckpt: BIOTEncoder's own state_dict, no head
        encoder = {k[len("biot."):]: v for k, v in original_biot(state, "").items()
                   if k.startswith("biot.")}
        assert "channel_tokens.weight" in encoder and "index" in encoder
        torch.save(encoder, weights / "biot_encoder.ckpt")
        name = "biot_encoder.ckpt"
    windows = np.random.default_rng(0).standard_normal((4, 2, 6000)).astype(np.float32)
    ours = Encoder(dataclasses.replace(spec, weights="biot_bd.pt"), ("A", "B"), roots)
    theirs = Encoder(dataclasses.replace(spec, weights=name), ("A", "B"), roots)
    np.testing.assert_array_equal(ours(windows), theirs(windows))


def test_an_original_eegpt_checkpoint_embeds_like_braindecodes_layout(env):
    """EEGPT's released Lightning .ckpt: the pretraining module's `state_dict` with the online
    `encoder.`, the `target_encoder.` the authors' downstream code loads, and `predictor.` /
    `reconstructor.`; only the target encoder is taken (the online one differs here)."""
    config, roots, _, _ = env
    spec = dataclasses.replace(model_spec(config, "eegpt_pretrained"), params=SMALL_EEGPT)
    model, _ = build_model(dataclasses.replace(spec, weights=RANDOM, seed=4), 2, roots)
    state = model.state_dict()
    assert state and all(k.startswith("target_encoder.") or k == "chans_id" for k in state)
    original = {**state,
                **{"encoder." + k[len("target_encoder."):]: v + 1 for k, v in state.items()
                   if k.startswith("target_encoder.")},
                "predictor.mask_token": torch.zeros(1, 1, 64),
                "reconstructor.time_embed.weight": torch.zeros(8, 64),
                "chans_id": torch.arange(2)}
    weights = Path(roots["weights_root"])
    weights.mkdir(parents=True, exist_ok=True)
    torch.save(state, weights / "eegpt_bd.pt")
    torch.save({"state_dict": original, "epoch": 199, "pytorch-lightning_version": "1.9.5"},
               weights / "eegpt_mcae.ckpt")
    windows = np.random.default_rng(1).standard_normal((3, 2, 2560)).astype(np.float32)
    ours = Encoder(dataclasses.replace(spec, weights="eegpt_bd.pt"), ("C3", "C4"), roots)
    theirs = Encoder(dataclasses.replace(spec, weights="eegpt_mcae.ckpt"), ("C3", "C4"), roots)
    np.testing.assert_array_equal(ours(windows), theirs(windows))


def test_a_hub_eegpt_with_braindecodes_channel_projection_loads_its_encoder(env):
    """An EEGPT saved with braindecode's default downstream projection (chan_proj, never
    pretrained): the entry builds none, so the projection is left out and the encoder loads."""
    import braindecode.models

    config, roots, fake, _ = env
    config["models"]["eegpt_pretrained"]["params"] = SMALL_EEGPT
    published = braindecode.models.EEGPT(n_chans=19, n_outputs=1, sfreq=256, n_times=2560,
                                         return_encoder_output=True, **SMALL_EEGPT)
    assert any(k.startswith("chan_proj.") for k in published.state_dict())
    published.save_pretrained(fake.hub_dir / EEGPT_REPO)
    assert fetch_cli(config, "eegpt_pretrained") == 0
    model, digest = build_model(model_spec(config, "eegpt_pretrained", DATASET), 2, roots)
    assert digest == hub.locate(EEGPT_REPO, "main", roots).checkpoint.sha256
    loaded = model.state_dict()
    assert not any(k.startswith("chan_proj.") for k in loaded)
    for key, value in published.state_dict().items():
        if key.startswith("target_encoder."):
            assert torch.equal(loaded[key], value), key


def test_an_original_file_that_does_not_fit_names_its_keys(env):
    config, roots, _, _ = env
    spec = model_spec(config, "biot_pretrained")
    model, _ = build_model(dataclasses.replace(spec, weights=RANDOM), 2, roots)
    state = original_biot(model.state_dict(), "model.")
    state["model.biot.extra_layer.weight"] = torch.zeros(3)
    del state["model.biot.channel_tokens.weight"]
    weights = Path(roots["weights_root"])
    weights.mkdir(parents=True, exist_ok=True)
    torch.save({"state_dict": state}, weights / "bad.ckpt")
    with pytest.raises(WeightsError) as caught:
        build_model(dataclasses.replace(spec, weights="bad.ckpt"), 2, roots)
    message = caught.value.message
    assert "unexpected keys (1): encoder.extra_layer.weight" in message
    assert "missing keys (1): encoder.channel_tokens.weight" in message
    assert "KEY_MAPS" in caught.value.fix


@pytest.mark.workflow
def test_snakemake_weights_plans_one_fetch_job(tmp_path):
    from helpers.project import snakemake

    plan = snakemake(tmp_path, "-n", "-p", "weights", timeout=300)
    assert plan.returncode == 0, plan.stderr
    assert "rule weights:" in plan.stdout
    assert "fetch-weights --out" in plan.stdout and f"{tmp_path}/results/weights/fetched.txt" \
        in plan.stdout


def test_the_shipped_sleep_stage_skips_an_unfetched_checkpoint_in_plan_and_table(tmp_path,
                                                                                 capsys,
                                                                                 monkeypatch):
    """A new user's first run: biot_pretrained not fetched is a skip with the fetch command, in
    the plan's warning and in results.tsv (aggregate's not-run list); biot_random runs."""
    import pandas as pd

    config = load_config()
    roots = {k: str(tmp_path / k) for k in ("data_root", "cache_root", "results_root",
                                            "weights_root")}
    config.update(roots)
    monkeypatch.setenv("EMBEDPROBE_WEIGHTS_ROOT", roots["weights_root"])
    monkeypatch.setattr(smk_plan, "_WARNED", set())
    dataset = "sleep_edf_expanded"
    assert config["benchmarks"]["sleep_stage"]["models"] == ["biot_pretrained", "biot_random"]
    capsys.readouterr()
    assert runnable_models(config, "sleep_stage", dataset) == ["biot_random"]
    smk_plan.warn_known_skips(config, "sleep_stage", dataset)
    err = capsys.readouterr().err
    assert (f"warning: {dataset}/biot_pretrained will be skipped: weights not fetched: "
            f"{BIOT_REPO} at revision main is not in {roots['weights_root']}/hub") in err
    assert "\nfix: embedprobe fetch-weights biot_pretrained" in err
    not_run = not_run_file(config, "sleep_stage", dataset)
    out = tmp_path / "results.tsv"
    assert cli.main(["--job-config", json.dumps(config), "aggregate", "--benchmark",
                     "sleep_stage", "--out", str(out), "--not-run", not_run]) == 0
    row = pd.read_csv(out, sep="\t").set_index("model").loc["biot_pretrained"]
    assert (row["dataset"], row["status"], row["folds"]) == (dataset, "skipped", "0/5")
    assert row["reason"].startswith(f"weights not fetched: {BIOT_REPO} at revision main")
    assert row["fix"].startswith("embedprobe fetch-weights biot_pretrained")


@pytest.mark.workflow
def test_snakemake_plans_the_shipped_sleep_stage_without_the_unfetched_checkpoint(tmp_path):
    """The shipped benchmark and models; only the data is a small look-alike in Sleep-EDF's
    format (a missing dataset is an error of its own)."""
    from helpers.project import snakemake

    generate(tmp_path / "data" / "tiny-edf", n_subjects=1, nights=1, hours=0.25, seed=3)
    tiny = tmp_path / "tiny.yaml"
    tiny.write_text(json.dumps({"datasets": {"sleep_edf_expanded": {
        "path": "tiny-edf", "expected_recordings": 1}}}))
    plan = snakemake(tmp_path, "--configfile", str(tiny), "-n", "sleep_stage", timeout=300)
    assert plan.returncode == 0, plan.stderr[-3000:]
    assert ("warning: sleep_edf_expanded/biot_pretrained will be skipped: weights not fetched: "
            f"{BIOT_REPO} at revision main is not in {tmp_path}/weights/hub") in plan.stderr
    assert "\nfix: embedprobe fetch-weights biot_pretrained" in plan.stderr
    assert "sleep_edf_expanded/biot_random.h5" in plan.stdout
    assert "biot_pretrained.h5" not in plan.stdout and "biot_pretrained/fold" not in plan.stdout


@pytest.mark.workflow
def test_the_workflow_embeds_with_a_fetched_checkpoint_and_the_hub_unreachable(env, tmp_path):
    """Fetched here (the login node), then the workflow's own jobs (index, check, preflight,
    embed) load it from weights_root/hub with every hub request bound to fail."""
    from helpers.project import snakemake

    config, roots, fake, _ = env
    assert roots["weights_root"] == str(tmp_path / "weights")  # where conftest.snakemake looks
    assert fetch_cli(config, "biot_pretrained") == 0
    cache = hub.hub_cache(roots)
    fetched = sorted((p.relative_to(cache).as_posix(), p.stat().st_mtime_ns)
                     for p in cache.rglob("*"))
    tiny = tmp_path / "tiny.yaml"
    tiny.write_text(json.dumps({"datasets": {DATASET: {
        "expected_recordings": 1, "generator": {"subjects": 1, "nights": 1, "hours": 0.25,
                                                "seed": 3}}}}))
    target = tmp_path / "cache" / "embeddings" / DATASET / "biot_pretrained.h5"
    run = snakemake(tmp_path, "--configfile", str(tiny), "--cores", "2", str(target),
                    timeout=600, env_extra=NO_HUB)
    assert run.returncode == 0, run.stderr[-3000:]
    assert sorted((p.relative_to(cache).as_posix(), p.stat().st_mtime_ns)
                  for p in cache.rglob("*")) == fetched  # the jobs wrote nothing there
    entry = json.loads(hub.manifest_path(roots).read_text())[f"{BIOT_REPO}@main"]
    checked = json.loads((tmp_path / "results" / "check" / DATASET /
                          "biot_pretrained.json").read_text())
    assert (checked["status"], checked["weights"]) == (OK, "found")
    assert checked["extra"]["checkpoint"] == f"{BIOT_REPO}@{entry['commit']}"
    with h5py.File(target, "r") as f:
        assert json.dumps(dict(f.attrs), default=str).count(entry["files"]["model.safetensors"])
        assert f["embeddings"].shape[1] == 256 and np.isfinite(f["embeddings"][:]).all()
