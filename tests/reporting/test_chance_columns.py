"""The chance column where it differs by dataset (BCI: 1/C) in what the aggregate prints, in the
benchmark summary and on the scores figure; not for sleep staging (kappa: chance 0 everywhere)."""

from __future__ import annotations

from embedprobe.reporting.aggregate import format_table, read_results
from embedprobe.reporting.figures import plot_scores
from embedprobe.reporting.summary import summary_markdown
from embedprobe.tasks.registry import task_for

from helpers.results import roots_in, write_results_table


def trial(value: float) -> dict:
    return {"balanced_accuracy": value, "kappa": 0.3, "macro_f1": 0.5, "n_classes": 4}


def test_bci_tables_show_one_over_the_classes(tmp_path):
    task = task_for("motor_imagery")
    path = write_results_table(roots_in(tmp_path), "mi", "d", "motor_imagery", 2,
                               {"m": [trial(0.4), trial(0.6)]})
    table = read_results(path)
    printed = format_table(table, task, "mi").splitlines()
    assert printed[1].split()[-3:] == ["chance", "chosen", "C"]
    # population SD of 0.4 and 0.6: 0.1
    assert printed[2].split() == ["d", "m", "0.500", "+-", "0.100", "2/2", "0.250", "0.1,0.1"]
    summary = summary_markdown({"d": table}, task, "mi").splitlines()
    header = next(line for line in summary if line.startswith("| dataset |"))
    assert header.endswith("| macro_f1 | chance | folds | chosen | status |")
    row = next(line for line in summary if line.startswith("| d | m |"))
    assert "| 0.250 | 2/2 |" in row
    out = tmp_path / "scores.png"
    plot_scores({"d": table}, task, "mi", out)
    assert out.stat().st_size > 0


def test_sleep_staging_tables_have_no_chance_column(tmp_path):
    task = task_for("sleep_staging")
    fold = {"kappa": 0.7, "balanced_accuracy": 0.6, "macro_f1": 0.6, "n_classes": 5}
    table = read_results(write_results_table(roots_in(tmp_path), "s", "d", "sleep_staging", 2,
                                             {"m": [fold, fold]}))
    assert "chance" not in format_table(table, task, "s")
    summary = summary_markdown({"d": table}, task, "s")
    assert "chance" not in summary and "normalised" not in summary
