"""preflight split by what each estimate depends on: the pair's embed job (no benchmark enters
it) and, with --benchmark, that benchmark's probe folds. Real check, index and CLI runs on the
generated Sleep-EDF demo (5 subjects x 2 nights)."""

import json
import math
import subprocess
import sys

import pandas as pd
import pytest
from mne.io import read_raw_edf

from embedprobe.datasets.registry import dataset_root
from embedprobe.memory.records import estimate_path, job_estimate
from embedprobe.pipeline.check import write_result
from embedprobe.pipeline.filters import FilterStep, reach
from embedprobe.smk.job_configs import preflight_job_config_json

from helpers.check_config import DATASET, checked_pair
from helpers.project import PROJECT

MODEL = "biot_random"


@pytest.fixture(scope="module")
def pair(demo_root, tmp_path_factory):
    """The demo's config (roots inside), its window index and a passing check of BIOT."""
    tmp = tmp_path_factory.mktemp("preflight")
    config, _, index, check = checked_pair(demo_root, tmp, MODEL)
    check_path = tmp / "check.json"
    write_result(check, check_path)
    return config, index, check_path


def config_data(config: dict):
    """The demo's folder under the config's data root."""
    return dataset_root(config, config, DATASET)


def preflight(config: dict, check_path, index, out, *args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "embedprobe.cli", "--job-config", json.dumps(config),
         "preflight", "--dataset", DATASET, "--model", MODEL, "--check", str(check_path),
         "--index", str(index), "--out", str(out), *args],
        capture_output=True, text=True, timeout=600,
        env={"PYTHONPATH": str(PROJECT / "workflow"), "PATH": "/usr/bin:/bin"})


def test_the_pair_s_preflight_sizes_embed_alone_whatever_the_benchmarks(pair, tmp_path):
    config, index, check_path = pair
    with_all = tmp_path / "all.json"
    run = preflight(config, check_path, index, with_all)
    assert run.returncode == 0, run.stderr[-2000:]
    record = json.loads(with_all.read_text())
    assert list(record["jobs"]) == ["embed"] and record["verdict"] == "ok"
    assert record["dataset"] == DATASET and record["model"] == MODEL
    table = pd.read_csv(index, sep="\t")
    inputs = record["jobs"]["embed"]["inputs"]
    assert inputs["n_windows"] == len(table)
    # the readers' unit is a part of a night (at most 512 windows), read over only the stretch
    # its windows span, with the resampling filter's reach (24 samples at 100 -> 200 Hz) and
    # the 0.5 Hz high-pass's on each side: not the whole file; its 2 channels read as float64
    # (BIOT's 16 inputs size the windows, not the read)
    by_recording = table.groupby("recording")["start"]
    assert inputs["night_windows"] == min(512, by_recording.size().max())
    assert inputs["n_channels"] == 16
    spanned = (by_recording.max() - by_recording.min()).max() + 3000  # 30-s windows at 100 Hz
    high_pass = reach((FilterStep("highpass", (0.5,)),), 100.0)
    assert inputs["recording_bytes"] == 2 * 8 * (spanned + 2 * (24 + high_pass))
    # BIOT divides by its recording's statistic: each reader first reads a whole recording
    longest = max(read_raw_edf(f, include=["EEG Fpz-Cz"], verbose="error").n_times
                  for f in (config_data(config) / "sleep-cassette").glob("*-PSG.edf"))
    assert inputs["statistic_bytes"] == 2 * 8 * longest
    none = tmp_path / "none.json"
    assert preflight({**config, "benchmarks": {}}, check_path, index, none).returncode == 0
    assert json.loads(none.read_text())["jobs"] == record["jobs"]


def test_the_nested_memory_margins_size_the_request(pair, tmp_path):
    """memory.margin, a dotted --config key over the job's config, reaches the embed request:
    the wider of it and memory.embed_margin (20%) over the same total."""
    config, index, check_path = pair
    records = {}
    for margin in ("0.15", "0.6"):
        out = tmp_path / f"margin_{margin}.json"
        run = preflight(config, check_path, index, out, "--config", f"memory.margin={margin}")
        assert run.returncode == 0, run.stderr[-2000:]
        records[margin] = json.loads(out.read_text())
    low, high = records["0.15"], records["0.6"]
    assert (low["margin"], high["margin"]) == (0.15, 0.6)
    embed_low, embed_high = low["jobs"]["embed"], high["jobs"]["embed"]
    assert (embed_low["margin"], embed_high["margin"]) == (0.20, 0.6)
    assert embed_low["total"] == embed_high["total"]
    assert embed_high["request_mb"] == math.ceil(embed_high["total"] * 1.6 / 2**20)
    assert embed_low["request_mb"] == math.ceil(embed_low["total"] * 1.2 / 2**20)


def test_a_benchmark_s_preflight_sizes_its_probe_folds(pair, tmp_path):
    config, index, check_path = pair
    out = estimate_path(tmp_path, DATASET, MODEL, "probe/sleep_stage/fold0")
    assert out == tmp_path / DATASET / MODEL / "sleep_stage.json"
    run = preflight(config, check_path, index, out, "--benchmark", "sleep_stage")
    assert run.returncode == 0, run.stderr[-2000:]
    record = json.loads(out.read_text())
    assert record["benchmark"] == "sleep_stage" and record["not_sized"] == {}
    assert list(record["jobs"]) == [f"probe/sleep_stage/fold{k}" for k in range(5)]
    windows = len(pd.read_csv(index, sep="\t"))
    for key, entry in record["jobs"].items():
        assert entry["job"] == "probe_logistic" and entry["verdict"] == "ok"
        parts = entry["inputs"]
        assert parts["n_train"] + parts["n_val"] + parts["n_test"] == windows
        assert parts["dim"] == 256 and parts["n_fits"] == 6  # BIOT's width, the C grid
        assert job_estimate(out, key) == entry  # what the probe rule's callables read
    assert f"preflight {DATASET}/{MODEL} probe/sleep_stage/fold4: ok, request" in run.stderr


def test_a_node_measures_a_probe_step_s_baseline_once_and_reads_it_after(pair, tmp_path):
    """The first probe preflight on a node measures its step's baseline in a child and records
    it under the results root; the next ones read the record (a changed record's value is what
    they use); an unreadable record is measured again."""
    config, index, check_path = pair
    config = config | {"results_root": str(tmp_path / "results")}
    first, second, third = (tmp_path / f"{n}.json" for n in ("first", "second", "third"))
    run = preflight(config, check_path, index, first, "--benchmark", "sleep_stage")
    assert run.returncode == 0, run.stderr[-2000:]
    records = list((tmp_path / "results/memory/baselines").glob("*/*/probe-*.json"))
    assert len(records) == 1, records
    recorded = json.loads(records[0].read_text())
    measured = json.loads(first.read_text())["jobs"]["probe/sleep_stage/fold0"]["inputs"]
    assert recorded["step"] == "probe" and 50e6 < recorded["peak_bytes"] < 2e9
    assert measured["measured_baseline_bytes"] == recorded["peak_bytes"]

    records[0].write_text(json.dumps(recorded | {"peak_bytes": 123_456_789}))
    run = preflight(config, check_path, index, second, "--benchmark", "sleep_stage")
    assert run.returncode == 0, run.stderr[-2000:]
    for entry in json.loads(second.read_text())["jobs"].values():
        assert entry["inputs"]["measured_baseline_bytes"] == 123_456_789

    records[0].write_text("{half a rec")
    run = preflight(config, check_path, index, third, "--benchmark", "sleep_stage")
    assert run.returncode == 0, run.stderr[-2000:]
    again = json.loads(records[0].read_text())["peak_bytes"]
    assert 50e6 < again < 2e9 and abs(again - recorded["peak_bytes"]) < 0.1 * again
    assert not list(records[0].parent.glob("*.tmp"))


def test_the_baseline_record_moves_with_the_environment_and_the_step_s_imports(
        tmp_path, monkeypatch):
    from embedprobe.memory import baselines

    here = baselines.baseline_record(tmp_path, "probe")
    assert here.parent.parent.name == __import__("socket").gethostname()
    monkeypatch.setitem(baselines.STEP_IMPORTS, "probe", "import json")
    assert baselines.baseline_record(tmp_path, "probe") != here
    monkeypatch.undo()
    baselines.environment_fingerprint.cache_clear()
    monkeypatch.setattr(baselines.sys, "version", "3.99 (another interpreter)")
    assert baselines.baseline_record(tmp_path, "probe").parent != here.parent
    baselines.environment_fingerprint.cache_clear()


def test_inside_a_scheduler_job_every_estimate_counts_its_processes_config_untouched(
        pair, tmp_path, monkeypatch):
    """Found under SLURM (SLURM_JOB_ID), not set in the config: the embed and the probe
    estimates both add the scheduler's processes, and the config handed in is not written to
    (it was the message bus between the two: issue 48)."""
    import copy

    from embedprobe.core.config import resolve_roots
    from embedprobe.memory.preflight import run_preflight, run_probe_preflight
    from embedprobe.pipeline.context import DatasetContext

    config, index, check_path = pair
    assert config["memory"]["on_cluster"] is False
    before = copy.deepcopy(config)
    roots = resolve_roots(config)
    records = {}
    for on_slurm in (False, True):
        if on_slurm:
            monkeypatch.setenv("SLURM_JOB_ID", "4242")
        embed = run_preflight(DatasetContext.build(config, roots, DATASET), MODEL, check_path,
                              index, tmp_path / f"embed{on_slurm}.json")
        probe = run_probe_preflight(config, roots, "sleep_stage", DATASET, MODEL, check_path,
                                    index, tmp_path / f"probe{on_slurm}.json")
        records[on_slurm] = (embed["jobs"]["embed"], probe["jobs"]["probe/sleep_stage/fold0"])
    assert config == before
    for local, slurm in zip(records[False], records[True], strict=True):
        assert local["inputs"]["on_cluster"] is False and slurm["inputs"]["on_cluster"] is True
        assert slurm["terms"]["scheduler processes"] > 0
        assert local["terms"].get("scheduler processes", 0) == 0


def test_folds_it_cannot_fill_are_listed_and_its_probes_get_the_fallback(pair, tmp_path):
    config, index, check_path = pair
    bench = dict(config["benchmarks"]["sleep_stage"], folds=7)
    out = tmp_path / "sleep_stage.json"
    run = preflight({**config, "benchmarks": {"sleep_stage": bench}}, check_path, index, out,
                    "--benchmark", "sleep_stage")
    assert run.returncode == 0, run.stderr[-2000:]
    assert (f"warning: preflight {DATASET}/{MODEL}: benchmark sleep_stage not sized: "
            "5 subjects cannot fill 7 folds") in run.stderr
    record = json.loads(out.read_text())
    assert record["jobs"] == {} and record["not_sized"]["sleep_stage"]["message"] == (
        "5 subjects cannot fill 7 folds")
    assert job_estimate(out, "probe/sleep_stage/fold6") == {
        "request_mb": 2000, "runtime_min": 10, "limit_mb": None}


def test_a_benchmark_that_does_not_run_the_pair_is_refused(pair, tmp_path):
    config, index, check_path = pair
    out = tmp_path / "demo.json"
    run = preflight(config, check_path, index, out, "--benchmark", "demo")
    assert run.returncode == 2 and not out.exists()
    assert f"error: benchmark demo does not run {DATASET}/{MODEL}" in run.stderr
    assert "fix: name a dataset and model of benchmarks.demo" in run.stderr


def test_each_preflight_s_config_slice_holds_only_what_it_sizes(pair):
    """Adding a benchmark changes neither the pair's slice nor another benchmark's: Snakemake
    then reruns neither the embed estimate nor the other probes' (nor embed and probe)."""
    config, _, _ = pair
    added = {**config, "benchmarks": {**config["benchmarks"],
                                      "sleep_copy": config["benchmarks"]["sleep_stage"]}}
    for benchmark in (None, "sleep_stage"):
        before = preflight_job_config_json(config, DATASET, MODEL, benchmark)
        assert preflight_job_config_json(added, DATASET, MODEL, benchmark) == before
    pair_slice = json.loads(preflight_job_config_json(config, DATASET, MODEL))
    assert pair_slice["benchmarks"] == {} and pair_slice["memory"] == config["memory"]
    bench_slice = json.loads(preflight_job_config_json(config, DATASET, MODEL, "sleep_stage"))
    assert list(bench_slice["benchmarks"]) == ["sleep_stage"]
    assert list(bench_slice["datasets"]) == [DATASET] and list(bench_slice["models"]) == [MODEL]


def test_a_token_width_that_cannot_fit_is_refused_naming_the_pooled_width(pair, tmp_path):
    """A token store's flattened width (EEGPT read as tokens: 120 x 2048 per sleep epoch) whose
    probe cannot fit the limit stops preflight before the run: the breakdown, and a fix that
    names the pooled width's request, which fits."""
    import dataclasses

    from embedprobe.pipeline.check import read_result

    config, index, check_path = pair
    check = read_result(check_path)
    wide = tmp_path / "check_tokens.json"
    write_result(dataclasses.replace(check, feature_dim=120 * 2048, tokens=120), wide)
    out = tmp_path / "sleep_stage.json"
    limited = {**config, "memory": {**config["memory"], "limit_mb": 3000}}
    run = preflight(limited, wide, index, out,
                    "--benchmark", "sleep_stage")
    assert run.returncode != 0 and not out.exists()
    assert "probe/sleep_stage/fold0" in run.stderr and "cannot fit the memory limit" in run.stderr
    assert "the fold's parts as read" in run.stderr  # the breakdown's terms
    # a few thousand token rows: two streamed blocks would hold more than the rows
    assert "streamed=1" not in run.stderr
    fix = next(line for line in run.stderr.splitlines() if line.startswith("fix:"))
    assert f"or probe {MODEL} pooled: `pooling: mean` in its entry" in fix
    assert "gives 2048 features instead of 120 tokens x 2048" in fix and "which fits" in fix
    # the same pair pooled is sized as usual
    pooled = tmp_path / "pooled.json"
    write_result(dataclasses.replace(check, feature_dim=2048, tokens=0), pooled)
    assert preflight(limited, pooled, index, out,
                     "--benchmark", "sleep_stage").returncode == 0


def test_a_flattened_variant_that_cannot_fit_is_offered_its_pooled_variant():
    """A BCI benchmark's token_flattening variant (core/variants.py) whose probe cannot fit:
    the fix names the variant with the same filtering whose tokens are averaged, and its
    request at the pooled width."""
    from types import SimpleNamespace

    from embedprobe.memory.preflight import offer_pooled

    asked = []

    def fold_estimate(dim):
        asked.append(dim)
        return SimpleNamespace(verdict="ok", request_mb=321), 10

    for variant, pooled in (("token_flattening", "default"),
                            ("no_filtering_token_flattening", "no_filtering")):
        estimate = SimpleNamespace(verdict="too_big", fix="raise memory.limit_mb")
        check = SimpleNamespace(tokens=12, feature_dim=12 * 2048)
        offer_pooled(estimate, check, f"{variant}/eegpt_random", fold_estimate)
        assert estimate.fix == (
            f"raise memory.limit_mb; or probe eegpt_random pooled: its variant {pooled} "
            f"(--config variants={pooled} in place of {variant}) gives 2048 features instead "
            "of 12 tokens x 2048 and needs 321 MB, which fits")
    assert asked == [2048, 2048]
