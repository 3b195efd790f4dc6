"""scripts/bench_plan_scale.py on a tiny cohort: its rows, and the bare Snakefile's DAG the
same size as the project's (no timing is asserted)."""

from __future__ import annotations

import pytest

from embedprobe.devtools.bench_plan_scale import (
    TABLE_COLUMNS,
    Job,
    format_table,
    parse_dry_run,
    run,
)


def test_a_dry_run_is_read_back_into_its_jobs():
    text = ("rule index:\n    input: /d/a.edf, /d/a.xml\n    output: /r/index/x.tsv, /r/q.tsv\n"
            "    log: /r/logs/index/x.log\n    jobid: 3\n    benchmark: /r/b/index/x.tsv\n"
            "    wildcards: dataset=x\n    resources: tmpdir=/tmp, mem_mb=2000, mem=2 GB\n\n"
            "localrule demo:\n    input: /r/index/x.tsv\n    jobid: 0\n")
    assert parse_dry_run(text) == [
        Job("index", ["/d/a.edf", "/d/a.xml"], ["/r/index/x.tsv", "/r/q.tsv"],
            ["/r/logs/index/x.log"], "/r/b/index/x.tsv", {"dataset": "x"},
            {"tmpdir": "/tmp", "mem_mb": "2000", "mem": "2 GB"}),
        Job("demo", ["/r/index/x.tsv"])]


@pytest.mark.workflow
def test_the_table_has_index_and_plan_rows_for_the_cohort(tmp_path):
    rows = run(20, "sleep_stage", tmp_path, progress=lambda line: None)
    by_step = {r.step: r for r in rows}
    assert list(by_step) == [
        "index, 1 night (start-up)", "index, first run", "index, second run",
        "snakemake -n sleep_stage: embedprobe", "snakemake -n sleep_stage: bare, same DAG",
        "snakemake -n: bare, one rule (start-up)"]
    assert by_step["index, first run"].files == 40  # each night's EDF and XML
    project = by_step["snakemake -n sleep_stage: embedprobe"].jobs
    assert project > 20  # index, check, preflight, embed, 5 probe folds, 15 tables, ...
    assert by_step["snakemake -n sleep_stage: bare, same DAG"].jobs == project
    assert by_step["snakemake -n: bare, one rule (start-up)"].jobs == 1
    assert all(r.wall_s > 0 and r.cpu_s > 0 for r in rows)
    table = format_table(rows).splitlines()
    assert table[0] == "| " + " | ".join(TABLE_COLUMNS) + " |"
    assert len(table) == 2 + len(rows)
