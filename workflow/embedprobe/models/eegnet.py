"""EEGNet's motor-imagery checkpoints (Guetschel et al. 2024, hub PierreGtch/EEGNetv4): the
input their classifiers were trained on, and the feature the reference suite reads from them.

Each checkpoint is braindecode's EEGNet(v4) trained on one MOABB motor-imagery dataset: three
channels (C3, Cz, C4; the `eegnetv4` slots of pipeline/channel_maps.py, a channel a montage
lacks is zero), 128 Hz, 385 samples, a 0.5-40 Hz band. The reference (NeuroAtlas
backbones/eegnetv4.py) hands it the BCI trial in its default format (200 Hz: pipeline/protocol.py
BCI_FORMATS), then, per trial: a 4th-order zero-phase Butterworth band-pass at 0.5-40 Hz at the
input rate, a polyphase resampling to 128 Hz, a centred crop (or zero padding, half each side)
to 385 samples; its embedding is the feature map before the classifier (16 filters x 12 steps),
flattened: 192 values. Here the same steps, on the model's own input rate (the model's `sfreq`,
the entry's rate).

The published folders (`EEGNetv4_<dataset>/model-params.pkl`, a torch.save'd state_dict in the
names of braindecode 0.8's EEGNetv4) load by tensor names alone (models/checkpoints.py KEY_MAPS):
their `kwargs.pkl` is a pickle of a class and is never read (pickled code: refused here); the
kwargs it holds are braindecode's defaults with 3 channels and 385 samples, which is what is
built, and its class count only shapes the classifier, which the features are taken before.
"""

from __future__ import annotations

from math import gcd
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the Snakefile reads the architectures table at parse time: no torch there
    import torch

SLOTS = ("C3", "CZ", "C4")  # the checkpoints' channels, in their order
RATE = 128  # Hz, the checkpoints' rate
N_TIMES = 385  # samples: the checkpoints' `input_window_samples`
BAND_HZ = (0.5, 40.0)
FILTER_ORDER = 4
WIDTH = 192  # 16 filters x 12 steps at 385 samples
HEAD = "final_layer"  # the classifier: everything before it is the feature extractor


def build_kwargs(n_chans: int, sfreq: float, n_times: int) -> dict:
    """The checkpoints' network whatever the window: its input is cropped or padded to 385
    samples at 128 Hz in `prepare`. `sfreq` records the rate the model is handed (the entry's),
    which `prepare` resamples from; a 1-output head (never used, never loaded for another
    class count: checkpoints.HEAD_PREFIXES)."""
    return dict(n_chans=n_chans, n_outputs=1, n_times=N_TIMES, sfreq=sfreq)


def centred(x, length: int):
    """The middle `length` samples, or `x` zero-padded to `length` (half each side, the extra
    sample on the right)."""
    import numpy as np

    have = x.shape[-1]
    if have >= length:
        start = (have - length) // 2
        return x[..., start:start + length]
    left = (length - have) // 2
    pad = [(0, 0)] * (x.ndim - 1) + [(left, length - have - left)]
    return np.pad(x, pad)


def prepare(x: torch.Tensor, sfreq: float) -> torch.Tensor:
    """(batch, 3, samples at `sfreq`) -> (batch, 3, 385 at 128 Hz), on x's device: band-passed,
    resampled and centred as the reference prepares a trial."""
    import numpy as np
    import torch
    from scipy.signal import butter, resample_poly, sosfiltfilt

    host = x.detach().float().cpu().numpy()
    low, high = BAND_HZ[0] / (sfreq / 2), min(BAND_HZ[1] / (sfreq / 2), 0.999)
    if low < high:
        sos = butter(FILTER_ORDER, [low, high], btype="band", output="sos")
        host = sosfiltfilt(sos, host, axis=-1).astype(np.float32)
    up, down = RATE, int(round(sfreq))
    if up != down:
        common = gcd(up, down)
        host = resample_poly(host, up // common, down // common, axis=-1).astype(np.float32)
    return torch.from_numpy(np.ascontiguousarray(centred(host, N_TIMES))).to(x.device)


def features(model, x: torch.Tensor, ch_names: tuple[str, ...], readout: str = "mean"
             ) -> torch.Tensor:
    """The feature map before the classifier, flattened (the reference's
    `preclassifier_flat`): (batch, 192)."""
    out = prepare(x, float(model.sfreq))
    for name, module in model.named_children():
        if name == HEAD:
            break
        out = module(out)
    return out.reshape(out.shape[0], -1)
