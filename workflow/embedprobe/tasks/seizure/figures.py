"""Seizure-detection figures of one (dataset, model): ROC and precision-recall curves per fold, and
event sensitivity against false alarms per hour per fold with the folds' median curve.

Both read the `curves` dict scoring.score_fold returns for each fold (as saved in the
fold's .npz): roc_fpr/roc_tpr, pr_recall/pr_precision, prevalence, auroc, auprc for the first;
event_fa_grid/event_curve (the fold curve), event_fa_per_hour/event_sensitivity (one point per
swept threshold), event_auc_range and event_auc for the second. A fold whose test windows hold
one class has no ROC or PR curve and is left out of that figure (its legend says so).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: cluster nodes have no display
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from embedprobe.tasks.seizure.scoring import (  # noqa: E402
    AUC_RANGE_PER_HOUR,
    curve_auc,
    median_curve,
)

Curves = Mapping[str, np.ndarray]


def _save(fig, out: Path) -> None:
    fig.tight_layout()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)


def plot_roc_pr(folds: Mapping[int, Curves], title: str, out: Path) -> None:
    """One figure: ROC curves of every fold (left), precision-recall curves (right)."""
    fig, (roc, pr) = plt.subplots(1, 2, figsize=(9, 4))
    colours = plt.get_cmap("tab10")
    for k, (fold, curves) in enumerate(sorted(folds.items())):
        colour = colours(k % 10)
        if "roc_fpr" not in curves:
            roc.plot([], [], color=colour, label=f"fold {fold}: one class only")
            continue
        roc.plot(curves["roc_fpr"], curves["roc_tpr"], color=colour, lw=1.2,
                 label=f"fold {fold}: AUROC {float(curves['auroc']):.3f}")
        pr.step(curves["pr_recall"], curves["pr_precision"], where="post", color=colour, lw=1.2,
                label=f"fold {fold}: AUPRC {float(curves['auprc']):.3f}")
        pr.axhline(float(curves["prevalence"]), color=colour, lw=0.8, ls=":")
    roc.plot([0, 1], [0, 1], color="grey", lw=0.8, ls="--", label="chance")
    roc.set(xlabel="false positive rate (windows)", ylabel="sensitivity (windows)",
            xlim=(0, 1), ylim=(0, 1.02), title="ROC")
    pr.set(xlabel="recall (windows)", ylabel="precision", xlim=(0, 1), ylim=(0, 1.02),
           title="precision-recall (dotted: prevalence)")
    for ax in (roc, pr):
        ax.legend(fontsize=7, loc="lower right" if ax is roc else "upper right")
    fig.suptitle(title, fontsize=10)
    _save(fig, out)


def plot_sensitivity_vs_fa(folds: Mapping[int, Curves], title: str, out: Path) -> None:
    """Event sensitivity against false alarms per hour, log axis: each fold's curve on the FA/h
    grid (thin; its sweep points as dots), the NaN-median of the fold curves whose area is the
    headline (thick black), the integrated range between dotted lines."""
    fig, ax = plt.subplots(figsize=(6, 4))
    colours = plt.get_cmap("tab10")
    grids = [np.asarray(c["event_fa_grid"], dtype=float) for c in folds.values()]
    lo, hi = (np.asarray(next(iter(folds.values()))["event_auc_range"], dtype=float)
              if folds else AUC_RANGE_PER_HOUR)
    left = grids[0][0] / 2 if grids else lo / 20  # where no false alarm is drawn (log axis)
    curves = []
    for k, (fold, c) in enumerate(sorted(folds.items())):
        colour = colours(k % 10)
        curve = np.asarray(c["event_curve"], dtype=float)
        if not np.isfinite(curve).any():
            ax.plot([], [], color=colour, label=f"fold {fold}: no curve (no seizure, or no "
                                                "false alarm to trade)")
            continue
        curves.append(curve)
        ax.plot(c["event_fa_grid"], curve, color=colour, lw=1.0,
                label=f"fold {fold}: area {float(c['event_auc']):.3f}")
        fa = np.asarray(c["event_fa_per_hour"], dtype=float)
        ax.scatter(np.maximum(fa, left), c["event_sensitivity"], color=colour, s=6, alpha=0.4)
    if curves:
        median = median_curve(curves)
        ax.plot(grids[0], median, color="black", lw=2.2,
                label=f"median of folds: area {curve_auc(median, grids[0], (lo, hi)):.3f}")
    for edge in (lo, hi):
        ax.axvline(edge, color="grey", lw=0.8, ls=":")
    ax.set_xscale("log")
    ax.set(xlabel="false alarms per hour (any-overlap events; left edge: none)",
           ylabel="event sensitivity", ylim=(-0.02, 1.02), title=title)
    ax.legend(fontsize=7, loc="lower right")
    _save(fig, out)
