"""The seizure figures draw what score_fold saved, per fold, into PNG files."""

import matplotlib.image
import numpy as np

from embedprobe.tasks.seizure.figures import plot_roc_pr, plot_sensitivity_vs_fa
from embedprobe.tasks.seizure.scoring import (
    RecordingTruth,
    WindowTimeline,
    score_fold,
    window_labels,
)


def fold_curves(seed: int, seizures=((100.0, 160.0), (2000.0, 2100.0))) -> dict:
    starts = np.arange(0, 3600, 10.0)
    timeline = WindowTimeline(np.array(["r"] * 360), starts, 10.0,
                              {"r": RecordingTruth(3600.0, tuple(seizures))})
    y = window_labels(starts, 10.0, seizures)
    proba = np.clip(0.5 * y + np.random.default_rng(seed).random(360) * 0.7, 0, 1)
    return score_fold(y, proba, 0.5, timeline).curves


def test_figures_are_written_for_every_fold(tmp_path):
    folds = {0: fold_curves(0), 1: fold_curves(1), 2: fold_curves(2, seizures=())}
    # as the lead saves and reloads them: through an .npz
    np.savez(tmp_path / "fold0.npz", **folds[0])
    with np.load(tmp_path / "fold0.npz") as saved:
        folds[0] = dict(saved)
    plot_roc_pr(folds, "siena / biot_pretrained", tmp_path / "roc_pr.png")
    plot_sensitivity_vs_fa(folds, "siena / biot_pretrained", tmp_path / "sens_fa.png")
    for name, width in (("roc_pr.png", 9 * 120), ("sens_fa.png", 6 * 120)):
        image = matplotlib.image.imread(tmp_path / name)
        assert image.shape[1] == width  # inches x dpi
        assert image[..., :3].std() > 0.05  # something is drawn
