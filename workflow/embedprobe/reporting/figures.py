"""Per-benchmark figures people would rather look at than tables: scores, confusion matrices."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: cluster nodes have no display
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from embedprobe.probing.metrics import confusion  # noqa: E402


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
    if task.draws_chance:  # the chance level under each bar (1/C, the positive share)
        chance = [_chance(r) for t in tables.values()
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


def _chance(row) -> float:
    """results.tsv's chance column; 1 / n_classes in a table written before it had one."""
    chance = getattr(row, "chance", np.nan)
    return chance if np.isfinite(chance) else 1 / getattr(row, "n_classes", np.nan)


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
