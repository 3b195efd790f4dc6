"""check: one real batch per (dataset, model) pair, through the reader, channel map, preprocessing,
real braindecode model and pooling, on a generated Sleep-EDF demo; the table, notes, fixes, exit
codes, JSON and CSV. Broken models are real BIOT checkpoints (NaN or zero weights) on disk.
"""

import csv
import dataclasses
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from embedprobe import cli
from embedprobe.models.registry import RANDOM, build_model, model_spec
from embedprobe.pipeline.channel_maps import CHANNEL_MAP_DIR
from embedprobe.pipeline.check import (
    FAILED,
    OK,
    RULED_OUT,
    SKIPPED,
    CheckResult,
    check_pair,
    closing_notes,
    exit_code,
    first_batch,
    format_table,
    from_csv,
    read_result,
    summary_line,
    table_row,
    to_csv,
    write_result,
)
from embedprobe.pipeline.context import DatasetContext

from helpers.check_config import DATASET, make_config
from helpers.project import PROJECT

# ----------------------------------------------------------------------- which files are opened

_watchers: list[tuple[str, list]] = []


WATCHED_EVENTS = ("open", "os.listdir", "os.scandir", "glob.glob", "os.walk")


def _audit(event, args):
    """Every open / directory listing of a path under a watched root (Python's audit events)."""
    if not _watchers or event not in WATCHED_EVENTS or not args or args[0] is None:
        return
    if isinstance(args[0], int):  # a file descriptor: its path was seen when it was opened
        return
    path = os.path.abspath(os.fsdecode(args[0]))
    for root, seen in _watchers:
        if path.startswith(root):
            seen.append((event, path))


sys.addaudithook(_audit)  # hooks cannot be removed: this one only records while a test watches


class touched_under:
    """Context manager: the (event, path) pairs that touched anything under `root`."""

    def __init__(self, root):
        self.entry = (os.path.abspath(root), [])

    def __enter__(self):
        _watchers.append(self.entry)
        return self.entry[1]

    def __exit__(self, *exc):
        _watchers.remove(self.entry)


# ----------------------------------------------------------------------------------- setup


def write_checkpoint(config, roots, model, transform):
    """A real state_dict of the model's architecture, each float tensor passed through
    `transform`, saved where the model's config looks for its weights. Built for the inputs
    the channel plan gives the model (BIOT: all 16 slots, not the 2 recorded channels)."""
    from embedprobe.pipeline.channel_maps import channel_plan

    spec = dataclasses.replace(model_spec(config, model), weights=RANDOM)
    n_inputs = len(channel_plan(config, DATASET, spec.family).model_names)
    net, _ = build_model(spec, n_inputs, roots)
    state = {k: transform(v) if v.is_floating_point() else v for k, v in net.state_dict().items()}
    torch.save(state, Path(roots["weights_root"]) / model_spec(config, model).weights)


def split_row(line):
    return re.split(r" {2,}", line.strip())


@pytest.fixture(scope="module")
def setup(demo_root, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("check")
    (tmp / "weights").mkdir()
    return make_config(demo_root.parent, tmp)


@pytest.fixture(scope="module")
def passed(setup, demo_root):
    """The random-init BIOT on the demo, a full 32-window batch; and what it touched."""
    config, roots = setup
    from embedprobe.memory.calibration import table_baseline_of_check

    with touched_under(demo_root) as seen:
        result = check_pair(DatasetContext.build(config, roots, DATASET), "biot_random", 32)
    # the command's own step: the table's figure beside the measured one (cli.cmd_check)
    result.table_baseline_bytes = table_baseline_of_check(config, result)
    return result, seen


def test_a_check_job_measures_its_batch_activations(setup, tmp_path):
    """The batch's peak growth as a check job measures it, in a process of its own (in this
    test process, memory freed by earlier tests can hold the batch without the peak growing)."""
    config, roots = setup
    out = tmp_path / "check.json"
    done = subprocess.run(
        [sys.executable, "-m", "embedprobe.cli", "--job-config", json.dumps({**config, **roots}),
         "check", "--dataset", DATASET, "--model", "biot_random", "--out", str(out)],
        capture_output=True, text=True, timeout=600,
        env={"PYTHONPATH": str(PROJECT / "workflow"), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    result = read_result(out)
    assert result.status == OK and result.batch_activation_bytes > 0


@pytest.fixture
def map_dir(tmp_path):
    """A channel-map folder holding a copy of the project's Sleep-EDF map."""
    folder = tmp_path / "channel_maps"
    folder.mkdir()
    (folder / f"{DATASET}.yaml").write_text((CHANNEL_MAP_DIR / f"{DATASET}.yaml").read_text())
    return folder


# ---------------------------------------------------------------------------------- one pair


def test_found_pair_gives_the_documented_row(passed):
    result, seen = passed
    assert result.status == OK and result.note == "" and result.category == ""
    row = table_row(result)
    assert row[:6] == (DATASET, "biot_random", "found (10/10 recordings)",
                       "not needed for random init", "slots", "(32, 256) finite")
    assert re.fullmatch(r"\d+(\.\d)?s", row[6]) and re.fullmatch(r"\d+ MB", row[7])
    # What preflight reads: BIOT's width, its 16 input slots (2 fed by Sleep-EDF's channels,
    # 14 zero) x 30 s at 200 Hz, the model's size.
    assert (result.batch_size, result.feature_dim, result.n_chans, result.n_times_epoch) == (
        32, 256, 16, 6000)
    assert result.n_params > 1_000_000
    assert 0 < result.seconds <= result.total_seconds
    assert result.peak_mb > 100
    # This node's embed baseline: libraries, the model built and called once, before the batch
    # (braindecode loads most of its modules when the model is built: well above 300 MB).
    assert 300 * 2**20 < result.baseline_bytes < result.process_peak_bytes
    assert result.table_baseline_bytes > 0 and result.host
    assert re.fullmatch(r"\d+ MB \(table [+-]\d+%\)", row[8]), row[8]
    assert exit_code([result]) == 0 and exit_code([result], strict=True) == 0
    # The real reader opened the real EDF files (the audit hook sees what the rule-out must not).
    assert any(path.endswith("-PSG.edf") for event, path in seen if event == "open")


def test_first_batch_is_what_embed_reads(setup):
    """The checked windows are embed's: index rows from build_index, signals from WindowSource.

    Embed filters its first part's stretch of the recording, check the whole recording: the
    same windows to float32 rounding (the filters' edges, pipeline/filters.py), not bit for bit.
    """
    from embedprobe.pipeline.channel_maps import channel_plan, input_positions
    from embedprobe.pipeline.embed import WindowSource
    from embedprobe.pipeline.index import build_index

    config, roots = setup
    spec = model_spec(config, "biot_random")
    plan = channel_plan(config, DATASET, spec.family)
    index = build_index(DatasetContext.build(config, roots, DATASET))
    embedded = next(iter(WindowSource(DatasetContext.build(config, roots, DATASET),
                                      spec, plan, index).stream(0, 0)))
    expected = embedded[:8]
    windows = first_batch(DatasetContext.build(config, roots, DATASET), spec, plan, 8)
    assert windows.shape == (8, 16, 6000) and windows.dtype == np.float32
    assert np.abs(windows - expected).max() <= 1e-6 * np.abs(expected).max()
    # Fpz-Cz feeds slot FP1-F3 (8), Pz-Oz slot P3-O1 (11); the 14 other slots are zero
    assert list(input_positions(plan)) == [8, 11]
    assert np.all(windows[:, [8, 11]].std(axis=-1) > 0)
    assert not np.delete(windows, [8, 11], axis=1).any()


def test_missing_data_is_skipped_with_the_fix(tmp_path, passed):
    config, roots = make_config(tmp_path / "nothing_here", tmp_path)
    result = check_pair(DatasetContext.build(config, roots, DATASET), "biot_random")
    folder = tmp_path / "nothing_here" / "sleep-edf"
    assert (result.status, result.category, result.data, result.forward) == (
        SKIPPED, "data", "missing (0/10 recordings)", "-")
    assert result.reason == f"skipped: data missing: folder {folder} does not exist"
    # an open dataset: fetch it, or place it by hand
    assert result.fix.startswith(f"embedprobe data download {DATASET}   # on a login node; "
                                 f"or put the {DATASET} files under {folder} ")
    assert table_row(result)[6:] == ("-", "-", "-")
    assert exit_code([result]) == 1  # nothing could be checked
    assert exit_code([passed[0], result]) == 0
    assert exit_code([passed[0], result], strict=True) == 1


def _partial_copy(demo_root, tmp_path):
    """The demo with one hypnogram left out (links to the real files)."""
    folder = tmp_path / "data" / "sleep-edf"
    folder.mkdir(parents=True)
    files = sorted(demo_root.rglob("*.edf"))
    dropped = next(f for f in files if f.name.endswith("-Hypnogram.edf"))
    for edf in files:
        if edf != dropped:
            (folder / edf.name).symlink_to(edf)
    psg = next(f.name for f in files if f.name[:6] == dropped.name[:6] and "PSG" in f.name)
    return folder.parent, psg


def test_partial_data_runs_unless_strict(demo_root, tmp_path):
    """A partial dataset runs on its complete recordings (a note); a strict run refuses it
    (the pair skipped), unless allow_partial is set too."""
    data_root, orphan = _partial_copy(demo_root, tmp_path)
    config, roots = make_config(data_root, tmp_path)
    allowed = check_pair(DatasetContext.build(config, roots, DATASET), "biot_random", 4)
    assert (allowed.status, allowed.forward) == (OK, "(4, 256) finite")
    assert allowed.note == ("note: data partial, the run uses the 9 complete recordings: "
                            f"{orphan} has no hypnogram")
    assert exit_code([allowed]) == 0

    config["strict"] = True
    refused = check_pair(DatasetContext.build(config, roots, DATASET), "biot_random", 4)
    assert (refused.status, refused.data, refused.forward) == (
        SKIPPED, "partial (9/10 recordings)", "-")
    assert refused.reason == (f"skipped: data partial, which a run refuses: {orphan} has no "
                              "hypnogram")
    assert "allow_partial=true" in refused.fix
    assert exit_code([refused]) == 1

    config["allow_partial"] = True
    allowed = check_pair(DatasetContext.build(config, roots, DATASET), "biot_random", 4)
    assert (allowed.status, allowed.forward) == (OK, "(4, 256) finite")
    assert allowed.note.startswith("note: data partial, the run uses the 9 complete recordings")


def test_fewer_recordings_than_expected_is_partial(demo_root, tmp_path):
    config, roots = make_config(demo_root.parent, tmp_path, expected=12)
    config["strict"] = True
    result = check_pair(DatasetContext.build(config, roots, DATASET), "biot_random")
    assert (result.status, result.data) == (SKIPPED, "partial (10/12 recordings)")
    assert "2 of 12 recordings are not in" in result.reason


def test_missing_weights_are_skipped_and_summed_up(setup, passed):
    config, roots = setup
    biot = check_pair(DatasetContext.build(config, roots, DATASET), "biot_pretrained")
    path = f"{roots['weights_root']}/biot_pretrained.pt"
    assert (biot.status, biot.category, biot.data, biot.weights, biot.forward) == (
        SKIPPED, "weights", "found (10/10 recordings)", "missing", "-")
    assert biot.note == (f"skipped: weights not found at {path}\n"
                         f"fix: copy the checkpoint for biot_pretrained to {path} "
                         "(or set weights_root / EMBEDPROBE_WEIGHTS_ROOT)")
    labram = check_pair(DatasetContext.build(config, roots, DATASET), "labram_pretrained")
    assert labram.status == SKIPPED and labram.channel_map == "applied"
    results = [passed[0], biot, labram]
    assert closing_notes(results) == [
        "note: 2 checkpoints skipped for missing weights",
        f"fix: copy the checkpoints to {path}, "
        f"{roots['weights_root']}/labram_pretrained.safetensors "
        "(or set weights_root / EMBEDPROBE_WEIGHTS_ROOT)",
    ]
    assert summary_line(results, 27.4) == "3 pairs: 1 ok, 0 failed, 2 skipped (27s)"
    assert exit_code(results) == 0 and exit_code(results, strict=True) == 1
    assert exit_code([biot]) == 1 and exit_code([]) == 1


@pytest.fixture
def own_weights(setup, tmp_path):
    """The setup with its own weights folder, for checkpoints written by one test."""
    config, roots = setup
    roots = roots | {"weights_root": str(tmp_path)}
    return config, roots


def test_a_model_returning_nan_fails(own_weights, passed):
    config, roots = own_weights
    write_checkpoint(config, roots, "biot_pretrained", lambda v: torch.full_like(v, float("nan")))
    result = check_pair(DatasetContext.build(config, roots, DATASET), "biot_pretrained", 8)
    assert (result.status, result.category, result.weights, result.forward) == (
        FAILED, "output", "found", "(8, 256) non-finite")
    assert result.note == ("failed: 2048 of 2048 embedding values are NaN or infinite\n"
                           "fix: check the weights file and the model's amplitude scaling "
                           "(config/models.yaml)")
    assert table_row(result)[6] != "-"  # the batch ran: its time and memory are shown
    assert exit_code([passed[0], result]) == 1


def test_a_model_returning_a_constant_fails(own_weights, passed):
    config, roots = own_weights
    write_checkpoint(config, roots, "biot_pretrained", torch.zeros_like)
    result = check_pair(DatasetContext.build(config, roots, DATASET), "biot_pretrained", 8)
    assert (result.status, result.category, result.forward) == (FAILED, "output",
                                                                "(8, 256) constant")
    assert result.note == ("failed: every one of the 8 windows got the same embedding\n"
                           "fix: check the weights and the channel map: the model ignores its "
                           "input")
    assert exit_code([passed[0], result]) == 1


def test_an_exception_fails_the_pair_not_the_check(own_weights):
    """Weights of another shape: build_model's WeightsError becomes this pair's row."""
    config, roots = own_weights
    write_checkpoint(config, roots, "biot_pretrained", lambda v: v[..., :1].clone())
    result = check_pair(DatasetContext.build(config, roots, DATASET), "biot_pretrained", 8)
    assert (result.status, result.category, result.forward) == (FAILED, "weights",
                                                                "error in model")
    assert result.reason.startswith("failed: weights ") and "do not fit BIOT" in result.reason
    assert result.fix == ("check the checkpoint belongs to this architecture and its params in "
                          "models.yaml")
    assert "load_state_dict" in result.extra["traceback"]
    assert table_row(result)[6:] == ("-", "-", "-")


def test_encoder_crash_is_reported_with_traceback(setup):
    class Crashing:
        def __init__(self, spec, ch_names, roots):
            self.model = torch.nn.Linear(1, 1)

        def __call__(self, windows):
            raise ValueError(f"cannot take {windows.shape}")

    config, roots = setup
    result = check_pair(DatasetContext.build(config, roots, DATASET),
                        "biot_random", 4, encoder_factory=Crashing)
    assert (result.status, result.category) == (FAILED, "model")
    # the first call is embed's own first call, one window (its width probe)
    assert result.reason == "failed in model: ValueError: cannot take (1, 16, 6000)"
    assert "raise ValueError" in result.extra["traceback"]


# ----------------------------------------------------------------------------- channel maps


def test_ruled_out_pair_reads_no_data(setup, demo_root, map_dir, passed):
    config, roots = setup
    why = "BIOT reads 16 bipolar pairs, and this dataset has none of them"
    (map_dir / f"{DATASET}.yaml").write_text(yaml.safe_dump({"biot": {"skip": why}}))
    with touched_under(demo_root) as seen:
        result = check_pair(DatasetContext.build(config, roots, DATASET),
                            "biot_random", map_dir=map_dir)
    assert seen == []  # not a file opened, not a folder listed
    assert (result.status, result.channel_map, result.data, result.forward) == (
        RULED_OUT, "ruled out", "not read", "-")
    assert result.note == f"ruled out: by the {DATASET} channel map ({why})"
    assert exit_code([result]) == 1  # nothing could be checked
    # A rule-out is the map's decision, not a skip: even strict passes beside a good pair.
    assert exit_code([passed[0], result], strict=True) == 0
    assert summary_line([passed[0], result], 3) == "2 pairs: 1 ok, 0 failed, 0 skipped, " \
                                                   "1 ruled out (3s)"


def test_family_without_entry_is_refused_before_data(setup, demo_root, map_dir):
    config, roots = setup
    (map_dir / f"{DATASET}.yaml").write_text(yaml.safe_dump({"labram": {"skip": "x"}}))
    with touched_under(demo_root) as seen:
        result = check_pair(DatasetContext.build(config, roots, DATASET),
                            "biot_random", map_dir=map_dir)
        (map_dir / f"{DATASET}.yaml").unlink()
        no_map = check_pair(DatasetContext.build(config, roots, DATASET),
                            "biot_random", map_dir=map_dir)
    assert seen == []
    assert (result.status, result.channel_map, result.data) == (FAILED, "invalid", "not read")
    assert "has no entry for model family 'biot'" in result.reason
    # BIOT reads slots: the fix names the one form that fits it
    assert result.fix.startswith("add 'biot:' with slots or skip")
    assert (no_map.status, no_map.channel_map) == (FAILED, "none")
    assert f"dataset '{DATASET}' has no channel map" in no_map.reason
    assert exit_code([result]) == 1


# --------------------------------------------------------------------------- table and files


def test_table_puts_reason_and_fix_under_each_pair_that_did_not_pass(passed, setup):
    config, roots = setup
    skipped = check_pair(DatasetContext.build(config, roots, DATASET), "biot_pretrained")
    lines = format_table([passed[0], skipped]).splitlines()
    assert split_row(lines[0]) == ["dataset", "checkpoint", "data", "weights", "channel map",
                                   "forward pass", "time", "peak memory", "node baseline"]
    assert split_row(lines[1])[:6] == [DATASET, "biot_random", "found (10/10 recordings)",
                                       "not needed for random init", "slots",
                                       "(32, 256) finite"]
    assert split_row(lines[2]) == [DATASET, "biot_pretrained", "found (10/10 recordings)",
                                   "missing", "slots", "-", "-", "-", "-"]
    assert lines[3].strip() == skipped.reason and lines[4].strip() == f"fix: {skipped.fix}"
    assert len(lines) == 5
    # Columns line up: every row starts its checkpoint cell at the same offset.
    assert len({line.index("biot") for line in lines[1:3]} | {lines[0].index("checkpoint")}) == 1


def test_json_and_csv_round_trip(passed, setup, tmp_path):
    config, roots = setup
    skipped = check_pair(DatasetContext.build(config, roots, DATASET), "biot_pretrained")
    results = [passed[0], skipped]
    for result in results:
        path = tmp_path / "check" / result.dataset / f"{result.model}.json"
        write_result(result, path)
        assert json.loads(path.read_text())["note"] == result.note
        assert read_result(path) == result
    text = to_csv(results)
    assert from_csv(text) == results
    rows = list(csv.DictReader(io.StringIO(text)))
    assert rows[1]["note"].splitlines() == [skipped.reason, f"fix: {skipped.fix}"]
    assert rows[1]["extra"] == json.dumps(skipped.extra, sort_keys=True)
    assert isinstance(from_csv(text)[0].batch_size, int)  # types survive, JSON-dumpable again
    json.dumps(from_csv(text)[0].as_dict())


# ------------------------------------------------------------------------------------- CLI


@pytest.fixture
def job_config(setup, tmp_path):
    """--job-config for a benchmark of one good and one weightless pair; results in tmp."""
    config, roots = setup
    config = json.loads(json.dumps(config)) | roots | {"results_root": str(tmp_path)}
    config["benchmarks"]["check_demo"] = {"task": "sleep_staging", "datasets": [DATASET],
                                          "models": ["biot_random", "biot_pretrained"]}
    return json.dumps(config), tmp_path


def run_cli(job, *args):
    return cli.main(["--job-config", job, "check", *args])


def test_cli_table_and_strict(job_config, capsys):
    job, results = job_config
    assert run_cli(job, "check_demo", "--batch-size", "4") == 0
    out = capsys.readouterr().out.splitlines()
    assert split_row(out[1])[5] == "(4, 256) finite"
    assert re.fullmatch(r"2 pairs: 1 ok, 0 failed, 1 skipped \(\d+s\)", out[-1])
    # Each pair's JSON is kept for preflight: the batch's time and memory.
    kept = read_result(results / "check" / DATASET / "biot_random.json")
    assert kept.forward == "(4, 256) finite" and kept.seconds > 0 and kept.peak_mb > 0
    assert read_result(results / "check" / DATASET / "biot_pretrained.json").status == SKIPPED
    assert run_cli(job, "--benchmark", "check_demo", "--batch-size", "4", "--strict") == 1


def test_cli_json_and_csv(job_config, capsys):
    job, _ = job_config
    assert run_cli(job, "check_demo", "--batch-size", "4", "--format", "json") == 0
    captured = capsys.readouterr()
    records = json.loads(captured.out)  # stdout holds only the JSON; the summary is on stderr
    assert [(r["model"], r["status"]) for r in records] == [("biot_random", OK),
                                                            ("biot_pretrained", SKIPPED)]
    assert records[1]["note"].startswith("skipped: weights not found at ")
    assert "2 pairs: 1 ok, 0 failed, 1 skipped" in captured.err
    assert run_cli(job, "check_demo", "--batch-size", "4", "--format", "csv") == 0
    parsed = from_csv(capsys.readouterr().out)
    assert [r.forward for r in parsed] == ["(4, 256) finite", "-"]
    from_json = CheckResult(**{k: v for k, v in records[1].items() if k != "note"})
    # Two runs of the same skipped pair: the same record but for its wall time.
    assert dataclasses.replace(parsed[1], total_seconds=0) == dataclasses.replace(
        from_json, total_seconds=0)


def test_cli_one_pair_as_the_rule_runs_it(job_config, tmp_path, capsys):
    job, _ = job_config
    out = tmp_path / "pair.json"
    code = run_cli(job, "--dataset", DATASET, "--model", "biot_pretrained", "--out", str(out))
    assert code == 1  # the only pair was skipped: nothing could be checked
    assert read_result(out).status == SKIPPED
    assert run_cli(job, "check_demo", "--out", str(out)) == 2  # --out names one pair
    assert "error: --out names one pair's JSON" in capsys.readouterr().err


def test_unknown_model_is_a_usage_error(job_config, capsys):
    job, _ = job_config
    assert run_cli(job, "--dataset", DATASET, "--model", "biot_randon") == 2
    assert "did you mean 'biot_random'" in capsys.readouterr().err



def test_the_baseline_is_taken_after_the_reading_heap_is_released(setup, monkeypatch):
    """What reading the first batch freed goes back to the kernel before the node's baseline
    and the forward's growth are measured: the release, then the baseline, then the growth."""
    from embedprobe.pipeline import check as check_module

    config, roots = setup
    calls = []
    monkeypatch.setattr(check_module, "release_freed_heap", lambda: calls.append("release"))
    resident = check_module.resident_now
    monkeypatch.setattr(check_module, "resident_now",
                        lambda: calls.append("baseline") or resident())
    growth = check_module.measure_peak_growth
    monkeypatch.setattr(check_module, "measure_peak_growth",
                        lambda work: calls.append("growth") or growth(work))
    result = check_pair(DatasetContext.build(config, roots, DATASET), "cbramod_random", 8)
    assert result.status == OK, result.reason
    assert calls == ["release", "baseline", "growth"]
    assert 300 * 2**20 < result.baseline_bytes
