"""The Snakefile's onsuccess and onerror hooks: the summaries a run (re)wrote, or after a
failure the partial results of the pairs that finished."""

from __future__ import annotations

import sys
import time

from embedprobe.core.paths import output_path
from embedprobe.smk.plan import data_skip, known_skips, variant_skips

RUN_STARTED = time.time()


def print_fresh_summaries(config: dict, roots: dict) -> None:
    """After a successful run: the summary of every benchmark this run (re)wrote, and a closing
    `warning:` for each pair it skipped (a skip known before running leaves the exit status 0)."""
    for benchmark in config["benchmarks"]:
        path = output_path("summary", roots, benchmark=benchmark)
        if path.is_file() and path.stat().st_mtime >= RUN_STARTED:
            print(f"\n{path}:\n{path.read_text()}")
            for model, skip in (known_skips(config, benchmark)
                                | variant_skips(config, benchmark)).items():
                print(f"warning: {benchmark}: {model} was skipped ({skip['reason']}): the run "
                      f"finished without it\nfix: {skip['fix']}", file=sys.stderr)
            print_selection_notes(config, benchmark)
    boards = output_path("leaderboard", roots, target="*")
    for path in sorted(boards.parent.glob(boards.name)):
        if path.stat().st_mtime >= RUN_STARTED:  # the view across the target's benchmarks
            print(f"\n{path}:\n{path.read_text()}")
    if config["limit_batches"]:  # the tables above are a smoke test's
        stores = output_path("embeddings", roots, dataset="*", model="*")
        # a variant's store is a folder deeper (<dataset>/<variant>/<model>.h5)
        fresh = [p for p in sorted(stores.parent.parent.rglob(f"*{stores.suffix}"))
                 if p.stat().st_mtime >= RUN_STARTED]
        print(f"note: capped run (limit_batches={config['limit_batches']}): the scores above "
              f"come from {config['limit_batches']} batches per pair and test the chain, not "
              f"the models; {len(fresh)} store(s) written: " + ", ".join(map(str, fresh)),
              file=sys.stderr)


def print_selection_notes(config: dict, benchmark: str) -> None:
    """The closing lines of a benchmark that ran a selection: each dataset skipped for
    missing data (a `warning:` with its fix) and the folds it ran (a `note:`)."""
    from embedprobe.core.selection import fold_selection, selected

    for dataset in selected(config, benchmark, "datasets"):
        skip = data_skip(config, dataset)
        if skip:
            print(f"warning: {benchmark}: dataset {dataset} was skipped ({skip['reason']}): "
                  f"the run finished without it\nfix: {skip['fix']}", file=sys.stderr)
    folds = fold_selection(config, benchmark)
    if folds is not None:
        count = config["benchmarks"][benchmark]["folds"]
        of = "each dataset's LOSO folds" if count == "loso" else count
        print(f"note: {benchmark}: folds {','.join(map(str, folds))} of "
              f"{of} only (config folds): results.tsv "
              "marks its pairs partial; a run without `folds` fits the others", file=sys.stderr)


def write_partial_results(config: dict, roots: dict) -> None:
    """After a failed run (`onerror`): for every benchmark a failure of this run touched,
    results.tsv and summary.md from the pairs that finished, each pair that did not listed with
    its status, reason and folds done/expected. Snakemake's exit status stays non-zero, and
    the next run redoes the failed jobs and rewrites both files through the rules."""
    from embedprobe.smk.partial import partial_results

    for line in partial_results(config, roots, RUN_STARTED):
        print(line, file=sys.stderr)
