"""Per-benchmark summary: a markdown table and the figures people would rather look at."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: cluster nodes have no display
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from .aggregate import METRICS, POOLED  # noqa: E402
from .metrics import confusion  # noqa: E402

STAGE_NAMES = ("W", "N1", "N2", "N3", "REM")
LOWER_IS_BETTER = {"mae"}


def summary_markdown(tables: dict[str, pd.DataFrame], task: str, benchmark: str) -> str:
    headline = METRICS[task][0]
    pooled = [f"{m} (pooled)" for m in POOLED[task]]
    columns = METRICS[task] + pooled
    lines = [f"# {benchmark}", "", f"Headline: {headline} (mean +- SD over folds).", "",
             "| dataset | model | " + " | ".join(columns) + " | folds | chosen |",
             "|---|---|" + "---|" * len(columns) + "---|---|"]
    for dataset, table in tables.items():
        for row in table.itertuples():
            scores = [f"{getattr(row, m + '_mean'):.3f} +- {getattr(row, m + '_sd'):.3f}"
                      for m in METRICS[task]]
            scores += [f"{getattr(row, m + '_pooled'):.3f}" for m in POOLED[task]]
            lines.append(f"| {dataset} | {row.model} | {' | '.join(scores)} | {row.folds} | "
                         f"{row.chosen} |")
    if task == "brain_age":
        lines += ["", "Baseline (predicting each fold's training mean age), MAE: "
                  + ", ".join(f"{d}/{r.model} {r.baseline_mae_mean:.2f}"
                              for d, t in tables.items() for r in t.itertuples())]
    return "\n".join(lines) + "\n"


def plot_scores(tables: dict[str, pd.DataFrame], task: str, benchmark: str, out: Path) -> None:
    """One bar per (dataset, model) with the SD over folds as its error bar."""
    headline = METRICS[task][0]
    rows = [(f"{d}\n{r.model}", getattr(r, headline + "_mean"), getattr(r, headline + "_sd"))
            for d, t in tables.items() for r in t.itertuples()]
    fig, ax = plt.subplots(figsize=(max(5.5, 1.4 * len(rows)), 3.5))
    ax.bar(range(len(rows)), [r[1] for r in rows], yerr=[r[2] for r in rows], capsize=4,
           color="#4C72B0")
    ax.set_xticks(range(len(rows)), [r[0] for r in rows], fontsize=8)
    arrow = "lower is better" if headline in LOWER_IS_BETTER else "higher is better"
    ax.set_ylabel(f"{headline} ({arrow})")
    ax.set_title(f"{benchmark}: {headline}, mean +- SD over folds", fontsize=10)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)


def plot_confusion(prediction_files: list[Path], title: str, out: Path) -> None:
    """The sleep-staging confusion matrix over every test fold, normalised per true stage."""
    counts = np.zeros((len(STAGE_NAMES), len(STAGE_NAMES)))
    for path in prediction_files:
        with np.load(path) as saved:
            counts += confusion(saved["y_true"], saved["y_pred"], len(STAGE_NAMES))
    share = counts / np.maximum(counts.sum(axis=1, keepdims=True), 1)
    fig, ax = plt.subplots(figsize=(4.2, 3.8))
    image = ax.imshow(share, vmin=0, vmax=1, cmap="Blues")
    for i in range(len(STAGE_NAMES)):
        for j in range(len(STAGE_NAMES)):
            ax.text(j, i, f"{share[i, j]:.2f}", ha="center", va="center", fontsize=8,
                    color="white" if share[i, j] > 0.6 else "black")
    ax.set_xticks(range(len(STAGE_NAMES)), STAGE_NAMES)
    ax.set_yticks(range(len(STAGE_NAMES)), STAGE_NAMES)
    ax.set_xlabel("predicted")
    ax.set_ylabel("true")
    ax.set_title(title, fontsize=9)
    fig.colorbar(image, ax=ax, fraction=0.046)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
