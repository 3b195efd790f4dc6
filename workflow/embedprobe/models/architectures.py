"""How each braindecode architecture is built and how its features are read out.

One row per architecture: the braindecode class, the keyword arguments it is built with, and the
forward call that returns features. Token grids are mean-pooled to one vector per window.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch


def _features(output) -> torch.Tensor:
    """braindecode returns a dict, a tuple or a tensor depending on the model."""
    if isinstance(output, dict):
        output = output.get("features")
    if isinstance(output, (tuple, list)):
        output = output[0]
    return output


def _pool(tokens: torch.Tensor) -> torch.Tensor:
    """(batch, ..., dim) token grids -> (batch, dim) by the mean over every token axis."""
    return tokens.reshape(tokens.shape[0], -1, tokens.shape[-1]).mean(dim=1)


@dataclass(frozen=True)
class Architecture:
    class_name: str
    build_kwargs: Callable[[int, float, int], dict]  # (n_chans, sfreq, n_times) -> kwargs
    forward: Callable[[torch.nn.Module, torch.Tensor, tuple[str, ...]], torch.Tensor]


ARCHITECTURES = {
    "BIOT": Architecture(
        "BIOT",
        lambda n_chans, sfreq, n_times: dict(
            n_chans=n_chans, n_outputs=2, sfreq=int(sfreq), n_times=n_times
        ),
        lambda model, x, ch_names: _pool(_features(model(x, return_features=True))),
    ),
}
