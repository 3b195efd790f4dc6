"""One row per model, one column per benchmark headline: the view across a target's benchmarks.

Built from each benchmark's results.tsv (mean +- SD of the task's headline per dataset and
model). A model a benchmark did not run, or a pair that did not finish, shows "-".
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from embedprobe.reporting.aggregate import pair_status


def leaderboard_rows(tables: dict[tuple[str, str], pd.DataFrame], headlines: dict[str, str]
                     ) -> tuple[list[str], dict[str, dict[str, str]]]:
    """(columns "benchmark/dataset (headline)", model -> column -> "mean +- sd")."""
    columns, rows = [], {}
    for (benchmark, dataset), table in tables.items():
        headline = headlines[benchmark]
        column = f"{benchmark}/{dataset} ({headline})"
        columns.append(column)
        for row in table.itertuples():
            mean = getattr(row, f"{headline}_mean", np.nan)
            ok = pair_status(row) == "ok" and np.isfinite(mean)
            rows.setdefault(row.model, {})[column] = (
                f"{mean:.3f} +- {getattr(row, f'{headline}_sd'):.3f}" if ok
                else pair_status(row))
    return columns, rows


def read_tables(table_paths) -> dict[tuple[str, str], pd.DataFrame]:
    """(benchmark, dataset) -> its results.tsv (at results/<benchmark>/<dataset>/results.tsv)."""
    tables = {}
    for path in table_paths:
        path = Path(path)
        tables[(path.parent.parent.name, path.parent.name)] = pd.read_csv(path, sep="\t")
    return tables


def leaderboard_markdown(target: str, tables: dict[tuple[str, str], pd.DataFrame],
                         tasks: dict) -> str:
    """The target's leaderboard from its `tables` (read_tables); `tasks` maps each of their
    benchmarks to its task (base.Task: the headline metric and whether lower is better)."""
    headlines = {b: tasks[b].metrics[0] for b, _ in tables}
    columns, rows = leaderboard_rows(tables, headlines)
    lines = [f"# Leaderboard: {target}", "",
             "Each benchmark's headline, mean +- SD over its folds (arrows: "
             + ", ".join(f"{b} {'lower' if tasks[b].lower_is_better else 'higher'}"
                         " is better" for b in dict.fromkeys(b for b, _ in tables)) + ").", "",
             "| model | " + " | ".join(columns) + " |",
             "|---|" + "---|" * len(columns)]
    for model in sorted(rows):
        lines.append(f"| {model} | "
                     + " | ".join(rows[model].get(c, "-") for c in columns) + " |")
    return "\n".join(lines) + "\n"
