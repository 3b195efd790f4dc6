"""A frozen encoder: model-ready windows in, one float32 vector per window out."""

from __future__ import annotations

import numpy as np
import torch

from ..preprocess import split_subwindows
from .architectures import ARCHITECTURES
from .registry import ModelSpec, build_model


class Encoder:
    def __init__(self, spec: ModelSpec, ch_names: tuple[str, ...], roots: dict, device="cpu"):
        self.spec = spec
        self.ch_names = tuple(ch_names)
        self.device = torch.device(device)
        self.model, self.weights_sha256 = build_model(spec, len(ch_names), roots)
        self.model.to(self.device)
        self.arch = ARCHITECTURES[spec.architecture]

    @torch.inference_mode()
    def __call__(self, windows: np.ndarray) -> np.ndarray:
        """(batch, channels, epoch samples) -> (batch, dim); sub-windows are averaged."""
        sub, k = split_subwindows(windows, self.spec.n_times)
        x = torch.from_numpy(sub).to(self.device)
        features = self.arch.forward(self.model, x, self.ch_names)
        features = features.reshape(windows.shape[0], k, -1).mean(dim=1)
        return features.float().cpu().numpy()
