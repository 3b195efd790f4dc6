#!/usr/bin/env python
"""A generated cohort of thousands of recordings planned, indexed, embedded in shards and
probed through the real snakemake: per step, time per recording, peak memory against its
estimate and request, output size; plan time against a bare Snakemake of the same DAG; and the
projection to SHHS and to the reference's full suite.

    PYTHONPATH=workflow .venv/bin/python scripts/bench_scale.py --nights 1000 --shards 4
    PYTHONPATH=workflow .venv/bin/python scripts/bench_scale.py --quick

What is run and measured, and how the projection is made: embedprobe/devtools/bench_scale.py.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from embedprobe.devtools import bench_scale


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nights", type=int, default=1000,
                        help="recordings in the generated SHHS look-alike (default 1000)")
    parser.add_argument("--shards", type=int, default=4, help="embed.shards (default 4)")
    parser.add_argument("--cores", type=int, default=2,
                        help="snakemake --cores; every job runs at one thread (default 2)")
    parser.add_argument("--model", default=bench_scale.TINY_MODEL,
                        help=f"the encoder (default {bench_scale.TINY_MODEL}: biot_random's "
                             "entry, one layer of width 32; biot_random: the full size)")
    parser.add_argument("--quick", action="store_true",
                        help=f"{bench_scale.QUICK_NIGHTS} nights in {bench_scale.QUICK_SHARDS} "
                             "shards: the test's size")
    parser.add_argument("--workdir", type=Path, default=None,
                        help="where the temporary cohort and run go (default: the system's)")
    parser.add_argument("--keep", action="store_true",
                        help="keep the cohort and the run's results (the runs table, logs)")
    args = parser.parse_args(argv)
    nights, shards = ((bench_scale.QUICK_NIGHTS, bench_scale.QUICK_SHARDS) if args.quick
                      else (args.nights, args.shards))
    if nights < bench_scale.FOLDS or not 1 <= shards <= nights:
        parser.error(f"--nights must be at least {bench_scale.FOLDS} (the folds) and --shards "
                     "between 1 and --nights")
    report = bench_scale.run(nights, shards, args.model, args.cores, args.workdir, args.keep)
    print(bench_scale.format_report(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
