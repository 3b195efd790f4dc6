"""The seizure probe: recovers a planted signal, finds nothing in shuffled labels, and chooses C
and the threshold as scikit-learn's own pipeline would."""

import json

import numpy as np
import pytest

from embedprobe.core.errors import DataError
from embedprobe.probing.split import Split
from embedprobe.tasks.seizure.probe import fit_seizure_probe
from embedprobe.tasks.seizure.scoring import (
    METRICS,
    RecordingTruth,
    WindowTimeline,
    tune_threshold,
    window_labels,
)

FEATURES = 24


def patients(n_recordings: int, seed: int, strength: float = 3.0, minutes: int = 30):
    """Recordings of `minutes` with one 60 s seizure each; features are noise plus `strength`
    along one direction in the seizure windows (a linear signal a probe can find; the best
    linear AUROC is Phi(strength / sqrt(2)) = 0.983)."""
    rng = np.random.default_rng(seed)
    starts = np.arange(0, minutes * 60, 10.0)
    names, labels, truth = [], [], {}
    for k in range(n_recordings):
        onset = float(rng.integers(10, minutes * 6 - 20)) * 10 + 5  # not on a window edge
        name = f"p{seed}_{k}"
        truth[name] = RecordingTruth(minutes * 60.0, ((onset, onset + 60.0),))
        names += [name] * len(starts)
        labels.append(window_labels(starts, 10.0, truth[name].seizures))
    y = np.concatenate(labels)
    direction = np.linspace(1, -1, FEATURES) / np.linalg.norm(np.linspace(1, -1, FEATURES))
    X = rng.normal(size=(len(y), FEATURES)) + strength * y[:, None] * direction
    timeline = WindowTimeline(np.array(names), np.tile(starts, n_recordings), 10.0, truth)
    return X.astype(np.float32), y, timeline


@pytest.fixture(scope="module")
def fold():
    return patients(24, seed=1), patients(8, seed=2), patients(8, seed=3)


def test_the_probe_recovers_a_planted_linear_signal(fold):
    (X_tr, y_tr, _), (X_va, y_va, _), (X_te, y_te, timeline) = fold
    seen = []
    result = fit_seizure_probe(Split.of((X_tr, y_tr), (X_va, y_va), (X_te, y_te)), timeline,
                               progress=lambda done, total, text: seen.append((done, total)))
    assert list(result.test_metrics) == list(METRICS)
    assert result.test_metrics["auroc"] > 0.95
    assert result.test_metrics["event_auc"] > 0.8  # 0.88 (shuffled labels: 0.30)
    assert result.test_metrics["ovlp_f1"] > 0.6
    assert result.test_metrics["event_sensitivity"] > 0.8
    assert result.events["n_seizures"] == 8 and result.overlap["n_true"] == 8
    assert seen == [(k, 6) for k in range(1, 7)]  # one progress step per C of the grid
    assert result.test_pred.tolist() == (result.test_proba >= result.threshold).tolist()
    assert all(result.converged_by_C.values())
    json.dumps(result.summary())  # JSON-ready


def test_the_probe_finds_nothing_in_shuffled_labels(fold):
    (X_tr, y_tr, _), (X_va, y_va, _), (X_te, y_te, timeline) = fold
    rng = np.random.default_rng(7)
    result = fit_seizure_probe(Split.of((X_tr, rng.permutation(y_tr)),
                                        (X_va, rng.permutation(y_va)), (X_te, y_te)), timeline)
    assert abs(result.test_metrics["auroc"] - 0.5) < 0.08
    assert result.test_metrics["event_auc"] < 0.5


def test_C_and_threshold_are_what_scikit_learn_chooses(fold):
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import average_precision_score
    from sklearn.preprocessing import StandardScaler

    (X_tr, y_tr, _), (X_va, y_va, _), (X_te, y_te, timeline) = fold
    result = fit_seizure_probe(Split.of((X_tr, y_tr), (X_va, y_va), (X_te, y_te)), timeline)
    scaler = StandardScaler().fit(X_tr.astype(np.float64))
    reference = {}
    for C in (0.001, 0.01, 0.1, 1.0, 10.0, 100.0):
        model = LogisticRegression(C=C, class_weight="balanced", max_iter=500)
        model.fit(scaler.transform(X_tr.astype(np.float64)), y_tr)
        val = model.predict_proba(scaler.transform(X_va.astype(np.float64)))[:, 1]
        reference[C] = (model, val, average_precision_score(y_va, val))
    for C, (_, _, auprc) in reference.items():
        assert result.selection.scores[C] == pytest.approx(auprc, abs=1e-4)
    best = max(reference, key=lambda C: (reference[C][2], -C))
    assert result.chosen == best
    model, val, _ = reference[best]
    assert result.threshold == pytest.approx(tune_threshold(y_va, val)[0])
    test = model.predict_proba(scaler.transform(X_te.astype(np.float64)))[:, 1]
    np.testing.assert_allclose(result.test_proba, test, atol=1e-4)


def test_a_validation_split_without_seizures_takes_the_smallest_C_and_says_so(fold, capsys):
    """The reference's fit_lr_c_grid scores every C alike on a one-class validation part and
    keeps its first (smallest) C; the fold warns and records why, where it used to refuse."""
    (X_tr, y_tr, _), (X_va, y_va, _), (X_te, y_te, timeline) = fold
    result = fit_seizure_probe(Split.of((X_tr, y_tr), (X_va, np.zeros_like(y_va)), (X_te, y_te)),
                               timeline)
    assert result.chosen == 0.001
    assert set(result.selection.scores.values()) == {0.0}
    assert result.settings["validation_one_class"].startswith(
        "validation holds one class only (negative windows)")
    assert "warning: validation holds one class only" in capsys.readouterr().err
    assert result.test_metrics["auroc"] > 0.9  # the test part is still scored with that C
    with pytest.raises(DataError, match="train: seizure labels must be 0 or 1"):
        fit_seizure_probe(Split.of((X_tr, y_tr * 2), (X_va, y_va), (X_te, y_te)), timeline)
