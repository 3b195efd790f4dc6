"""A capped run's windows (limit_batches): shared among the subjects by their window counts,
spread through each subject's windows, in index order, exactly the cap."""

import numpy as np

from embedprobe.pipeline.embed import capped_rows


def test_the_cap_is_shared_by_window_count_and_spread_through_each_subject():
    subjects = np.array(["a"] * 100 + ["b"] * 50 + ["c"] * 50)
    rows = capped_rows(subjects, 20)
    assert len(rows) == 20 and (np.diff(rows) > 0).all()  # exactly the cap, in index order
    picked = subjects[rows]
    assert [(picked == s).sum() for s in "abc"] == [10, 5, 5]
    # spread through the night: a's first and last windows, and even steps between
    a = rows[picked == "a"]
    assert a[0] == 0 and a[-1] == 99 and set(np.diff(a)) <= {11, 12}


def test_the_remainder_goes_to_the_largest_subjects_and_a_cap_above_the_table_keeps_all():
    subjects = np.array(["b"] * 7 + ["a"] * 3 + ["c"] * 5)  # index order is not name order
    rows = capped_rows(subjects, 4)
    assert len(rows) == 4 and sorted(set(subjects[rows])) == ["a", "b", "c"]
    assert (subjects[rows] == "b").sum() == 2
    assert capped_rows(subjects, 15).tolist() == list(range(15))
    assert capped_rows(subjects, 99).tolist() == list(range(15))
