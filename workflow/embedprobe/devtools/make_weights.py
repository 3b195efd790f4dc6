"""Write a checkpoint for MODEL_ID: the model built from its seed, saved as a plain state_dict.

The pretrained variants read a local file that cannot be downloaded here; this writes one of the
right architecture and shapes (random weights), so the whole pretrained path (find, load without
executing code, sha256 into the cache key) runs offline. scripts/make_weights.py runs it.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from embedprobe.core.config import load_config
from embedprobe.core.errors import UsageError
from embedprobe.core.hashing import sha256_file
from embedprobe.models.registry import RANDOM, build_model, model_spec


def write_weights(model_id: str, out_path: Path, fmt: str | None = None, n_chans: int = 2,
                  seed: int | None = None, config: dict | None = None) -> str:
    """Build `model_id` with random weights and save its state_dict; returns the file's sha256."""
    out_path = Path(out_path)
    fmt = fmt or ("safetensors" if out_path.suffix == ".safetensors" else "pt")
    spec = model_spec(config or load_config(), model_id)
    spec = dataclasses.replace(spec, weights=RANDOM,
                               seed=spec.seed if seed is None else seed)
    model, _ = build_model(spec, n_chans, roots={})
    # Tensors only, contiguous and unshared: what both formats can hold.
    state = {key: value.detach().contiguous().clone() for key, value in model.state_dict().items()}
    out_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_path.with_name(out_path.name + ".tmp")
    if fmt == "safetensors":
        from safetensors.torch import save_file

        save_file(state, str(tmp), metadata={"model_id": model_id, "seed": str(spec.seed)})
    elif fmt == "pt":
        import torch

        torch.save(state, tmp)
    else:
        raise UsageError(f"unknown format '{fmt}'", fix="use --format pt or --format safetensors")
    tmp.replace(out_path)  # a half-written checkpoint never carries the real name
    return sha256_file(out_path)

