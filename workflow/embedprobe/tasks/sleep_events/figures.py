"""An event pair's figure: each fold's precision-recall curve of the headline probe over its
test epochs, with the fold's positive share (a guess's AUPRC) marked."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def plot_precision_recall(prediction_files: list[Path], title: str, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from sklearn.metrics import average_precision_score, precision_recall_curve

    fig, ax = plt.subplots(figsize=(4.5, 4))
    for path in sorted(prediction_files):
        fold = Path(path).stem.removeprefix("fold")
        with np.load(path) as saved:
            y, proba = saved["y_true"], saved["proba"]
        if not 0 < y.sum() < len(y):
            ax.plot([], [], label=f"fold {fold}: one class only")
            continue
        precision, recall, _ = precision_recall_curve(y, proba)
        line, = ax.step(recall, precision, where="post", lw=1.2,
                        label=f"fold {fold}: AUPRC {average_precision_score(y, proba):.3f}")
        ax.axhline(y.mean(), color=line.get_color(), lw=0.6, ls=":")
    ax.set(xlabel="recall (positive epochs found)", ylabel="precision",
           xlim=(0, 1), ylim=(0, 1.02))
    ax.set_title(title + "\n(dotted: each fold's positive share, a guess)", fontsize=8)
    ax.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
