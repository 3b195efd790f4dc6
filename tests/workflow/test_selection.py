"""Choosing what runs (folds, only_models/only_datasets, limit_batches, strict) and a dataset
whose files are missing: the plan's functions, then one small real-snakemake run.

The run: a benchmark `pair` over the sleep demo (5 subjects x 1 night of 0.3 h, 2 min of wake
either side, generated) and `sleep_edf_gone`, a dataset entry whose folder is empty.
`folds=debug` fits fold 0 of the demo and lists the empty one as skipped; a capped run
(`limit_batches=2`) then writes only under `*_limited`; `strict=true` refuses the empty dataset.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re

import pandas as pd
import pytest
import yaml

from embedprobe.core.config import load_config
from embedprobe.core.errors import CacheError
from embedprobe.reporting.aggregate import aggregate_folds, format_table
from embedprobe.smk import plan
from embedprobe.smk.job_configs import job_config_json, not_run_file
from embedprobe.tasks.registry import task_for

from helpers.project import snakemake

GONE = {"format": "sleep_edf", "path": "gone", "channel_map": "sleep_edf_expanded",
        "expected_recordings": 2, "epoch_seconds": 30, "trim_wake_minutes": 30}
PAIR = {"task": "sleep_staging", "datasets": ["sleep_edf_demo", "sleep_edf_gone"],
        "models": ["biot_random"], "folds": 5, "probe": {"C_grid": [0.1, 1.0]}}
SMALL = {"datasets": {"sleep_edf_demo": {"expected_recordings": 5, "trim_wake_minutes": 2,
                                         "generator": {"subjects": 5, "nights": 1,
                                                       "hours": 0.3, "seed": 1}},
                      "sleep_edf_gone": GONE},
         "benchmarks": {"pair": PAIR}}


# ------------------------------------------------------------------ the plan's functions


@pytest.fixture
def config(tmp_path, monkeypatch):
    config = load_config()
    config["datasets"]["sleep_edf_gone"] = dict(GONE)
    config["benchmarks"]["pair"] = json.loads(json.dumps(PAIR))
    config.update({root: str(tmp_path / root.removesuffix("_root")) for root in
                   ("data_root", "cache_root", "results_root", "weights_root")})
    (tmp_path / "data" / "gone").mkdir(parents=True)  # there, but empty
    monkeypatch.setattr(plan, "_WARNED", set())
    return config


def test_a_dataset_without_files_is_skipped_and_listed_with_its_fix(config, tmp_path, capsys):
    roots = plan.resolve_roots(config)
    skip = plan.data_skip(config, "sleep_edf_gone")
    assert skip == {"status": "skipped",
                    "reason": f"data not found in {tmp_path}/data/gone (0/2 recordings)",
                    "fix": f"put the sleep_edf_gone files under {tmp_path}/data/gone (or point "
                           "--config data_root=... or EMBEDPROBE_DATA_ROOT at the folder that "
                           "holds them), then run again"}
    assert plan.data_skip(config, "sleep_edf_demo") is None  # generated: never skipped
    assert plan.fold_results(config, roots, "pair", "sleep_edf_gone") == []
    assert len(plan.fold_results(config, roots, "pair", "sleep_edf_demo")) == 5
    err = capsys.readouterr().err
    assert err.count("warning: sleep_edf_gone will be skipped: data not found in") == 1
    assert f"\nfix: put the sleep_edf_gone files under {tmp_path}/data/gone" in err
    # the table's rows: aggregate's not-run list holds the pair, with no fold selection
    listed = json.loads(open(not_run_file(config, "pair", "sleep_edf_gone")).read())
    assert listed == {"dataset": "sleep_edf_gone", "pairs": {"biot_random": skip}}
    # only the dataset that is there is indexed and drawn
    assert plan.quality_tables(config, roots, "pair") == [
        f"{tmp_path}/results/index/sleep_edf_demo.quality.tsv"]
    assert len(plan.benchmark_tables(config, roots, "pair")) == 2
    figures = [t for t in plan.benchmark_targets(config, roots, "pair") if "confusion" in t]
    assert figures == [f"{tmp_path}/results/pair/sleep_edf_demo/biot_random/confusion.png"]
    # a pair whose weights are absent too keeps that reason (its own fix); the others: the data
    config["models"]["biot_pretrained"]["weights"] = "biot_pretrained.pt"
    config["benchmarks"]["pair"]["models"].append("biot_pretrained")
    pairs = plan.not_run_pairs(config, "pair", "sleep_edf_gone")
    assert pairs["biot_random"] == skip
    assert pairs["biot_pretrained"]["reason"].startswith("weights not found at")


def test_strict_keeps_the_refusal(config, capsys):
    config["strict"] = True
    assert plan.data_skip(config, "sleep_edf_gone") is None
    with pytest.raises(SystemExit) as stopped:
        plan.index_inputs(config, plan.resolve_roots(config), "sleep_edf_gone")
    assert stopped.value.code == 2
    assert "error: dataset 'sleep_edf_gone' is missing (0/2 recordings)" in (
        capsys.readouterr().err)


def test_strict_stops_at_an_absent_checkpoint_too(config, capsys):
    config["models"]["biot_pretrained"]["weights"] = "biot_pretrained.pt"  # not in weights/
    assert list(plan.known_skips(config, "demo")) == []  # demo runs biot_random alone
    config["benchmarks"]["demo"]["models"].append("biot_pretrained")
    assert list(plan.known_skips(config, "demo")) == ["biot_pretrained"]
    config["strict"] = True
    with pytest.raises(SystemExit) as stopped:
        plan.known_skips(config, "demo")
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert "error: benchmark 'demo': biot_pretrained: weights not found at" in err
    assert "fix: copy the checkpoint for biot_pretrained" in err


def test_fold_and_model_selection_in_the_plan(config, tmp_path):
    roots = plan.resolve_roots(config)
    config["folds"] = "0,3"
    assert plan.fold_results(config, roots, "pair", "sleep_edf_demo") == [
        f"{tmp_path}/results/pair/sleep_edf_demo/biot_random/fold{k}.json" for k in (0, 3)]
    assert [p.rsplit("/", 1)[1] for p in plan.fold_predictions(
        config, roots, "pair", "sleep_edf_demo", "biot_random")] == ["fold0.npz", "fold3.npz"]
    assert json.loads(open(not_run_file(config, "pair", "sleep_edf_demo")).read())["folds"] == [
        0, 3]
    config["only_datasets"] = ["sleep_edf_gone"]
    assert plan.benchmark_tables(config, roots, "pair") == [
        f"{tmp_path}/results/pair/sleep_edf_gone/results.tsv"]
    assert plan.leaderboard_tables(config, roots, "demo") == []  # demo's dataset is not selected
    assert plan.benchmark_targets(config, roots, "demo") == []
    config["folds"] = 7
    with pytest.raises(SystemExit) as stopped:
        plan.fold_results(config, roots, "pair", "sleep_edf_demo")
    assert stopped.value.code == 2


def test_a_target_the_selection_empties_is_a_usage_error(config, capsys):
    roots = plan.resolve_roots(config)
    config["only_models"] = ["biot_pretrained"]  # sleep_stage runs it, demo does not
    assert plan.target_inputs(config, roots, "sleep_stage")({})  # its targets, lazily
    with pytest.raises(SystemExit) as stopped:
        plan.target_inputs(config, roots, "demo")({})
    assert stopped.value.code == 2
    assert ("error: only_models=biot_pretrained leaves target 'demo' nothing to run: its "
            "benchmarks run models biot_random on datasets sleep_edf_demo") in (
        capsys.readouterr().err)


def test_a_capped_run_targets_the_whole_chain_under_its_own_roots(config, tmp_path):
    config["limit_batches"] = 2
    roots = plan.resolve_roots(config)
    targets = plan.target_inputs(config, roots, "pair")({})
    # the summary and leaderboard, as an uncapped run's, so the probes run on the capped stores
    assert f"{tmp_path}/results_limited/pair/summary.md" in targets
    assert f"{tmp_path}/results_limited/leaderboard/pair.md" in targets
    assert all(t.startswith(f"{tmp_path}/results_limited/") for t in targets), targets
    slice_ = json.loads(job_config_json(config, "pair", "sleep_edf_demo", "biot_random"))
    assert slice_["limit_batches"] == 2
    assert slice_["results_root"] == f"{tmp_path}/results_limited"


def test_a_selection_changes_no_job_config(config):
    before = {args: job_config_json(config, *args) for args in (
        ("pair", "sleep_edf_demo", "biot_random"), (None, "sleep_edf_demo", None))}
    assert "limit_batches" not in json.loads(before[(None, "sleep_edf_demo", None)])
    config.update(folds="debug", only_models=["biot_random"], only_datasets="sleep_edf_demo",
                  strict=True)
    assert {args: job_config_json(config, *args) for args in before} == before
    # nor does a target group, edited or added (it only names targets)
    config["target_groups"] = {**(config.get("target_groups") or {}), "mine": ["pair"]}
    assert {args: job_config_json(config, *args) for args in before} == before


def fold_record(tmp_path, fold: int, kappa: float):
    path = tmp_path / f"fold{fold}.json"
    path.write_text(json.dumps({"dataset": "d", "model": "m", "fold": fold, "status": "ok",
                                "chosen": 1.0, "n_classes": 5,
                                "metrics": {"kappa": kappa, "balanced_accuracy": 0.5,
                                            "macro_f1": 0.4}}))
    return path


def test_a_pair_that_ran_its_selected_folds_is_partial_not_failed(tmp_path):
    task = task_for("sleep_staging")
    paths = [fold_record(tmp_path, 0, 0.6), fold_record(tmp_path, 2, 0.8)]
    row = aggregate_folds(paths, task, 5, selected=[0, 2]).iloc[0]
    assert (row["folds"], row["status"], row["kappa_mean"]) == ("2/5", "partial", 0.7)
    assert row["reason"] == ("folds 0, 2 of 5 only: the run selected them (config folds); the "
                             "other 3 were not run")
    assert row["fix"].startswith("run again without `folds`")
    # a selected fold that did not finish: failed, naming it
    row = aggregate_folds(paths[:1], task, 5, selected=[0, 2]).iloc[0]
    assert (row["folds"], row["status"]) == ("1/5", "failed")
    assert row["reason"] == "1 of the 2 selected folds did not finish (fold 2)"
    # without a selection, as before
    assert aggregate_folds(paths, task, 5).iloc[0]["status"] == "failed"
    printed = format_table(aggregate_folds(paths, task, 5, selected=[0, 2]), task, "b")
    assert "0.700 +- 0.100" in printed and "partial: folds 0, 2 of 5 only" in printed


def test_after_a_failure_the_partial_table_counts_the_selected_folds_only(config, tmp_path):
    """onerror's table in a run of folds 2 and 3: fold 3 failed; fold 1's old failure record
    (a fold this run did not plan) does not make the pair's reason."""
    from embedprobe.smk.partial import partial_results

    config["folds"] = [2, 3]
    pair = tmp_path / "results/pair/sleep_edf_demo/biot_random"
    pair.mkdir(parents=True)
    fold2 = fold_record(tmp_path, 2, 0.5)
    (pair / "fold2.json").write_text(fold2.read_text().replace('"d"', '"sleep_edf_demo"')
                                     .replace('"m"', '"biot_random"'))
    for fold, message in ((1, "an old failure"), (3, "the probe broke")):
        (pair / f"fold{fold}.json.failure.json").write_text(json.dumps(
            {"category": "model", "message": message, "fix": "look at the log"}))
    lines = partial_results(config, plan.resolve_roots(config), since=0)
    assert "error: pair: sleep_edf_demo/biot_random failed (1/5 folds): probe fold 3 failed " \
           "(model): the probe broke" in lines
    table = pd.read_csv(tmp_path / "results/pair/sleep_edf_demo/results.tsv", sep="\t")
    assert table[["model", "folds", "status"]].to_dict("records") == [
        {"model": "biot_random", "folds": "1/5", "status": "failed"}]
    assert not (tmp_path / "results/pair/sleep_edf_gone/results.tsv").exists()  # not touched
    summary = (tmp_path / "results/pair/summary.md").read_text()
    assert "sleep_edf_demo/biot_random failed" in summary


# ------------------------------------------------------------------ the real snakemake


def file_hashes(*roots) -> dict[str, str]:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest()
            for root in roots for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("selection")
    (workdir / "data" / "gone").mkdir(parents=True)
    small = workdir / "small.yaml"
    small.write_text(yaml.safe_dump(SMALL))
    args = ("--configfile", str(small))
    debug = snakemake(workdir, *args, "--cores", "2", "pair", config=("folds=debug",))
    real = [workdir / "cache", workdir / "results", workdir / "data"]
    before = file_hashes(*real)
    capped = snakemake(workdir, *args, "--cores", "2", "pair", config=("limit_batches=2",))
    after = file_hashes(*real)
    again = snakemake(workdir, *args, "-n", "pair", config=("folds=debug",))
    strict = snakemake(workdir, *args, "-n", "pair", config=("strict=true",))
    # model aliases: all_random is biot_random here; biot, BIOT's pretrained checkpoints, none
    aliases = {alias: snakemake(workdir, *args, "-n", "pair",
                                config=("folds=debug", f"only_models={alias}"))
               for alias in ("all_random", "biot", "all_randon", "[all,-all_pretrained]")}
    return {"workdir": workdir, "debug": debug, "capped": capped, "again": again,
            "strict": strict, "before": before, "after": after, "aliases": aliases}


@pytest.mark.workflow
def test_folds_debug_fits_fold_0_and_the_table_says_1_of_5(runs):
    workdir, run = runs["workdir"], runs["debug"]
    assert run.returncode == 0, run.stderr[-3000:]
    pair = workdir / "results/pair/sleep_edf_demo/biot_random"
    assert sorted(p.name for p in pair.glob("fold*")) == ["fold0.json", "fold0.npz"]
    assert (pair / "confusion.png").stat().st_size > 0
    table = pd.read_csv(workdir / "results/pair/sleep_edf_demo/results.tsv", sep="\t")
    row = table.set_index("model").loc["biot_random"]
    assert (row["folds"], row["status"]) == ("1/5", "partial")
    assert row["reason"].startswith("folds 0 of 5 only: the run selected them")
    assert -1 <= row["kappa_mean"] <= 1 and row["kappa_sd"] == 0.0
    assert "note: pair: folds 0 of 5 only (config folds)" in run.stderr


@pytest.mark.workflow
def test_the_dataset_without_files_is_skipped_and_the_other_runs(runs):
    workdir, run = runs["workdir"], runs["debug"]
    assert run.returncode == 0, run.stderr[-3000:]
    gone = f"{workdir}/data/gone"
    fix = (f"put the sleep_edf_gone files under {gone} (or point --config data_root=... or "
           "EMBEDPROBE_DATA_ROOT at the folder that holds them), then run again")
    assert (f"warning: sleep_edf_gone will be skipped: data not found in {gone} (0/2 "
            f"recordings); the other datasets run, and results.tsv and summary.md list its "
            f"pairs as skipped\nfix: {fix}") in run.stderr
    table = pd.read_csv(workdir / "results/pair/sleep_edf_gone/results.tsv", sep="\t")
    assert table[["dataset", "model", "folds", "status", "reason", "fix"]].to_dict("records") == [
        {"dataset": "sleep_edf_gone", "model": "biot_random", "folds": "0/5",
         "status": "skipped", "reason": f"data not found in {gone} (0/2 recordings)",
         "fix": fix}]
    assert not (workdir / "results/index/sleep_edf_gone.tsv").exists()
    summary = (workdir / "results/pair/summary.md").read_text()
    not_run = summary.split("## Not run")[1].split("##")[0]
    assert f"| sleep_edf_gone | biot_random | skipped | 0/5 | data not found in {gone}" in not_run
    assert re.search(r"\| sleep_edf_demo \| biot_random \| [-0-9.]+ \+- 0\.000 \|.* \| 1/5 \| "
                     r"[0-9.]+ \| partial \|", summary), summary
    assert f"warning: pair: dataset sleep_edf_gone was skipped (data not found in {gone}" in (
        run.stderr)


@pytest.mark.workflow
def test_a_capped_run_leaves_the_real_cache_and_results_byte_identical(runs):
    from embedprobe.memory.records import job_estimate
    from embedprobe.pipeline.store import open_embeddings

    workdir, run = runs["workdir"], runs["capped"]
    assert run.returncode == 0, run.stderr[-3000:]
    assert runs["before"] and runs["after"] == runs["before"]
    assert "note: limit_batches=2: a capped smoke run" in run.stderr
    store = workdir / "cache_limited/embeddings/sleep_edf_demo/biot_random.h5"
    index = pd.read_csv(workdir / "results_limited/index/sleep_edf_demo.tsv", sep="\t")
    batch = job_estimate(workdir / "results_limited/preflight/sleep_edf_demo/biot_random.json",
                         "embed")["knobs"]["batch_size"]
    with open_embeddings(store) as capped:
        assert len(capped.windows) == 2 * batch < len(index)
        assert json.loads(capped.identity.preprocessing)["limit_batches"] == 2
        identity, windows = capped.identity, capped.windows
    # an uncapped embed expects another identity: the capped store is not taken as complete
    uncapped = dataclasses.replace(identity, preprocessing=json.dumps(
        {**json.loads(identity.preprocessing), "limit_batches": None}, sort_keys=True))
    with pytest.raises(CacheError, match="built for other inputs: preprocessing"):
        open_embeddings(store, uncapped)
    # its windows spread over every subject, so the probes fit on them: every fold ran on the
    # capped store's windows alone, in the capped roots, and the run says what the scores are
    assert windows["subject"].nunique() == index["subject"].nunique() == 5
    folds = [json.loads(p.read_text()) for p in
             sorted((workdir / "results_limited/pair/sleep_edf_demo/biot_random").glob(
                 "fold*.json"))]
    assert len(folds) == 5
    assert all(f["n_train"] + f["n_val"] + f["n_test"] == len(windows) for f in folds)
    table = pd.read_csv(workdir / "results_limited/pair/sleep_edf_demo/results.tsv", sep="\t")
    row = table.set_index("model").loc["biot_random"]
    assert (row["status"], row["folds"]) == ("ok", "5/5") and -1 <= row["kappa_mean"] <= 1
    assert ("note: capped run (limit_batches=2): the scores above come from 2 batches per "
            "pair and test the chain, not the models") in run.stderr
    assert (workdir / "results_limited/check/sleep_edf_demo/biot_random.json").is_file()
    # and the uncapped run after it has nothing to redo
    again = runs["again"]
    assert again.returncode == 0, again.stderr[-2000:]
    assert "Nothing to be done" in again.stdout + again.stderr, again.stdout[-2000:]


@pytest.mark.workflow
def test_strict_refuses_the_dataset_without_files(runs):
    workdir, run = runs["workdir"], runs["strict"]
    assert run.returncode == 2, run.stderr[-2000:]
    assert (f"error: dataset 'sleep_edf_gone' is missing (0/2 recordings) in "
            f"{workdir}/data/gone") in run.stderr
    assert f"fix: put the sleep_edf_gone files under {workdir}/data/gone" in run.stderr


@pytest.mark.workflow
def test_model_aliases_select_in_the_real_plan(runs):
    aliases = runs["aliases"]
    same = aliases["all_random"]  # = only_models=biot_random: the debug run's jobs, all done
    assert same.returncode == 0, same.stderr[-2000:]
    assert "Nothing to be done" in same.stdout + same.stderr, same.stdout[-2000:]
    pretrained = aliases["biot"]  # biot's three checkpoints: pair runs none
    assert pretrained.returncode == 2, pretrained.stderr[-2000:]
    assert ("error: only_models=biot_pretrained,biot_six_datasets,biot_shhs_prest folds=debug "
            "leaves target "
            "'pair' nothing to run: its benchmarks run models biot_random") in pretrained.stderr
    typo = aliases["all_randon"]
    assert typo.returncode == 2, typo.stderr[-2000:]
    assert ("error: config only_models names unknown model 'all_randon' (did you mean "
            "'all_random'?)") in typo.stderr
    assert ("or an alias: all_pretrained, all_random, all_tokens, all_fm, all_ts, all_supervised, "
            "all, biot, labram, cbramod, eegpt") in typo.stderr
    # every model less the pretrained ones: biot_random again, all done
    less = aliases["[all,-all_pretrained]"]
    assert less.returncode == 0, less.stderr[-2000:]
    assert "Nothing to be done" in less.stdout + less.stderr, less.stdout[-2000:]
