#!/usr/bin/env python
"""What the embedding store's writer holds: appending batches, then finish(), side by side for
finish blocks of several sizes, against the embed estimate's HDF5 term.

Usage:
  PYTHONPATH=workflow python scripts/bench_store_memory.py
  PYTHONPATH=workflow python scripts/bench_store_memory.py --blocks 16 64 --repeats 3
What each child measures: embedprobe/devtools/bench_store_memory.py.
"""

from __future__ import annotations

import argparse
import sys

from embedprobe.devtools import bench_store_memory


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, nargs="+", default=[16, 64],
                        help="finish block sizes to compare, in MiB (16: the shipped one)")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args(argv)
    return bench_store_memory.run(args.blocks, args.repeats)


if __name__ == "__main__":
    sys.exit(main())
