"""What a checkpoint means for a pair, and how its tensors reach braindecode's model.

The checkpoint's own config.json is compared with the model entry and the dataset's channel map
before any data is read (`checkpoint_mismatch`): a checkpoint that cannot serve the pair rules it
out with the reason. Nothing is resized but LaBraM's temporal embedding, whose length follows the
window, fitted as the reference suite fits it (`fit_window_shapes`).

The original authors' files (a Lightning `.ckpt`, a `.pth` holding `{"model": ...}`) load through
`KEY_MAPS`: containers and known prefixes are stripped, then the family's names are mapped onto
braindecode's (see `to_braindecode`).
"""

from __future__ import annotations

import inspect
from pathlib import Path

from embedprobe.core.errors import WeightsError

# ------------------------------------------------------------------------------ the checkpoint
# against the pair

# Hyperparameters that shape the weights or what they mean: the checkpoint's config.json must
# agree with what the model entry builds (its sfreq, and the class defaults plus `params:`).
# EEGPT's patch_stride is not one: the entry builds non-overlapping patches (the authors'
# pretraining and the reference's embedding) whatever stride braindecode saved with it.
MUST_MATCH = {
    "BIOT": ("sfreq", "embed_dim", "num_layers", "num_heads", "hop_length"),
    "Labram": ("sfreq", "patch_size", "embed_dim", "num_layers", "num_heads"),
    "CBraMod": ("sfreq", "patch_size", "dim_feedforward", "n_layer", "nhead"),
    "EEGPT": ("sfreq", "patch_size", "embed_num", "embed_dim", "depth", "num_heads"),
    "BENDR": ("sfreq", "encoder_h", "transformer_layers", "transformer_heads"),
    "CodeBrain": ("sfreq", "patch_size", "res_channels", "num_res_layers", "s4_lmax",
                  "s4_d_state"),
    "EEGDINO": ("sfreq", "patch_size", "n_layer", "nhead", "dim_feedforward",
                "n_channel_embeddings"),
    "SignalJEPA": ("sfreq", "channel_embedding"),
    "LUNA": ("sfreq", "patch_size", "num_queries", "embed_dim", "depth", "num_heads"),
    "REVE": ("sfreq", "embed_dim", "depth", "heads", "patch_size", "patch_overlap"),
    # n_chans_pos: the size of the channel vocabulary the slots index (largeV2: 256 slots with
    # no published names, which no channel map can place)
    "STEEGFormer": ("sfreq", "patch_size", "embed_dim", "depth", "num_heads", "n_chans_pos"),
}
# BIOT learns one channel token per input position: a checkpoint with C tokens serves a dataset
# of up to C channels (the first ones, as BIOT's own code does: "N_channels >= your actual
# channels"); the others embed channels by name (LaBraM, EEGPT) or not at all (CBraMod).
POSITIONAL_CHANNELS = {"BIOT"}
# BENDR's first convolution takes exactly its pretraining inputs: the 19 10-20 electrodes and a
# relative-amplitude channel, in braindecode's BENDR_CHANNEL_ORDER; no other count fits.
FIXED_CHANNELS = {"BENDR": "the 19 10-20 electrodes and SCALE of BENDR_CHANNEL_ORDER"}

# Files a family's pretrained checkpoints need besides their weights, fetched with them by
# `embedprobe fetch-weights` and read offline: name -> (repo, revision, file). REVE looks its
# channels up in its published position bank (braindecode downloads it in the constructor
# otherwise); ST-EEGFormer's slot names are published once, in the small model's repo
# (braindecode's steegformer.py _CHANNELS_REPO), for small, base and large alike.
COMPANIONS = {
    "REVE": {"reve_positions": ("brain-bzh/reve-positions", "main", "positions.json")},
    "STEEGFormer": {"steegformer_channels": ("braindecode/STEEGFormer-small", "main",
                                             "steegformer_channels.json")},
}


def checkpoint_channels(ckpt: dict) -> int | None:
    if ckpt.get("n_chans"):
        return int(ckpt["n_chans"])
    return len(ckpt["chs_info"]) if ckpt.get("chs_info") else None


def built_kwargs(spec, n_chans: int) -> dict:
    """What the model entry builds: the class defaults, the architecture's kwargs, `params:`."""
    from embedprobe.models.architectures import ARCHITECTURES
    from embedprobe.models.braindecode_import import braindecode_models

    arch = ARCHITECTURES[spec.architecture]
    cls = getattr(braindecode_models(), arch.class_name)
    defaults = {name: p.default for name, p in inspect.signature(cls.__init__).parameters.items()
                if p.default is not inspect.Parameter.empty}
    return defaults | arch.build_kwargs(n_chans, spec.sfreq, spec.n_times) | spec.params


def _setting(value):
    """A hyperparameter as compared: numbers as floats (200 == 200.0), others as they are."""
    return float(value) if isinstance(value, (int, float)) else value


def checkpoint_mismatch(spec, ckpt: dict, n_chans: int, ch_names=()) -> str:
    """Why this checkpoint cannot serve the pair ('' when it can)."""
    from embedprobe.models.architectures import ARCHITECTURES

    if ARCHITECTURES[spec.architecture].builder is not None:
        return ""  # a time-series model: any channel count, any rate (one series each)
    reasons = []
    ours = built_kwargs(spec, n_chans)
    for key in MUST_MATCH.get(spec.architecture, ("sfreq",)):
        if key in ckpt and ckpt[key] is not None and key in ours and ours[key] is not None:
            if _setting(ckpt[key]) != _setting(ours[key]):
                source = "the model entry" if key == "sfreq" or key in spec.params else \
                    "braindecode's default"
                reasons.append(f"{key} {ckpt[key]} in the checkpoint, {ours[key]} from {source}")
    have = checkpoint_channels(ckpt)
    if have is not None and spec.architecture in POSITIONAL_CHANNELS and n_chans > have:
        reasons.append(f"it has {have} channel tokens, the channel map gives {n_chans} "
                       f"channels ({', '.join(ch_names)})")
    if have is not None and spec.architecture in FIXED_CHANNELS and n_chans != have:
        reasons.append(f"it takes exactly {have} inputs ({FIXED_CHANNELS[spec.architecture]}), "
                       f"the channel map gives {n_chans}")
    return "; ".join(reasons)


def build_channels(spec, ckpt: dict, n_chans: int) -> int:
    """The channel count to build with: BIOT keeps the checkpoint's tokens (the first
    `n_chans` are used); the others are built for the dataset's channels."""
    have = checkpoint_channels(ckpt)
    if spec.architecture in POSITIONAL_CHANNELS and have and have >= n_chans:
        return have
    return n_chans


# ------------------------------------------------------------------------------ original files

# Per family: the prefixes that wrap the original authors' module names, and their braindecode
# names (first match wins), and keys that braindecode does not keep.
#
# braindecode 1.8.1 offers no key map of its own for these families (EEGModuleMixin.mapping is
# None for BIOT, Labram, CBraMod and EEGPT), so the maps below are written from the original
# repositories; LaBraM and CBraMod have none here (their files load only in braindecode's names).
#
# BIOT (github.com/ycq091044/BIOT): the pretrained encoder files hold BIOTEncoder's own names
# (patch_embedding, transformer, positional_encoding, channel_tokens, index); BIOTClassifier
# holds them under `biot.` with its head `classifier.clshead.1`; UnsupervisedPretrain under
# `biot.` with a `prediction` head. braindecode's BIOT holds the encoder under `encoder.` with
# the same inner names, the head as `final_layer.classification_head`, and `index` as a
# non-persistent buffer.
#
# EEGPT (github.com/BINE022/EEGPT): the released Lightning `.ckpt` holds the pretraining module:
# `encoder.` (the online encoder), `target_encoder.` (its moving average, which the authors'
# downstream code loads: the `target_encoder.` keys of `state_dict`), `predictor.` and
# `reconstructor.` (pretraining only; braindecode's EEGPT docstring says to ignore them).
# braindecode's EEGPT holds the encoder as `target_encoder.` with the same inner names.
#
# EEGNet (the PierreGtch/EEGNetv4 files: braindecode 0.8's EEGNetv4 state_dict): its max-norm
# spatial convolution held a plain `conv_spatial.weight`, which braindecode 1.8.1 keeps under
# its parametrization's `original`; the classifier's move under `final_layer.` is the class's
# own `mapping`.
KEY_MAPS: dict[str, dict] = {
    "BIOT": {
        "rename": [
            ("biot.", "encoder."),
            ("classifier.clshead.1.", "final_layer.classification_head."),
            ("patch_embedding.", "encoder.patch_embedding."),
            ("transformer.", "encoder.transformer."),
            ("positional_encoding.", "encoder.positional_encoding."),
            ("channel_tokens.", "encoder.channel_tokens."),
        ],
        "drop": ("encoder.index", "index", "prediction."),
    },
    "EEGPT": {
        "rename": [],
        "drop": ("encoder.", "predictor.", "reconstructor."),
    },
    "EEGNet": {
        "rename": [("conv_spatial.weight", "conv_spatial.parametrizations.weight.original")],
        "drop": (),
    },
}
# Wrappers around a state_dict: Lightning's `state_dict`, a `.pth`'s `model` (or `module`).
CONTAINERS = ("state_dict", "model", "module", "model_state_dict")
# Prefixes of the module that held the network: LightningModule.model, DataParallel.module.
PREFIXES = ("model.", "module.", "net.")
# A frozen encoder uses no head: heads are loaded when they fit and ignored when they differ.
HEAD_PREFIXES = ("final_layer.", "head.", "classifier.")
# Key prefixes a checkpoint may hold that the model built here does not use: EEGPT's channel ids
# (our forward computes them from the mapped names) and braindecode's downstream channel
# projection (`chan_proj.`, never pretrained; the entry builds chan_proj_type="none").
IGNORED = {"EEGPT": ("chans_id", "chan_proj."),
           # LUNA's pretraining decoder (the published files hold it; the frozen encoder
           # returns before it) and a norm braindecode leaves out of its channel embedder
           "LUNA": ("decoder_head.", "channel_emb.", "channel_location_embedder.norm.")}
# Keys a checkpoint may leave out, loaded when present: SignalJEPA's `without-chans` checkpoint
# has no channel embedding, which is then made from the channel positions (scratch), as
# braindecode's docstring loads it (strict=False); its `signal-jepa` checkpoint has one row
# per pretraining channel.
OPTIONAL = {"SignalJEPA": ("pos_encoder.pos_encoder_spat.",)}


# ------------------------------------------------------------------------------ tensors that
# follow the window

def fit_rows(saved, rows: int):
    """A (1, rows', dim) embedding table fitted to `rows` rows as the reference suite fits
    LaBraM's temporal embedding to its window (NeuroAtlas backbones/labram.py, _build_model):
    the first `rows` rows when there are enough, else the whole table (its CLS row included)
    linearly interpolated along the rows (align_corners=False)."""
    if saved.shape[1] >= rows:
        return saved[:, :rows].clone()
    import torch.nn.functional as F

    return F.interpolate(saved.permute(0, 2, 1), size=rows, mode="linear",
                         align_corners=False).permute(0, 2, 1).contiguous()


# Per family, tensors whose length follows the window the model is built for, not the weights:
# LaBraM's temporal embedding holds a CLS row and one row per 1 s patch (the released
# checkpoint: 16 rows, from its pretraining windows); the reference takes its first 11 rows for
# 10 s windows and interpolates it to 31 rows for a 30 s sleep epoch.
WINDOW_SHAPED = {"Labram": {"temporal_embedding": fit_rows}}


def fit_window_shapes(state: dict, architecture: str, own: dict) -> dict:
    """`state` with its window-shaped tensors fitted to the model's (`own`: its state_dict)."""
    fitted = dict(state)
    for key, fit in WINDOW_SHAPED.get(architecture, {}).items():
        if key in fitted and key in own and fitted[key].shape != own[key].shape:
            fitted[key] = fit(fitted[key], own[key].shape[1])
    return fitted


def unwrap(state) -> dict:
    """The tensors of a checkpoint dict, whatever container holds them."""
    while isinstance(state, dict):
        inner = next((state[k] for k in CONTAINERS if isinstance(state.get(k), dict)), None)
        if inner is None:
            break
        state = inner
    return {k: v for k, v in state.items() if hasattr(v, "shape")}


def to_braindecode(state: dict, architecture: str, expected: set[str],
                   mapping: dict | None = None) -> dict:
    """Original names -> braindecode's: strip the wrapper prefixes, then braindecode's own
    `mapping` of the class (LUNA's), then the family's map (renames; dropped keys are those
    braindecode's model does not have). A checkpoint all in braindecode's names passes
    unchanged."""
    if set(state) <= expected:
        return state
    if mapping:
        state = {mapping.get(k, k): v for k, v in state.items()}
    for prefix in PREFIXES:
        if state and all(k.startswith(prefix) for k in state):
            state = {k[len(prefix):]: v for k, v in state.items()}
    table = KEY_MAPS.get(architecture)
    if table is None:
        return state
    mapped = {}
    for key, value in state.items():
        if key not in expected:
            for old, new in table["rename"]:
                if key.startswith(old):
                    key = new + key[len(old):]
                    break
        if key in expected or not key.startswith(table["drop"]):
            mapped[key] = value
    return mapped


def fit_state(model, state: dict, architecture: str, source: Path):
    """Load `state` into `model`: the encoder strictly, a head only when it fits.
    Unexpected, missing and mis-shaped keys are named in the error."""
    own = model.state_dict()
    state = fit_window_shapes(to_braindecode(state, architecture, set(own),
                                             getattr(model, "mapping", None)), architecture, own)
    ignored = IGNORED.get(architecture, ())
    state = {k: v for k, v in state.items() if not k.startswith(ignored)}
    head = {k for k in own if k.startswith(HEAD_PREFIXES)}
    state = {k: v for k, v in state.items()
             if not (k in head and tuple(v.shape) != tuple(own[k].shape))
             and not (k.startswith(HEAD_PREFIXES) and k not in own)}
    unexpected = sorted(set(state) - set(own))
    optional = ignored + OPTIONAL.get(architecture, ())
    missing = sorted(k for k in set(own) - set(state) if k not in head
                     and not k.startswith(optional))
    shapes = sorted(f"{k} {tuple(v.shape)} vs {tuple(own[k].shape)}" for k, v in state.items()
                    if k in own and tuple(v.shape) != tuple(own[k].shape))
    if unexpected or missing or shapes:
        parts = [f"{label} ({len(keys)}): {', '.join(keys[:6])}"
                 + (", ..." if len(keys) > 6 else "")
                 for label, keys in (("unexpected keys", unexpected), ("missing keys", missing),
                                     ("shapes differ (checkpoint vs model)", shapes)) if keys]
        raise WeightsError(
            f"weights {source} do not fit {architecture}: " + "; ".join(parts),
            fix=f"check the checkpoint belongs to {architecture} and its params in "
                "models.yaml; original-format names are mapped by KEY_MAPS in "
                "workflow/embedprobe/models/checkpoints.py")
    model.load_state_dict(state, strict=False)
    return model
