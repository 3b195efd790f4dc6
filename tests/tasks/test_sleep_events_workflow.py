"""The sleep suite past staging end to end: the real snakemake runs `sleep_events_demo` (staging,
respiratory events and the hypnogram on a UCDDB look-alike, arousals and limb movements on a
PhysioNet 2018 look-alike), shrunk to 4 nights a dataset and 4 folds, from generation to the
leaderboard."""

import json

import pandas as pd
import pytest
import yaml

from helpers.project import SMALL_JOBS, snakemake

pytestmark = pytest.mark.workflow

EVENT_BENCHMARKS = {"sleep_respiratory_demo": ("ucddb_demo", "ahi", (0, 1, 3, 5, 7, 10)),
                    "sleep_arousal_demo": ("physionet2018_demo", "arousal", (0, 1, 3, 5, 7, 9)),
                    "sleep_limb_demo": ("physionet2018_demo", "limb_movement_periodic",
                                        (0, 0.5, 1, 3, 5, 7, 10))}
NIGHTS = {"expected_recordings": 4, "generator": {"subjects": 4, "hours": 0.5, "seed": 0}}
SMALL = {"datasets": {"ucddb_demo": NIGHTS, "physionet2018_demo": NIGHTS},
         # the hypnogram benchmark takes its source's folds
         "benchmarks": {b: {"folds": 4} for b in [*EVENT_BENCHMARKS, "ucddb_stage_demo"]}}


@pytest.fixture(scope="module")
def events_run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("sleep_events")
    config = workdir / "small.yaml"
    config.write_text(yaml.safe_dump(SMALL))
    run = snakemake(workdir, "--configfile", str(config), *SMALL_JOBS, "sleep_events_demo")
    assert run.returncode == 0, run.stderr[-3000:]
    return workdir


def row(workdir, benchmark: str, dataset: str) -> dict:
    table = pd.read_csv(workdir / f"results/{benchmark}/{dataset}/results.tsv", sep="\t")
    assert list(table["model"]) == ["biot_random"]
    found = table.iloc[0].to_dict()
    assert found["status"] == "ok" and found["folds"] == "4/4", found
    return found


@pytest.mark.parametrize("benchmark", list(EVENT_BENCHMARKS))
def test_each_event_benchmark_beats_its_positive_share(events_run, benchmark):
    """The look-alikes write each event kind's signature into the EEG: the headline AUPRC is
    above its chance (the share of positive epochs), one column per threshold."""
    dataset, field, thresholds = EVENT_BENCHMARKS[benchmark]
    found = row(events_run, benchmark, dataset)
    assert 0 < found["positive_share"] < 1 and found["chance"] == found["positive_share"]
    assert found["auprc_mean"] > found["positive_share"] + 0.2, found
    assert found["auroc_mean"] > 0.7, found
    for t in thresholds:
        assert 0 <= found[f"auprc_{t:g}s"] <= 1, (t, found)
    fold = json.loads((events_run / f"results/{benchmark}/{dataset}/biot_random/fold0.json")
                      .read_text())
    assert fold["headline_probe"].startswith(f"{field}@"), fold.get("headline_probe")
    assert (events_run / f"results/{benchmark}/{dataset}/biot_random/pr.png").read_bytes()[
        :8] == b"\x89PNG\r\n\x1a\n"


def test_staging_and_the_hypnogram_of_the_same_nights(events_run):
    staging = row(events_run, "ucddb_stage_demo", "ucddb_demo")
    assert staging["kappa_mean"] > 0.3, staging
    hypnogram = row(events_run, "ucddb_hypnogram_demo", "ucddb_demo")
    assert -1 <= hypnogram["pearson_r_mean"] <= 1 and pd.isna(hypnogram["pearson_r_sd"])
    assert sum(k.startswith("r_") for k in hypnogram) == 34
    # one embedding serves staging and the event probes of a dataset
    assert sorted(p.name for p in (events_run / "cache/embeddings/ucddb_demo").glob("*.h5")) \
        == ["biot_random.h5"]


def test_the_leaderboard_names_each_chance_and_the_event_jobs_were_sized(events_run):
    board = (events_run / "results/leaderboard/sleep_events_demo.md").read_text()
    assert "Chance level of the headline (the share of positive windows): " \
           "sleep_respiratory_demo/ucddb_demo" in board
    runs = pd.read_csv(events_run / "results/memory/runs.tsv", sep="\t")
    probes = runs[runs["rule"].eq("probe") & runs["job"].str.contains("sleep_(?:arousal|limb)")]
    assert len(probes) == 8 and (probes["peak_mb"] < probes["request_mb"]).all()
