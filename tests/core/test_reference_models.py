"""The reference suite's catalogue (config/models.yaml `reference_models:`,
core/reference_models.py): its 44 checkpoint ids, each run here by a model entry or refused
with its reason; reference names in model lists (`all,-sleepyco`); the families the reference
leaves out of a task's benchmarks (smk/plan.task_rule_outs), in the plan and its dry run."""

from __future__ import annotations

import json
import subprocess

import pytest
import yaml

from embedprobe.core.config import check_names, load_config
from embedprobe.core.errors import UsageError
from embedprobe.core.model_aliases import EEG_FM, expand_models
from embedprobe.core.reference_models import reference_checkpoints, rule_out_reason
from embedprobe.core.selection import check_selection, name_list
from embedprobe.smk import plan
from embedprobe.smk.job_configs import job_config_json
from embedprobe.tasks.registry import TASKS

from helpers.hub import fetch_cli
from helpers.project import PROJECT, VENV_BIN, snakemake

# NeuroAtlas's configs/model_groups.yaml, less brain_age_cnn (its one checkpoint is `planned`)
GROUPS = {"eeg_fm": {"biot", "cbramod", "eegpt", "labram", "neurogpt", "neurolm", "neurorvq",
                     "reve", "sleepfm", "steegformer"},
          "ts_fm": {"chronos", "moirai", "moment"},
          "supervised": {"seizure_transformer", "deepsoz_hem", "sleep_transformer", "sleepyco",
                         "core_sleep", "eegnetv4"}}
# the reference ids that run here, and their models
RUNS_AS = {"biot_pretrained": "biot_pretrained", "labram_pretrained": "labram_pretrained",
           "cbramod_pretrained": "cbramod_pretrained", "cbramod_random_init": "cbramod_random",
           "eegpt_pretrained": "eegpt_pretrained", "reve_pretrained": "reve_base_pretrained",
           "reve_random_init": "reve_random",
           "steegformer_small": "steegformer_small_pretrained",
           "steegformer_base": "steegformer_base_pretrained",
           "steegformer_large": "steegformer_large_pretrained",
           **{m: m for m in ("chronos_t5_tiny", "chronos_t5_small", "chronos_t5_base",
                             "chronos_t5_large", "moment_small", "moment_base", "moment_large",
                             *(f"eegnetv4_{d}" for d in (
                                 "alex_mi", "bnci2014_001", "bnci2014_004", "bnci2015_001",
                                 "bnci2015_004", "cho2017", "lee2019_mi", "ofner2017",
                                 "physionet_mi", "schirrmeister2017", "weibo2014",
                                 "zhou2016")))}}
# a sleep stager built from BIOT's random init: a stand-in until the family is built
SLEEP_STAGER = {"family": "sleepyco", "architecture": "BIOT", "weights": "random", "seed": 0,
                "sfreq": 200, "window_seconds": 30, "scaling": "percentile95",
                "group": "supervised"}


@pytest.fixture
def config(monkeypatch):
    monkeypatch.setattr(plan, "_WARNED", set())
    return load_config()


def test_the_44_reference_ids_each_run_here_or_say_why_not(config):
    catalog, models = config["reference_models"], config["models"]
    checkpoints = reference_checkpoints(catalog, models)
    assert len(checkpoints) == 44 and len(catalog) == 19
    assert {g: {f for f, e in catalog.items() if e["group"] == g} for g in GROUPS} == GROUPS
    assert {name: c.model for name, c in checkpoints.items() if c.model} == RUNS_AS
    for name, checkpoint in checkpoints.items():
        entry = catalog[checkpoint.family]
        if checkpoint.model:  # the model it names is of its family and group; no stale reason
            model = models[checkpoint.model]
            assert (model["family"], model.get("group", EEG_FM)) == (
                checkpoint.family, checkpoint.group), name
            assert "unavailable" not in entry and checkpoint.reason == "", name
            assert "unavailable" not in entry["checkpoints"][name], name
        else:
            assert checkpoint.reason == entry["unavailable"] and len(checkpoint.reason) > 30
    eegnet = [n for n, c in checkpoints.items() if c.family == "eegnetv4"]
    assert len(eegnet) == 12 and "eegnetv4_physionet_mi" in eegnet


def test_every_reference_id_is_in_the_docs_table(config):
    usage = (PROJECT / "docs" / "usage.md").read_text(encoding="utf-8")
    section = usage[usage.index("\n## The reference's models\n"):
                    usage.index("\n## Pretrained weights from the Hub\n")]
    rows = {line.split("|")[1].strip(): line for line in section.splitlines()
            if line.startswith("| ") and not line.startswith("| family")}
    checkpoints = reference_checkpoints(config["reference_models"], config["models"])
    assert set(rows) == set(config["reference_models"])
    for name, checkpoint in checkpoints.items():
        row = rows[checkpoint.family]
        assert f"`{name}`" in row and f"| {checkpoint.group} |" in row, name
        assert (f"`{checkpoint.model}`" in row) if checkpoint.model else (
            "not available" in row), name


def test_reference_names_select_as_the_reference_writes_them(config):
    models, catalog = config["models"], config["reference_models"]
    fm = expand_models(["all_fm"], models, "here", catalog)
    config["only_models"] = "all_fm,-labram"
    check_selection(config)
    assert name_list(config) == [m for m in fm if m != "labram_pretrained"]
    # the reference's epilepsy run line: families not built here are removed without an error
    line = "all,-sleep_transformer,-sleepyco,-core_sleep,-eegnetv4,-all_random".split(",")
    assert expand_models(line, models, "here", catalog) == expand_models(
        ["all_pretrained", "-eegnetv4"], models, "here", catalog)
    eegnet = expand_models(["eegnetv4"], models, "here", catalog)
    assert len(eegnet) == 12 and not set(eegnet) & set(expand_models(line, models, "here",
                                                                      catalog))
    assert expand_models(["reve_pretrained", "cbramod_random_init", "-reve_random_init",
                          "reve_random"], models, "here", catalog) == [
        "reve_base_pretrained", "cbramod_random"]
    with pytest.raises(UsageError, match="only removes models"):
        expand_models(["-sleepyco"], models, "here", catalog)


def test_a_reference_id_not_available_is_refused_with_its_reason(config):
    config["only_models"] = "all_fm,moirai_small"
    with pytest.raises(UsageError) as raised:
        check_selection(config)
    assert raised.value.message == (
        "config only_models names 'moirai_small' (the reference's moirai checkpoint): not "
        "available: its package, uni2ts 1.1.1, cannot be installed beside the runtime (it moves "
        "numpy, pandas and SciPy back to older releases) and its architecture is not in "
        "transformers")
    assert "reference_models:" in raised.value.fix
    config["benchmarks"]["demo"]["models"] = ["biot_random", "seizure_transformer"]
    with pytest.raises(UsageError, match="only inside a container image"):
        check_names(config)
    # all_supervised: EEGNet's twelve, the one supervised family built here
    assert expand_models(["all_supervised"], config["models"], "here",
                         config["reference_models"]) == [
        m for m in RUNS_AS if m.startswith("eegnetv4_")]
    with pytest.raises(UsageError) as raised:
        expand_models(["sleepyco"], config["models"], "here", config["reference_models"])
    assert "its SHHS checkpoint is the reference's own copy" in raised.value.message
    with pytest.raises(UsageError, match=r"unknown model 'moirai_smal' \(did you mean "
                                         r"'moirai_small'\?\)"):
        expand_models(["moirai_smal"], config["models"], "here", config["reference_models"])


def test_check_says_not_available_with_exit_2():
    done = subprocess.run([str(VENV_BIN / "embedprobe"), "check", "--benchmark", "demo",
                           "--model", "sleepyco_shhs_fold0"],
                          capture_output=True, text=True, cwd=PROJECT, timeout=300)
    assert done.returncode == 2, done.stderr[-2000:]
    assert ("error: --model names 'sleepyco_shhs_fold0' (the reference's sleepyco checkpoint): "
            "not available: its SHHS checkpoint is the reference's own copy") in done.stderr
    assert "\nfix: leave it out" in done.stderr


def test_fetch_weights_takes_the_reference_names_and_refuses_one_not_available(config, capsys):
    assert fetch_cli(config, "moirai_base") == 2  # before any download
    err = capsys.readouterr().err
    assert ("error: fetch-weights names 'moirai_base' (the reference's moirai checkpoint): not "
            "available: its package, uni2ts 1.1.1, cannot be installed") in err
    assert "fix: leave it out" in err
    assert fetch_cli(config, "cbramod_random_init") == 0  # its model: a random init
    assert capsys.readouterr().out == ("cbramod_random: not a hub checkpoint (weights: random), "
                                       "nothing to fetch\n")


def test_the_reference_rules_out_a_family_by_task(config):
    catalog = config["reference_models"]
    for family, entry in catalog.items():  # the schema takes strings: each is a task's name
        assert set(entry.get("rule_out", {}).get("tasks", [])) <= set(TASKS), family
    assert {f for f, e in catalog.items() if "rule_out" in e} == GROUPS["supervised"]
    assert rule_out_reason(catalog, "sleepyco", "seizure_detection").startswith("a sleep stager")
    assert rule_out_reason(catalog, "sleepyco", "sleep_staging") == ""
    assert rule_out_reason(catalog, "eegnetv4", "motor_imagery") == ""
    assert rule_out_reason(catalog, "eegnetv4", "brain_age").startswith("a motor-imagery")
    assert rule_out_reason(catalog, "seizure_transformer", "bci_erp").startswith("a seizure")
    assert rule_out_reason(catalog, "biot", "seizure_detection") == ""


def test_a_sleep_stager_is_ruled_out_of_the_seizure_benchmark_with_the_reason(config, capsys):
    config["models"]["sleepyco_random"] = dict(SLEEP_STAGER)
    config["benchmarks"]["epilepsy_demo"]["models"] = ["biot_random", "sleepyco_random"]
    check_names(config)
    assert plan.runnable_models(config, "epilepsy_demo", "siena_demo") == ["biot_random"]
    skip = plan.not_run_pairs(config, "epilepsy_demo", "siena_demo")["sleepyco_random"]
    assert skip["status"] == "skipped"
    assert skip["reason"] == ("ruled out of seizure_detection as the reference rules out "
                              "sleepyco: a sleep stager, which reads sequences of 30 s sleep "
                              "epochs")
    plan.warn_known_skips(config, "epilepsy_demo", "siena_demo")
    plan.warn_known_skips(config, "epilepsy_demo", "chbmit_demo")
    err = capsys.readouterr().err
    assert err.count("note: epilepsy_demo: sleepyco_random is ruled out of seizure_detection") == 1
    assert plan.task_rule_outs(config, "demo") == {}  # sleep staging keeps it
    # the catalogue chooses what runs: no job's config slice holds it
    before = job_config_json(config, "epilepsy_demo", "siena_demo", "biot_random")
    config["reference_models"]["sleepyco"]["rule_out"]["reason"] = "another"
    assert job_config_json(config, "epilepsy_demo", "siena_demo", "biot_random") == before
    assert "reference_models" not in json.loads(before)


def test_check_of_the_benchmark_rules_the_pair_out_with_the_reason(config, tmp_path, capsys):
    from embedprobe import cli

    config["models"]["sleepyco_random"] = dict(SLEEP_STAGER)
    config["benchmarks"]["epilepsy_demo"]["models"] = ["biot_random", "sleepyco_random"]
    config.update({root: str(tmp_path / root) for root in
                   ("data_root", "cache_root", "results_root", "weights_root")})
    code = cli.main(["--job-config", json.dumps(config), "check", "--benchmark",
                     "epilepsy_demo", "--dataset", "siena_demo", "--model", "sleepyco_random"])
    out = capsys.readouterr().out
    assert code == 1  # no pair passed
    assert ("  ruled out of seizure_detection as the reference rules out sleepyco: a sleep "
            "stager") in out
    assert out.splitlines()[-1].startswith("1 pair: 0 ok, 0 failed, 0 skipped, 1 ruled out")


@pytest.mark.workflow
def test_the_dry_run_plans_no_job_for_a_ruled_out_pair(tmp_path):
    extra = {"models": {"sleepyco_random": SLEEP_STAGER},
             "benchmarks": {"epilepsy_demo": {"models": ["biot_random", "sleepyco_random"]}}}
    (tmp_path / "extra.yaml").write_text(yaml.safe_dump(extra))
    run = snakemake(tmp_path, "-n", "--configfile", str(tmp_path / "extra.yaml"),
                    "--", "epilepsy_demo")
    assert run.returncode == 0, run.stderr[-3000:]
    assert ("note: epilepsy_demo: sleepyco_random is ruled out of seizure_detection as the "
            "reference rules out sleepyco: a sleep stager") in run.stderr
    assert "biot_random" in run.stdout and "sleepyco_random" not in run.stdout
