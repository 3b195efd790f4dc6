"""`embedprobe results` and the API's results(): rows read from results.tsv tables that the real
aggregate wrote from hand-made fold records, per pair and per fold, with chance levels,
normalised scores (none: no task sets a dummy, as in the reference), a reference table, and the
usage errors."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from embedprobe.api import tables
from embedprobe.core.errors import UsageError
from embedprobe.reporting.chance import chance_level, normalised_score
from embedprobe.reporting.results import (
    fold_rows,
    format_rows,
    read_reference,
    result_rows,
)
from embedprobe.tasks.registry import task_for

from helpers.project import PROJECT
from helpers.results import roots_in, write_results_table

KAPPAS = [0.70, 0.72, 0.74, 0.76, 0.78]
MI_BACC = [0.40, 0.50, 0.45, 0.55]
MAES = [6.0, 8.0, 7.0, 9.0, 10.0]
BASELINES = [12.0, 11.0, 13.0, 12.5, 11.5]


def sleep_fold(kappa: float) -> dict:
    return {"kappa": kappa, "balanced_accuracy": kappa - 0.1, "macro_f1": kappa - 0.05,
            "n_classes": 5}


def age_fold(k: int) -> dict:
    return {"mae": MAES[k], "baseline_mae": BASELINES[k],
            "predictions": [{"subject": f"S{k}a", "age": 30.0 + k, "predicted": 33.0 + k},
                            {"subject": f"S{k}b", "age": 60.0 - k, "predicted": 52.0 - k}]}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """Results of four benchmarks: demo (one pair done, one failed at fold 3, fold 4 never
    ran), demo_brain_age, a motor-imagery demo (4 classes) and epilepsy_demo (one of its two
    datasets written)."""
    folder = tmp_path_factory.mktemp("results_cli")
    roots = roots_in(folder)
    write_results_table(roots, "demo", "sleep_edf_demo", "sleep_staging", 5, {
        "biot_random": [sleep_fold(k) for k in KAPPAS],
        "labram_random": [sleep_fold(0.5), sleep_fold(0.6), sleep_fold(0.55), None, None]},
        failed={("labram_random", 3): "the store is damaged\nsecond line"})
    write_results_table(roots, "demo_brain_age", "sleep_edf_demo", "brain_age", 5, {
        "biot_random": [age_fold(k) for k in range(5)]})
    write_results_table(roots, "bci_mi_bnci2014_001_demo", "bnci2014_001_demo",
                        "motor_imagery", 4, {"biot_random": [
                            {"balanced_accuracy": b, "kappa": (b - 0.25) / 0.75,
                             "macro_f1": b, "n_classes": 4} for b in MI_BACC]})
    # every metric the seizure task reports (its list grows), these with known values
    seizure = dict.fromkeys(task_for("seizure_detection").metrics, 0.5) | {
        "event_auc": 0.6, "auroc": 0.8, "auprc": 0.3, "fa_per_24h": 12.0}
    write_results_table(roots, "epilepsy_demo", "chbmit_demo", "seizure_detection", 5, {
        "biot_random": [seizure] * 5})
    return folder, roots


def bench(name: str, config=None) -> dict:
    config = config or tables.settings()[0]
    return config["benchmarks"][name]


def records(frame: pd.DataFrame) -> list[dict]:
    """A frame's rows as JSON objects (NaN as null)."""
    return frame.astype(object).where(frame.notna(), None).to_dict("records")


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "embedprobe.cli", *args], capture_output=True,
                          text=True, timeout=300, cwd=PROJECT)


def test_pair_rows_carry_the_headline_folds_status_and_chance(workdir):
    _, roots = workdir
    rows, notes = result_rows("demo", bench("demo"), task_for("sleep_staging"), roots)
    assert notes == []
    by_model = {r["model"]: r for r in rows}
    done = by_model["biot_random"]
    assert done["metric"] == "kappa" and done["mean"] == pytest.approx(np.mean(KAPPAS), abs=1e-4)
    # population SD (the reference's sleep_stage): sqrt((2 * 0.04^2 + 2 * 0.02^2) / 5)
    assert done["sd"] == 0.0283 == round(np.std(KAPPAS, ddof=0), 4)
    assert (done["folds"], done["folds_done"], done["folds_expected"]) == ("5/5", 5, 5)
    # kappa's chance level is 0; sleep staging sets no dummy, so no normalised score
    assert done["status"] == "ok" and done["chance"] == 0.0
    assert done["normalised"] is None
    failed = by_model["labram_random"]
    assert (failed["status"], failed["folds"]) == ("failed", "3/5")
    assert failed["mean"] == pytest.approx(0.55, abs=1e-4)
    assert failed["reason"] == "2 of 5 folds did not finish"


def test_chance_is_one_over_the_classes_for_balanced_accuracy(workdir):
    _, roots = workdir
    rows, _ = result_rows("bci_mi_bnci2014_001_demo", bench("bci_mi_bnci2014_001_demo"),
                          task_for("motor_imagery"), roots)
    (row,) = rows
    assert row["metric"] == "balanced_accuracy" and row["chance"] == 0.25
    assert row["mean"] == pytest.approx(0.475, abs=1e-4)
    # population SD over held-out subjects: deviations 0.075, 0.025, 0.025, 0.075
    assert row["sd"] == 0.0559 == round(np.std(MI_BACC, ddof=0), 4)
    # chance is a column of its own, not a dummy: no normalised score (the reference's BCI)
    assert row["normalised"] is None


def test_brain_age_has_no_chance_level_and_a_population_sd(workdir):
    """The reference: "no chance level: predicting the training mean age depends on the
    split" (its dummy regressor's MAE stays in results.tsv as baseline_mae_mean)."""
    _, roots = workdir
    (row,), _ = result_rows("demo_brain_age", bench("demo_brain_age"), task_for("brain_age"),
                            roots)
    assert row["chance"] is None and row["normalised"] is None
    # MAES 6, 8, 7, 9, 10: mean 8, squared deviations 4 + 0 + 1 + 1 + 4 = 10, / 5 -> sqrt 2
    assert row["mean"] == 8.0 and row["sd"] == 1.4142 == round(np.std(MAES, ddof=0), 4)
    assert row["pearson_r_pooled"] is not None


def test_seizure_rows_have_no_chance_level_and_a_missing_dataset_is_a_note(workdir):
    _, roots = workdir
    rows, notes = result_rows("epilepsy_demo", bench("epilepsy_demo"),
                              task_for("seizure_detection"), roots)
    assert [(r["dataset"], r["chance"], r["normalised"]) for r in rows] == [
        ("chbmit_demo", None, None)]
    assert len(notes) == 1 and "siena_demo" in notes[0]


def test_chance_and_normalised_by_metric():
    assert chance_level("balanced_accuracy", {"n_classes": 5}) == 0.2
    assert chance_level("balanced_accuracy", {"n_classes": 3}) == 1 / 3
    assert chance_level("balanced_accuracy", {}) is None
    assert chance_level("kappa", {}) == 0.0 and chance_level("auroc", {}) == 0.5
    assert chance_level("mae", {"baseline_mae": 4.0}) is None
    assert chance_level("event_auc", {"n_classes": 2}) is None
    # (mean - dummy) / (1 - dummy): (0.6 - 0.2) / 0.8
    assert normalised_score(0.6, 0.2) == 0.5
    assert normalised_score(0.2, 0.2) == 0.0 and normalised_score(1.0, 0.5) == 1.0
    # none without a dummy, for an error metric, with a dummy of 1, or without a score
    assert normalised_score(0.6, None) is None
    assert normalised_score(2.0, 8.0, higher_is_better=False) is None
    assert normalised_score(0.6, 1.0) is None and normalised_score(None, 0.0) is None


def test_per_fold_rows_say_which_fold_failed_and_which_never_ran(workdir):
    _, roots = workdir
    rows, _ = fold_rows("demo", bench("demo"), task_for("sleep_staging"), roots)
    assert len(rows) == 10
    labram = [r for r in rows if r["model"] == "labram_random"]
    assert [r["status"] for r in labram] == ["ok", "ok", "ok", "failed", "missing"]
    assert labram[3]["reason"] == "data: the store is damaged"
    assert [r["value"] for r in labram[:3]] == [0.5, 0.6, 0.55]
    biot = [r for r in rows if r["model"] == "biot_random"]
    assert [r["kappa"] for r in biot] == KAPPAS and biot[2]["n_test"] == 102


def test_formats(workdir):
    _, roots = workdir
    task = task_for("sleep_staging")
    rows, _ = result_rows("demo", bench("demo"), task, roots)
    table = format_rows(rows, task, "table").splitlines()
    assert table[0] == "demo: kappa (higher is better), mean +- SD over folds"
    # kappa's chance is the same everywhere and there is no dummy: neither column is shown
    assert table[1].split() == ["dataset", "model", "kappa", "(mean", "+-", "SD)", "folds",
                                "status"]
    assert table[2].split() == ["sleep_edf_demo", "biot_random", "0.740", "+-", "0.028",
                                "5/5", "ok"]
    assert table[-1].strip() == ("sleep_edf_demo/labram_random failed: 2 of 5 folds did not "
                                 "finish")
    md = format_rows(rows, task, "md").splitlines()
    assert md[1] == "" and md[2].startswith("| dataset | model | kappa (mean +- SD) | folds |")
    assert md[4] == "| sleep_edf_demo | biot_random | 0.740 +- 0.028 | 5/5 | ok |"
    assert md[-1] == "- sleep_edf_demo/labram_random failed: 2 of 5 folds did not finish"
    back = pd.read_csv(io.StringIO(format_rows(rows, task, "csv")))
    assert list(back["model"]) == ["biot_random", "labram_random"]
    assert back["kappa_mean"].tolist() == pytest.approx([r["kappa_mean"] for r in rows])
    # machine formats keep every key (as the reference's JSON rows)
    assert back["chance"].tolist() == [0.0, 0.0] and back["normalised"].isna().all()


def test_the_bci_table_shows_the_chance_column(workdir):
    _, roots = workdir
    task = task_for("motor_imagery")
    rows, _ = result_rows("bci_mi_bnci2014_001_demo", bench("bci_mi_bnci2014_001_demo"), task,
                          roots)
    table = format_rows(rows, task, "table").splitlines()
    assert table[1].split()[-2:] == ["status", "chance"]
    assert table[2].split() == ["bnci2014_001_demo", "biot_random", "0.475", "+-", "0.056",
                                "4/4", "ok", "0.250"]
    per_fold = format_rows(fold_rows("bci_mi_bnci2014_001_demo",
                                     bench("bci_mi_bnci2014_001_demo"), task, roots)[0],
                           task, "table", per_fold=True).splitlines()
    assert per_fold[1].split() == ["dataset", "model", "fold", "balanced_accuracy", "chance",
                                   "status"]
    assert per_fold[2].split() == ["bnci2014_001_demo", "biot_random", "0", "0.400", "0.250",
                                   "ok"]


def test_reference_numbers_sit_beside_ours(workdir, tmp_path):
    _, roots = workdir
    path = tmp_path / "published.tsv"
    path.write_text("dataset\tmodel\tmetric\tvalue\n"
                    "sleep_edf_demo\tbiot_random\tkappa\t0.71\n"
                    "sleep_edf_demo\tbiot_random\tmacro_f1\t0.66\n"
                    "sleep_edf_demo\tcbramod\tkappa\t0.75\n")
    task = task_for("sleep_staging")
    notes: list[str] = []
    rows, notes = result_rows("demo", bench("demo"), task, roots,
                              read_reference(path, task.metrics))
    by_model = {r["model"]: r for r in rows}
    assert by_model["biot_random"]["reference_kappa"] == 0.71
    assert by_model["biot_random"]["reference_macro_f1"] == 0.66
    assert by_model["labram_random"]["reference_kappa"] is None
    assert notes == ["note: the reference's sleep_edf_demo/cbramod match no row of ours"]
    table = format_rows(rows, task, "table").splitlines()
    assert table[1].split()[-1] == "published" and table[2].split()[-1] == "0.710"


@pytest.mark.parametrize("text, says", [
    ("dataset,model,value\nd,m,0.5\n", "no column metric"),
    ("dataset,model,metric,value\nd,m,accuracy,0.5\n", "metric accuracy is not one"),
    ("dataset,model,metric,value\nd,m,kappa,71%\n", "value '71%' is not a number"),
])
def test_a_bad_reference_is_refused_with_its_file_named(tmp_path, text, says):
    path = tmp_path / "published.csv"
    path.write_text(text)
    with pytest.raises(UsageError) as raised:
        read_reference(path, task_for("sleep_staging").metrics)
    assert str(path) in raised.value.message and says in raised.value.message
    assert raised.value.fix


def test_the_command_prints_what_the_api_returns(workdir):
    folder, _ = workdir
    root = f"results_root={folder}/results"
    run = run_cli("results", "demo", "--format", "json", "--config", root)
    assert run.returncode == 0, run.stderr
    printed = json.loads(run.stdout)
    frame = tables.results("demo", config=[root])
    assert printed == records(frame)
    assert [r["model"] for r in printed] == ["biot_random", "labram_random"]
    run = run_cli("results", "demo", "--per-fold", "--format", "json", "--config", root)
    assert run.returncode == 0, run.stderr
    frame = tables.results("demo", per_fold=True, config=[root])
    assert json.loads(run.stdout) == records(frame)
    assert len(frame) == 10 and frame["status"].tolist().count("missing") == 1


def test_usage_errors_exit_2_with_the_fix(workdir, tmp_path):
    folder, _ = workdir
    run = run_cli("results", "dmeo", "--config", f"results_root={folder}/results")
    assert run.returncode == 2 and run.stdout == ""
    assert "unknown benchmark 'dmeo' (did you mean 'demo'?)" in run.stderr
    empty = tmp_path / "nothing"
    run = run_cli("results", "demo", "--config", f"results_root={empty}")
    assert run.returncode == 2 and run.stdout == ""
    assert f"no results for benchmark 'demo' yet: {empty}/demo/sleep_edf_demo/results.tsv" \
        in run.stderr
    # the fix is the snakemake command that writes them, with the settings given here (a
    # dotted key, which snakemake refuses, as the mapping it sets)
    assert f"fix: snakemake demo --config results_root={empty}\n" in run.stderr
    run = run_cli("results", "demo", "--config", f"results_root={empty}", "memory.margin=0.2")
    assert run.returncode == 2
    assert (f"fix: snakemake demo --config results_root={empty} 'memory={{margin: 0.2}}'\n"
            in run.stderr)


def test_a_pair_with_one_fold_keeps_its_chosen_value(tmp_path):
    """results.tsv's `chosen` of a one-fold pair is read back as the text it was written as
    ("0.1", not NaN or a float's rendering)."""
    roots = roots_in(tmp_path)
    write_results_table(roots, "demo", "sleep_edf_demo", "sleep_staging", 5, {
        "biot_random": [sleep_fold(0.7)]})
    (row,), _ = result_rows("demo", bench("demo"), task_for("sleep_staging"), roots)
    assert (row["chosen"], row["folds"], row["status"]) == ("0.1", "1/5", "failed")
    assert row["sd"] == 0.0 and row["mean"] == 0.7
