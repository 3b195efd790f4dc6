"""A recording-level pair's figure: each fold's ROC curve over its test units (binary labels),
or the confusion matrix over every fold (a multi-class label, where AUROC is n/a)."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def plot_roc(prediction_files: list[Path], title: str, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from sklearn.metrics import roc_auc_score, roc_curve

    from embedprobe.reporting.figures import plot_confusion

    folds = []
    for path in sorted(prediction_files):
        with np.load(path) as saved:
            folds.append({k: saved[k] for k in saved.files})
    names = folds[0]["class_names"] if folds else np.array([])
    if len(names) != 2:
        plot_confusion(prediction_files, [str(n) for n in names], title, out)
        return
    fig, ax = plt.subplots(figsize=(4.5, 4))
    for k, fold in enumerate(folds):
        positive = fold["y_true"] == 1
        if positive.all() or not positive.any() or fold["proba"].shape[1] != 2:
            ax.plot([], [], label=f"fold {k}: one class only")
            continue
        fpr, tpr, _ = roc_curve(positive, fold["proba"][:, 1])
        ax.step(fpr, tpr, where="post", lw=1.2,
                label=f"fold {k}: AUROC {roc_auc_score(positive, fold['proba'][:, 1]):.3f}")
    ax.plot([0, 1], [0, 1], color="grey", lw=0.8, ls="--", label="chance")
    ax.set(xlabel=f"false positive rate ({names[0]} units)",
           ylabel=f"sensitivity ({names[1]} units)", xlim=(0, 1), ylim=(0, 1.02))
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
