"""Chronos through its own package: the published checkpoint or a seeded random init, and the
module that embeds a window's channels as series (models/time_series.py says how)."""

from __future__ import annotations

from pathlib import Path

import torch

from embedprobe.models.time_series import CHRONOS_T5_TINY, require_package


class ChronosEncoder(torch.nn.Module):
    """(windows, channels, samples) -> (windows, d_model): each channel tokenised and encoded
    as its own series, its tokens averaged, then the channels averaged."""

    def __init__(self, chronos_model, tokenizer):
        super().__init__()
        self.chronos = chronos_model  # a module: its T5 moves with .to(device)
        self.tokenizer = tokenizer  # its bucket boundaries stay on the CPU

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, c, t = x.shape
        series = x.reshape(n * c, t).float().cpu()
        ids, mask, _ = self.tokenizer.context_input_transform(series)
        device = next(self.chronos.parameters()).device
        hidden = self.chronos.encode(input_ids=ids.to(device), attention_mask=mask.to(device))
        return hidden.mean(dim=1).reshape(n, c, -1).mean(dim=1)


def build_chronos(folder: Path | None, seed: int, params: dict) -> ChronosEncoder:
    """The published checkpoint in `folder` (its config.json and model.safetensors, read
    offline as float32, as the reference loads it), or for None the chronos-t5-tiny
    architecture (the entry's `params:` over it) with seeded random weights."""
    require_package("Chronos")
    from chronos import ChronosConfig, ChronosModel, ChronosPipeline
    from transformers import T5Config, T5ForConditionalGeneration

    if folder is not None:
        pipeline = ChronosPipeline.from_pretrained(str(folder), dtype=torch.float32,
                                                   local_files_only=True)
        return ChronosEncoder(pipeline.model, pipeline.tokenizer)
    settings = CHRONOS_T5_TINY | params
    torch.manual_seed(seed)
    inner = T5ForConditionalGeneration(T5Config(**settings)).float()
    config = ChronosConfig(**settings["chronos_config"])
    return ChronosEncoder(ChronosModel(config, inner), config.create_tokenizer())
