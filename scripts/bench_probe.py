#!/usr/bin/env python
"""Time the sleep-staging probe: the straightforward protocol against embedprobe's fast probe.

    PYTHONPATH=workflow .venv/bin/python scripts/bench_probe.py            # 160k/20k/20k x 256
    PYTHONPATH=workflow .venv/bin/python scripts/bench_probe.py --n-train 40000 --n-val 10000

The two probes and what "same answer" means: embedprobe/devtools/bench_probe.py.
"""

from __future__ import annotations

import argparse
import sys

from embedprobe.devtools import bench_probe


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n-train", type=int, default=160_000)
    parser.add_argument("--n-val", type=int, default=20_000)
    parser.add_argument("--n-test", type=int, default=20_000)
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--seed", type=int, default=0, help="world and rows of the synthetic set")
    parser.add_argument(
        "--search-rows",
        type=int,
        default=None,
        help="fast probe: search C on this many stratified training rows, then refit "
        "(default: every C on all training rows)",
    )
    parser.add_argument("--quiet", action="store_true", help="no per-fit progress lines")
    args = parser.parse_args(argv)
    if min(args.n_train, args.n_val, args.n_test, args.dim) < 1:
        parser.error("--n-train, --n-val, --n-test and --dim must be positive")
    return bench_probe.run(args)


if __name__ == "__main__":
    sys.exit(main())
