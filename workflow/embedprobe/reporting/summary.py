"""Per-benchmark summary: a markdown table and the figures people would rather look at."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: cluster nodes have no display
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from embedprobe.probing.metrics import confusion  # noqa: E402
from embedprobe.reporting.aggregate import pair_status  # noqa: E402


def summary_markdown(tables: dict[str, pd.DataFrame], task, benchmark: str,
                     quality: pd.DataFrame | None = None) -> str:
    """The benchmark's table (a pair that did not finish: its status instead of scores), then
    what did not run (status, reason, fix) and the recordings the data-quality scan flagged."""
    headline = task.metrics[0]
    columns = [*task.metrics, *(f"{m} (pooled)" for m in task.pooled)]
    not_run = [(d, r) for d, t in tables.items() for r in t.itertuples()
               if pair_status(r) != "ok"]
    lines = [f"# {benchmark}", ""]
    if not_run:
        pairs = ", ".join(f"{d}/{r.model} {pair_status(r)}" for d, r in not_run)
        lines += [f"**Warning: {len(not_run)} pair(s) did not finish: {pairs}.** Their rows "
                  "show the folds that did; see \"Not run\" below.", ""]
    lines += [f"Headline: {headline} (mean +- SD over folds).", "",
              "| dataset | model | " + " | ".join(columns) + " | folds | chosen | status |",
              "|---|---|" + "---|" * len(columns) + "---|---|---|"]
    for dataset, table in tables.items():
        for row in table.itertuples():
            scores = [_score(getattr(row, m + "_mean"), getattr(row, m + "_sd"))
                      for m in task.metrics]
            scores += [_score(getattr(row, m + "_pooled", np.nan)) for m in task.pooled]
            chosen = row.chosen if isinstance(row.chosen, str) else "-"
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


def read_quality(paths) -> pd.DataFrame | None:
    """Index's data-quality tables (`<dataset>.quality.tsv`) as one, with a dataset column."""
    frames = [pd.read_csv(path, sep="\t").assign(dataset=Path(path).name.split(".")[0])
              for path in paths]
    return pd.concat(frames, ignore_index=True) if frames else None


def _score(mean, sd=None) -> str:
    if mean is None or not np.isfinite(mean):
        return "-"
    return f"{mean:.3f}" if sd is None else f"{mean:.3f} +- {sd:.3f}"


def _true(value) -> bool:
    return str(value).lower() in ("true", "1", "yes")


def plot_scores(tables: dict[str, pd.DataFrame], task, benchmark: str, out: Path) -> None:
    """One bar per (dataset, model) with the SD over folds as its error bar."""
    headline = task.metrics[0]
    rows = [(f"{d}\n{r.model}", getattr(r, headline + "_mean"), getattr(r, headline + "_sd"))
            for d, t in tables.items() for r in t.itertuples()
            if np.isfinite(getattr(r, headline + "_mean"))]
    fig, ax = plt.subplots(figsize=(max(5.5, 1.4 * len(rows)), 3.5))
    ax.bar(range(len(rows)), [r[1] for r in rows], yerr=[r[2] for r in rows], capsize=4,
           color="#4C72B0")
    ax.set_xticks(range(len(rows)), [r[0] for r in rows], fontsize=8)
    if task.draws_chance:  # 1 / number of classes under each bar
        chance = [1 / getattr(r, "n_classes", np.nan) for t in tables.values()
                  for r in t.itertuples() if np.isfinite(getattr(r, headline + "_mean"))]
        for k, level in enumerate(chance):
            ax.hlines(level, k - 0.45, k + 0.45, colors="#C44E52", linestyles="--",
                      label="chance" if k == 0 else None)
        if chance:
            ax.legend(fontsize=8)
    arrow = "lower is better" if task.lower_is_better else "higher is better"
    ax.set_ylabel(f"{headline} ({arrow})")
    ax.set_title(f"{benchmark}: {headline}, mean +- SD over folds", fontsize=10)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)


def plot_confusion(prediction_files: list[Path], classes, title: str, out: Path) -> None:
    """The confusion matrix over every test fold, normalised per true class."""
    n = len(classes)
    counts = np.zeros((n, n))
    for path in prediction_files:
        with np.load(path) as saved:
            counts += confusion(saved["y_true"], saved["y_pred"], n)
    share = counts / np.maximum(counts.sum(axis=1, keepdims=True), 1)
    fig, ax = plt.subplots(figsize=(4.2, 3.8))
    image = ax.imshow(share, vmin=0, vmax=1, cmap="Blues")
    for i in range(n):
        for j in range(n):
            ax.text(j, i, f"{share[i, j]:.2f}", ha="center", va="center", fontsize=8,
                    color="white" if share[i, j] > 0.6 else "black")
    ax.set_xticks(range(n), classes)
    ax.set_yticks(range(n), classes)
    ax.set_xlabel("predicted")
    ax.set_ylabel("true")
    ax.set_title(title, fontsize=9)
    fig.colorbar(image, ax=ax, fraction=0.046)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
