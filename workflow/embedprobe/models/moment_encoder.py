"""MOMENT built from `transformers` alone: its package (momentfm) cannot be installed beside the
runtime pins (models/time_series.py says why), its architecture can.

What a published MOMENT-1 checkpoint holds (AutonLab/MOMENT-1-{small,base,large}: config.json
with the model's settings and the T5 encoder's `t5_config`, model.safetensors) is loaded
strictly into a module of the same names: `patch_embedding.value_embedding` (8 samples -> d_model,
no bias), `patch_embedding.mask_embedding`, `patch_embedding.position_embedding.pe` (sinusoidal,
saved with the weights), `encoder.*` (a T5 encoder stack) and `head.linear` (the pretraining
reconstruction head, loaded and unused).

A window's vector is as the reference's MomentBackbone takes it through momentfm's embedding task
(NeuroAtlas backbones/moment.py): each channel a series, zero-padded to whole 8-sample patches
(at most 8,192 samples, the last kept), normalised by its own mean and SD (RevIN without affine:
population SD + 1e-5), patched, embedded (value embedding + position), encoded with every patch
attended, and averaged over its patches; then the channels are averaged.
"""

from __future__ import annotations

import math
from pathlib import Path

import torch
from torch import nn

from embedprobe.core.errors import WeightsError
from embedprobe.models.time_series import MOMENT_1_SMALL, require_package

MAX_SAMPLES = 8192  # the reference's cap (MOMENT's longest input)
POSITIONS = 5000  # rows of MOMENT's sinusoidal position table
REVIN_EPS = 1e-5


class Positions(nn.Module):
    """MOMENT's sinusoidal table, a saved buffer (`pe`, (1, 5000, d_model))."""

    def __init__(self, d_model: int):
        super().__init__()
        position = torch.arange(POSITIONS, dtype=torch.float32).unsqueeze(1)
        rate = torch.exp(torch.arange(0, d_model, 2).float() * -(math.log(10000.0) / d_model))
        table = torch.zeros(POSITIONS, d_model)
        table[:, 0::2] = torch.sin(position * rate)
        table[:, 1::2] = torch.cos(position * rate)
        self.register_buffer("pe", table.unsqueeze(0))


class PatchEmbedding(nn.Module):
    def __init__(self, d_model: int, patch_len: int):
        super().__init__()
        self.value_embedding = nn.Linear(patch_len, d_model, bias=False)
        self.mask_embedding = nn.Parameter(torch.zeros(d_model))  # masked patches: none here
        self.position_embedding = Positions(d_model)


class ReconstructionHead(nn.Module):
    def __init__(self, d_model: int, patch_len: int):
        super().__init__()
        self.linear = nn.Linear(d_model, patch_len)


class MomentEncoder(nn.Module):
    """(windows, channels, samples) -> (windows, d_model)."""

    def __init__(self, config: dict):
        super().__init__()
        from transformers import T5Config, T5EncoderModel

        t5 = T5Config.from_dict(config["t5_config"])
        self.d_model = config.get("d_model") or t5.d_model
        self.patch_len = config["patch_len"]
        self.patch_embedding = PatchEmbedding(self.d_model, self.patch_len)
        self.encoder = T5EncoderModel(t5).get_encoder()
        self.head = ReconstructionHead(self.d_model, self.patch_len)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, c, t = x.shape
        series = x.reshape(n * c, t).float()
        length = min(-(-t // self.patch_len) * self.patch_len, MAX_SAMPLES)
        series = nn.functional.pad(series, (0, length - t)) if length > t else \
            series[:, t - length:]
        mean = series.mean(dim=-1, keepdim=True)
        sd = (series - mean).square().mean(dim=-1, keepdim=True).sqrt() + REVIN_EPS
        series = torch.nan_to_num((series - mean) / sd, nan=0.0, posinf=0.0, neginf=0.0)
        patches = series.unfold(-1, self.patch_len, self.patch_len)  # (series, patches, 8)
        embedding = self.patch_embedding
        tokens = embedding.value_embedding(patches) + \
            embedding.position_embedding.pe[:, :patches.shape[1]]
        mask = torch.ones(tokens.shape[:2], dtype=torch.long, device=tokens.device)
        hidden = self.encoder(inputs_embeds=tokens, attention_mask=mask).last_hidden_state
        return hidden.mean(dim=1).reshape(n, c, -1).mean(dim=1)


def build_moment(folder: Path | None, seed: int, params: dict) -> MomentEncoder:
    """The published checkpoint in `folder` (config.json and model.safetensors, loaded
    strictly), or for None MOMENT-1-small's architecture (the entry's `params:` over its T5
    settings) with seeded random weights."""
    require_package("MOMENT")
    import json

    from safetensors.torch import load_file

    if folder is None:
        torch.manual_seed(seed)
        config = MOMENT_1_SMALL | {"t5_config": MOMENT_1_SMALL["t5_config"] | params}
        return MomentEncoder(config)
    config = json.loads((Path(folder) / "config.json").read_text())
    model = MomentEncoder(config)
    weights = Path(folder) / "model.safetensors"
    load_strictly(model, load_file(str(weights)), weights)
    return model


def load_strictly(model: MomentEncoder, state: dict, source: Path) -> None:
    """Every tensor of the encoder, by name and shape; the pretraining head where the file has
    it (a file saved with the embedding task's identity head has none)."""
    if not any(key.startswith("head.") for key in state):
        state = state | {k: v for k, v in model.state_dict().items() if k.startswith("head.")}
    try:
        model.load_state_dict(state, strict=True)
    except RuntimeError as exc:
        raise WeightsError(f"weights {source} do not fit MOMENT as its config.json builds it: "
                           f"{' '.join(str(exc).split())[:400]}",
                           fix="check the repo is a MOMENT-1 checkpoint (AutonLab/MOMENT-1-*)"
                           ) from exc
