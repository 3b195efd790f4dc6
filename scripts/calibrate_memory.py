#!/usr/bin/env python
"""Fit the memory calibration table from measured peaks of the project's real jobs.

Usage:
  python scripts/calibrate_memory.py --quick          # the shipped table
  python scripts/calibrate_memory.py --quick --jobs embed_cpu   # its embed runs alone
  python scripts/calibrate_memory.py                  # more and larger runs
  python scripts/calibrate_memory.py --quick --out /tmp/cal.yaml --no-drift
The workloads, how each constant is fitted and the drift tables:
embedprobe/devtools/calibrate_memory.py.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from embedprobe.devtools import calibrate_memory
from embedprobe.memory.calibration import CALIBRATION_PATH


def main(argv=None) -> int:
    jobs = calibrate_memory.CALIBRATED_JOBS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer and smaller runs")
    parser.add_argument("--out", type=Path, default=CALIBRATION_PATH)
    parser.add_argument("--previous", type=Path, default=None,
                        help="table to compare against (default: the one at --out)")
    parser.add_argument("--no-drift", action="store_true", help="do not print the drift table")
    parser.add_argument("--workdir", type=Path,
                        help="keep generated inputs here and reuse them (default: a temp dir)")
    parser.add_argument("--jobs", default=",".join(jobs),
                        help="job types to refit (comma-separated; the others keep the "
                             f"previous table's constants; default all: {','.join(jobs)})")
    args = parser.parse_args(argv)
    selected = tuple(args.jobs.split(","))
    unknown = sorted(set(selected) - set(jobs))
    if unknown:
        parser.error(f"unknown job types {unknown}; use some of {', '.join(jobs)}")
    return calibrate_memory.run(args.quick, args.out, args.previous, not args.no_drift,
                                args.workdir, selected)


if __name__ == "__main__":
    sys.exit(main())
