"""The leaderboard's ranks: within each dataset (direction-aware, ties share their places), the
average within a benchmark, then the mean across benchmarks; from results.tsv tables written by
the real aggregate."""

from __future__ import annotations

import numpy as np
import pytest

from embedprobe.reporting.leaderboard import leaderboard_markdown, rank_frame, read_tables
from embedprobe.tasks.registry import task_for

from helpers.results import roots_in, write_results_table


def staging(kappa: float) -> dict:
    return {"kappa": kappa, "balanced_accuracy": kappa, "macro_f1": kappa, "n_classes": 5}


def age(mae: float) -> dict:
    return {"mae": mae, "baseline_mae": 15.0,
            "predictions": [{"subject": "a", "age": 40.0, "predicted": 40.0 + mae},
                            {"subject": "b", "age": 60.0, "predicted": 60.0 - mae}]}


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    """Benchmark `stage` (kappa, higher is better) on d1 (m2 and m3 tie) and d2 (m3 failed),
    benchmark `age` (MAE, lower is better) on d1."""
    roots = roots_in(tmp_path_factory.mktemp("board"))
    paths = [
        write_results_table(roots, "stage", "d1", "sleep_staging", 3, {
            "m1": [staging(0.8)] * 3, "m2": [staging(0.7)] * 3, "m3": [staging(0.7)] * 3}),
        write_results_table(roots, "stage", "d2", "sleep_staging", 3, {
            "m1": [staging(0.5)] * 3, "m2": [staging(0.6)] * 3,
            "m3": [staging(0.9), None, None]}),
        write_results_table(roots, "age", "d1", "brain_age", 3, {
            "m1": [age(10.0)] * 3, "m2": [age(8.0)] * 3, "m3": [age(12.0)] * 3}),
    ]
    tables = read_tables(paths)
    tasks = {"stage": task_for("sleep_staging"), "age": task_for("brain_age")}
    return tables, tasks


def test_ranks_within_datasets_then_benchmarks_then_across(board):
    ranks = rank_frame(*board)
    assert list(ranks.index) == ["m2", "m1", "m3"]  # by mean rank
    assert ranks["rank stage/d1"].to_dict() == {"m2": 2.5, "m1": 1.0, "m3": 2.5}
    # m3 failed on d2 (one fold of three): no rank there, and not counted in its average
    assert ranks["rank stage/d2"].to_dict() == {"m2": 1.0, "m1": 2.0, "m3": pytest.approx(np.nan,
                                                                                        nan_ok=True)}
    # MAE: lower is better
    assert ranks["rank age/d1"].to_dict() == {"m2": 1.0, "m1": 2.0, "m3": 3.0}
    assert ranks["avg rank stage"].to_dict() == {"m2": 1.75, "m1": 1.5, "m3": 2.5}
    # each benchmark counts once, whatever its number of datasets
    assert ranks["mean rank"].to_dict() == {"m2": 1.375, "m1": 1.75, "m3": 2.75}


def test_the_markdown_keeps_its_score_columns_and_adds_the_ranks(board):
    lines = leaderboard_markdown("mine", *board).splitlines()
    assert lines[0] == "# Leaderboard: mine"
    header = [c.strip() for c in lines[4].strip("|").split("|")]
    assert header == ["model", "stage/d1 (kappa)", "stage/d2 (kappa)", "age/d1 (mae)",
                      "rank stage/d1", "rank stage/d2", "rank age/d1", "avg rank stage",
                      "avg rank age", "mean rank"]
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in lines[6:]]
    assert rows == [
        ["m2", "0.700 +- 0.000", "0.600 +- 0.000", "8.000 +- 0.000", "2.5", "1", "1", "1.75",
         "1", "1.38"],
        ["m1", "0.800 +- 0.000", "0.500 +- 0.000", "10.000 +- 0.000", "1", "2", "2", "1.5",
         "2", "1.75"],
        ["m3", "0.700 +- 0.000", "failed", "12.000 +- 0.000", "2.5", "-", "3", "2.5", "3",
         "2.75"],
    ]
    # each model's line starts with its name (what the workflow tests read)
    assert lines[6].startswith("| m2 |") and lines[6].count("+-") == 3


def test_a_model_without_any_finished_pair_comes_last_without_ranks(tmp_path):
    roots = roots_in(tmp_path)
    path = write_results_table(roots, "stage", "d1", "sleep_staging", 2, {
        "a": [staging(0.5)] * 2, "b": [None, staging(0.9)]})
    ranks = rank_frame(read_tables([path]), {"stage": task_for("sleep_staging")})
    assert list(ranks.index) == ["a", "b"]
    assert ranks.at["a", "mean rank"] == 1.0 and np.isnan(ranks.at["b", "mean rank"])
