#!/usr/bin/env python
"""Predict a finished validation grid's embed rows again with another calibration table, against
the peaks the grid measured: how a refit would have done on the same runs, without running them
again.

Usage:
  PYTHONPATH=workflow python scripts/reestimate_grid.py --workdir W --rows rows.tsv \\
      --table config/memory_calibration.yaml
How rows and records are joined: embedprobe/devtools/reestimate_grid.py.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from embedprobe.devtools import reestimate_grid


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", type=Path, required=True, help="the grid's --workdir")
    parser.add_argument("--rows", type=Path, required=True, help="the grid's --out (.tsv)")
    parser.add_argument("--table", type=Path, required=True, help="the calibration table")
    args = parser.parse_args(argv)
    return reestimate_grid.run(args.workdir, args.rows, args.table)


if __name__ == "__main__":
    sys.exit(main())
