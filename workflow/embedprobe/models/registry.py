"""The checkpoint registry: build a braindecode model from config, load local weights safely."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import torch

from ..cache import sha256_file
from ..config import closest, lookup
from ..errors import UsageError, WeightsError
from .architectures import ARCHITECTURES

RANDOM = "random"


@dataclass(frozen=True)
class ModelSpec:
    model_id: str
    family: str
    architecture: str
    weights: str
    sfreq: float
    window_seconds: float
    seed: int = 0
    scaling: str = "none"
    params: dict = field(default_factory=dict)

    @property
    def n_times(self) -> int:
        return int(round(self.sfreq * self.window_seconds))


def model_spec(config: dict, model_id: str) -> ModelSpec:
    entry = lookup(config, "models", model_id)
    if entry["architecture"] not in ARCHITECTURES:
        raise UsageError(
            f"model '{model_id}': unknown architecture '{entry['architecture']}'"
            f"{closest(entry['architecture'], ARCHITECTURES)}",
            fix=f"use one of: {', '.join(sorted(ARCHITECTURES))} (config/models.yaml)",
        )
    return ModelSpec(model_id=model_id, **entry)


def weights_path(spec: ModelSpec, roots: dict) -> Path | None:
    if spec.weights == RANDOM:
        return None
    path = Path(spec.weights)
    return path if path.is_absolute() else Path(roots["weights_root"]) / path


def weights_state(spec: ModelSpec, roots: dict) -> str:
    path = weights_path(spec, roots)
    if path is None:
        return "not needed"
    return "found" if path.is_file() else "missing"


def load_state_dict(path: Path) -> dict:
    """A checkpoint is untrusted: tensors only, never pickled code."""
    try:
        if path.suffix == ".safetensors":
            from safetensors.torch import load_file

            return load_file(str(path))
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises several types for bad or unsafe files
        raise WeightsError(
            f"cannot load weights {path}: {exc}",
            fix="provide a state_dict saved with torch.save(model.state_dict()) or safetensors",
        ) from exc
    return state.get("state_dict", state) if isinstance(state, dict) else state


def build_model(spec: ModelSpec, n_chans: int, roots: dict) -> tuple[torch.nn.Module, str]:
    """The model in eval mode and the sha256 identifying its weights ('random:<seed>')."""
    import braindecode.models

    arch = ARCHITECTURES[spec.architecture]
    torch.manual_seed(spec.seed)
    kwargs = arch.build_kwargs(n_chans, spec.sfreq, spec.n_times) | spec.params
    model = getattr(braindecode.models, arch.class_name)(**kwargs)
    path = weights_path(spec, roots)
    if path is None:
        return model.eval(), f"random:{spec.seed}"
    if not path.is_file():
        raise WeightsError(
            f"weights for '{spec.model_id}' not found: looked for {path}",
            fix=f"copy the checkpoint to {path} (or set weights_root / EMBEDPROBE_WEIGHTS_ROOT)",
        )
    state = load_state_dict(path)
    try:
        model.load_state_dict(state, strict=True)
    except RuntimeError as exc:
        raise WeightsError(
            f"weights {path} do not fit {spec.architecture} as configured for "
            f"'{spec.model_id}': {' '.join(str(exc).split())[:400]}",
            fix="check the checkpoint belongs to this architecture and its params in models.yaml",
        ) from exc
    return model.eval(), sha256_file(path)
