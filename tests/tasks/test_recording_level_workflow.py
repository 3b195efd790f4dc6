"""Sleep diagnosis and abnormal EEG end to end: the real snakemake on the look-alikes of DOD,
ISRUC, TUAB and Bonn (`recording_level_demo`), every step from generation to the leaderboard."""

import json

import pandas as pd
import pytest
import yaml

from helpers.project import PROJECT, SMALL_JOBS, snakemake

pytestmark = pytest.mark.workflow

BENCHMARKS = yaml.safe_load((PROJECT / "config/benchmarks.yaml").read_text())["benchmarks"]


# The sleep-diagnosis look-alikes at a quarter of an hour of sleep a night, not the demo's half:
# a subject's class signature is in each of its windows, and embed's time goes with the windows
# (docs/measurements/2026-12-07-suite-time.md).
SHORTER = {"datasets": {
    "dod_demo": {"generator": {"healthy": 5, "osa": 5, "hours": 0.25, "seed": 0}},
    "isruc_demo": {"generator": {"subgroup_I": 6, "subgroup_II": 0, "subgroup_III": 5,
                                 "hours": 0.25, "seed": 0}}}}


@pytest.fixture(scope="module")
def recording_run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("recording_level")
    config = workdir / "shorter.yaml"
    config.write_text(yaml.safe_dump(SHORTER))
    run = snakemake(workdir, "--configfile", str(config), *SMALL_JOBS, "recording_level_demo")
    assert run.returncode == 0, run.stderr[-3000:]
    return workdir, run


def results(workdir, benchmark, dataset) -> pd.DataFrame:
    return pd.read_csv(workdir / f"results/{benchmark}/{dataset}/results.tsv", sep="\t")


@pytest.mark.parametrize("benchmark", ["sleep_diagnosis_demo", "abnormal_eeg_demo"])
def test_every_pair_is_above_chance_or_named_as_ruled_out(recording_run, benchmark):
    workdir, _ = recording_run
    bench = BENCHMARKS[benchmark]
    for dataset in bench["datasets"]:
        table = results(workdir, benchmark, dataset).set_index("model")
        assert sorted(table.index) == sorted(bench["models"])
        for model, row in table.iterrows():
            if row["status"] == "skipped":  # BIOT's 16 bipolar slots cannot take Bonn's one
                assert (dataset, model) == ("bonn_demo", "biot_random")
                assert row["reason"].startswith("ruled out by the channel map")
                continue
            assert row["status"] == "ok" and row["folds"] == "5/5", row.to_dict()
            # the look-alikes put a class signature in every recording: chance is 0.5; abnormal
            # EEG scores windows (the reference's), so it pools no per-recording AUROC
            sleep = benchmark.startswith("sleep")
            auroc = row["auroc_pooled"] if sleep else row["auroc_mean"]
            assert auroc > 0.7 and row["balanced_accuracy_mean"] > 0.6, \
                (dataset, model, row.to_dict())
            fold = json.loads((workdir / f"results/{benchmark}/{dataset}/{model}/fold0.json")
                              .read_text())
            assert fold["unit"] == ("subject" if sleep else "window")
            assert (workdir / f"results/{benchmark}/{dataset}/{model}/roc.png").read_bytes()[
                :8] == b"\x89PNG\r\n\x1a\n"


def test_sleep_diagnosis_reuses_the_staging_windows(recording_run):
    """No units of its own: the index holds 30 s staging epochs, the probe a row per subject."""
    workdir, _ = recording_run
    for dataset in BENCHMARKS["sleep_diagnosis_demo"]["datasets"]:
        index = pd.read_csv(workdir / f"results/index/{dataset}.tsv", sep="\t")
        assert set(index["label"]) <= {0, 1, 2, 3, 4}  # stages, not diagnoses
        folds = [json.loads((workdir / f"results/sleep_diagnosis_demo/{dataset}/biot_random/"
                             f"fold{k}.json").read_text()) for k in range(5)]
        tested = [s for f in folds for s in f["test_subjects"]]
        assert sorted(tested) == sorted(index["subject"].astype(str).unique())  # each once


def test_tuab_eval_subjects_test_every_fold(recording_run):
    workdir, _ = recording_run
    index = pd.read_csv(workdir / "results/index/tuab_demo.tsv", sep="\t")
    evals = sorted(index["subject"][index["session"].str.startswith("eval/")].unique())
    for k in range(5):
        fold = json.loads((workdir / f"results/abnormal_eeg_demo/tuab_demo/biot_random/"
                           f"fold{k}.json").read_text())
        assert fold["test_subjects"] == evals
        # 6 abnormal and 7 normal train files, each its own subject (the reference's): stratified
        # validation parts of both classes
        assert fold["validation_one_class"] == ""


def test_the_probe_jobs_memory_is_in_the_panel_and_the_refit(recording_run):
    from embedprobe.memory.refit import join_runs
    from embedprobe.memory.report import read_runs

    workdir, _ = recording_run
    table = (workdir / "results/memory/abnormal_eeg_demo/summary.md").read_text()
    assert "| probe | tuab_demo | biot_random | 5 |" in table, table
    runs = read_runs(workdir / "results/memory/runs.tsv")
    joined = join_runs(runs, workdir / "results/preflight")
    assert joined.skipped == {}
    # sleep diagnosis's probes are recording-level jobs, abnormal EEG's the seizure probe's
    assert len(joined.runs["probe_recording"]) + len(joined.runs.get("probe_seizure", [])) == int(
        runs["rule"].eq("probe").sum())
    probes = runs[runs["rule"].eq("probe")]
    assert (probes["peak_mb"] <= probes["request_mb"]).all(), probes  # every request covered
