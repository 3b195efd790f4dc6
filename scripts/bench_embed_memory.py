#!/usr/bin/env python
"""Run-to-run spread of one embed job's peak memory and time under glibc malloc settings.

Usage:
  PYTHONPATH=workflow python scripts/bench_embed_memory.py                # BIOT, 1 h nights, 3 each
  PYTHONPATH=workflow python scripts/bench_embed_memory.py --model labram_random --repeats 5
  PYTHONPATH=workflow python scripts/bench_embed_memory.py --modes "one arena" \\
      "mmap threshold 16 MiB" "mmap threshold 32 MiB"
  PYTHONPATH=workflow python scripts/bench_embed_memory.py --modes "one arena" \\
      "no heap release" "heap release each batch"
The modes and what each run is: embedprobe/devtools/bench_embed_memory.py.
"""

from __future__ import annotations

import argparse
import sys

from embedprobe.devtools import bench_embed_memory


def main(argv=None) -> int:
    modes = list(bench_embed_memory.MODES)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="biot_random")
    parser.add_argument("--hours", type=float, default=1.0, help="sleep per generated night")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--modes", nargs="+", choices=modes, default=modes[:3],
                        metavar="MODE", help=f"malloc settings side by side, of {modes} "
                        "(default: the first three)")
    return bench_embed_memory.run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
