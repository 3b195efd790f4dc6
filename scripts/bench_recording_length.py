#!/usr/bin/env python3
"""One embed job's peak memory against the length of its recording (flat, within 10%).

Usage: python scripts/bench_recording_length.py [--model biot_random]
           [--hours 0.1667 4 12] [--repeats 1] [--code OTHER/workflow] [--workdir DIR]
           [--null-model]
The table and its columns: embedprobe/devtools/bench_recording_length.py.
"""

from __future__ import annotations

import sys

from embedprobe.devtools import bench_recording_length


def main(argv: list[str] | None = None) -> int:
    args = bench_recording_length.parser().parse_args(argv)
    return bench_recording_length.run(args)


if __name__ == "__main__":
    sys.exit(main())
