"""How each braindecode architecture is built and how its features are read out.

One row per architecture: the braindecode class, the keyword arguments it is built with, the
forward call that returns one feature vector per window, and how that vector is pooled from the
model's tokens (`pooling`, for people and reports). Heads are left out where the class allows it
(`return_encoder_output`, `n_outputs=0`): a frozen encoder has no use for a random classifier.

A model entry's `readout` (and `readout_by_task`, per labelling task) picks the vector among the
architecture's `readouts` (READOUTS says what each is). Only LaBraM has a CLS token: the
reference suite (NeuroAtlas, backbones/labram.py) embeds BCI trials as its CLS token next to the
mean of its patch tokens (`cls_mean`, 400 values), both taken after the final norm, and its other
benchmarks as braindecode 1.4.0's `forward_features` default, which is that CLS token (`cls`:
Labram's `use_mean_pooling` defaults to False there, so there is no `fc_norm`).

Models that look up a learned embedding per channel name (LaBraM, EEGPT) get the names from the
dataset's channel map and refuse a name they have no embedding for, rather than letting braindecode
fall back to some other embedding (EEGPT) or fail deep inside the forward pass (LaBraM).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

from embedprobe.core.errors import ModelError
from embedprobe.models import eegnet, electrodes

if TYPE_CHECKING:  # the Snakefile reads this table at parse time: no torch there (~220 MB)
    import torch


def _features(output) -> torch.Tensor:
    """braindecode returns a dict, a tuple or a tensor depending on the model."""
    if isinstance(output, dict):
        output = output.get("features")
    if isinstance(output, (tuple, list)):
        output = output[0]
    return output


# Readout name -> what the feature vector is. `mean` is every architecture's; the others need a
# CLS token.
MEAN, CLS, CLS_MEAN = "mean", "cls", "cls_mean"
READOUTS = {
    MEAN: "mean over the tokens",
    CLS: "the CLS token after the final norm",
    CLS_MEAN: "the CLS token after the final norm, then the mean of the patch tokens (twice "
              "the width)",
}


def _pool(tokens: torch.Tensor) -> torch.Tensor:
    """(batch, ..., dim) token grids -> (batch, dim) by the mean over every token axis."""
    return tokens.reshape(tokens.shape[0], -1, tokens.shape[-1]).mean(dim=1)


# ------------------------------------------------------------------ the token-level readout
# `pooling: tokens` keeps one vector per time patch instead of one per window: the reference's
# per-patch embedding, which its BCI `token_flattening` variants concatenate in order at probe
# time. A patch's vector is the mean over the channels' tokens of that patch (a channel count
# would otherwise change the width), so the mean over a window's time tokens is its `mean`
# readout: one store serves both (tests/models/test_tokens.py pins the equality).
TOKENS = "tokens"
POOLINGS = {MEAN: "one vector per window (the readout)",
            TOKENS: "one vector per time patch, (windows, tokens, width) in the store"}


def _channel_major(tokens: torch.Tensor, n_chans: int) -> torch.Tensor:
    """(batch, channels x patches, dim) with a channel's patches adjacent, or (batch,
    channels, patches, dim) -> (batch, patches, dim), each patch averaged over channels."""
    return tokens.reshape(tokens.shape[0], n_chans, -1, tokens.shape[-1]).mean(dim=1)


def _patch_major(tokens: torch.Tensor, n_chans: int) -> torch.Tensor:
    """(batch, patches x channels, dim) with a patch's channels adjacent -> (batch, patches,
    dim)."""
    return tokens.reshape(tokens.shape[0], -1, n_chans, tokens.shape[-1]).mean(dim=2)


def _grid_tokens(model, x, ch_names):
    """Models whose forward(x, return_features=True) returns their channel-major token grid."""
    return _channel_major(_features(model(x, return_features=True)), len(ch_names))


def _require_known(ch_names: tuple[str, ...], known: dict[str, int], model: str,
                   table: str) -> list[int]:
    """Each channel's index in the model's name table; an unknown name is refused."""
    unknown = [name for name in ch_names if name.upper() not in known]
    if unknown:
        raise ModelError(
            f"{model} has no channel embedding for {unknown}",
            fix=f"rename them in the dataset's channel map (config/channel_maps/) to names "
                f"from {table}",
        )
    return [known[name.upper()] for name in ch_names]


@cache
def _labram_names() -> dict[str, int]:
    from braindecode.models.labram import LABRAM_CHANNEL_ORDER

    return {name.upper(): i for i, name in enumerate(LABRAM_CHANNEL_ORDER)}


@cache
def _eegpt_chan_ids(ch_names: tuple[str, ...], device: torch.device) -> torch.Tensor:
    """Made once per device: a copy to a GPU each batch would wait for the work queued
    there (embed queues the next batch before it waits for one)."""
    from braindecode.models.eegpt import CHANNEL_DICT

    ids = _require_known(ch_names, CHANNEL_DICT, "EEGPT",
                         "braindecode.models.eegpt.EEGPT_CHANNELS")
    import torch

    with torch.inference_mode(False):  # kept: a normal tensor, usable outside inference too
        return torch.tensor(ids, dtype=torch.long, device=device)


def _labram_all_tokens(model, x, ch_names) -> dict:
    """Every token after the final norm: `features` the patch tokens (batch, channels x 1-s
    patches, 200; a channel's patches adjacent), `cls_token` the CLS token (batch, 200)."""
    _require_known(ch_names, _labram_names(), "Labram",
                   "braindecode.models.labram.LABRAM_CHANNEL_ORDER")
    return model(x, return_features=True, ch_names=list(ch_names))


def _labram_tokens(model, x, ch_names):
    return _channel_major(_labram_all_tokens(model, x, ch_names)["features"], len(ch_names))


def _labram_forward(model, x, ch_names, readout=MEAN):
    tokens = _labram_all_tokens(model, x, ch_names)
    if readout == CLS:
        return tokens["cls_token"]
    mean = _pool(tokens["features"])
    if readout == CLS_MEAN:
        import torch  # here: the Snakefile reads this module

        return torch.cat([tokens["cls_token"], mean], dim=1)
    return mean


def _eegpt_forward(model, x, ch_names, readout=MEAN):
    """The mean over the window's 64-sample patches of their 4 summary tokens (concatenated).

    The reference (NeuroAtlas backbones/eegpt.py, _tile_boundaries) cuts a window into 4 s
    tiles (1024 samples at 256 Hz) and a shorter last tile, and averages the tiles' patch means
    weighted by their lengths. EEGPT's encoder attends across the channels of one patch at a
    time (no token sees another patch, no time embedding), so that weighted mean is the mean
    over all the window's non-overlapping patches: computed here in one pass. The equality is
    pinned in tests/models/test_windows.py against tiles run one by one."""
    return _eegpt_tokens(model, x, ch_names).mean(dim=1)


def _eegpt_tokens(model, x, ch_names):
    """Each 64-sample patch's 4 summary tokens, concatenated: (batch, patches, 2048)."""
    # EEGPT.forward embeds channels by the ids fixed at build time (sequential without chs_info);
    # the encoder is called with the ids of the mapped names instead.
    ids = _eegpt_chan_ids(tuple(ch_names), x.device)
    patch = model.target_encoder.patch_embed.patch_size
    if x.shape[-1] % patch:  # braindecode would pad the last patch with zeros
        raise ModelError(
            f"EEGPT takes whole {patch}-sample patches; a window of {x.shape[-1]} samples is not",
            fix="choose a window (window_seconds) or unit (epoch_seconds) whose length at the "
                "model's rate is a multiple of the patch (0.25 s at 256 Hz)")
    summary = model.target_encoder(model.chan_proj(x), ids)  # (batch, patches, 4, 512)
    return summary.flatten(2)


# ------------------------------------------------------------------ channels given by position
# (models/electrodes.py). `companions` holds the files a pretrained checkpoint was fetched with
# (checkpoints.COMPANIONS: name -> local path); a random-init model has none.


def _chs_with_positions(family: str):
    """SignalJEPA, LUNA: each channel's template position makes its channel embedding."""
    def kwargs(ch_names: tuple[str, ...], companions: dict, params: dict) -> dict:
        if params.get("channel_embedding") == "pretrain_aligned":
            # its checkpoint has one embedding row per pretraining channel, picked by name
            # (braindecode raises a bare ValueError for another name)
            from braindecode.models.signal_jepa import _PRETRAIN_CHS_INFO

            _require_known(ch_names, {ch["ch_name"].upper(): i for i, ch in
                                      enumerate(_PRETRAIN_CHS_INFO)},
                           f"{family} (pretrain_aligned)",
                           "braindecode.models.signal_jepa._PRETRAIN_CHS_INFO")
        return {"chs_info": electrodes.chs_info(ch_names, family)}
    return kwargs


REVE_BANK = "reve_positions"  # checkpoints.COMPANIONS: the published position bank


def _reve_channels(ch_names: tuple[str, ...], companions: dict, params: dict) -> dict:
    """REVE reads `<REVE_POSITIONS_PATH>/reve_positions.json` in its constructor (and downloads
    it when absent): it is pointed at the fetched bank, or for random init at the template's
    positions written as a bank. Names are checked here (braindecode skips an unknown name and
    then fails on the shapes) and given in the bank's own spelling."""
    import os
    import tempfile
    from pathlib import Path

    source = companions.get(REVE_BANK)
    if source is None:
        bank = {name: list(xyz) for name, xyz in electrodes.template_positions().items()}
        digest = "template"
    else:
        bank = json.loads(Path(source).read_text())
        digest = hashlib.sha256(Path(source).read_bytes()).hexdigest()[:16]
    spelled = {name.upper(): name for name in bank}
    electrodes.positions(ch_names, "REVE", {k: bank[v] for k, v in spelled.items()})
    folder = Path(tempfile.gettempdir()) / f"embedprobe-reve-bank-{digest}"
    if not (folder / "reve_positions.json").is_file():  # named by its content: written once
        folder.mkdir(parents=True, exist_ok=True)
        staged = folder / f".reve_positions.{os.getpid()}.json"
        staged.write_text(json.dumps(bank))
        os.replace(staged, folder / "reve_positions.json")  # whole, for processes reading it
    os.environ["REVE_POSITIONS_PATH"] = str(folder)
    return {"chs_info": [{"ch_name": spelled[name.upper()]} for name in ch_names]}


STEEGFORMER_VOCAB = "steegformer_channels"  # checkpoints.COMPANIONS: the slot names
STEEGFORMER_SLOTS = 145  # braindecode's default n_chans_pos: small, base and large


def _steegformer_channels(ch_names: tuple[str, ...], companions: dict,
                          params: dict) -> dict:
    """ST-EEGFormer embeds each channel by its slot in the checkpoints' shared 145-name
    vocabulary (the fetched steegformer_channels.json). braindecode would download it, or fall
    back to slot i for channel i with a warning: the slots are given explicitly instead. A
    random-init model has no vocabulary to honour: channel i takes slot i."""
    from pathlib import Path

    source = companions.get(STEEGFORMER_VOCAB)
    if source is None:
        return {"chan_pos_idx": list(range(len(ch_names)))}
    names = json.loads(Path(source).read_text())
    slots = params.get("n_chans_pos", STEEGFORMER_SLOTS)
    if slots != len(names):
        raise ModelError(
            f"this ST-EEGFormer checkpoint has {slots} channel slots; the published names "
            f"(steegformer_channels.json) are those of the {len(names)}-slot vocabulary",
            fix="use STEEGFormer small, base or large: largeV2's 256-slot HBN vocabulary has no "
                "published electrode names, so no channel map can place a channel in it")
    vocab = {name.upper(): i for i, name in enumerate(names)}
    return {"chan_pos_idx": _require_known(ch_names, vocab, "STEEGFormer",
                                           "the checkpoint's steegformer_channels.json")}


EEGDINO_SLOTS = 19  # braindecode's default n_channel_embeddings: the released weights'


def _eegdino_channels(ch_names: tuple[str, ...], companions: dict, params: dict) -> dict:
    """EEG-DINO embeds channel i by its one-hot slot i of `n_channel_embeddings` (19 in the
    released weights): more channels are refused here with the fix (braindecode: a bare
    ValueError). Nothing else depends on the channels."""
    slots = params.get("n_channel_embeddings", EEGDINO_SLOTS)
    if len(ch_names) > slots:
        raise ModelError(
            f"EEG-DINO has {slots} channel slots; the channel map gives it {len(ch_names)} "
            "channels", fix=f"give it at most {slots} channels in the dataset's channel map "
                            "(config/channel_maps/), or skip it there with the reason")
    return {}


def _with_head(n_chans: int, sfreq: float, n_times: int) -> dict:
    """Classes that build (or need) a head to be built at all: a 1-output head, which the
    features are taken before and which is never loaded for another montage
    (checkpoints.HEAD_PREFIXES)."""
    return dict(n_chans=n_chans, n_outputs=1, sfreq=sfreq, n_times=n_times)


LUNA_PATCH = 40  # braindecode's default patch_size: the released weights'


def _luna_kwargs(n_chans: int, sfreq: float, n_times: int) -> dict:
    """Built for the window's whole 40-sample patches (_luna_forward drops a part patch)."""
    return _with_head(n_chans, sfreq, n_times - n_times % LUNA_PATCH)


def _luna_tokens(model, x, ch_names):
    """LUNA's forward ends in its head; its patch tokens are the output of the final norm
    (batch, patches, queries x width), taken by a hook. A window that is not a whole number of
    patches (a 3 s trial at 256 Hz: 19.2) loses its part patch: LUNA's frequency embedding
    takes whole patches only."""
    x = x[..., :x.shape[-1] - x.shape[-1] % model.patch_size]
    seen = []
    hook = model.norm.register_forward_hook(lambda module, args, out: seen.append(out))
    try:
        model(x)
    finally:
        hook.remove()
    return seen[0]


def _luna_forward(model, x, ch_names, readout=MEAN):
    """The mean over the patches of _luna_tokens."""
    return _pool(_luna_tokens(model, x, ch_names))


def _steegformer_tokens(model, x, ch_names):
    """ST-EEGFormer's features put a patch's channels side by side (seq n_chans)."""
    return _patch_major(model(x, return_features=True)["features"], len(ch_names))


def _cls_or_mean(model, x, ch_names, readout=MEAN):
    """Models whose features come with a CLS token (ST-EEGFormer: after the final norm)."""
    tokens = model(x, return_features=True)
    if readout == CLS:
        return tokens["cls_token"]
    return _pool(tokens["features"])


@dataclass(frozen=True)
class Architecture:
    class_name: str
    build_kwargs: Callable[[int, float, int], dict]  # (n_chans, sfreq, n_times) -> kwargs
    # (model, windows, channel names, readout) -> (windows, features)
    forward: Callable[[torch.nn.Module, torch.Tensor, tuple[str, ...], str], torch.Tensor]
    pooling: str = "mean over tokens"  # what `mean` is for this architecture
    # feature width with the default params, as documented (cls_mean: twice this)
    width: int | None = None
    readouts: tuple[str, ...] = (MEAN,)  # the readouts it offers
    # (channel names, companion files, the entry's params) -> constructor kwargs that depend on
    # the channels themselves, for families that embed a channel by its name or position;
    # None: the count is all the constructor needs
    channel_kwargs: Callable[[tuple[str, ...], dict, dict], dict] | None = None
    # (model, windows, channel names) -> (windows, time patches, width) for `pooling: tokens`;
    # None: the family has no per-patch tokens to keep (`no_tokens` says why)
    tokens: Callable[[torch.nn.Module, torch.Tensor, tuple[str, ...]], torch.Tensor] | None = None
    no_tokens: str = ""
    # Families outside braindecode (models/time_series.py): (checkpoint folder or None for
    # random init, seed, the entry's params) -> the module; None: braindecode's `class_name`
    builder: Callable[[object, int, dict], torch.nn.Module] | None = None
    # The embed job's forward growth over the check's measured batch growth, where it was
    # measured for this family (memory/formulas.py, the batch activations); None: the
    # calibration's fitted activation_factor (fitted on the braindecode families' runs)
    activation_factor: float | None = None


def _pooled_features(model, x: torch.Tensor, ch_names: tuple[str, ...],
                     readout: str = MEAN) -> torch.Tensor:
    """Models whose forward(x, return_features=True) needs no channel names."""
    return _pool(_features(model(x, return_features=True)))


def _build_chronos(folder, seed: int, params: dict):
    from embedprobe.models.chronos_encoder import build_chronos  # torch: not at parse time

    return build_chronos(folder, seed, params)


def _build_moment(folder, seed: int, params: dict):
    from embedprobe.models.moment_encoder import build_moment  # torch: not at parse time

    return build_moment(folder, seed, params)


def _univariate(model, x, ch_names, readout=MEAN):
    """The time-series models: their module embeds each channel as a series and averages."""
    return model(x)


ARCHITECTURES = {
    "BIOT": Architecture(
        "BIOT",
        lambda n_chans, sfreq, n_times: dict(
            n_chans=n_chans, n_outputs=2, sfreq=int(sfreq), n_times=n_times
        ),
        _pooled_features,
        pooling="mean over tokens, done inside BIOT's encoder (return_features)",
        width=256,
        no_tokens="BIOT pools its tokens inside its encoder (return_features gives the mean)",
    ),
    "Labram": Architecture(
        "Labram",
        lambda n_chans, sfreq, n_times: dict(
            n_chans=n_chans, n_outputs=0, sfreq=sfreq, n_times=n_times
        ),
        _labram_forward,
        pooling="mean over the patch tokens (channels x 1-s patches) after the final norm, "
                "CLS token left out",
        width=200,
        readouts=(MEAN, CLS, CLS_MEAN),
        tokens=_labram_tokens,
    ),
    "CBraMod": Architecture(
        "CBraMod",
        lambda n_chans, sfreq, n_times: dict(
            n_chans=n_chans, n_outputs=1, sfreq=sfreq, n_times=n_times,
            return_encoder_output=True,
        ),
        _pooled_features,
        pooling="mean over the (channel, 1-s patch) token grid",
        width=200,
        tokens=_grid_tokens,
    ),
    "EEGPT": Architecture(
        "EEGPT",
        # chan_proj_type="none": the default learned 2 -> 19 channel projection would be a
        # random, untrained mixing of the recorded channels in a frozen encoder.
        # patch_stride=None: non-overlapping patches (stride = patch_size), as EEGPT was
        # pretrained and as the reference embeds (its EEGTransformer, patch_stride None);
        # braindecode's default stride of 32 would add the half-shifted patches.
        lambda n_chans, sfreq, n_times: dict(
            n_chans=n_chans, n_outputs=1, sfreq=sfreq, n_times=n_times,
            return_encoder_output=True, chan_proj_type="none", patch_stride=None,
        ),
        _eegpt_forward,
        pooling="mean over the non-overlapping 64-sample patches of the 4 summary tokens, "
                "concatenated (4 x 512); equal to the reference's duration-weighted mean over "
                "4 s tiles",
        width=2048,
        tokens=_eegpt_tokens,
    ),
    "BENDR": Architecture(
        "BENDR",
        # final_layer=False: no head; the features are the contextualiser's output at its start
        # token, which the authors keep for downstream tasks (braindecode's bendr.py).
        lambda n_chans, sfreq, n_times: dict(
            n_chans=n_chans, sfreq=sfreq, n_times=n_times, final_layer=False,
        ),
        _pooled_features,
        pooling="the contextualiser's output at its start token (BENDR's downstream feature)",
        width=512,
        no_tokens="BENDR's feature is one start token of its contextualiser, not a patch grid",
    ),
    "SignalJEPA": Architecture(
        "SignalJEPA",
        lambda n_chans, sfreq, n_times: dict(n_chans=n_chans, sfreq=sfreq, n_times=n_times),
        _pooled_features,
        pooling="mean over the contextual tokens (channels x local-feature steps)",
        width=64,
        channel_kwargs=_chs_with_positions("SignalJEPA"),
        tokens=_grid_tokens,
    ),
    "LUNA": Architecture(
        "LUNA",
        _luna_kwargs,  # LUNA's forward returns from its head: the features are hooked before
        _luna_forward,
        pooling="mean over the 40-sample patches of the final norm's output (queries x width "
                "concatenated)",
        width=256,
        channel_kwargs=_chs_with_positions("LUNA"),
        tokens=_luna_tokens,
    ),
    "REVE": Architecture(
        "REVE",
        _with_head,  # over every token (attention_pooling False, as pretrained)
        _pooled_features,
        pooling="mean over the (channel, 1-s patch) tokens after the transformer: the "
                "reference's readout (patches, then channels)",
        width=512,
        channel_kwargs=_reve_channels,
        tokens=_grid_tokens,
    ),
    "CodeBrain": Architecture(
        "CodeBrain",
        _with_head,  # CodeBrain always builds it (sized by channels x 1-s patches)
        _pooled_features,
        pooling="mean over the (channel, 1-s patch) token grid after the final norm",
        width=200,
        tokens=_grid_tokens,
    ),
    "EEGDINO": Architecture(
        "EEGDINO",
        # return_encoder_output: no head (an identity)
        lambda n_chans, sfreq, n_times: dict(
            n_chans=n_chans, sfreq=sfreq, n_times=n_times, return_encoder_output=True,
        ),
        _cls_or_mean,
        pooling="mean over the (channel, 1-s patch) tokens (EEG-DINO's own pooled encoder "
                "output); `cls` the mean of its global tokens",
        width=200,
        readouts=(MEAN, CLS),
        channel_kwargs=_eegdino_channels,
        tokens=_grid_tokens,
    ),
    "STEEGFormer": Architecture(
        "STEEGFormer",
        _with_head,
        _cls_or_mean,
        pooling="mean over the (channel, 16-sample patch) tokens; `cls` the CLS token after the "
                "final norm (the reference's readout)",
        width=512,
        readouts=(MEAN, CLS),
        channel_kwargs=_steegformer_channels,
        tokens=_steegformer_tokens,
    ),
    "EEGNet": Architecture(
        "EEGNet",
        eegnet.build_kwargs,  # the checkpoints' 3 channels x 385 samples at 128 Hz
        eegnet.features,
        pooling="the 16 x 12 feature map before the classifier, flattened, after the "
                "reference's 0.5-40 Hz band-pass, 128 Hz resampling and centred 385 samples "
                "(its preclassifier_flat)",
        width=eegnet.WIDTH,
        no_tokens="EEGNet's feature is its whole pre-classifier map, flattened in order, as "
                  "the reference reads it",
    ),
    "Chronos": Architecture(
        "ChronosPipeline",  # chronos-forecasting's; built by `builder`, not by braindecode
        lambda n_chans, sfreq, n_times: {},
        _univariate,
        pooling="each channel a series: the mean over its T5 encoder tokens (the last 512 "
                "samples and EOS), then the mean over the channels (the reference's)",
        width=256,
        no_tokens="Chronos has one token per sample (the last 512), not a patch grid",
        builder=_build_chronos,
        # its check's growth is the embed's: the fitted 1.301 put its embed peaks 9-11% high
        # (docs/measurements/2026-12-07-memory-grid-evening.md)
        activation_factor=1.0,
    ),
    "MOMENT": Architecture(
        "MOMENTPipeline",  # momentfm's; built from transformers by `builder`
        lambda n_chans, sfreq, n_times: {},
        _univariate,
        pooling="each channel a series (RevIN-normalised, 8-sample patches): the mean over its "
                "patches of the T5 encoder's output, then the mean over the channels (the "
                "reference's, through momentfm's embedding task)",
        width=512,
        no_tokens="not offered for the time-series models",
        builder=_build_moment,
    ),
}
