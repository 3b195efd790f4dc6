"""After a failed run: the results of the pairs that finished, and why the others did not.

Snakemake cannot run `aggregate` while one of its inputs failed, so with `--keep-going` the
other pairs finish but their table would never be written. The Snakefile's `onerror:` calls
`partial_results`: for every (benchmark, dataset) that a failure of this run touched, it writes
results.tsv from the fold JSONs that exist, one row per pair that did not finish (status
`failed` with the failed step, its message and fix from the step's `<output>.failure.json`,
or `skipped` for a skip known before running) and the benchmark's summary.md. Snakemake's exit
status stays non-zero; the next run redoes only the failed jobs and rewrites both files
through the rules (their inputs are then newer).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from embedprobe.core.errors import UsageError, read_failure_record
from embedprobe.core.paths import failure_record, output_path
from embedprobe.core.selection import benchmark_folds, fold_count, selected
from embedprobe.core.variants import embedding_id
from embedprobe.smk.plan import not_run_pairs, present_datasets, runnable_models

STEPS = ("check", "preflight", "embed", "probe")


def failure_records(roots: dict, benchmark: str, dataset: str, model: str,
                    folds, store: str | None = None) -> list[tuple[str, Path]]:
    """(step, record path) of every failure record the pair's jobs left, in step order;
    `folds`: the fold count, or the fold numbers the run planned; `store`: the model whose
    check, preflight and embed the pair's store comes from (a variant's: embedding_id)."""
    pair = {"dataset": dataset, "model": model}
    stored = {"dataset": dataset, "model": store or model}
    outputs = [("check", output_path("check", roots, **stored)),
               ("preflight", output_path("preflight", roots, **stored)),
               ("probe preflight", output_path("preflight_probe", roots, benchmark=benchmark,
                                               **pair)),
               ("embed", output_path("embeddings", roots, **stored))]
    outputs += [(f"probe fold {k}", output_path("fold_result", roots, benchmark=benchmark,
                                                fold=k, **pair))
                 for k in (range(folds) if isinstance(folds, int) else folds)]
    paths = [(step, failure_record(output)) for step, output in outputs]
    return [(step, path) for step, path in paths if path.is_file()]


def _pair_trouble(records: list[tuple[str, Path]]) -> dict:
    step, path = records[0]
    record = read_failure_record(path.with_name(path.name.removesuffix(".failure.json"))) or {}
    return {"status": "failed", "reason": f"{step} failed ({record.get('category')}): "
                                          f"{_first_line(record.get('message', ''))}",
            "fix": record.get("fix") or f"see {path}"}


def _first_line(text: str, limit: int = 200) -> str:
    line = (text.splitlines() or [""])[0]
    return line if len(line) <= limit else line[: limit - 3] + "..."


def partial_results(config: dict, roots: dict, since: float) -> list[str]:
    """Write results.tsv and summary.md for what a failure of this run touched; the lines to
    print (what was written, and which pairs did not finish)."""
    from embedprobe.reporting.aggregate import aggregate_folds, write_results
    from embedprobe.reporting.summary import read_quality, summary_markdown
    from embedprobe.tasks.registry import task_for

    lines = []
    for benchmark, bench in config["benchmarks"].items():
        written = {}
        for dataset in present_datasets(config, benchmark):
            folds = fold_count(config, benchmark, dataset)
            try:
                chosen = benchmark_folds(config, benchmark, dataset)
            except UsageError:  # the selected folds are not this dataset's: nothing ran
                continue
            not_run, fold_paths, touched = {}, [], False
            for model in runnable_models(config, benchmark, dataset):
                records = failure_records(roots, benchmark, dataset, model, chosen,
                                          embedding_id(config["models"], model))
                touched |= any(p.stat().st_mtime >= since for _, p in records)
                done = [output_path("fold_result", roots, benchmark=benchmark, dataset=dataset,
                                    model=model, fold=k) for k in chosen]
                fold_paths += [p for p in done if p.is_file()]
                if records:
                    not_run[(dataset, model)] = _pair_trouble(records)
            if not touched:
                continue
            for model, skip in not_run_pairs(config, benchmark, dataset).items():
                not_run[(dataset, model)] = skip
            table = aggregate_folds(fold_paths, task_for(bench["task"]), folds, not_run,
                                    selected=None if config.get("folds") is None else chosen)
            out = output_path("results", roots, benchmark=benchmark, dataset=dataset)
            write_results(table, out)
            written[dataset] = out
            for row in table.itertuples():
                if row.status not in ("ok", "partial"):
                    lines.append(f"error: {benchmark}: {dataset}/{row.model} {row.status} "
                                 f"({row.folds} folds): {row.reason}")
        if not written:
            continue
        tables = {}
        for dataset in selected(config, benchmark, "datasets"):
            path = output_path("results", roots, benchmark=benchmark, dataset=dataset)
            if path.is_file():
                tables[dataset] = pd.read_csv(path, sep="\t")
        summary = output_path("summary", roots, benchmark=benchmark)
        summary.write_text(summary_markdown(tables, task_for(bench["task"]), benchmark,
                                            read_quality(quality_paths(roots, bench))))
        lines.append(f"note: {benchmark}: the pairs that finished are in "
                     f"{', '.join(map(str, written.values()))} and {summary}; the run failed, "
                     "so the next run redoes the failed jobs only")
    return lines


def quality_paths(roots: dict, bench: dict) -> list[Path]:
    """The benchmark's datasets' data-quality tables that index wrote."""
    return [path for dataset in bench["datasets"]
            if (path := output_path("quality", roots, dataset=dataset)).is_file()]
