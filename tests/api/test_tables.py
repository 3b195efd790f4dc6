"""The Python API's frames that need no run: check() reads the pairs' check JSONs, memory() the
runs table, and the usage errors are raised with their fix. (results() and status() against
their commands: tests/reporting/test_results.py, tests/pipeline/test_status.py.)"""

from __future__ import annotations

import pytest

from embedprobe.api import tables
from embedprobe.core.errors import UsageError
from embedprobe.core.paths import output_path
from embedprobe.memory.runs import append_runs_row
from embedprobe.pipeline.check import CheckResult, write_result

from helpers.results import roots_in


def test_check_reads_each_checked_pair_of_the_benchmark(tmp_path):
    roots = roots_in(tmp_path)
    setting = [f"results_root={roots['results_root']}"]
    assert tables.check("demo", config=setting).empty  # nothing checked yet
    result = CheckResult("sleep_edf_demo", "biot_random", data="found (10/10 recordings)",
                         forward="(32, 256) finite", seconds=0.3, peak_mb=502.0)
    write_result(result, output_path("check", roots, dataset="sleep_edf_demo",
                                     model="biot_random"))
    other = CheckResult("sleep_edf_demo", "labram_random", status="failed", category="model",
                        reason="failed in model: RuntimeError: boom")
    write_result(other, output_path("check", roots, dataset="sleep_edf_demo",
                                    model="labram_random"))  # not a model of `demo`
    frame = tables.check("demo", config=setting)
    # the rows `embedprobe check --format json` prints for the pair
    assert frame.to_dict("records") == [result.as_dict()]
    frame = tables.check("demo", model="labram_random", config=setting)
    assert frame[["model", "status", "category"]].values.tolist() == [
        ["labram_random", "failed", "model"]]


def test_memory_is_the_runs_table(tmp_path):
    roots = roots_in(tmp_path)
    setting = [f"results_root={roots['results_root']}"]
    with pytest.raises(UsageError) as raised:
        tables.memory(config=setting)
    assert "no runs table" in raised.value.message and raised.value.fix
    for attempt, peak in ((1, 900.0), (2, 1400.5)):
        append_runs_row(output_path("runs", roots), {
            "rule": "embed", "job": "embed", "dataset": "sleep_edf_demo", "model": "biot_random",
            "attempt": attempt, "estimate_mb": 1000.0, "peak_mb": peak,
            "status": "oom" if attempt == 1 else "ok"})
    frame = tables.memory(config=setting)
    assert frame[["attempt", "peak_mb", "status"]].values.tolist() == [[1, 900.0, "oom"],
                                                                       [2, 1400.5, "ok"]]


def test_unknown_names_are_usage_errors_with_the_closest_name():
    with pytest.raises(UsageError) as raised:
        tables.plan("deom")
    assert "unknown target 'deom' (did you mean 'demo'?)" in raised.value.message
    with pytest.raises(UsageError) as raised:
        tables.results("sleep_stag")
    assert "did you mean 'sleep_stage'?" in raised.value.message
