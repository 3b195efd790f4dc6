"""check: one real batch through each (dataset, model) pair, with exactly the code a run uses.

It reads the first batch of windows (reader, channel map, resampling, scaling), builds the model
with its weights, runs the forward pass and pooling, and stops: it trains, caches and downloads
nothing. A pair the channel map rules out, or whose map is missing or invalid, is reported before
any data is read. Each pair's result is a JSON record that preflight reads (batch time, feature
width, activation memory); a benchmark's results print as one table.
"""

from __future__ import annotations

import csv
import io
import json
import socket
import time
import traceback
from collections import defaultdict
from dataclasses import asdict, dataclass, field, fields
from functools import partial
from pathlib import Path

import numpy as np
import yaml

from embedprobe.core.errors import DataError, EmbedprobeError, UsageError
from embedprobe.core.units import MIB
from embedprobe.datasets.registry import partial_allowed
from embedprobe.measure.allocator import release_freed_heap
from embedprobe.measure.gpu import GpuMemoryUnavailable, cuda_context_bytes, gpu_batch_peaks
from embedprobe.measure.peaks import measure_peak_growth, resident_now, self_peak_rss
from embedprobe.models.registry import (
    ModelSpec,
    checkpoint_against_pair,
    missing_weights,
    weights_state,
)
from embedprobe.pipeline.channel_maps import CHANNEL_MAP_DIR, ChannelPlan
from embedprobe.pipeline.context import DatasetContext
from embedprobe.pipeline.device import torch_device

OK, FAILED, SKIPPED, RULED_OUT = "ok", "failed", "skipped", "ruled out"
WEIGHTS_WORDS = {"found": "found", "missing": "missing", "not fetched": "not fetched",
                 "not needed": "not needed for random init"}


@dataclass
class CheckResult:
    dataset: str
    model: str
    status: str = OK
    data: str = ""
    weights: str = ""
    channel_map: str = ""
    forward: str = "-"
    seconds: float = 0.0  # the batch's forward pass (what embed repeats per batch)
    peak_mb: float = 0.0  # this process's peak resident memory, batch included
    reason: str = ""
    fix: str = ""
    # What stopped the pair (data, weights, channel_map, model, output, oom): for tools and the
    # closing notes, which gather pairs skipped for the same cause.
    category: str = ""
    total_seconds: float = 0.0  # the whole pair: data status, reading, model build, forward
    # What preflight reads: the real width and cost of the checked batch.
    batch_size: int = 0
    feature_dim: int = 0
    tokens: int = 0  # a token store's time tokens per window (pooling: tokens), else 0
    n_chans: int = 0
    n_times_epoch: int = 0
    n_params: int = 0
    batch_activation_bytes: int = 0
    process_peak_bytes: int = 0
    # This node's embed baseline: resident memory with the libraries loaded, the model built
    # and its first call made, before the batch (preflight uses it over the shipped table).
    baseline_bytes: int = 0
    # the calibration table's figure for the same, to compare; memory's to fill (the caller:
    # check measures, the memory model sits above it)
    table_baseline_bytes: int = 0
    host: str = ""
    # On a GPU (embed.device cuda): the allocator's peaks per batch size (allocated, and
    # reserved: what it holds from the driver), the CUDA context and the GPU's memory.
    device: str = "cpu"
    gpu_peaks: dict = field(default_factory=dict)
    gpu_reserved_peaks: dict = field(default_factory=dict)
    gpu_context_bytes: int = 0
    gpu_total_bytes: int = 0
    extra: dict = field(default_factory=dict)

    @property
    def note(self) -> str:
        """The lines printed under the pair's row: the reason, then the `fix:`."""
        return "\n".join(line for line in (self.reason, self.fix and f"fix: {self.fix}") if line)

    def __post_init__(self) -> None:
        # JSON and CSV give the batch sizes back as strings
        self.gpu_peaks = {int(size): int(peak) for size, peak in self.gpu_peaks.items()}
        self.gpu_reserved_peaks = {int(size): int(peak)
                                   for size, peak in self.gpu_reserved_peaks.items()}

    def as_dict(self) -> dict:
        return asdict(self) | {"note": self.note}

    def stop(self, status: str, category: str, reason: str, fix: str = "") -> CheckResult:
        """Mark the pair as not passed, with the cause and the lines printed under its row."""
        self.status, self.category, self.reason, self.fix = status, category, reason, fix
        return self


# ------------------------------------------------------------------------------- one pair


def first_batch(context: DatasetContext, spec: ModelSpec, plan: ChannelPlan,
                batch_size: int) -> np.ndarray:
    """The first `batch_size` labelled windows, read and preprocessed as embed reads them.

    The rows come from the dataset's labelling task (as `build_index` makes them) and the
    signals from the `WindowSource` embed reads; a recording with fewer windows than a batch is
    followed by the next.
    """
    from collections import Counter

    import pandas as pd

    from embedprobe.pipeline.window_source import WindowSource

    source = WindowSource(context, spec, plan, pd.DataFrame())
    reader, task, entry = context.reader, context.task, context.entry
    parts: list[np.ndarray] = []
    held = 0
    for rec in source.recordings.values():
        if rec.problem:  # as build_index: only complete recordings have windows
            continue
        starts = task.units(reader, rec, entry, Counter()).starts
        rows = pd.DataFrame({"start": starts[: batch_size - held]})
        if len(rows):
            parts.append(source.load(rec.recording, rows))
            held += len(rows)
        if held >= batch_size:
            break
    if not held:
        raise DataError(f"dataset '{context.name}' has no labelled window to check",
                        fix="check that the recordings' annotations hold labels")
    return np.concatenate(parts)


def _apply_channel_map(result: CheckResult, context: DatasetContext, family: str,
                       map_dir: Path) -> ChannelPlan | None:
    """The channel plan; a refusal (no map, no entry, a bad entry) or a rule-out stops the pair."""
    path = context.channel_map_path(map_dir)
    try:
        plan = context.channel_plan(family, map_dir)
    except (UsageError, yaml.YAMLError, TypeError, AttributeError) as exc:
        result.channel_map, result.data = ("invalid" if path.is_file() else "none"), "not read"
        fix = getattr(exc, "fix", None) or f"fix the YAML in {path}"
        result.stop(FAILED, "channel_map",
                    f"failed: refused before reading data: {getattr(exc, 'message', exc)}", fix)
        return None
    result.channel_map = plan.state
    if plan.ruled_out:
        result.data = "not read"
        result.stop(RULED_OUT, "channel_map",
                    f"ruled out: by the {context.name} channel map ({plan.reason})")
    return plan


def _check_data(result: CheckResult, context: DatasetContext,
                invocation: list[str] | None) -> None:
    """Skip the pair when a run would refuse the dataset; note a partial one a run accepts."""
    status = context.status()
    result.data = status.describe()
    problems = "; ".join(status.problems[:3])
    if status.state == "missing":
        result.stop(SKIPPED, "data", f"skipped: data missing: {problems}",
                    context.fix_for(status, invocation))
    elif status.state == "partial" and not partial_allowed(context.config):
        result.stop(SKIPPED, "data", f"skipped: data partial, which a run refuses: {problems}",
                    context.fix_for(status, invocation))
    elif status.state == "partial":
        result.reason = (f"note: data partial, the run uses the {status.found} complete "
                         f"recordings: {problems}")


def _check_weights(result: CheckResult, spec: ModelSpec, roots: dict) -> None:
    """Weights absent or not fetched, or the family's optional package not installed
    (models/time_series.py: "package missing" and its install line): skipped, with the fix."""
    missing = missing_weights(spec, roots)
    if missing is None:
        return
    reason, fix = missing
    if reason.startswith("package missing"):
        result.stop(SKIPPED, "package", f"skipped: {reason}", fix)
        return
    if result.weights == "missing":
        result.extra["weights_path"] = reason.removeprefix("weights not found at ")
    result.stop(SKIPPED, "weights", f"skipped: {reason}", fix)


def _check_checkpoint(result: CheckResult, spec: ModelSpec, roots: dict,
                      plan: ChannelPlan) -> None:
    """A fetched hub checkpoint's config.json against the model entry and the channel map:
    a checkpoint that cannot serve the pair rules it out, before any data is read."""
    if result.weights != "found":
        return
    try:
        checkpoint, mismatch = checkpoint_against_pair(spec, roots, plan.model_names)
    except EmbedprobeError as exc:  # a config.json it cannot read
        result.stop(FAILED, "weights", f"failed: {exc.message}", exc.fix or "")
        return
    if checkpoint is None:
        return
    result.extra["checkpoint"] = f"{checkpoint.repo}@{checkpoint.commit}"
    if mismatch:
        result.data = "not read"
        result.stop(RULED_OUT, "weights",
                    f"ruled out: checkpoint {checkpoint.repo} cannot serve {result.dataset}: "
                    f"{mismatch}",
                    "use a checkpoint made for this montage and rate (models.yaml weights:)")


def _judge_output(result: CheckResult, output: np.ndarray, n_windows: int) -> CheckResult:
    """Failed: a wrong shape, non-finite values, or the same embedding for every window."""
    if output.ndim not in (2, 3) or output.shape[0] != n_windows:
        result.forward = f"{tuple(output.shape)} wrong shape"
        return result.stop(FAILED, "output",
                           f"failed: expected ({n_windows}, features) or ({n_windows}, tokens, "
                           f"features), got {output.shape}",
                           "check the architecture's pooling in models/architectures.py")
    bad = int(output.size - np.isfinite(output).sum())
    shape = f"({', '.join(map(str, output.shape))})"
    if bad:
        result.forward = f"{shape} non-finite"
        return result.stop(FAILED, "output",
                           f"failed: {bad} of {output.size} embedding values are NaN or infinite",
                           "check the weights file and the model's amplitude scaling "
                           "(config/models.yaml)")
    # A tolerance, so that the rounding of batched kernels cannot hide a dead model.
    spread = np.abs(output - output[0]).max()
    if n_windows > 1 and spread <= 1e-6 * max(float(np.abs(output).max()), 1e-30):
        result.forward = f"{shape} constant"
        return result.stop(FAILED, "output",
                           f"failed: every one of the {n_windows} windows got the same embedding",
                           "check the weights and the channel map: the model ignores its input")
    result.forward = f"{shape} finite"
    return result


def _failure(result: CheckResult, phase: str, exc: Exception) -> CheckResult:
    """An exception while reading or in the model: this pair's failure, not check's."""
    result.forward = f"error in {phase}"
    result.extra["traceback"] = traceback.format_exc(limit=-8)
    if isinstance(exc, EmbedprobeError):
        return result.stop(FAILED, exc.category, f"failed: {exc.message}", exc.fix or "")
    import torch

    category = "oom" if isinstance(exc, torch.OutOfMemoryError) else phase
    return result.stop(FAILED, category, f"failed in {phase}: {type(exc).__name__}: {exc}",
                       "the traceback is in the pair's JSON (extra.traceback)")


def check_pair(context: DatasetContext, model: str, batch_size: int | None = None,
               encoder_factory=None, map_dir: Path = CHANNEL_MAP_DIR,
               invocation: list[str] | None = None) -> CheckResult:
    """Check one pair; only unknown names raise (UsageError), every other problem is a row.

    The batch is the one embed would ask for (`batch_size`, default the config's
    embed.batch_size). On a GPU that cannot hold it, the batch is halved until it runs; the
    result's `batch_size` reports what ran, and preflight sizes embed's batch from it.

    `encoder_factory(spec, ch_names, roots)` builds the encoder (default: the real `Encoder`);
    `map_dir` holds the channel maps (default config/channel_maps); `invocation`, the command
    the user typed (none in a workflow job), is what a data fix repeats (registry.fix_for).
    """
    started = time.monotonic()
    batch_size = batch_size or context.config["embed"]["batch_size"]
    result = _check(context, model, batch_size, encoder_factory, map_dir, invocation)
    result.total_seconds = round(time.monotonic() - started, 3)
    return result


def _check(context: DatasetContext, model, batch_size, encoder_factory, map_dir,
           invocation) -> CheckResult:
    config, roots = context.config, context.roots
    result = CheckResult(context.name, model)
    spec = context.model_spec(model)
    result.weights = WEIGHTS_WORDS[weights_state(spec, roots)]
    plan = _apply_channel_map(result, context, spec.family, map_dir)
    if result.status == OK:
        _check_checkpoint(result, spec, roots, plan)
    if result.status != OK:  # ruled out or refused: no data is touched
        return result
    phase = "data"
    try:
        _check_data(result, context, invocation)
        _check_weights(result, spec, roots)
        if result.status != OK:
            return result
        windows = first_batch(context, spec, plan, batch_size)
        phase = "model"
        device = torch_device(config)
        if encoder_factory is None:
            from embedprobe.models.encoder import Encoder

            encoder_factory = partial(Encoder, device=device)
        encoder = encoder_factory(spec, plan.model_names, roots)
        if device.type == "cuda":  # first: it shrinks a batch the GPU cannot hold
            windows = _measure_gpu(result, encoder, windows, device)
        encoder(windows[:1])  # embed's first call (its width probe): one-time state is made
        # What reading the first batch freed goes back first: embed's baseline holds no reading
        # (its readers' parts are terms of their own), and the forward's growth is then the
        # pages its activations need, not what freed reading blocks happened to absorb.
        release_freed_heap()
        result.baseline_bytes = resident_now()
        forward_started = time.monotonic()
        output, growth = measure_peak_growth(lambda: encoder(windows))
        result.seconds = round(time.monotonic() - forward_started, 3)
    except Exception as exc:  # any crash is reported in the pair's row, not raised
        return _failure(result, phase, exc)
    output = np.asarray(output)
    result.batch_size = len(windows)
    # the width a probe sees: a token store's rows are flattened (pooling: tokens)
    result.feature_dim = int(np.prod(output.shape[1:])) if output.ndim > 1 else 0
    result.tokens = int(output.shape[1]) if output.ndim == 3 else 0
    result.n_chans, result.n_times_epoch = windows.shape[1], windows.shape[2]
    result.n_params = sum(p.numel() for p in encoder.model.parameters())
    result.batch_activation_bytes = int(growth)
    result.process_peak_bytes = self_peak_rss()
    result.peak_mb = round(result.process_peak_bytes / MIB, 1)
    result.host = socket.gethostname()
    return _judge_output(result, output, len(windows))


def _measure_gpu(result: CheckResult, encoder, windows: np.ndarray, device) -> np.ndarray:
    """The allocator's peak at one window and at the largest batch the GPU holds (halved from
    the full batch while it runs out of memory): preflight draws the line through them to size
    embed's batch to the GPU's memory. Returns the windows of that batch."""
    import torch

    while True:
        try:
            sizes = sorted({1, len(windows)})
            peaks = gpu_batch_peaks(lambda b, w=windows: encoder(w[:b]), sizes, device)
            break
        except torch.OutOfMemoryError:
            if len(windows) == 1:
                raise
            torch.cuda.empty_cache()
            windows = windows[: len(windows) // 2]
    result.gpu_peaks, result.gpu_reserved_peaks = peaks.allocated, peaks.reserved
    try:
        result.gpu_context_bytes = cuda_context_bytes(device)
    except GpuMemoryUnavailable as exc:  # preflight then takes the table's context
        result.extra["gpu_context"] = f"not measured: {exc}"
    properties = torch.cuda.get_device_properties(device)
    result.gpu_total_bytes = int(properties.total_memory)
    result.device = f"cuda ({properties.name})"
    return windows


# ------------------------------------------------------------------------------- records


def write_result(result: CheckResult, path: Path) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result.as_dict(), indent=2) + "\n")


def read_result(path: Path) -> CheckResult:
    data = json.loads(Path(path).read_text())
    known = {f.name for f in fields(CheckResult)}
    return CheckResult(**{key: value for key, value in data.items() if key in known})


_PARSERS = {"int": int, "float": float, "str": str, "dict": json.loads}


def to_csv(results: list[CheckResult]) -> str:
    """One row per pair; the lines under a row go to `note`, the mappings are JSON."""
    names = [f.name for f in fields(CheckResult)] + ["note"]
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=names, lineterminator="\n")
    writer.writeheader()
    for result in results:
        writer.writerow(result.as_dict() | {
            "extra": json.dumps(result.extra, sort_keys=True),
            "gpu_peaks": json.dumps(result.gpu_peaks),
            "gpu_reserved_peaks": json.dumps(result.gpu_reserved_peaks)})
    return out.getvalue()


def from_csv(text: str) -> list[CheckResult]:
    types = {f.name: _PARSERS[str(f.type)] for f in fields(CheckResult)}
    return [CheckResult(**{name: types[name](value) for name, value in row.items()
                           if name in types})
            for row in csv.DictReader(io.StringIO(text))]


# ------------------------------------------------------------------------------- the table

HEADERS = ("dataset", "checkpoint", "data", "weights", "channel map", "forward pass", "time",
           "peak memory", "node baseline")


def _seconds(value: float) -> str:
    return f"{value:.1f}s" if value < 10 else f"{value:.0f}s"


def table_row(result: CheckResult) -> tuple[str, ...]:
    ran = result.batch_size > 0  # the forward pass ran (passed or judged failed)
    return (result.dataset, result.model, result.data, result.weights, result.channel_map,
            result.forward, _seconds(result.seconds) if ran else "-",
            f"{result.peak_mb:.0f} MB" if ran else "-", node_baseline(result))


def node_baseline(result: CheckResult) -> str:
    """`612 MB (table +15%)`: this node's embed baseline, and how far the shipped table is."""
    if not result.baseline_bytes:
        return "-"
    text = f"{result.baseline_bytes / MIB:.0f} MB"
    if result.table_baseline_bytes:
        off = result.table_baseline_bytes / result.baseline_bytes - 1
        text += f" (table {off:+.0%})"
    return text


def format_table(results: list[CheckResult]) -> str:
    """Aligned columns; under each pair that did not pass (or has a note), its note lines."""
    rows = [HEADERS] + [table_row(r) for r in results]
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEADERS))]

    def line(row):
        return "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()

    lines = [line(HEADERS)]
    for result, row in zip(results, rows[1:], strict=True):
        lines.append(line(row))
        lines.extend(f"  {note}" for note in result.note.splitlines())
    return "\n".join(lines)


def summary_line(results: list[CheckResult], seconds: float) -> str:
    """`5 pairs: 2 ok, 0 failed, 3 skipped (27s)`, with `, 1 ruled out` when there are any."""
    count = {s: sum(r.status == s for r in results) for s in (OK, FAILED, SKIPPED, RULED_OUT)}
    ruled_out = f", {count[RULED_OUT]} ruled out" if count[RULED_OUT] else ""
    pairs = "pair" if len(results) == 1 else "pairs"
    return (f"{len(results)} {pairs}: {count[OK]} ok, {count[FAILED]} failed, "
            f"{count[SKIPPED]} skipped{ruled_out} ({seconds:.0f}s)")


def closing_notes(results: list[CheckResult]) -> list[str]:
    """`note:` and `fix:` lines for a cause several pairs were skipped for (one fix for all)."""
    skipped = defaultdict(list)
    for result in results:
        if result.status == SKIPPED:
            skipped[result.category].append(result)
    lines = []
    fetch = [r.model for r in skipped.get("weights", []) if r.weights == "not fetched"]
    if len(fetch) > 1:
        lines += [f"note: {len(fetch)} hub checkpoints skipped: not fetched",
                  f"fix: embedprobe fetch-weights {' '.join(sorted(set(fetch)))}   "
                  "# on a node with internet"]
    weights = [r for r in skipped.get("weights", []) if r.weights != "not fetched"]
    if len(weights) > 1:
        paths = ", ".join(sorted({r.extra.get("weights_path", r.model) for r in weights}))
        lines += [f"note: {len(weights)} checkpoints skipped for missing weights",
                  f"fix: copy the checkpoints to {paths} "
                  "(or set weights_root / EMBEDPROBE_WEIGHTS_ROOT)"]
    by_dataset = defaultdict(list)
    for result in skipped.get("data", []):
        by_dataset[result.dataset].append(result)
    for dataset, pairs in by_dataset.items():
        if len(pairs) > 1:
            lines += [f"note: {len(pairs)} pairs skipped: dataset {dataset} is {pairs[0].data}",
                      f"fix: {pairs[0].fix}"]
    return lines


def exit_code(results: list[CheckResult], strict: bool = False) -> int:
    """0 when at least one pair passed and none failed (strict: and none skipped), else 1."""
    statuses = [r.status for r in results]
    if FAILED in statuses or OK not in statuses:
        return 1
    return 1 if strict and SKIPPED in statuses else 0
