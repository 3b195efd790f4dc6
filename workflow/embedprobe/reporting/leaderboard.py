"""One row per model, one column per benchmark headline: the view across a target's benchmarks.

Built from each benchmark's results.tsv (mean +- SD of the task's headline per dataset and
model). A pair with no finished fold shows its status, a model a benchmark did not run "-".

Then the ranks, as the reference suite's leaderboard (NeuroAtlas `results.leaderboard`) makes
them: rank within a dataset, average within a benchmark, then across benchmarks.
- A pair has a score when at least one of its folds finished (a pair on fewer folds than the
  protocol is ranked, and marked).
- A benchmark ranks only the models with a score on every one of its datasets (ranks are among
  those models); a model missing from one of them is listed, not ranked there. A benchmark none
  of whose models has a score everywhere ranks nobody and counts for no one.
- Each dataset ranks those models by the headline (1 = best; lower is better for an error such
  as MAE; ties share the mean of their places); `avg rank <benchmark>` is a model's mean over
  the benchmark's datasets; `mean rank` the mean of those over the benchmarks that ranked
  anyone, each counting once, only for a model ranked in all of them. Rows are sorted by mean
  rank; a model without one comes last.
- `normalised` (shown where a task sets a dummy): the mean over datasets, then over
  benchmarks, of the headline normalised against the dummy (reporting/chance.py).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from embedprobe.core.variants import DEFAULT_VARIANT, default_variant, split_variant
from embedprobe.reporting.aggregate import pair_status, read_results, score_text
from embedprobe.reporting.chance import CHANCE_MEANING, headline_normalised


def leaderboard_rows(tables: dict[tuple[str, str], pd.DataFrame], headlines: dict[str, str]
                     ) -> tuple[list[str], dict[str, dict[str, str]]]:
    """(columns "benchmark/dataset (headline)", model -> column -> "mean +- sd", with the folds
    when fewer than the protocol's, or the status of a pair without a score)."""
    columns, rows = [], {}
    for (benchmark, dataset), table in tables.items():
        headline = headlines[benchmark]
        column = f"{benchmark}/{dataset} ({headline})"
        columns.append(column)
        for row in table.itertuples():
            mean = getattr(row, f"{headline}_mean", np.nan)
            cell = pair_status(row)
            if np.isfinite(mean):
                cell = score_text(mean, getattr(row, f"{headline}_sd"))
                done, expected = _folds(row)
                cell += f" ({done}/{expected} folds)" if done < expected else ""
            rows.setdefault(str(row.model), {})[column] = cell
    return columns, rows


def read_tables(table_paths) -> dict[tuple[str, str], pd.DataFrame]:
    """(benchmark, dataset) -> its results.tsv (at results/<benchmark>/<dataset>/results.tsv).
    A benchmark run in variants (core/variants.py: models `<variant>/<model>`) gives one table
    per variant, keyed `<benchmark>[<variant>]`, its rows named by the model alone: one column
    per benchmark and variant, each ranked as a benchmark of its own."""
    tables = {}
    for path in table_paths:
        path = Path(path)
        benchmark, dataset = path.parent.parent.name, path.parent.name
        for variant, table in split_variants(read_results(path)).items():
            tables[(variant_column(benchmark, variant), dataset)] = table
    return tables


def split_variants(table: pd.DataFrame) -> dict[str | None, pd.DataFrame]:
    """A results table's rows by variant (None: models run as they are), each named by its
    model alone, in the variants' order of appearance."""
    parts = [split_variant(str(m)) for m in table["model"]]
    variants = list(dict.fromkeys(v for v, _ in parts))
    out = {}
    for variant in variants:
        rows = [k for k, (v, _) in enumerate(parts) if v == variant]
        out[variant] = table.iloc[rows].assign(model=[parts[k][1] for k in rows])
    return out


def variant_column(benchmark: str, variant: str | None) -> str:
    """`bci_erp[token_flattening]`: a benchmark's name in the leaderboard for one variant."""
    return benchmark if variant is None else f"{benchmark}[{variant}]"


def mean_rank_keys(keys) -> set[str]:
    """The benchmark keys (variant_column) the mean rank counts, each benchmark once: one run as
    its models are, a variant benchmark by its default variant or, where the run selected
    other variants only (the `variants` setting), by the first of them."""
    by_variant: dict[str, dict[str, str]] = {}  # benchmark -> variant -> key
    for key in keys:
        # a benchmark run as its models are counts as its default variant would
        variant = column_variant(key) or DEFAULT_VARIANT
        by_variant.setdefault(column_benchmark(key), {})[variant] = key
    return {variants[default_variant(list(variants))] for variants in by_variant.values()}


def column_benchmark(column: str) -> str:
    """The benchmark a leaderboard key (variant_column) belongs to."""
    return column.split("[", 1)[0]


def column_variant(column: str) -> str | None:
    """The variant of a leaderboard key (variant_column); None for a benchmark run as it is."""
    return column.partition("[")[2].rstrip("]") or None


def rank_frame(tables: dict[tuple[str, str], pd.DataFrame], tasks: dict,
               counted: set[str] | None = None) -> pd.DataFrame:
    """One row per model: `rank <benchmark>/<dataset>` per table, `avg rank <benchmark>` per
    benchmark, `mean rank` and `normalised` (module docstring); NaN where the model is not
    ranked. Sorted by mean rank. `counted`: the tables' mean_rank_keys, where the caller has
    them."""
    per_dataset, per_benchmark, normalised = {}, {}, {}
    for benchmark, datasets in _scores_by_benchmark(tables, tasks).items():
        task = tasks[benchmark]
        ranked = sorted(set.intersection(*(set(s.index) for s in datasets.values())))
        means = pd.DataFrame({d: s.reindex(ranked) for d, s in datasets.items()}, index=ranked)
        ranks = means.rank(ascending=task.lower_is_better, method="average")  # per dataset
        per_dataset |= {f"rank {benchmark}/{d}": ranks[d] for d in datasets}
        if ranked:
            per_benchmark[benchmark] = ranks.mean(axis=1)
            normalised[benchmark] = _normalised(task, means).mean(axis=1)
    frame = pd.DataFrame(per_dataset)
    for benchmark, ranks in per_benchmark.items():
        frame[f"avg rank {benchmark}"] = ranks
    # a BCI benchmark counts once, by its default variant (the reference's headline); its
    # other variants are ranked beside it (a family without tokens has no flattened ones)
    if counted is None:
        counted = mean_rank_keys(b for b, _ in tables)
    averages = [f"avg rank {b}" for b in per_benchmark if b in counted]
    # skipna=False: a model missing from a ranked benchmark has no mean rank
    frame["mean rank"] = frame[averages].mean(axis=1, skipna=False) if averages else np.nan
    frame["normalised"] = _mean_normalised(normalised, frame["mean rank"])
    models = sorted({str(row.model) for t in tables.values() for row in t.itertuples()})
    frame = frame.reindex(models)
    order = sorted(models, key=lambda m: (np.isnan(frame.at[m, "mean rank"]),
                                          frame.at[m, "mean rank"], m))
    return frame.loc[order]


def leaderboard_markdown(target: str, tables: dict[tuple[str, str], pd.DataFrame],
                         tasks: dict) -> str:
    """The target's leaderboard from its `tables` (read_tables); `tasks` maps each of their
    benchmarks to its task (base.Task: the headline metric, whether lower is better, whether
    its chance differs by dataset, its dummy)."""
    headlines = {b: tasks[b].metrics[0] for b, _ in tables}
    columns, rows = leaderboard_rows(tables, headlines)
    counted = mean_rank_keys(b for b, _ in tables)
    ranks = rank_frame(tables, tasks, counted)
    if all(tasks[b].dummy is None for b, _ in tables):
        ranks = ranks.drop(columns="normalised")
    lines = [f"# Leaderboard: {target}", "",
             "Each benchmark's headline, mean +- SD over its folds (arrows: "
             + ", ".join(f"{b} {'lower' if tasks[b].lower_is_better else 'higher'}"
                         " is better" for b in dict.fromkeys(b for b, _ in tables)) + "). "
             "Ranks: 1 is best on a dataset among the models with a score on every dataset of "
             "the benchmark (ties share the mean of their places); avg rank: over a "
             "benchmark's datasets; mean rank: over the benchmarks (a benchmark run in "
             "variants by its default variant), for a model ranked in "
             "each.", "",
             "| model | " + " | ".join([*columns, *ranks.columns]) + " |",
             "|---|" + "---|" * (len(columns) + len(ranks.columns))]
    for model in ranks.index:
        cells = [rows.get(model, {}).get(c, "-") for c in columns]
        cells += [_rank(ranks.at[model, c]) for c in ranks.columns]
        lines.append(f"| {model} | " + " | ".join(cells) + " |")
    notes = [*_fewer_folds(tables, tasks, ranks), *_not_ranked(tables, tasks, ranks, counted),
             *_chance_levels(tables, tasks)]
    return "\n".join([*lines, *([""] if notes else []), *notes]) + "\n"


# ------------------------------------------------------------------------------ the ranks


def _scores_by_benchmark(tables, tasks) -> dict[str, dict[str, pd.Series]]:
    """benchmark -> dataset -> model -> headline mean, for the pairs with a score."""
    scores: dict[str, dict[str, pd.Series]] = {}
    for (benchmark, dataset), table in tables.items():
        headline = tasks[benchmark].metrics[0]
        means = {str(row.model): getattr(row, f"{headline}_mean", np.nan)
                 for row in table.itertuples()}
        scores.setdefault(benchmark, {})[dataset] = pd.Series(
            {m: v for m, v in means.items() if np.isfinite(v)}, dtype=float)
    return scores


def _normalised(task, means: pd.DataFrame) -> pd.DataFrame:
    """Each headline mean normalised against the task's dummy (NaN without one)."""
    values = [[headline_normalised(task, v) for v in row] for row in means.to_numpy()]
    return pd.DataFrame(values, index=means.index, columns=means.columns, dtype=float)


def _mean_normalised(per_benchmark: dict[str, pd.Series], mean_rank: pd.Series) -> pd.Series:
    """Over the benchmarks that have it, for a model with a mean rank."""
    if not per_benchmark:
        return pd.Series(np.nan, index=mean_rank.index)
    mean = pd.DataFrame(per_benchmark).reindex(mean_rank.index).mean(axis=1)
    return mean.where(mean_rank.notna())


def _folds(row) -> tuple[int, int]:
    done, expected = (int(x) for x in str(row.folds).split("/"))
    return done, expected


# ------------------------------------------------------------------------- the notes


def _fewer_folds(tables, tasks, ranks: pd.DataFrame) -> list[str]:
    marked = []
    for (benchmark, dataset), table in tables.items():
        column = f"rank {benchmark}/{dataset}"
        for row in table.itertuples():
            done, expected = _folds(row)
            if done < expected and np.isfinite(ranks.at[str(row.model), column]):
                marked.append(f"{row.model} on {benchmark}/{dataset} ({done}/{expected} folds)")
    return [f"Ranked on fewer folds than the protocol: {', '.join(marked)}."] if marked else []


def _not_ranked(tables, tasks, ranks: pd.DataFrame, counted: set[str]) -> list[str]:
    """Which benchmark leaves a model out (no score on one of its datasets), and which
    benchmarks rank nobody; `counted`: the benchmark keys the mean rank counts."""
    benchmarks = list(dict.fromkeys(b for b, _ in tables))
    ranked = [b for b in benchmarks if f"avg rank {b}" in ranks.columns and b in counted]
    lines = []
    for model in ranks.index:
        missing = [b for b in ranked if not np.isfinite(ranks.at[model, f"avg rank {b}"])]
        if missing:
            lines.append(f"Not ranked: {model} (no score on every dataset of "
                         f"{', '.join(missing)}).")
    # a variant the mean rank does not count still ranks its models
    nobody = [b for b in benchmarks if f"avg rank {b}" not in ranks.columns]
    if nobody:
        lines.append(f"Ranks nobody (no model has a score on each of its datasets): "
                     f"{', '.join(nobody)}.")
    return lines


def _chance_levels(tables, tasks) -> list[str]:
    """The chance level of each dataset whose task's chance differs by dataset (1/C, the
    positive share), grouped by what it is."""
    levels: dict[str, list[str]] = {}
    for (benchmark, dataset), table in tables.items():
        chance = pd.to_numeric(table.get("chance", pd.Series(dtype=float)), errors="coerce")
        if tasks[benchmark].draws_chance and chance.notna().any():
            meaning = CHANCE_MEANING.get(tasks[benchmark].metrics[0], "a guess's score")
            levels.setdefault(meaning, []).append(f"{benchmark}/{dataset} {chance.max():.3f}")
    return [f"Chance level of the headline ({meaning}): {', '.join(found)}."
            for meaning, found in levels.items()]


def _rank(value) -> str:
    return "-" if not np.isfinite(value) else f"{value:.2f}".rstrip("0").rstrip(".")
