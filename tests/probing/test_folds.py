import numpy as np
import pytest

from embedprobe.core.errors import UsageError
from embedprobe.probing.folds import fold_split, subject_groups


def test_groups_are_deterministic_balanced_and_per_subject():
    subjects = [f"SC{i:02d}" for i in range(23) for _ in range(2)]  # two nights each
    groups = subject_groups(subjects, n_folds=5, seed=42)
    assert groups == subject_groups(list(reversed(subjects)), n_folds=5, seed=42)
    sizes = np.bincount(list(groups.values()), minlength=5)
    assert sizes.max() - sizes.min() <= 1 and sizes.sum() == 23
    assert subject_groups(subjects, 5, seed=1) != groups


def test_fold_layout_test_k_val_k_plus_1_train_rest():
    subjects = np.array([f"S{i}" for i in range(10)]).repeat(3)
    groups = subject_groups(subjects, 5, 42)
    per_window = np.array([groups[s] for s in subjects])
    for k in range(5):
        masks = fold_split(per_window, k, 5)
        assert (per_window[masks["test"]] == k).all()
        assert (per_window[masks["val"]] == (k + 1) % 5).all()
        assert set(per_window[masks["train"]]) == set(range(5)) - {k, (k + 1) % 5}
        parts = [set(subjects[masks[p]]) for p in ("train", "val", "test")]
        assert not (parts[0] & parts[1] or parts[0] & parts[2] or parts[1] & parts[2])
        assert masks["train"].sum() + masks["val"].sum() + masks["test"].sum() == len(subjects)


def test_too_few_subjects_is_refused():
    with pytest.raises(UsageError, match="3 subjects cannot fill 5 folds"):
        subject_groups(["a", "b", "c"], 5, 42)
