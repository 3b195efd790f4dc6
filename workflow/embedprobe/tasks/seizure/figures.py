"""Seizure-detection figures of one (dataset, model): ROC and precision-recall curves per fold, and
event sensitivity against false alarms per 24 h per fold.

Both read the `curves` dict scoring.score_fold returns for each fold (as saved in the
fold's .npz): roc_fpr/roc_tpr, pr_recall/pr_precision, prevalence, auroc, auprc for the first;
event_fa_per_24h/event_sensitivity (one point per swept threshold), fa_range_per_24h and
event_auc for the second. A fold whose test windows hold one class has no ROC or PR curve and
is left out of that figure (its legend says so).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: cluster nodes have no display
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from embedprobe.tasks.seizure.scoring import sensitivity_envelope  # noqa: E402

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
    """Event sensitivity against false alarms per 24 h, log axis: each fold's swept thresholds
    (dots) and its budget curve S(f) (steps), the integrated range between dotted lines."""
    fig, ax = plt.subplots(figsize=(6, 4))
    colours = plt.get_cmap("tab10")
    ranges = [np.asarray(c["fa_range_per_24h"], dtype=float) for c in folds.values()]
    lo = min((r[0] for r in ranges), default=2.4)
    hi = max((r[1] for r in ranges), default=2400.0)
    left = lo / 3  # where a point with no false alarm is drawn (0 has no place on a log axis)
    for k, (fold, curves) in enumerate(sorted(folds.items())):
        colour = colours(k % 10)
        fa = np.asarray(curves["event_fa_per_24h"], dtype=float)
        sens = np.asarray(curves["event_sensitivity"], dtype=float)
        if not np.isfinite(sens).all() or fa.size == 0:
            ax.plot([], [], color=colour, label=f"fold {fold}: no seizure in the test windows")
            continue
        steps, best = sensitivity_envelope(fa, sens)
        x = np.r_[np.maximum(steps, left), max(hi, steps.max()) * 1.5]
        ax.step(x, np.r_[best, best[-1]], where="post", color=colour, lw=1.3,
                label=f"fold {fold}: area {float(curves['event_auc']):.3f}")
        ax.scatter(np.maximum(fa, left), sens, color=colour, s=6, alpha=0.4)
    for edge in (lo, hi):
        ax.axvline(edge, color="grey", lw=0.8, ls=":")
    ax.set_xscale("log")
    ax.set(xlabel="false alarms per 24 h (SzCORE event scoring; left edge: none)",
           ylabel="event sensitivity",
           ylim=(-0.02, 1.02), title=title)
    ax.legend(fontsize=7, loc="lower right")
    _save(fig, out)
