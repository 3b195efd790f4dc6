"""The leaderboard's ranks as the reference (NeuroAtlas results.leaderboard) makes them: within
each dataset (direction-aware, ties share their places) among the models with a score on every
dataset of the benchmark, the average within a benchmark, then the mean across benchmarks; from
results.tsv tables written by the real aggregate, and from hand-made tables."""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
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
    # m3 finished one fold of three on d2 (0.9): ranked on it, as the reference ranks a pair
    # on fewer folds than the protocol (and marks it)
    assert ranks["rank stage/d2"].to_dict() == {"m2": 2.0, "m1": 3.0, "m3": 1.0}
    # MAE: lower is better
    assert ranks["rank age/d1"].to_dict() == {"m2": 1.0, "m1": 2.0, "m3": 3.0}
    # (2.5 + 2) / 2, (1 + 3) / 2, (2.5 + 1) / 2
    assert ranks["avg rank stage"].to_dict() == {"m2": 2.25, "m1": 2.0, "m3": 1.75}
    # each benchmark counts once, whatever its number of datasets: (2.25 + 1) / 2, ...
    assert ranks["mean rank"].to_dict() == {"m2": 1.625, "m1": 2.0, "m3": 2.375}


def test_the_markdown_keeps_its_score_columns_and_adds_the_ranks(board):
    lines = leaderboard_markdown("mine", *board).splitlines()
    assert lines[0] == "# Leaderboard: mine"
    header = [c.strip() for c in lines[4].strip("|").split("|")]
    assert header == ["model", "stage/d1 (kappa)", "stage/d2 (kappa)", "age/d1 (mae)",
                      "rank stage/d1", "rank stage/d2", "rank age/d1", "avg rank stage",
                      "avg rank age", "mean rank"]
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in lines[6:9]]
    assert rows == [
        ["m2", "0.700 +- 0.000", "0.600 +- 0.000", "8.000 +- 0.000", "2.5", "2", "1", "2.25",
         "1", "1.62"],
        ["m1", "0.800 +- 0.000", "0.500 +- 0.000", "10.000 +- 0.000", "1", "3", "2", "2",
         "2", "2"],
        ["m3", "0.700 +- 0.000", "0.900 +- 0.000 (1/3 folds)", "12.000 +- 0.000", "2.5", "1",
         "3", "1.75", "3", "2.38"],
    ]
    # each model's line starts with its name (what the workflow tests read)
    assert lines[6].startswith("| m2 |") and lines[6].count("+-") == 3
    # no task sets a dummy: no normalised column; the pair on fewer folds is named
    assert "normalised" not in lines[4]
    assert lines[9:] == ["", "Ranked on fewer folds than the protocol: m3 on stage/d2 (1/3 "
                             "folds)."]


def hand_table(folder, benchmark: str, dataset: str, headline: str, scores: dict,
               folds: int = 5, chance=None):
    """results.tsv written by hand: model -> headline mean (None: skipped, no fold done)."""
    path = folder / "results" / benchmark / dataset / "results.tsv"
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [{"dataset": dataset, "model": model,
             "folds": f"{0 if mean is None else folds}/{folds}",
             "status": "skipped" if mean is None else "ok", "reason": "", "fix": "",
             f"{headline}_mean": np.nan if mean is None else mean,
             f"{headline}_sd": np.nan if mean is None else 0.01,
             "chance": np.nan if chance is None or mean is None else chance}
            for model, mean in scores.items()]
    pd.DataFrame(rows).to_csv(path, sep="\t", index=False)
    return path


@pytest.fixture()
def hand_board(tmp_path):
    """stage (kappa) on a1 and a2, where s has no score on a2; age (MAE) on b1; nothing
    finished on rest/c1."""
    paths = [hand_table(tmp_path, "stage", "a1", "kappa",
                        {"p": 0.60, "q": 0.70, "r": 0.50, "s": 0.80}),
             hand_table(tmp_path, "stage", "a2", "kappa",
                        {"p": 0.65, "q": 0.55, "r": 0.55, "s": None}),
             hand_table(tmp_path, "age", "b1", "mae", {"p": 9.0, "q": 11.0, "r": 10.0, "s": 7.0}),
             hand_table(tmp_path, "rest", "c1", "kappa", {"p": None})]
    tasks = {"stage": task_for("sleep_staging"), "age": task_for("brain_age"),
             "rest": task_for("sleep_staging")}
    return read_tables(paths), tasks


def test_a_benchmark_ranks_only_the_models_with_a_score_on_each_of_its_datasets(hand_board):
    ranks = rank_frame(*hand_board)
    nan = pytest.approx(np.nan, nan_ok=True)
    # s (0.80, the best on a1) has no score on a2: a1 ranks p, q, r only
    assert ranks["rank stage/a1"].to_dict() == {"p": 2.0, "q": 1.0, "r": 3.0, "s": nan}
    assert ranks["rank stage/a2"].to_dict() == {"p": 1.0, "q": 2.5, "r": 2.5, "s": nan}
    assert ranks["avg rank stage"].to_dict() == {"p": 1.5, "q": 1.75, "r": 2.75, "s": nan}
    assert ranks["rank age/b1"].to_dict() == {"p": 2.0, "q": 4.0, "r": 3.0, "s": 1.0}
    # rest/c1 has no score at all: that benchmark ranks nobody and counts for no one
    assert "avg rank rest" not in ranks.columns
    # (1.5 + 2) / 2, (1.75 + 4) / 2, (2.75 + 3) / 2; s is missing from stage: no mean rank
    assert ranks["mean rank"].to_dict() == {"p": 1.75, "q": 2.875, "r": 2.875, "s": nan}
    assert list(ranks.index) == ["p", "q", "r", "s"]  # ties by name, no mean rank last


def test_the_markdown_says_who_is_not_ranked_and_why(hand_board):
    lines = leaderboard_markdown("mine", *hand_board).splitlines()
    s_row = next(line for line in lines if line.startswith("| s |"))
    assert [c.strip() for c in s_row.strip("|").split("|")][1:3] == ["0.800 +- 0.010",
                                                                      "skipped"]
    assert lines[-2:] == ["Not ranked: s (no score on every dataset of stage).",
                          "Ranks nobody (no model has a score on each of its datasets): rest."]


def test_normalised_is_the_mean_over_datasets_then_benchmarks_where_a_dummy_is_set(hand_board):
    tables, tasks = hand_board
    with_dummy = copy.copy(tasks["stage"])
    with_dummy.dummy = 0.2  # as the reference's old sleep_stage catalog (balanced accuracy)
    tasks = {**tasks, "stage": with_dummy}
    ranks = rank_frame(tables, tasks)
    # (mean - 0.2) / 0.8 on a1 and a2, averaged: p (0.5 + 0.5625) / 2, q (0.625 + 0.4375) / 2,
    # r (0.375 + 0.4375) / 2; MAE has none, so stage's is the mean; s has no mean rank
    assert ranks["normalised"].to_dict() == {"p": 0.53125, "q": 0.53125, "r": 0.40625,
                                             "s": pytest.approx(np.nan, nan_ok=True)}
    header = leaderboard_markdown("mine", tables, tasks).splitlines()[4]
    assert header.endswith("| mean rank | normalised |")


def test_the_bci_chance_level_is_under_the_leaderboard(tmp_path):
    roots = roots_in(tmp_path)
    trial = {"balanced_accuracy": 0.5, "kappa": 1 / 3, "macro_f1": 0.5, "n_classes": 4}
    path = write_results_table(roots, "mi", "d", "motor_imagery", 2, {"m": [trial] * 2})
    assert read_tables([path])[("mi", "d")]["chance"].tolist() == [0.25]
    text = leaderboard_markdown("bci", read_tables([path]), {"mi": task_for("motor_imagery")})
    assert text.splitlines()[-1] == ("Chance level of the headline (1 / number of classes): "
                                     "mi/d 0.250.")


def test_a_benchmark_in_variants_has_a_column_per_variant_and_its_default_ranks_it(tmp_path):
    """`<variant>/<model>` rows become one benchmark key per variant (`erp[default]`, ...),
    rows named by the model. The mean rank takes a variant benchmark once, by its default
    variant: BIOT, whose flattened variant is skipped (no tokens), is still ranked."""
    paths = [hand_table(tmp_path, "erp", "e1", "balanced_accuracy",
                        {"default/biot": 0.60, "default/cbramod": 0.70,
                         "token_flattening/biot": None, "token_flattening/cbramod": 0.75},
                        chance=0.5),
             hand_table(tmp_path, "stage", "a1", "kappa", {"biot": 0.8, "cbramod": 0.6})]
    tables = read_tables(paths)
    assert sorted(tables) == [("erp[default]", "e1"), ("erp[token_flattening]", "e1"),
                              ("stage", "a1")]
    assert sorted(tables[("erp[token_flattening]", "e1")]["model"]) == ["biot", "cbramod"]
    bci, stage = task_for("bci_erp"), task_for("sleep_staging")
    tasks = {"erp[default]": bci, "erp[token_flattening]": bci, "stage": stage}
    ranks = rank_frame(tables, tasks)
    nan = pytest.approx(np.nan, nan_ok=True)
    assert ranks["avg rank erp[token_flattening]"].to_dict() == {"biot": nan, "cbramod": 1.0}
    # (2 + 1) / 2 and (1 + 2) / 2: the default variant and staging, not the flattened one
    assert ranks["mean rank"].to_dict() == {"biot": 1.5, "cbramod": 1.5}
    text = leaderboard_markdown("bci", tables, tasks)
    header = next(line for line in text.splitlines() if line.startswith("| model |"))
    assert "| erp[default]/e1 (balanced_accuracy) | erp[token_flattening]/e1 " in header
    assert "Not ranked" not in text
    # the flattened variant ranks cbramod, though the mean rank does not count it
    assert "Ranks nobody" not in text


@pytest.mark.parametrize("variants", [
    ["default"],  # a run's default: the default variant alone
    ["token_flattening", "no_filtering"],  # named, the default left out
])
def test_a_run_of_fewer_variants_ranks_the_benchmark_once_by_one_of_them(tmp_path, variants):
    """With `variants` selecting some of a benchmark's variants (core/selection.py), its
    columns are those variants', and the mean rank counts the benchmark once: by its default
    variant, or, where the run left the default out, by its first variant. Here that variant
    ranks biot first and staging ranks cbramod first: 1.5 each (the other erp variant, or
    staging alone, would give cbramod the better mean rank)."""
    scores = {"default": (0.70, 0.60), "token_flattening": (0.75, 0.65),
              "no_filtering": (0.50, 0.55)}
    paths = [hand_table(tmp_path, "erp", "e1", "balanced_accuracy",
                        {f"{v}/{m}": scores[v][k] for v in variants
                         for k, m in enumerate(("biot", "cbramod"))}, chance=0.5),
             hand_table(tmp_path, "stage", "a1", "kappa", {"biot": 0.6, "cbramod": 0.8})]
    tables = read_tables(paths)
    assert sorted(tables) == sorted([(f"erp[{v}]", "e1") for v in variants] + [("stage", "a1")])
    tasks = {f"erp[{v}]": task_for("bci_erp") for v in variants} | {
        "stage": task_for("sleep_staging")}
    assert rank_frame(tables, tasks)["mean rank"].to_dict() == {"biot": 1.5, "cbramod": 1.5}
    text = leaderboard_markdown("bci", tables, tasks)
    header = next(line for line in text.splitlines() if line.startswith("| model |"))
    assert [c for c in header.split(" | ") if c.startswith("erp[")] == [
        f"erp[{v}]/e1 (balanced_accuracy)" for v in variants]
    assert "Not ranked" not in text and "Ranks nobody" not in text
