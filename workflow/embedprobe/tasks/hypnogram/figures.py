"""A hypnogram pair's figure: each feature's predicted value against the scored one, one point
per test recording of every fold, with the feature's Pearson r."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def plot_features(prediction_files: list[Path], title: str, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from embedprobe.tasks.hypnogram.features import FEATURES, feature_agreement

    scored, predicted = [], []
    for path in sorted(prediction_files):
        with np.load(path) as saved:
            scored.append(saved["scored"])
            predicted.append(saved["predicted"])
    scored = np.concatenate(scored) if scored else np.zeros((0, len(FEATURES)))
    predicted = np.concatenate(predicted) if predicted else np.zeros((0, len(FEATURES)))
    agreement = feature_agreement(scored, predicted)
    columns = 6
    rows = -(-len(FEATURES) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(2.1 * columns, 1.9 * rows))
    for k, ax in enumerate(axes.ravel()):
        if k >= len(FEATURES):
            ax.axis("off")
            continue
        name = FEATURES[k]
        ax.scatter(scored[:, k], predicted[:, k], s=8, alpha=0.7)
        finite = np.concatenate([scored[:, k], predicted[:, k]])
        finite = finite[np.isfinite(finite)]
        if len(finite):
            low, high = finite.min(), finite.max()
            ax.plot([low, high], [low, high], color="grey", lw=0.6, ls="--")
        ax.set_title(f"{name}  r {agreement[name]['pearson_r']:.2f}", fontsize=7)
        ax.tick_params(labelsize=5)
    fig.supxlabel("scored hypnogram", fontsize=8)
    fig.supylabel("predicted hypnogram", fontsize=8)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
