"""The sleep cohorts of issue 49 end to end: the real snakemake runs `sleep_cohorts_demo` once,
on one look-alike per reader (staging on the SHHS, WSC, STAGES, HMC, DCSM and MASS
look-alikes, brain age per recording on SHHS and per participant on STAGES and WSC, the
hypnogram of WSC, DCSM and MASS, MASS SS1's arousals, respiratory events and limb movements on
SHHS), from generation to the leaderboard."""

import json

import pandas as pd
import pytest
import yaml

from helpers.project import PROJECT, SMALL_JOBS, snakemake

pytestmark = pytest.mark.workflow

CONFIG = yaml.safe_load((PROJECT / "config/benchmarks.yaml").read_text())
BENCHMARKS = CONFIG["benchmarks"]
GROUP = CONFIG["target_groups"]["sleep_cohorts_demo"]
# each task's headline column in results.tsv
HEADLINE = {"sleep_staging": "kappa_mean", "brain_age": "mae_mean",
            "sleep_hypnogram": "pearson_r_mean", "sleep_arousal": "auprc_mean",
            "sleep_respiratory": "auprc_mean", "sleep_limb": "auprc_mean"}


# One look-alike per reader: MESA, MrOS, CFS and HomePAP go through the NSRR reader as SHHS
# does (tests/datasets/test_nsrr.py reads each), and each look-alike costs a check and an embed
# job; the whole group ran in the measurement (docs/measurements/2026-12-07-sleep-cohorts-demo.md).
RUN = ("shhs_demo", "wsc_demo", "stages_demo", "hmc_demo", "dcsm_demo", "mass_demo",
       "mass_ss1_demo")


def ran(benchmark: str) -> list[str]:
    return [d for d in BENCHMARKS[benchmark]["datasets"] if d in RUN]


@pytest.fixture(scope="module")
def cohorts_run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("sleep_cohorts")
    run = snakemake(workdir, *SMALL_JOBS, "sleep_cohorts_demo",
                    config=(f"only_datasets=[{','.join(RUN)}]",))
    assert run.returncode == 0, run.stderr[-3000:]
    return workdir, run


def folds_of(benchmark: str) -> int:
    bench = BENCHMARKS[benchmark]
    return bench["folds"] if "folds" in bench else BENCHMARKS[bench["source"]]["folds"]


def fold_records(workdir, benchmark: str, dataset: str) -> list[dict]:
    return [json.loads((workdir / f"results/{benchmark}/{dataset}/biot_random/fold{k}.json")
                       .read_text()) for k in range(folds_of(benchmark))]


def test_every_pair_of_the_group_has_its_row(cohorts_run):
    """Every (benchmark, dataset) of the group: one results row, every fold done, a finite
    headline; the staging look-alikes write each stage's signature, so kappa is well above 0."""
    workdir, _ = cohorts_run
    assert len(GROUP) == 8
    for benchmark in GROUP:
        bench, n = BENCHMARKS[benchmark], folds_of(benchmark)
        assert ran(benchmark), benchmark
        for dataset in ran(benchmark):
            table = pd.read_csv(workdir / f"results/{benchmark}/{dataset}/results.tsv",
                                sep="\t")
            assert list(table["model"]) == ["biot_random"], (benchmark, dataset)
            row = table.iloc[0].to_dict()
            assert row["status"] == "ok" and row["folds"] == f"{n}/{n}", (benchmark, row)
            headline = row[HEADLINE[bench["task"]]]
            assert pd.notna(headline), (benchmark, dataset, row)
            if bench["task"] == "sleep_staging":
                assert headline > 0.3, (benchmark, dataset, row)
            if bench["task"] in ("sleep_arousal", "sleep_respiratory", "sleep_limb"):
                # the look-alikes score events on every night: each fold's test windows hold some
                assert 0 < row["positive_share"] < 1 and 0 <= headline <= 1, row


def test_brain_age_is_per_recording_on_shhs_with_each_nights_age(cohorts_run):
    """SHHS (`brain_age_unit: recording`, the reference's): one unit per night, each tested
    once over the folds with its own visit's age (the look-alike's shhs2 night is 4 years
    after the participant's shhs1 night); WSC: one unit per participant."""
    workdir, _ = cohorts_run
    records = fold_records(workdir, "cohorts_brain_age_demo", "shhs_demo")
    assert {r["unit"] for r in records} == {"recording"}
    ages = {p["subject"]: p["age"] for r in records for p in r["predictions"]}
    tested = [p["subject"] for r in records for p in r["predictions"]]
    index = pd.read_csv(workdir / "results/index/shhs_demo.tsv", sep="\t")
    assert sorted(tested) == sorted(set(index["recording"])) and len(tested) == 6
    second = [rec for rec in tested if rec.startswith("shhs2-")]
    assert len(second) == 2
    for rec in second:
        assert ages[rec] == ages[rec.replace("shhs2-", "shhs1-")] + 4.0, ages

    records = fold_records(workdir, "cohorts_brain_age_demo", "wsc_demo")
    assert {r["unit"] for r in records} == {"subject"}
    tested = sorted(p["subject"] for r in records for p in r["predictions"])
    index = pd.read_csv(workdir / "results/index/wsc_demo.tsv", sep="\t")
    assert tested == sorted(set(index["subject"].astype(str))) and len(tested) == 6
    assert index["recording"].nunique() == 8  # two participants came back for a visit


def test_the_plan_names_every_dataset_and_the_leaderboard_every_benchmark(cohorts_run):
    workdir, run = cohorts_run
    for benchmark in GROUP:
        plan = [line for line in run.stderr.splitlines()
                if line.startswith(f"plan: {benchmark}: datasets ")]
        assert plan, (benchmark, run.stderr[-2000:])
        for dataset in ran(benchmark):
            assert dataset in plan[0], (benchmark, plan)
    board = (workdir / "results/leaderboard/sleep_cohorts_demo.md").read_text()
    for benchmark in GROUP:
        assert benchmark in board
    # one embedding per look-alike serves every benchmark on it
    stores = sorted(p.parent.name for p in (workdir / "cache/embeddings").glob("*/*.h5"))
    datasets = sorted(RUN)
    assert stores == datasets
