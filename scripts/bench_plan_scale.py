#!/usr/bin/env python
"""Time `embedprobe index` and `snakemake -n` on a generated cohort of thousands of nights.

    PYTHONPATH=workflow .venv/bin/python scripts/bench_plan_scale.py               # 2,000 nights
    PYTHONPATH=workflow .venv/bin/python scripts/bench_plan_scale.py --nights 200

What is timed and against what (a bare Snakemake of the same DAG):
embedprobe/devtools/bench_plan_scale.py.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from embedprobe.devtools import bench_plan_scale


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nights", type=int, default=2000,
                        help="recordings in the generated SHHS look-alike (default 2000)")
    parser.add_argument("--benchmark", default="sleep_stage",
                        help="the benchmark whose plan is timed (it lists shhs)")
    parser.add_argument("--workdir", type=Path, default=None,
                        help="where the temporary cohort and runs go (default: the system's)")
    args = parser.parse_args(argv)
    if args.nights < 2:
        parser.error("--nights must be at least 2")
    rows = bench_plan_scale.run(args.nights, args.benchmark, args.workdir)
    print(bench_plan_scale.format_table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
