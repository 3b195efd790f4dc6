"""Per-benchmark summary: the markdown table (scores, what did not run, flagged recordings).

Its figures are in reporting/figures.py.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from embedprobe.reporting.aggregate import pair_status, score_text


def summary_markdown(tables: dict[str, pd.DataFrame], task, benchmark: str,
                     quality: pd.DataFrame | None = None) -> str:
    """The benchmark's table (a pair that did not finish: its status instead of scores), then
    what did not run (status, reason, fix) and the recordings the data-quality scan flagged."""
    headline = task.metrics[0]
    extra = headline_extras(task)
    columns = [*task.metrics, *(f"{m} (pooled)" for m in task.pooled), *extra]
    not_run = [(d, r) for d, t in tables.items() for r in t.itertuples()
               if pair_status(r) != "ok"]
    lines = [f"# {benchmark}", ""]
    if not_run:
        pairs = ", ".join(f"{d}/{r.model} {pair_status(r)}" for d, r in not_run)
        lines += [f"**Warning: {len(not_run)} pair(s) did not finish: {pairs}.** Their rows "
                  "show the folds that did; see \"Not run\" below.", ""]
    lines += [f"Headline: {headline} ({task.headline_over_folds}).", "",
              "| dataset | model | " + " | ".join(columns) + " | folds | chosen | status |",
              "|---|---|" + "---|" * len(columns) + "---|---|---|"]
    for dataset, table in tables.items():
        for row in table.itertuples():
            scores = [score_text(getattr(row, m + "_mean"), getattr(row, m + "_sd"))
                      for m in task.metrics]
            scores += [score_text(getattr(row, m + "_pooled", np.nan)) for m in task.pooled]
            scores += [score_text(getattr(row, c, np.nan)) for c in extra]
            chosen = _chosen(row.chosen)
            lines.append(f"| {dataset} | {row.model} | {' | '.join(scores)} | {row.folds} | "
                         f"{chosen} | {pair_status(row)} |")
    lines += task.summary_notes(tables)
    if not_run:
        lines += ["", "## Not run", "", "| dataset | model | status | folds | reason | fix |",
                  "|---|---|---|---|---|---|"]
        lines += [f"| {d} | {r.model} | {pair_status(r)} | {r.folds} | {r.reason} | "
                  f"{r.fix if isinstance(r.fix, str) else ''} |" for d, r in not_run]
    if quality is not None and len(quality):
        lines += ["", "## Recordings flagged by the data-quality scan", "",
                  "| dataset | recording | channel | problem | excluded | detail |",
                  "|---|---|---|---|---|---|"]
        lines += [f"| {q.dataset} | {q.recording} | {q.channel} | {q.problem} | "
                  f"{'yes' if _true(q.excluded) else 'no (exclude_bad_recordings is false)'} | "
                  f"{q.detail} |" for q in quality.itertuples()]
    return "\n".join(lines) + "\n"


def headline_extras(task) -> list[str]:
    """The results.tsv columns shown beside the scores, as the reference shows them: `chance`
    where it differs by dataset (1/C), `normalised` where the task sets a dummy."""
    return [c for c, shown in (("chance", task.draws_chance),
                               ("normalised", task.dummy is not None)) if shown]


def read_quality(paths) -> pd.DataFrame | None:
    """Index's data-quality tables (`<dataset>.quality.tsv`) as one, with a dataset column."""
    frames = [pd.read_csv(path, sep="\t").assign(dataset=Path(path).name.split(".")[0])
              for path in paths]
    return pd.concat(frames, ignore_index=True) if frames else None


def _chosen(value) -> str:
    """The chosen values per fold; one fold's (a run of selected folds) is read back as a
    number."""
    if isinstance(value, str):
        return value
    return "-" if value is None or not np.isfinite(value) else f"{value:g}"


def _true(value) -> bool:
    return str(value).lower() in ("true", "1", "yes")
