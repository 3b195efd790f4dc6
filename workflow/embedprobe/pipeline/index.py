"""The window index: one row per labelled window of every recording."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pandas as pd

from embedprobe.core.errors import DataError
from embedprobe.core.overrides import rerun_with
from embedprobe.datasets.base import CUT
from embedprobe.datasets.registry import partial_allowed
from embedprobe.pipeline.context import DatasetContext

INDEX_COLUMNS = ["recording", "subject", "session", "start", "label", "sfreq"]


def build_index(context: DatasetContext, quality: list | None = None,
                invocation: list[str] | None = None) -> pd.DataFrame:
    """Read every recording's labels (headers and annotations) and scan its EEG channels over
    the kept windows (flat, clipped, NaN/inf scaling, unit, rate: `warning:` lines). With
    `exclude_bad_recordings` a flagged recording is left out. `quality`, when given, receives
    one row per problem (QUALITY_COLUMNS). The `fix:` for flagged recordings is `invocation`
    (the command the user typed, if any) again with exclude_bad_recordings."""
    from embedprobe.datasets.quality import rate_problems, scan

    config, dataset, entry, reader = context.config, context.name, context.entry, context.reader
    task = context.task
    channels = context.mapped_channels()
    epoch_seconds = context.unit_seconds
    exclude = bool(config.get("exclude_bad_recordings"))
    counts: Counter = Counter()
    tables, problems, rates = {}, [], {}
    filled: Counter = Counter()  # channel -> recordings that read it as zeros
    recordings = context.recordings()
    partial = partial_allowed(config)
    usable = [r for r in recordings if not (r.problem and partial)]
    for other in benchmark_tasks_of(config, dataset):  # e.g. sleep diagnosis: its labels
        other.check_recordings(reader, usable)
    for rec in recordings:
        if rec.problem and partial:
            print(f"warning: {dataset}: recording {rec.recording} is missing, the others run: "
                  f"{rec.problem}", file=sys.stderr)
            continue
        left_out: Counter = Counter()  # this recording's, to name it when nothing is left
        units = task.units(reader, rec, entry, left_out)
        counts.update(left_out)
        if not len(units.starts):
            _warn_unlabelled(rec, task, left_out)
        rates[rec.recording] = units.sfreq
        if hasattr(reader, "zero_filled"):  # DOD: the reference's union, never silently
            for channel in reader.zero_filled(rec, channels):
                filled[channel] += 1
        problems += scan(reader, rec, channels, units.starts,
                         round(epoch_seconds * units.sfreq))
        tables[rec.recording] = pd.DataFrame({
            "recording": rec.recording, "subject": rec.subject, "session": rec.session,
            "start": units.starts, "label": units.labels, "sfreq": units.sfreq})
    if not getattr(reader, "RATES_VARY", False):  # TUAB's files come at several rates
        problems += rate_problems(rates, ", ".join(channels))
    flagged = sorted({p.recording for p in problems})
    for problem in problems:
        print(problem.warning(), file=sys.stderr)
    if flagged:
        action = ("excluded (exclude_bad_recordings is true)" if exclude else
                  "kept: exclude_bad_recordings is false")
        print(f"{'note' if exclude else 'warning'}: {len(flagged)} recording(s) of {dataset} "
              f"flagged, {action}: {', '.join(flagged)}", file=sys.stderr)
        if not exclude:
            print("fix: " + rerun_with(invocation, "exclude_bad_recordings=true",
                                       "or replace the flagged files"), file=sys.stderr)
    if quality is not None:
        quality += [[p.recording, p.channel, p.problem, p.detail, exclude] for p in problems]
    _note_left_out(dataset, counts)
    if filled:
        print(f"note: {dataset}: zero-filled where a recording lacks them (as the reference "
              "does; the dataset's channel map names them): "
              + ", ".join(f"{c} in {n}" for c, n in filled.items()), file=sys.stderr)
    kept = [t for rec, t in tables.items() if not (exclude and rec in flagged)]
    if not kept or not sum(len(t) for t in kept):
        raise DataError(f"dataset '{dataset}' has no labelled window"
                        + (" left after excluding the flagged recordings" if flagged and exclude
                           else ""),
                        fix=f"check that the recordings' annotations hold {task.name} labels "
                            "(and the signals are not flat)")
    return pd.concat(kept, ignore_index=True)[INDEX_COLUMNS]


def benchmark_tasks_of(config: dict, dataset: str) -> list:
    """The tasks of every benchmark in the config that lists the dataset, each once."""
    from embedprobe.tasks.registry import task_for

    names = dict.fromkeys(b["task"] for b in config.get("benchmarks", {}).values()
                          if dataset in b.get("datasets", ()))
    return [task_for(name) for name in names]


def _warn_unlabelled(rec, task, left_out: Counter) -> None:
    """A recording that gives no unit (a hypnogram holding no scored stage) leaves the index:
    say so by name, not only in the counts of the notes."""
    sources = ", ".join(p.name for p in rec.files if p != rec.signal_path) or "its annotations"
    items = [f"{text!r} x{n} {kind}" if text else f"{n} {kind}"
             for (kind, text), n in sorted(left_out.items()) if kind != CUT]
    held = f"holds only {', '.join(items)}" if items else "holds none"
    print(f"warning: {rec.signal_path}: no window labelled {' or '.join(task.classes)}: "
          f"{sources} {held}; the recording is left out of the index", file=sys.stderr)


def _note_left_out(dataset: str, counts: Counter) -> None:
    """One `note:` per kind of annotation the index left out, with counts per text; epochs
    cut at a signal's end are a `warning:` each, naming the file (base.count_cut)."""
    by_kind: dict[str, list[str]] = {}
    for (kind, text), n in sorted(counts.items()):
        if kind == CUT:
            print(f"warning: {text}", file=sys.stderr)
            continue
        by_kind.setdefault(kind, []).append(f"{text!r} x{n}" if text else f"{n} epochs")
    words = {"ignored": "non-stage annotations ignored", "unscored": "unscored annotations "
             "dropped", "outside the recording": "scored epochs outside the recording dropped"}
    for kind, items in by_kind.items():
        print(f"note: {dataset}: {words.get(kind, kind)}: {', '.join(items)}", file=sys.stderr)


def write_quality(rows: list, path: Path) -> None:
    from embedprobe.datasets.quality import QUALITY_COLUMNS

    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows, columns=QUALITY_COLUMNS).to_csv(path, sep="\t", index=False)


def write_index(table: pd.DataFrame, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    table.to_csv(tmp, sep="\t", index=False)
    tmp.replace(path)


def read_index(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, sep="\t", dtype={"recording": str, "subject": str,
                                              "session": str})
