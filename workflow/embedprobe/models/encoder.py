"""A frozen encoder: model-ready windows in, one float32 vector per window out."""

from __future__ import annotations

import numpy as np
import torch

from embedprobe.core.errors import UsageError
from embedprobe.models.architectures import ARCHITECTURES, TOKENS
from embedprobe.models.registry import ModelSpec, build_model


class Ready:
    """A batch's vectors, computed when it was launched (the CPU: torch runs it in the call)."""

    def __init__(self, vectors: np.ndarray):
        self.vectors = vectors

    def result(self) -> np.ndarray:
        return self.vectors


class OnDevice:
    """A batch's vectors on their way back from the GPU: launched, not waited for, so the host
    can store the batch before while the device computes this one."""

    def __init__(self, host: torch.Tensor, copied: torch.cuda.Event):
        self.host, self.copied = host, copied

    def result(self) -> np.ndarray:
        self.copied.synchronize()
        return self.host.numpy()


class Encoder:
    def __init__(self, spec: ModelSpec, ch_names: tuple[str, ...], roots: dict, device="cpu"):
        self.spec = spec
        self.ch_names = tuple(ch_names)
        self.device = torch.device(device)
        self.model, self.weights_sha256 = build_model(spec, len(ch_names), roots,
                                                       self.ch_names)
        self.model.to(self.device)
        self.arch = ARCHITECTURES[spec.architecture]

    def __call__(self, windows: np.ndarray) -> np.ndarray:
        """(batch, channels, epoch samples) -> (batch, dim); sub-windows are averaged. Each
        vector is the spec's readout (cls_mean: the averaged CLS tokens, then the averaged
        token means). With `pooling: tokens`: (batch, tokens, dim), the sub-windows' time
        tokens one after another."""
        return self.launch(windows).result()

    @torch.inference_mode()
    def launch(self, windows: np.ndarray) -> Ready | OnDevice:
        """Start the batch; `.result()` waits for its vectors. On a GPU the call returns once
        the work is queued (the windows are copied by then: their memory may be reused)."""
        sub, k = split_subwindows(windows, self.spec.n_times)
        x = self._to_device(torch.from_numpy(sub))
        if self.spec.pooling == TOKENS:
            tokens = self.arch.tokens(self.model, x, self.ch_names)  # (n x k, patches, dim)
            features = tokens.reshape(windows.shape[0], -1, tokens.shape[-1]).float()
        else:
            features = self.arch.forward(self.model, x, self.ch_names, self.spec.readout)
            features = features.reshape(windows.shape[0], k, -1).mean(dim=1).float()
        if self.device.type != "cuda":
            return Ready(features.cpu().numpy())
        # Into page-locked memory without waiting: a copy to pageable memory would wait for
        # the whole queue, the next batch's forward included.
        host = torch.empty(features.shape, dtype=torch.float32, pin_memory=True)
        host.copy_(features, non_blocking=True)
        copied = torch.cuda.Event()
        copied.record(torch.cuda.current_stream(self.device))
        return OnDevice(host, copied)

    def _to_device(self, x: torch.Tensor) -> torch.Tensor:
        if self.device.type != "cuda":
            return x.to(self.device)
        # From pageable memory the copy first waits for the device's queue (the batch before
        # would finish before this one is even sent); staged in page-locked memory it is
        # queued behind it. torch's pinned-memory cache reuses a block only once the copies
        # queued from it are done.
        staged = torch.empty(x.shape, dtype=x.dtype, pin_memory=True)
        staged.copy_(x)
        return staged.to(self.device, non_blocking=True)


def split_subwindows(windows: np.ndarray, n_times: int) -> tuple[np.ndarray, int]:
    """Epochs longer than the model's window become k consecutive model windows each."""
    epoch_len = windows.shape[-1]
    if epoch_len % n_times:
        raise UsageError(
            f"an epoch of {epoch_len} samples is not a whole number of model windows of "
            f"{n_times} samples",
            fix="choose a model window_seconds that divides the dataset's epoch_seconds",
        )
    k = epoch_len // n_times
    n, c, _ = windows.shape
    sub = windows.reshape(n, c, k, n_times).transpose(0, 2, 1, 3).reshape(n * k, c, n_times)
    return np.ascontiguousarray(sub), k
