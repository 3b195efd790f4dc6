"""A run finishes what it can and says what it skipped (real snakemake, one tiny demo).

3 subjects x 1 night (0.3 h, 2 min of wake either side): the `demo` benchmark at 3 folds runs
biot_random and lists biot_pretrained (no weights file) as skipped; demo_brain_age keeps 5
folds, which 3 subjects cannot fill: its own preflight warns about that benchmark alone. Then
a broken weights file makes the check fail at run time: the run exits 1 and the table still
has biot_random's row and the failed pair's.
"""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest
import yaml

from helpers.project import snakemake

pytestmark = pytest.mark.workflow

TINY = {
    "datasets": {"sleep_edf_demo": {"expected_recordings": 3, "trim_wake_minutes": 2,
                                    "generator": {"subjects": 3, "nights": 1, "hours": 0.3,
                                                  "seed": 1}}},
    "benchmarks": {"demo": {"models": ["biot_random", "biot_pretrained"], "folds": 3}},
    # the local-file path (the shipped entry names a hub checkpoint:
    # tests/models/test_hub_weights.py)
    "models": {"biot_pretrained": {"weights": "biot_pretrained.pt"}},
}
TARGET = "results/demo/summary.md"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("keep_going")
    config = workdir / "tiny.yaml"
    config.write_text(yaml.safe_dump(TINY))
    plan = snakemake(workdir, "--configfile", str(config), "-n", str(workdir / TARGET))
    run = snakemake(workdir, "--configfile", str(config), "--cores", "2",
                    str(workdir / TARGET))
    return workdir, config, plan, run


def test_plan_warns_of_a_pair_skipped_before_running(tiny):
    _, _, plan, _ = tiny
    assert plan.returncode == 0, plan.stderr[-2000:]
    assert re.search(r"warning: sleep_edf_demo/biot_pretrained will be skipped: weights not "
                     r"found at \S+biot_pretrained.pt", plan.stderr)
    assert "fix: copy the checkpoint for biot_pretrained to" in plan.stderr


def test_the_other_pairs_finish_and_the_table_lists_the_skipped_one(tiny):
    workdir, _, _, run = tiny
    assert run.returncode == 0, run.stderr[-3000:]
    table = pd.read_csv(workdir / "results/demo/sleep_edf_demo/results.tsv",
                        sep="\t").set_index("model")
    assert table.loc["biot_random", "status"] == "ok"
    assert table.loc["biot_random", "folds"] == "3/3"
    assert table.loc["biot_pretrained", "status"] == "skipped"
    assert table.loc["biot_pretrained", "folds"] == "0/3"
    assert "weights not found" in table.loc["biot_pretrained", "reason"]
    summary = (workdir / TARGET).read_text()
    assert "**Warning: 1 pair(s) did not finish: sleep_edf_demo/biot_pretrained skipped.**" in (
        summary)
    assert "| sleep_edf_demo | biot_pretrained | - | - | - | 0/3 | - | skipped |" in summary
    assert "## Not run" in summary
    assert "warning: demo: biot_pretrained was skipped" in run.stderr  # closing line


def test_preflight_warns_about_the_other_benchmark_alone(tiny):
    """demo_brain_age's probe preflight (a benchmark of the pair the demo run did not need)
    cannot size its folds: it warns, lists them as not sized, and touches nothing else."""
    workdir, config, _, run = tiny
    assert run.returncode == 0, run.stderr[-3000:]
    pair = workdir / "results/preflight/sleep_edf_demo/biot_random"
    target = pair / "demo_brain_age.json"
    assert not target.exists(), "the demo target needs no demo_brain_age preflight"
    made = snakemake(workdir, "--configfile", str(config), "--cores", "2", str(target))
    assert made.returncode == 0, made.stderr[-3000:]
    log = (workdir / "results/logs/preflight/sleep_edf_demo/biot_random/demo_brain_age.log"
           ).read_text()
    assert ("warning: preflight sleep_edf_demo/biot_random: benchmark demo_brain_age not "
            "sized: 3 subjects cannot fill 5 folds") in log
    record = json.loads(target.read_text())
    assert record["jobs"] == {} and record["verdict"] == "ok"
    assert record["not_sized"] == {"demo_brain_age": {
        "message": "3 subjects cannot fill 5 folds",
        "fix": "use a dataset with more subjects or set the benchmark's `folds`"}}
    demo = json.loads((pair / "demo.json").read_text())  # the demo benchmark's, at 3 folds
    assert list(demo["jobs"]) == [f"probe/demo/fold{k}" for k in range(3)]
    assert demo["not_sized"] == {}
    # that one job ran, nothing else (the pair's embed preflight is not redone)
    assert re.search(r"^preflight_probe\s+1$", made.stderr, re.M), made.stderr[-2000:]
    assert re.search(r"^total\s+1$", made.stderr, re.M), made.stderr[-2000:]


def test_job_config_param_is_short_and_reruns_only_on_its_slice(tiny):
    workdir, config, _, _ = tiny
    changed = workdir / "changed.yaml"
    changed.write_text(yaml.safe_dump({"datasets": {"sleep_edf_demo": {
        "trim_wake_minutes": 20}}}))
    dry = snakemake(workdir, "--configfile", str(config), str(changed), "-n",
                    str(workdir / TARGET))
    out = dry.stdout + dry.stderr
    index_block = out.split("rule index:")[1].split("\n\n")[0]
    reason = next(line for line in index_block.splitlines() if "reason:" in line)
    # short: two job-config file names, not the config's text (the workdir's path aside, which
    # is as long as the user's)
    assert "Params have changed" in reason, reason
    assert len(reason.replace(str(workdir), "")) < 300, reason
    assert len(list((workdir / "results/.jobconfig").glob("*.json"))) >= 5
    unrelated = workdir / "unrelated.yaml"
    unrelated.write_text(yaml.safe_dump({"benchmarks": {"sleep_stage": {  # not this dataset
        "probe": {"C_grid": [1.0, 10.0]}}}}))
    dry = snakemake(workdir, "--configfile", str(config), str(unrelated), "-n",
                    str(workdir / TARGET))
    assert "Nothing to be done" in dry.stdout + dry.stderr, dry.stdout[-2000:]


def test_a_pair_failing_at_run_time_still_gets_a_table(tiny):
    """Runs last (module order): a broken weights file fails the check at run time."""
    workdir, config, _, _ = tiny
    (workdir / "weights").mkdir(exist_ok=True)
    (workdir / "weights/biot_pretrained.pt").write_bytes(b"not a checkpoint" * 64)
    run = snakemake(workdir, "--configfile", str(config), "--cores", "2",
                    str(workdir / TARGET))
    assert run.returncode == 1
    assert "error: demo: sleep_edf_demo/biot_pretrained failed (0/3 folds): check failed" in (
        run.stderr)
    table = pd.read_csv(workdir / "results/demo/sleep_edf_demo/results.tsv",
                        sep="\t").set_index("model")
    assert table.loc["biot_random", "status"] == "ok"
    assert table.loc["biot_pretrained", "status"] == "failed"
    assert "cannot load weights" in table.loc["biot_pretrained", "reason"]
    summary = (workdir / TARGET).read_text()
    assert "sleep_edf_demo/biot_pretrained failed" in summary
