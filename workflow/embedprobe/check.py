"""check: one real batch through each (dataset, model) pair, with exactly the code a run uses.

It reads one batch of the first recording, runs the forward pass and stops: it trains, caches
and downloads nothing. A pair the channel map rules out is reported before any data is read.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from .channel_maps import channel_plan
from .datasets.registry import data_status, fix_for, reader_for
from .errors import EmbedprobeError
from .memory import measure_peak_growth, self_peak_rss
from .models.registry import model_spec, weights_path, weights_state

OK, FAILED, SKIPPED, RULED_OUT = "ok", "failed", "skipped", "ruled out"


@dataclass
class CheckResult:
    dataset: str
    model: str
    status: str = OK
    data: str = ""
    weights: str = ""
    channel_map: str = ""
    forward: str = "-"
    seconds: float = 0.0
    peak_mb: float = 0.0
    reason: str = ""
    fix: str = ""
    # What preflight reads: the real width and cost of the checked batch.
    batch_size: int = 0
    feature_dim: int = 0
    n_chans: int = 0
    n_times_epoch: int = 0
    n_params: int = 0
    batch_activation_bytes: int = 0
    process_peak_bytes: int = 0
    extra: dict = field(default_factory=dict)

    @property
    def note(self) -> str:
        return "\n".join(line for line in (self.reason, self.fix and f"fix: {self.fix}") if line)

    def as_dict(self) -> dict:
        return asdict(self) | {"note": self.note}


def first_batch(config, roots, dataset, source_cls, spec, plan, batch_size):
    """The first `batch_size` windows of the first recording, read like embed reads them."""
    from .datasets.registry import dataset_root

    reader = reader_for(config, dataset)
    entry = config["datasets"][dataset]
    recordings = [r for r in reader.find_recordings(dataset_root(config, roots, dataset))
                  if r.hypnogram is not None]
    rec = recordings[0]
    starts, labels, _ = reader.read_labels(rec, entry.get("trim_wake_minutes", 30))
    rows = pd.DataFrame({"recording": rec.recording, "subject": rec.subject,
                         "start": starts[:batch_size], "label": labels[:batch_size]})
    source = source_cls(config, roots, dataset, spec, plan, rows)
    return source.load(rec.recording, rows)


def check_pair(config: dict, roots: dict, dataset: str, model: str, batch_size: int = 32,
               encoder_factory=None) -> CheckResult:
    from .embed import WindowSource
    from .models.encoder import Encoder

    result = CheckResult(dataset, model)
    spec = model_spec(config, model)
    plan = channel_plan(dataset, spec.family)  # a family without an entry is refused here
    result.channel_map = plan.state
    result.weights = weights_state(spec, roots)
    if plan.ruled_out:
        result.status, result.data = RULED_OUT, "not read"
        result.reason = f"ruled out: by the {dataset} channel map ({plan.reason})"
        return result
    status = data_status(config, roots, dataset)
    result.data = status.describe()
    if status.state == "missing":
        result.status, result.reason = SKIPPED, f"skipped: data missing ({status.root})"
        result.fix = fix_for(config, dataset, status)
        return result
    if result.weights == "missing":
        result.status = SKIPPED
        result.reason = f"skipped: weights not found at {weights_path(spec, roots)}"
        result.fix = f"copy the checkpoint for {model} to {weights_path(spec, roots)}"
        return result
    started = time.monotonic()
    try:
        windows = first_batch(config, roots, dataset, WindowSource, spec, plan, batch_size)
        encoder = (encoder_factory or Encoder)(spec, plan.model_names, roots)
        output, growth = measure_peak_growth(lambda: encoder(windows))
    except EmbedprobeError as exc:
        result.status, result.reason, result.fix = FAILED, f"failed: {exc.message}", exc.fix or ""
        return result
    except Exception as exc:  # any model or reader crash is this pair's failure, not check's
        result.status, result.reason = FAILED, f"failed: {type(exc).__name__}: {exc}"
        result.fix = f"run `embedprobe check` for {dataset}/{model} and read the traceback"
        return result
    result.seconds = round(time.monotonic() - started, 2)
    result.batch_size, result.feature_dim = output.shape[0], output.shape[1]
    result.n_chans, result.n_times_epoch = windows.shape[1], windows.shape[2]
    result.n_params = sum(p.numel() for p in encoder.model.parameters())
    result.batch_activation_bytes = int(growth)
    result.process_peak_bytes = self_peak_rss()
    result.peak_mb = round(result.process_peak_bytes / 2**20, 1)
    finite = bool(np.isfinite(output).all())
    constant = output.shape[0] > 1 and bool(np.all(np.ptp(output, axis=0) == 0))
    result.forward = f"{tuple(output.shape)} {'finite' if finite else 'non-finite'}"
    if not finite:
        result.status, result.reason = FAILED, "failed: the embeddings contain NaN or infinity"
        result.fix = "check the model's amplitude scaling and weights (config/models.yaml)"
    elif constant:
        result.status = FAILED
        result.reason = "failed: every window got the same embedding"
        result.fix = "check the weights and the channel map: the model ignores its input"
    return result


def write_result(result: CheckResult, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result.as_dict(), indent=2) + "\n")


def read_result(path: Path) -> CheckResult:
    data = json.loads(Path(path).read_text())
    data.pop("note", None)
    return CheckResult(**data)


COLUMNS = ("dataset", "model", "data", "weights", "channel_map", "forward", "seconds", "peak_mb")
HEADERS = ("dataset", "checkpoint", "data", "weights", "channel map", "forward pass", "time",
           "peak memory")


def format_table(results: list[CheckResult]) -> str:
    cells = [HEADERS] + [
        (r.dataset, r.model, r.data, r.weights, r.channel_map, r.forward,
         f"{r.seconds:.0f}s" if r.status == OK else "-",
         f"{r.peak_mb:.0f} MB" if r.status == OK else "-")
        for r in results
    ]
    widths = [max(len(str(row[i])) for row in cells) for i in range(len(HEADERS))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(cells[0], widths, strict=True)).rstrip()]
    for result, row in zip(results, cells[1:], strict=True):
        lines.append("  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
        lines.extend(f"  {line}" for line in result.note.splitlines())
    return "\n".join(lines)


def summary_line(results: list[CheckResult], seconds: float) -> str:
    counts = {s: sum(r.status == s for r in results) for s in (OK, FAILED, SKIPPED, RULED_OUT)}
    return (f"{len(results)} pairs: {counts[OK]} ok, {counts[FAILED]} failed, "
            f"{counts[SKIPPED]} skipped, {counts[RULED_OUT]} ruled out ({seconds:.0f}s)")


def exit_code(results: list[CheckResult], strict: bool = False) -> int:
    """0 when at least one pair passed and none failed (strict: and none skipped)."""
    statuses = [r.status for r in results]
    if FAILED in statuses or OK not in statuses:
        return 1
    return 1 if strict and SKIPPED in statuses else 0


def to_csv(results: list[CheckResult]) -> str:
    frame = pd.DataFrame([r.as_dict() for r in results]).drop(columns=["extra"])
    return frame.to_csv(index=False)


def from_csv(text: str) -> list[CheckResult]:
    import io

    frame = pd.read_csv(io.StringIO(text), keep_default_na=False)
    records = frame.drop(columns=["note"]).to_dict("records")
    return [CheckResult(**record) for record in records]
