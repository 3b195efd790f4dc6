"""The embed step: every window of a dataset through one frozen encoder into the HDF5 store.

Recordings are read and preprocessed by reader threads while the model runs; batches are
appended to the store one at a time, so a kill costs at most the batch in flight; a GPU
out-of-memory batch is retried at half the size and the size that worked is remembered.
"""

from __future__ import annotations

import gc
import json
import os
import signal
import sys
import time
from collections import deque
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from . import __version__
from .cache import CacheIdentity, EmbeddingWriter, window_table_sha256
from .channel_maps import ChannelPlan, channel_plan
from .config import lookup
from .datasets.registry import dataset_root, reader_for
from .device import torch_device
from .errors import OutOfMemory, UsageError
from .models.encoder import Encoder
from .models.registry import ModelSpec, model_spec
from .preprocess import cut_windows, resample, scale
from .progress import Progress

WINDOW_COLUMNS = ["recording", "subject", "start", "label"]
MIN_BATCH = 1


@dataclass
class EmbedSettings:
    batch_size: int = 32
    reader_threads: int = 2
    limit_batches: int | None = None
    inject_oom_above: int | None = None  # fault injection: batches larger than this raise OOM
    # Fault injection for the crash tests: SIGKILL this process just before appending the
    # batch with this index (the batch is computed, not yet durable).
    kill_before_batch: int | None = None
    # Fault injection for the memory validation: a slow model, so readers would run ahead.
    slow_batch_seconds: float | None = None

    @classmethod
    def from_environment(cls, **values) -> EmbedSettings:
        kill = os.environ.get("EMBEDPROBE_FAULT_KILL_BEFORE_BATCH")
        oom = os.environ.get("EMBEDPROBE_FAULT_OOM_ABOVE")
        slow = os.environ.get("EMBEDPROBE_FAULT_SLOW_BATCH_S")
        values.setdefault("kill_before_batch", int(kill) if kill else None)
        values.setdefault("slow_batch_seconds", float(slow) if slow else None)
        if values.get("inject_oom_above") is None and oom:
            values["inject_oom_above"] = int(oom)
        return cls(**values)


def preprocessing_key(spec: ModelSpec, plan: ChannelPlan, epoch_seconds: float,
                      limit_batches: int | None) -> str:
    """Everything besides the weights and windows that changes the embeddings."""
    return json.dumps(
        {
            "sfreq": spec.sfreq,
            "window_seconds": spec.window_seconds,
            "epoch_seconds": epoch_seconds,
            "scaling": spec.scaling,
            "architecture": spec.architecture,
            "params": spec.params,
            "channels": list(plan.recorded),
            "model_channels": list(plan.model_names),
            "limit_batches": limit_batches,
        },
        sort_keys=True,
    )


class WindowSource:
    """Model-ready windows of each recording, from row `first_row` of the index on."""

    def __init__(self, config, roots, dataset, spec: ModelSpec, plan: ChannelPlan,
                 table: pd.DataFrame):
        entry = lookup(config, "datasets", dataset)
        self.reader = reader_for(config, dataset)
        found = self.reader.find_recordings(dataset_root(config, roots, dataset))
        self.recordings = {r.recording: r for r in found}
        self.trim = entry.get("trim_wake_minutes", 30)
        self.epoch_seconds = entry.get("epoch_seconds", 30)
        self.spec, self.plan, self.table = spec, plan, table

    def load(self, recording: str, rows: pd.DataFrame) -> np.ndarray:
        night = self.reader.read_night(self.recordings[recording], self.plan.recorded, self.trim)
        order = [night.ch_names.index(name) for name in self.plan.recorded]
        signals = resample(night.signals[order], night.sfreq, self.spec.sfreq)
        ratio = self.spec.sfreq / night.sfreq
        starts = np.round(rows["start"].to_numpy() * ratio).astype(np.int64)
        length = int(round(self.epoch_seconds * self.spec.sfreq))
        return scale(cut_windows(signals, starts, length), self.spec.scaling, in_place=True)

    def stream(self, first_row: int, threads: int) -> Iterator[np.ndarray]:
        """Per-recording window arrays in index order; reading runs ahead in threads.

        Bounded by construction, whatever the model's speed: at most `threads` recordings are
        in flight (being read, or read and waiting for the model), and a new one starts only
        when the model takes one; the one being batched is the only other recording held.
        Without threads the next recording is read when the model has finished the last one.
        """
        todo = self.table.iloc[first_row:]
        groups = iter([(rec, rows) for rec, rows in todo.groupby("recording", sort=False)])
        if threads <= 0:
            for rec, rows in groups:
                yield self.load(rec, rows)
            return
        with ThreadPoolExecutor(max_workers=threads) as pool:
            in_flight = deque(pool.submit(self.load, *group) for group in islice(groups, threads))
            while in_flight:
                windows = in_flight.popleft().result()
                following = next(groups, None)
                if following is not None:
                    in_flight.append(pool.submit(self.load, *following))
                yield windows
                del windows  # not held while the next one is awaited


def batches(arrays: Iterator[np.ndarray], size_of) -> Iterator[np.ndarray]:
    """Regroup per-recording arrays into batches; `size_of()` is read for every batch.

    Batches inside a recording are views of it (the recording stays alive while they are
    used); only a batch that spans two recordings is copied, and a recording's tail is copied
    out so the recording is not kept alive by the next batch.
    """
    carry: np.ndarray | None = None  # the start of a batch, left from earlier recordings
    for array in arrays:
        start = 0
        if carry is not None:
            start = max(0, size_of() - len(carry))  # 0: the size shrank below the carry
            if len(array) < start:
                carry = np.concatenate([carry, array])
                continue
            yield np.concatenate([carry, array[:start]])
        while len(array) - start >= (size := size_of()):
            yield array[start:start + size]
            start += size
        carry = array[start:].copy() if start < len(array) else None
    if carry is not None:
        yield carry


class BackoffEncoder:
    """Runs batches through the encoder; on out-of-memory halves the batch and retries."""

    def __init__(self, encoder: Encoder, batch_size: int, inject_oom_above: int | None,
                 slow_batch_seconds: float | None = None):
        self.encoder = encoder
        self.batch_size = batch_size
        self.inject_oom_above = inject_oom_above
        self.slow_batch_seconds = slow_batch_seconds

    def forward(self, windows: np.ndarray) -> np.ndarray:
        if self.inject_oom_above is not None and len(windows) > self.inject_oom_above:
            raise torch.OutOfMemoryError(f"injected: batch of {len(windows)} > limit")
        if self.slow_batch_seconds:
            time.sleep(self.slow_batch_seconds)
        return self.encoder(windows)

    def __call__(self, windows: np.ndarray) -> list[np.ndarray]:
        """Embed `windows`, splitting into smaller pieces while memory runs out."""
        while True:
            try:
                parts = [self.forward(windows[i:i + self.batch_size])
                         for i in range(0, len(windows), self.batch_size)]
                return parts
            except torch.OutOfMemoryError as exc:
                gc.collect()
                if torch.cuda.is_available():
                    torch.cuda.empty_cache()
                if self.batch_size <= MIN_BATCH:
                    raise OutOfMemory(
                        f"out of memory even at batch size {self.batch_size}: {exc}",
                        fix="use a device with more memory or a smaller model",
                    ) from exc
                self.batch_size = max(MIN_BATCH, self.batch_size // 2)
                print(f"warning: out of memory; batch size now {self.batch_size}", file=sys.stderr)


def run_embed(config: dict, roots: dict, dataset: str, model_id: str, index_path: Path,
              output: Path, settings: EmbedSettings) -> Path:
    spec = model_spec(config, model_id)
    plan = channel_plan(config, dataset, spec.family)
    if plan.ruled_out:
        raise UsageError(f"{dataset}/{model_id} is ruled out by the channel map: {plan.reason}",
                         fix=f"remove {model_id} from the benchmark's models for {dataset}")
    from .windows import read_index

    table = read_index(index_path)
    windows = table[WINDOW_COLUMNS]
    source = WindowSource(config, roots, dataset, spec, plan, table)
    if settings.limit_batches is not None:
        table = table.iloc[: settings.limit_batches * settings.batch_size]
        windows = windows.iloc[: len(table)]
        source.table = table
    encoder = Encoder(spec, plan.model_names, roots, device=torch_device(config))
    width = encoder(np.zeros((1, len(plan.recorded), source_epoch_len(source)), np.float32))
    identity = CacheIdentity(
        dataset=dataset,
        model=model_id,
        windows_sha256=window_table_sha256(windows),
        preprocessing=preprocessing_key(spec, plan, source.epoch_seconds, settings.limit_batches),
        weights_sha256=encoder.weights_sha256,
        code_version=__version__,
    )
    label = f"{dataset} {model_id}"
    with EmbeddingWriter(output, identity, len(windows), width.shape[1], windows) as writer:
        if writer.already_complete:
            print(f"{label}: already embedded ({output})", file=sys.stderr)
            return writer.finish()
        first = writer.durable_rows
        hint = writer.batch_size_hint
        if hint and hint < settings.batch_size:
            print(f"note: batch size {hint} (it worked on an earlier run; {settings.batch_size} "
                  "ran out of memory)", file=sys.stderr)
        runner = BackoffEncoder(encoder, min(hint or settings.batch_size, settings.batch_size),
                                settings.inject_oom_above, settings.slow_batch_seconds)
        if first:
            print(f"note: resuming {output} at window {first} of {len(windows)}", file=sys.stderr)
        progress = Progress(label, len(windows), unit="windows")
        done_rows, appended = first, first // runner.batch_size
        progress.update(done_rows, "reading")
        for batch in batches(source.stream(first, settings.reader_threads),
                             lambda: runner.batch_size):
            for part in runner(batch):
                if appended == settings.kill_before_batch:
                    os.kill(os.getpid(), signal.SIGKILL)
                writer.append(part)
                done_rows += len(part)
                appended += 1
            writer.remember_batch_size(runner.batch_size)
            progress.update(done_rows)
        path = writer.finish()
    progress.close(f"ok, {len(windows):,} windows")
    if encoder.device.type == "cuda":  # for the device estimate (results/preflight/*.json)
        peak = torch.cuda.max_memory_allocated(encoder.device) / 2**20
        print(f"{label}: GPU allocator peak {peak:,.0f} MB at batch size {runner.batch_size}",
              file=sys.stderr)
    return path


def source_epoch_len(source: WindowSource) -> int:
    return int(round(source.epoch_seconds * source.spec.sfreq))
