"""The embed step: every window of a dataset through one frozen encoder into the HDF5 store.

Recordings are read and preprocessed by readers (window_source: threads beside a CPU encoder,
processes beside a GPU one) while the model runs; each batch is appended to the store while a
GPU computes the next one (Encoder.launch), so a kill costs at most the two batches in flight;
a GPU out-of-memory batch is retried at half the size and the size that worked is remembered.
"""

from __future__ import annotations

import gc
import json
import os
import signal
import sys
import time
from collections.abc import Iterator
from contextlib import suppress
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from embedprobe import __version__
from embedprobe.core.errors import OutOfMemory, UsageError
from embedprobe.core.progress import Progress
from embedprobe.core.units import MIB
from embedprobe.datasets.registry import entry_reader_kind
from embedprobe.measure.allocator import HEAP_RELEASE_MIN_BATCH_S, FreedHeapRelease
from embedprobe.models.architectures import ARCHITECTURES, MEAN
from embedprobe.models.braindecode_import import braindecode_models
from embedprobe.models.encoder import Encoder
from embedprobe.models.registry import ModelSpec
from embedprobe.pipeline.channel_maps import ChannelPlan
from embedprobe.pipeline.context import DatasetContext
from embedprobe.pipeline.device import torch_device
from embedprobe.pipeline.protocol import Preprocessing
from embedprobe.pipeline.reader_processes import start_reader_server
from embedprobe.pipeline.store_format import partial_path
from embedprobe.pipeline.store_identity import CacheIdentity
from embedprobe.pipeline.store_shards import shard_attrs, shard_rows
from embedprobe.pipeline.store_writer import EmbeddingWriter
from embedprobe.pipeline.window_source import PROCESSES, THREADS, WindowSource
from embedprobe.pipeline.window_table import window_table_sha256

MIN_BATCH = 1


@dataclass
class EmbedSettings:
    batch_size: int  # preflight's decision (cli.embed_knobs), or the user's override
    reader_threads: int  # readers making recordings ahead of the model (threads or processes)
    # "threads" or "processes"; None: processes beside a GPU encoder (its thread must stay free
    # to feed the device), threads beside a CPU one (no start-up, no extra interpreter).
    reader_kind: str | None = None
    limit_batches: int | None = None
    inject_oom_above: int | None = None  # fault injection: batches larger than this raise OOM
    # Fault injection for the crash tests: SIGKILL this process just before appending the
    # batch with this index (the batch is computed, not yet durable).
    kill_before_batch: int | None = None
    # Fault injection for the memory validation: a slow model, so readers would run ahead.
    slow_batch_seconds: float | None = None
    # The freed heap goes back to the kernel after batches at least this long (None: never;
    # EMBEDPROBE_HEAP_RELEASE_S=off, for the benchmarks' comparison)
    heap_release_min_batch_s: float | None = HEAP_RELEASE_MIN_BATCH_S
    # A fresh run's readers start before the model is built (EMBEDPROBE_EARLY_READERS=off:
    # after it, for bench_embed.py's start-up table)
    early_readers: bool = True
    # (shard, shards): this job embeds one shard of the store (pipeline/store_shards.py)
    shard: tuple[int, int] | None = None

    @classmethod
    def from_environment(cls, **values) -> EmbedSettings:
        kill = os.environ.get("EMBEDPROBE_FAULT_KILL_BEFORE_BATCH")
        oom = os.environ.get("EMBEDPROBE_FAULT_OOM_ABOVE")
        slow = os.environ.get("EMBEDPROBE_FAULT_SLOW_BATCH_S")
        release = os.environ.get("EMBEDPROBE_HEAP_RELEASE_S")
        kind = os.environ.get("EMBEDPROBE_READERS")  # tests and benchmarks: force a kind
        if kind and kind not in (THREADS, PROCESSES):
            raise UsageError(f"EMBEDPROBE_READERS is {kind!r}",
                             fix=f"set it to {THREADS} or {PROCESSES}, or unset it")
        values.setdefault("reader_kind", kind or None)
        values.setdefault("kill_before_batch", int(kill) if kill else None)
        values.setdefault("slow_batch_seconds", float(slow) if slow else None)
        if os.environ.get("EMBEDPROBE_EARLY_READERS") == "off":
            values.setdefault("early_readers", False)
        if release:
            values.setdefault("heap_release_min_batch_s",
                              None if release == "off" else float(release))
        if values.get("inject_oom_above") is None and oom:
            values["inject_oom_above"] = int(oom)
        return cls(**values)



def capped_rows(subjects: np.ndarray, rows: int) -> np.ndarray:
    """The index positions a capped run (limit_batches) embeds: `rows` windows shared among
    the subjects by their window counts and spread evenly through each subject's windows, in
    index order, so that the probes can fit on them (a fold needs subjects; a probe, classes)."""
    if rows >= len(subjects):
        return np.arange(len(subjects))
    names, counts = np.unique(subjects, return_counts=True)
    # every subject one window first (while the cap allows), the rest shared by count
    base = np.ones_like(counts) if rows >= len(names) else np.zeros_like(counts)
    spare, pool = rows - base.sum(), len(subjects) - base.sum()
    take = base + np.floor((counts - base) * spare / pool).astype(int)
    for k in np.argsort(-counts, kind="stable")[: rows - take.sum()]:
        take[k] += 1  # the remainder, one each to the subjects with most windows
    picked = []
    for name, n in zip(names, take, strict=True):
        where = np.flatnonzero(subjects == name)
        picked.append(where[np.unique(np.linspace(0, len(where) - 1, n).round().astype(int))]
                      if n else where[:0])
    return np.sort(np.concatenate(picked))

def preprocessing_key(spec: ModelSpec, plan: ChannelPlan, epoch_seconds: float,
                      limit_batches: int | None, preprocessing: Preprocessing,
                      start_seconds: float = 0.0) -> str:
    """Everything besides the weights and windows that changes the embeddings."""
    # a token store says so; a pooled store's key stays what it was (its caches stay valid)
    pooling = {} if spec.pooling == MEAN else {"pooling": spec.pooling}
    # a window moved from its indexed start (motor imagery's no_filtering trial) says so
    moved = {"window_start_seconds": start_seconds} if start_seconds else {}
    return json.dumps(
        pooling | moved | {
            "sfreq": spec.sfreq,
            "window_seconds": spec.window_seconds,
            "epoch_seconds": epoch_seconds,
            "preprocessing": preprocessing.key(),
            "architecture": spec.architecture,
            "params": spec.params,
            # the architecture's own build arguments (EEGPT's patch stride moved to 64)
            "model_kwargs": ARCHITECTURES[spec.architecture].build_kwargs(
                len(plan.model_names), spec.sfreq, spec.n_times),
            "readout": spec.readout,
            "channels": list(plan.recorded),
            "model_channels": list(plan.model_names),
            # which recorded channels (or pair) feed which slot: a changed map changes the key
            "sources": [asdict(source) for source in plan.sources],
            "limit_batches": limit_batches,
        },
        sort_keys=True,
    )


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


@dataclass
class Launched:
    """A batch's pieces under way (each `.result()` waits for its vectors) and the batch size
    they were started at: the size that worked, once they are stored."""

    pieces: list
    batch_size: int


class BackoffEncoder:
    """Runs batches through the encoder; on out-of-memory halves the batch and retries."""

    def __init__(self, encoder: Encoder, batch_size: int, inject_oom_above: int | None,
                 slow_batch_seconds: float | None = None):
        self.encoder = encoder
        self.batch_size = batch_size
        self.inject_oom_above = inject_oom_above
        self.slow_batch_seconds = slow_batch_seconds

    def launch_one(self, windows: np.ndarray):
        if self.inject_oom_above is not None and len(windows) > self.inject_oom_above:
            raise torch.OutOfMemoryError(f"injected: batch of {len(windows)} > limit")
        if self.slow_batch_seconds:
            time.sleep(self.slow_batch_seconds)
        return self.encoder.launch(windows)

    def launch(self, windows: np.ndarray) -> Launched:
        """Start `windows` in pieces of the batch size, splitting into smaller pieces while
        memory runs out (a device runs out when a piece is started, not when its vectors are
        awaited). The windows are read before this returns: their reader slot may be reused
        for the next part as soon as the next batch is asked for."""
        while True:
            try:
                return Launched([self.launch_one(windows[i:i + self.batch_size])
                                 for i in range(0, len(windows), self.batch_size)],
                                self.batch_size)
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


def run_embed(context: DatasetContext, model_id: str, index_path: Path, output: Path,
              settings: EmbedSettings, report: dict | None = None) -> Path:
    """Embed every window of the index into `output`; `report`, when given, receives the
    run's timings (seconds to the first batch, readers' CPU seconds: scripts/bench_embed.py)."""
    began = time.perf_counter()
    config, roots, dataset = context.config, context.roots, context.name
    spec = context.model_spec(model_id)
    plan = context.channel_plan(spec.family)
    if plan.ruled_out:
        raise UsageError(f"{dataset}/{model_id} is ruled out by the channel map: {plan.reason}",
                         fix=f"remove {model_id} from the benchmark's models for {dataset}")
    device = torch_device(config)
    # a format that must be read in this process (datasets.registry.FORMATS) reads in threads
    kind = settings.reader_kind or entry_reader_kind(context.entry) or (
        PROCESSES if device.type == "cuda" else THREADS)
    if kind == PROCESSES and settings.reader_threads > 0:
        start_reader_server()  # it imports the reading code while the model is built
    from embedprobe.pipeline.index import read_index

    table = read_index(index_path)
    windows = table[context.window_columns]
    source = WindowSource(context, spec, plan, table)
    if settings.limit_batches is not None:
        rows = capped_rows(table["subject"].to_numpy(),
                           settings.limit_batches * settings.batch_size)
        # positions and labels agree again, as in an uncapped table
        table = table.iloc[rows].reset_index(drop=True)
        windows = windows.iloc[rows].reset_index(drop=True)
        source.table = table
    extra, offset = {}, 0
    if settings.shard is not None:  # after the cap: the shards split what the store holds
        shard, shards = settings.shard
        offset, hi = shard_rows(table["recording"].to_numpy(), shards, shard)
        extra = shard_attrs(shard, shards, windows)
        windows = windows.iloc[offset:hi].reset_index(drop=True)
        # The source keeps the table up to the shard's end and starts at its first row, as a
        # resume does: its recordings are cut into the same parts as in one job, so their
        # filtered samples round the same (a table that began at the shard would not:
        # docs/measurements/2026-12-07-sharded-embedding.md).
        source.table = table.iloc[:hi]
    # A fresh run starts at row 0: its readers set to work now, while the model is built;
    # the model's imports (braindecode's models, and through them MNE and MNE-BIDS) come
    # first, so that no module is imported on two threads at once (core/thread_imports.py).
    braindecode_models()
    fresh = not output.exists() and not partial_path(output).exists()
    early = (source.stream(offset, settings.reader_threads, kind).start()
             if fresh and settings.early_readers else None)
    try:
        encoder = Encoder(spec, plan.model_names, roots, device=device)
        width = encoder(np.zeros((1, len(plan.model_names), source.window_samples),
                                  np.float32))
        identity = CacheIdentity(
            dataset=dataset,
            model=model_id,
            windows_sha256=window_table_sha256(windows),
            preprocessing=preprocessing_key(spec, plan, source.epoch_seconds,
                                            settings.limit_batches,
                                            source.recipe.preprocessing,
                                            source.recipe.start_seconds),
            weights_sha256=encoder.weights_sha256,
            code_version=__version__,
        )
        label = f"{dataset} {model_id}" + (
            f" shard {settings.shard[0] + 1}/{settings.shard[1]}" if settings.shard else "")
        return _write(output, identity, windows, width.shape[1:], encoder, source, settings,
                      kind, early, label, began, {} if report is None else report, extra,
                      offset)
    finally:
        if early is not None:
            early.close()


def _write(output: Path, identity: CacheIdentity, windows, width: tuple[int, ...],
           encoder: Encoder, source: WindowSource, settings: EmbedSettings, kind: str, early,
           label: str, began: float, timings: dict, extra_attrs: dict, offset: int) -> Path:
    """Batches through the encoder into the store, from its first non-durable row (the
    source's row `offset` + that: a shard's rows start there)."""
    with EmbeddingWriter(output, identity, len(windows), width, windows,
                         extra_attrs=extra_attrs) as writer:
        if writer.already_complete:
            print(f"{label}: already embedded ({output})", file=sys.stderr)
            return writer.finish()
        first = writer.durable_rows
        # The store's remembered batch size is this job's own resume state: the size an
        # earlier run of it backed off to after a GPU out-of-memory error (never larger than
        # the size it was given).
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
        timings["setup_s"] = time.perf_counter() - began
        stream = early if early is not None and first == 0 else source.stream(
            offset + first, settings.reader_threads, kind)
        store = _Storer(writer, progress, settings.kill_before_batch, appended, done_rows)
        waiting = None  # launched, not yet stored
        heap = FreedHeapRelease(settings.heap_release_min_batch_s)
        try:
            for batch in batches(stream, lambda: runner.batch_size):
                timings.setdefault("first_batch_s", time.perf_counter() - began)
                # One batch ahead: a GPU computes this batch while the one before is stored
                # (a kill loses at most these two); the CPU computes it in the call.
                launched = runner.launch(batch)
                store(waiting)
                waiting = launched  # the stored batch's page-locked vectors are let go
                heap.after_batch()
            store(waiting)
        except Exception:
            if not store.broken:  # a batch computed before a failure elsewhere is kept
                with suppress(Exception):  # the first failure is the one to report
                    store(waiting)
            raise
        finally:
            stream.close()  # its readers stop here, also on an error
        finishing = time.perf_counter()
        path = writer.finish()
        timings["finish_s"] = time.perf_counter() - finishing
    progress.close(f"ok, {len(windows):,} windows")
    timings.update(reader_cpu_s=source.reader_seconds, readers=kind,
                   windows=len(windows) - first, heap_releases=heap.trims)
    if encoder.device.type == "cuda":  # for the device estimate (results/preflight/*.json)
        peak = torch.cuda.max_memory_allocated(encoder.device) / MIB
        print(f"{label}: GPU allocator peak {peak:,.0f} MB at batch size {runner.batch_size}",
              file=sys.stderr)
    return path


class _Storer:
    """Appends a launched batch's pieces to the store as their vectors arrive."""

    def __init__(self, writer: EmbeddingWriter, progress: Progress,
                 kill_before_batch: int | None, appended: int, done_rows: int):
        self.writer, self.progress = writer, progress
        self.kill_before_batch = kill_before_batch
        self.appended, self.done_rows = appended, done_rows
        self.broken = False  # a store failed: nothing more is appended

    def __call__(self, launched: Launched | None) -> None:
        if launched is None:
            return
        try:
            for piece in launched.pieces:
                vectors = piece.result()
                if self.appended == self.kill_before_batch:
                    os.kill(os.getpid(), signal.SIGKILL)
                self.writer.append(vectors)
                self.done_rows += len(vectors)
                self.appended += 1
            self.writer.remember_batch_size(launched.batch_size)
        except BaseException:
            self.broken = True
            raise
        self.progress.update(self.done_rows)
