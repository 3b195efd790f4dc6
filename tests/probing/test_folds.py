"""Fold plans against the reference suite's rules: its generic chunks (RandomState shuffle,
array_split, test k / validation k+1), its leave-one-subject-out draw (train_test_split, seed
42) and its patient folds (StratifiedKFold, seed 42), each against a hand-computed answer and the
RNG or scikit-learn call written out."""

import numpy as np
import pandas as pd
import pytest
from sklearn.model_selection import KFold, StratifiedKFold, train_test_split

from embedprobe.core.errors import UsageError
from embedprobe.probing.folds import (
    age_stratified_plan,
    ascending,
    chunk_plan,
    fold_split,
    loso_plan,
    per_stratum_plan,
    stratified_plan,
    subject_groups,
)

# The reference's CHB-MIT folds (its configs/cohorts/chbmit/folds.json, "replay ... seed42",
# sub-NN there, chbNN here; chb21 is chb01's patient): validation and test patients per fold.
CHBMIT_REFERENCE = [
    (["05", "18", "20", "24"], ["03", "07", "10", "13", "14"]),
    (["05", "12", "14", "20"], ["02", "04", "09", "19", "24"]),
    (["07", "17", "23"], ["06", "08", "11", "20", "22"]),
    (["08", "12", "17"], ["01", "05", "15", "16"]),
    (["01", "04", "07", "11"], ["12", "17", "18", "23"]),
]


def test_chunks_are_the_reference_shuffle_cut_in_contiguous_chunks():
    # RandomState(42).permutation(7) = [0 1 5 2 4 3 6]; array_split in 3: [0 1 5] [2 4] [3 6]
    assert list(np.random.RandomState(42).permutation(7)) == [0, 1, 5, 2, 4, 3, 6]
    groups = subject_groups([f"S{i}" for i in (7, 3, 1, 5, 2, 6, 4, 1)], n_folds=3, seed=42)
    assert groups == {"S1": 0, "S2": 0, "S6": 0, "S3": 1, "S5": 1, "S4": 2, "S7": 2}


def test_strata_share_one_generator_in_name_order():
    """Sleep-EDF's rule: cassette then telemetry, each shuffled by the same RandomState."""
    rng = np.random.RandomState(42)
    a, b = np.arange(4), np.arange(3)
    rng.shuffle(a)
    rng.shuffle(b)
    assert list(a) == [1, 3, 0, 2] and list(b) == [0, 1, 2]
    subjects = ["SC01", "SC02", "SC03", "SC04", "ST01", "ST02", "ST03"]
    plan = chunk_plan(subjects, 2, 42, strata_pattern="^(SC|ST)")
    assert plan.members(0, "test") == ["SC02", "SC04", "ST01", "ST02"]
    assert plan.members(0, "val") == ["SC01", "SC03", "ST03"]
    with pytest.raises(UsageError, match="does not match subject SC01"):
        chunk_plan(subjects, 2, 42, strata_pattern="^X")


def test_fold_k_tests_chunk_k_validates_chunk_k_plus_1_trains_the_rest():
    subjects = np.array([f"S{i}" for i in range(10)]).repeat(3)  # three windows each
    groups = subject_groups(subjects, 5, 42)
    plan = chunk_plan(subjects, 5, 42)
    per_window = np.array([groups[s] for s in subjects])
    for k in range(5):
        masks = fold_split(plan, pd.DataFrame({"subject": subjects}), k)
        assert (per_window[masks["test"]] == k).all() and masks["test"].sum() == 6
        assert (per_window[masks["val"]] == (k + 1) % 5).all() and masks["val"].sum() == 6
        assert set(per_window[masks["train"]]) == set(range(5)) - {k, (k + 1) % 5}
        assert (masks["train"].astype(int) + masks["val"] + masks["test"] == 1).all()


def test_too_few_subjects_is_refused():
    with pytest.raises(UsageError, match="3 subjects cannot fill 5 folds"):
        subject_groups(["a", "b", "c"], 5, 42)


def test_loso_validation_subject_is_the_reference_draw_for_bnci2014_001():
    subjects = [f"A{i:02d}" for i in range(9, 0, -1)]  # any order in, ascending out
    plan = loso_plan(subjects, seed=42)
    ordered = sorted(subjects)
    # the reference's draw written out: train_test_split(others, test_size=0.1,
    # random_state=42) keeps the first ceil(0.8) = 1 of RandomState(42).permutation(8)
    position = np.random.RandomState(42).permutation(8)[0]
    expected = []
    for k in range(9):
        others = [i for i in range(9) if i != k]
        assert train_test_split(others, test_size=0.1, random_state=42)[1] == [others[position]]
        expected.append(ordered[others[position]])
    assert expected == ["A03", "A03"] + ["A02"] * 7  # pinned: a change of RNG shows here
    for k in range(9):
        assert plan.members(k, "test") == [ordered[k]]
        assert plan.members(k, "val") == [expected[k]]
        assert len(plan.members(k, "train")) == 7


def test_loso_orders_ids_as_numbers_and_validates_on_a_tenth_rounded_up():
    subjects = [f"S{i}" for i in range(1, 13)]  # S10 after S9, as the reference's int sort
    plan = loso_plan(subjects, seed=42)
    assert [plan.members(k, "test")[0] for k in range(12)] == subjects
    # 11 others: ceil(1.1) = 2 validate; RandomState(42).permutation(11) starts [5, 0]
    assert list(np.random.RandomState(42).permutation(11)[:2]) == [5, 0]
    assert plan.members(0, "val") == ["S2", "S7"]  # others[5] = S7, others[0] = S2
    assert sorted(["S10", "S2", "S1", "A3"], key=ascending) == ["A3", "S1", "S2", "S10"]


def sklearn_folds(ids, labels, k, n=5):
    """The reference's patient folds written out with scikit-learn."""
    splitter = StratifiedKFold(n_splits=n, shuffle=True, random_state=42)
    rest, test = list(splitter.split(ids, labels))[k]
    inner = StratifiedKFold(n_splits=n, shuffle=True, random_state=42)
    _, val = list(inner.split(rest, labels[rest]))[(k + 1) % n]
    return sorted(ids[rest[val]]), sorted(ids[test])


def test_patient_folds_are_stratified_kfold_over_sorted_ids():
    # 25 patients, 10 without a seizure: every outer training part keeps 8 of them, enough
    # for the inner splitter to stratify too
    patients = np.array([f"PN{i:02d}" for i in range(25)])
    labels = np.array([i % 5 >= 2 for i in range(25)])
    plan = stratified_plan(dict(zip(patients[::-1], labels[::-1], strict=True)), 5, 42)
    for k in range(5):
        val, test = sklearn_folds(patients, labels.astype(int), k)
        assert plan.members(k, "val") == val and plan.members(k, "test") == test
        assert sum(not dict(zip(patients, labels, strict=True))[p] for p in test) == 2


def test_patient_folds_reproduce_the_reference_chbmit_manifest():
    patients = [f"chb{i:02d}" for i in range(1, 25) if i != 21]
    plan = stratified_plan({p: True for p in patients}, 5, 42)
    for k, (val, test) in enumerate(CHBMIT_REFERENCE):
        assert plan.members(k, "val") == [f"chb{n}" for n in val]
        assert plan.members(k, "test") == [f"chb{n}" for n in test]


def test_a_class_smaller_than_the_folds_falls_back_to_kfold():
    """The reference keeps the folds and drops stratification (registry/splits.py)."""
    from sklearn.model_selection import KFold

    ids = np.array([f"P{i:02d}" for i in range(10)])
    plan = stratified_plan({p: p == "P03" for p in ids}, 5, 42)
    rest, test = list(KFold(5, shuffle=True, random_state=42).split(ids))[0]
    assert plan.members(0, "test") == sorted(ids[test])


# --- brain age: the reference's age-stratified subject folds -----------------------------------
def reference_age_folds(ages: dict, n_folds=5, seed=42):
    """precomputed_embeddings._stratified_subject_splits written out: ids sorted as strings,
    bins np.digitize - 1, StratifiedKFold where each present bin fills the splits (else KFold),
    test split k, validation split k+1 of the same splitter over the rest."""
    def splitter(labels, n):
        if min(np.unique(labels, return_counts=True)[1]) >= n:
            return StratifiedKFold(n, shuffle=True, random_state=seed)
        return KFold(n, shuffle=True, random_state=seed)

    ids = sorted(ages)
    bins = np.digitize([ages[s] for s in ids], [0, 35, 50, 65, 80, 200]) - 1
    folds = []
    for k in range(n_folds):
        kept, test = list(splitter(bins, n_folds).split(ids, bins))[k]
        _, val = list(splitter(bins[kept], n_folds).split(kept, bins[kept]))[(k + 1) % n_folds]
        folds.append(({ids[kept[i]] for i in val}, {ids[i] for i in test}))
    return folds


def test_brain_age_folds_are_the_references_age_stratified_draw():
    rng = np.random.default_rng(3)
    # 30 cassette-like subjects in four bins (the real SC table's bins: 20, 0, 22, 20, 16)
    ages = {f"SC{i:02d}": float(a) for i, a in enumerate(
        np.concatenate([rng.uniform(25, 34, 8), rng.uniform(50, 64, 8),
                        rng.uniform(65, 79, 8), rng.uniform(80, 101, 6)]))}
    plan = age_stratified_plan(ages, 5, 42, (0, 35, 50, 65, 80, 200))
    for k, (val, test) in enumerate(reference_age_folds(ages)):
        assert set(plan.members(k, "test")) == test
        assert set(plan.members(k, "val")) == val
    assert sorted(s for k in range(5) for s in plan.members(k, "test")) == sorted(ages)


def test_brain_age_folds_fall_back_to_kfold_where_a_bin_is_short():
    # one subject over 80: the reference's shared rule (make_subject_kfold) drops to KFold
    ages = {f"SC{i:02d}": a for i, a in enumerate([26, 28, 30, 31, 33, 52, 55, 58, 60, 62,
                                                   66, 70, 72, 75, 77, 90])}
    plan = age_stratified_plan(ages, 5, 42, (0, 35, 50, 65, 80, 200))
    for k, (val, test) in enumerate(reference_age_folds(ages)):
        assert (set(plan.members(k, "val")), set(plan.members(k, "test"))) == (val, test)
    # fewer aged subjects than folds: refused (the reference would cut fewer folds)
    with pytest.raises(UsageError, match="2 subjects with an age cannot fill 5 folds"):
        age_stratified_plan({"SC00": 30.0, "SC01": 40.0}, 5, 42, (0, 35, 50, 65, 80, 200))


# --- ISRUC: each subgroup drawn on its own ------------------------------------------------------
def reference_isruc_groups(subgroups: dict, classes: dict, n_folds=5, seed=42):
    """adapters/isruc._patient_splits written out over the reference's zero-padded ids
    ("I_002"): per subgroup, ids sorted as strings, StratifiedKFold on the diagnosis where
    there are two classes or more and each has n_folds subjects, else a fresh RandomState."""
    groups = {}
    for members in subgroups.values():
        members = sorted(members)
        labels = [classes.get(m, "unknown") for m in members]
        _, counts = np.unique(labels, return_counts=True)
        if len(counts) > 1 and counts.min() >= n_folds:
            tests = [t for _, t in StratifiedKFold(n_folds, shuffle=True, random_state=seed)
                     .split(members, labels)]
        else:
            order = np.arange(len(members))
            np.random.RandomState(seed).shuffle(order)
            tests = np.array_split(order, n_folds)
        groups.update({members[i]: k for k, t in enumerate(tests) for i in t})
    return groups


def test_isruc_folds_are_the_references_per_subgroup_draw():
    # subgroup I: 12 subjects, osa 6 and plms 6 (stratified); II: 4; III: 7 healthy
    ours = {"I": [f"I-{n}" for n in range(1, 13)], "II": [f"II-{n}" for n in range(1, 5)],
            "III": [f"III-{n}" for n in range(1, 8)]}
    theirs = {g: [f"{g}_{int(s.split('-')[1]):03d}" for s in ids] for g, ids in ours.items()}
    diag = {**{f"I-{n}": "osa" if n % 2 else "plms" for n in range(1, 13)},
            **{f"II-{n}": "osa" for n in range(1, 5)},
            **{f"III-{n}": "healthy" for n in range(1, 8)}}
    to_theirs = {o: t for g in ours for o, t in zip(ours[g], theirs[g], strict=True)}
    expected = reference_isruc_groups(theirs, {to_theirs[s]: c for s, c in diag.items()})
    subjects = [s for ids in ours.values() for s in ids]
    plan = per_stratum_plan(subjects, 5, 42, "^(I+)-", diag)
    for k in range(5):
        assert {to_theirs[s] for s in plan.members(k, "test")} == {
            t for t, g in expected.items() if g == k}
        assert {to_theirs[s] for s in plan.members(k, "val")} == {
            t for t, g in expected.items() if g == (k + 1) % 5}
    # a fresh generator per subgroup: not the shared one of the generic chunks
    shared = chunk_plan(subjects, 5, 42, "^(I+)-")
    assert [shared.members(k, "test") for k in range(5)] != [
        plan.members(k, "test") for k in range(5)]
