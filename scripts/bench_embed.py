#!/usr/bin/env python3
"""Throughput of the embed step: the pipeline's ceiling, and embed against the model's forward.

Usage: python scripts/bench_embed.py [--models biot_random cbramod_random] [--subjects 4]
           [--nights 2] [--hours 1] [--batch-size 32] [--threads N] [--reader-threads 2]
           [--readers threads|processes] [--ceiling-workers 1 2] [--ceiling-subjects 16]
           [--ceiling-hours 8] [--ceiling-batch-size 256] [--ceiling-readers threads|processes]
           [--feed-rates 3000 5000] [--repeats 2]
           [--skip-ceiling | --skip-forward | --startup] [--device cpu|cuda]
           [--workdir DIR] [--profile OUT.prof]
  The ceiling runs on its own, larger demo (default 16 subjects x 2 nights x 8 h, batch 256).
  --device cuda: the encoder on the GPU, defaults sized for a GPU node (16 subjects x 2 nights
  x 8 h for both tables, batch 256, reader processes: the CPUs less two), done in under 5
  minutes on an H200.
The tables and their columns: embedprobe/devtools/bench_embed.py.
"""

from __future__ import annotations

import sys

from embedprobe.devtools import bench_embed


def main(argv: list[str] | None = None) -> int:
    return bench_embed.run(bench_embed.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
