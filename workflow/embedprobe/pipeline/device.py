"""Where the encoder runs: `embed.device` in the config, "cpu" (default) or "cuda".

The setting is the config's, not the machine's: the scheduler must know before a job starts
whether to give it a GPU, so check and embed ask for one exactly when the config says cuda.
"""

from __future__ import annotations

from embedprobe.core.errors import DeviceError


def embed_device(config: dict) -> str:
    return config["embed"]["device"]


def torch_device(config: dict):
    """The torch device to run the encoder on; cuda without a visible GPU is refused."""
    import torch

    name = embed_device(config)
    if name == "cuda" and not torch.cuda.is_available():
        build = torch.version.cuda or "none (a CPU build)"
        raise DeviceError(
            f"embed.device is cuda, but torch {torch.__version__} sees no CUDA device "
            f"(its CUDA: {build})",
            fix="run on a GPU node with a CUDA build of torch, or set embed: device: cpu in "
                "config/config.yaml or a --configfile")
    return torch.device(name)
