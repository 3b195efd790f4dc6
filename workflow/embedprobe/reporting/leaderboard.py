"""One row per model, one column per benchmark headline: the view across a target's benchmarks.

Built from each benchmark's results.tsv (mean +- SD of the task's headline per dataset and
model). A model a benchmark did not run, or a pair that did not finish, shows "-".

Then the ranks: each dataset ranks the models that finished on it by the headline (1 = best;
lower is better for an error such as MAE; ties share the mean of their places), a benchmark
averages a model's ranks over its datasets, and the mean rank averages those over the target's
benchmarks (each benchmark counts once, however many datasets it has). Rows are sorted by the
mean rank; a model with no rank comes last.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from embedprobe.reporting.aggregate import pair_status, read_results


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
        tables[(path.parent.parent.name, path.parent.name)] = read_results(path)
    return tables


def rank_frame(tables: dict[tuple[str, str], pd.DataFrame], tasks: dict) -> pd.DataFrame:
    """One row per model: `rank <benchmark>/<dataset>` per table, `avg rank <benchmark>` per
    benchmark, `mean rank`; NaN where the model has no finished pair. Sorted by mean rank."""
    per_dataset, per_benchmark = {}, {}
    for (benchmark, dataset), table in tables.items():
        task = tasks[benchmark]
        headline = task.metrics[0]
        scores = {row.model: getattr(row, f"{headline}_mean", np.nan)
                  for row in table.itertuples() if pair_status(row) == "ok"}
        scores = pd.Series({m: v for m, v in scores.items() if np.isfinite(v)}, dtype=float)
        ranks = scores.rank(ascending=task.lower_is_better, method="average")
        per_dataset[f"rank {benchmark}/{dataset}"] = ranks
        per_benchmark.setdefault(benchmark, []).append(ranks)
    frame = pd.DataFrame(per_dataset)
    for benchmark, ranks in per_benchmark.items():
        frame[f"avg rank {benchmark}"] = pd.concat(ranks, axis=1).mean(axis=1)
    averages = [f"avg rank {b}" for b in per_benchmark]
    frame["mean rank"] = frame[averages].mean(axis=1) if averages else np.nan
    models = sorted({str(row.model) for t in tables.values() for row in t.itertuples()})
    frame = frame.reindex(models)
    order = sorted(models, key=lambda m: (np.isnan(frame.at[m, "mean rank"]),
                                          frame.at[m, "mean rank"], m))
    return frame.loc[order]


def leaderboard_markdown(target: str, tables: dict[tuple[str, str], pd.DataFrame],
                         tasks: dict) -> str:
    """The target's leaderboard from its `tables` (read_tables); `tasks` maps each of their
    benchmarks to its task (base.Task: the headline metric and whether lower is better)."""
    headlines = {b: tasks[b].metrics[0] for b, _ in tables}
    columns, rows = leaderboard_rows(tables, headlines)
    ranks = rank_frame(tables, tasks)
    lines = [f"# Leaderboard: {target}", "",
             "Each benchmark's headline, mean +- SD over its folds (arrows: "
             + ", ".join(f"{b} {'lower' if tasks[b].lower_is_better else 'higher'}"
                         " is better" for b in dict.fromkeys(b for b, _ in tables)) + "). "
             "Ranks: 1 is best on a dataset (ties share the mean of their places); avg rank: "
             "over a benchmark's datasets; mean rank: over the benchmarks.", "",
             "| model | " + " | ".join([*columns, *ranks.columns]) + " |",
             "|---|" + "---|" * (len(columns) + len(ranks.columns))]
    for model in ranks.index:
        cells = [rows.get(model, {}).get(c, "-") for c in columns]
        cells += [_rank(ranks.at[model, c]) for c in ranks.columns]
        lines.append(f"| {model} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _rank(value) -> str:
    return "-" if not np.isfinite(value) else f"{value:.2f}".rstrip("0").rstrip(".")
