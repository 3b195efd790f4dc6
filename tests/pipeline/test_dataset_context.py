"""A job's dataset context: its config entry looked up once, and one context serving index,
check and embed with the same results as the names did."""

import subprocess
import sys
from pathlib import Path

import pytest

from embedprobe.core import config as core_config
from embedprobe.core.config import load_config
from embedprobe.core.errors import UsageError
from embedprobe.datasets.sleep_edf.lookalike import generate

# imported before any lookup is counted: the counter replaces each module's `lookup`
from embedprobe.memory.preflight import embed_inputs
from embedprobe.pipeline.check import OK, check_pair, read_result, write_result
from embedprobe.pipeline.context import WINDOW_COLUMNS, DatasetContext
from embedprobe.pipeline.embed import EmbedSettings, run_embed
from embedprobe.pipeline.index import build_index, read_index, write_index
from embedprobe.tasks.registry import labelling_task

from helpers.project import VENV_BIN
from helpers.results import roots_in

DATASET, MODEL = "sleep_edf_demo", "biot_random"


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """Two short generated nights."""
    root = tmp_path_factory.mktemp("context")
    config = load_config()
    config["datasets"][DATASET].update(expected_recordings=2, path="sleep-edf")
    roots = roots_in(root)
    generate(Path(roots["data_root"]) / "sleep-edf", n_subjects=2, nights=1, hours=0.25, seed=5)
    return config, roots


@pytest.fixture
def dataset_lookups(monkeypatch):
    """Every `lookup(config, "datasets", ...)` made from now on, by whichever module."""
    original = core_config.lookup
    calls = []

    def counting(config, kind, name):
        if kind == "datasets":
            calls.append(name)
        return original(config, kind, name)

    for module in list(sys.modules.values()):
        if module and module.__name__.startswith("embedprobe") and \
                getattr(module, "lookup", None) is original:
            monkeypatch.setattr(module, "lookup", counting)
    return calls


def test_one_context_serves_index_check_and_embed_with_one_lookup(demo, dataset_lookups,
                                                                  tmp_path):
    config, roots = demo
    context = DatasetContext.build(config, roots, DATASET)
    assert dataset_lookups == [DATASET]
    assert context.root == Path(roots["data_root"]) / "sleep-edf"
    assert context.reader.__name__ == "embedprobe.datasets.sleep_edf.reader"
    assert context.task.name == "sleep_staging"
    assert context.window_columns == WINDOW_COLUMNS  # sleep staging stores no column of its own
    assert context.unit_seconds == 30.0

    context.require_data()
    table = build_index(context)
    assert sorted(table["recording"].unique()) == sorted(r.recording
                                                         for r in context.recordings())
    result = check_pair(context, MODEL, 4)
    assert (result.status, result.feature_dim, result.n_chans) == (OK, 256, 16)
    index, out = tmp_path / "index.tsv", tmp_path / "emb.h5"
    write_index(table, index)
    write_result(result, tmp_path / "check.json")
    inputs = embed_inputs(context, read_result(tmp_path / "check.json"), read_index(index))
    assert inputs["n_windows"] == len(table)  # what preflight sizes embed by
    run_embed(context, MODEL, index, out, EmbedSettings(batch_size=8, reader_threads=0,
                                                        limit_batches=1))
    assert out.stat().st_size > 0
    # index, check, preflight and embed looked nothing up again: the entry came with it
    assert dataset_lookups == [DATASET]


def test_the_context_derives_what_the_names_did(demo):
    from embedprobe.datasets.registry import data_status, dataset_root, reader_for
    from embedprobe.models.registry import model_spec
    from embedprobe.pipeline.channel_maps import channel_plan, mapped_channels
    from embedprobe.pipeline.protocol import preprocessing

    config, roots = demo
    context = DatasetContext.build(config, roots, DATASET)
    spec = model_spec(config, MODEL, DATASET)
    assert context.model_spec(MODEL) == spec
    assert context.root == dataset_root(config, roots, DATASET)
    assert context.reader is reader_for(config, DATASET)
    assert context.task is labelling_task(config, DATASET)
    assert context.status() == data_status(config, roots, DATASET)
    assert context.channel_plan(spec.family) == channel_plan(config, DATASET, spec.family)
    assert context.mapped_channels() == mapped_channels(config, DATASET)
    assert context.preprocessing(spec) == preprocessing(config, DATASET, spec)


def test_an_unknown_dataset_is_the_registrys_usage_error(demo):
    config, roots = demo
    with pytest.raises(UsageError) as raised:
        DatasetContext.build(config, roots, "sleep_edf_dmeo")
    with pytest.raises(UsageError) as expected:
        core_config.lookup(config, "datasets", "sleep_edf_dmeo")
    assert (raised.value.message, raised.value.fix) == (expected.value.message,
                                                        expected.value.fix)
    assert "unknown dataset 'sleep_edf_dmeo'" in raised.value.message


def test_a_labels_task_without_units_is_refused_when_the_task_is_asked_for(demo):
    config, roots = demo
    changed = {**config, "datasets": {**config["datasets"], DATASET: {
        **config["datasets"][DATASET], "labels": "brain_age"}}}
    context = DatasetContext.build(changed, roots, DATASET)  # the data checks come first
    assert context.status().state == "found"
    with pytest.raises(UsageError, match="defines no units of its own") as raised:
        context.task  # noqa: B018
    assert raised.value.fix == "set `labels:` to a task that cuts windows or trials"


def test_the_cli_refuses_an_unknown_dataset_with_exit_2_and_a_fix(tmp_path):
    for argv in (["index", "--dataset", "nope", "--out", str(tmp_path / "i.tsv")],
                 ["check", "--dataset", "nope", "--model", MODEL,
                  "--out", str(tmp_path / "c.json")]):
        proc = subprocess.run([str(VENV_BIN / "embedprobe"), *argv], capture_output=True, text=True,
                              cwd=tmp_path)
        assert proc.returncode == 2, proc.stderr
        assert "unknown dataset 'nope'" in proc.stderr
        assert "fix: use one of:" in proc.stderr
        assert not (tmp_path / "i.tsv").exists() and not (tmp_path / "c.json").exists()
