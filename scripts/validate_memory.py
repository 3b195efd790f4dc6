#!/usr/bin/env python
"""Check the memory estimates against real runs: predicted against measured peak of each job.

Usage:
  python scripts/validate_memory.py                 # the full grid with contended rows
  python scripts/validate_memory.py --quick         # smaller sizes, one embed model (~2 min)
  python scripts/validate_memory.py --out validation.tsv   # also the rows (.jsonl: JSON lines)
  python scripts/validate_memory.py --jobs embed,families --models biot_random,luna_random \\
      --hours 0.1667                                # a part of the embed rows
  python scripts/validate_memory.py --jobs embed --datasets dcsm --models biot_random
                                                    # the DCSM look-alike's embed rows
  python scripts/validate_memory.py --fresh-clone 5 --with-grid
      # 5 times in a fresh clone: the test demo workflow (every job's peak against its
      # request) and the quick grid; --fresh-venv also installs a new venv there
  python scripts/validate_memory.py --device cuda   # the GPU grid: 4 models x 2 batch sizes x
                                                    # 2 night lengths, device and host columns
The grid, its rows and its targets: embedprobe/devtools/validate_memory.py (the GPU grid:
validate_gpu_memory.py; the fresh clone: validate_fresh_clone.py).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from embedprobe.devtools import validate_fresh_clone, validate_gpu_memory, validate_memory


def main(argv=None) -> int:
    kinds = validate_memory.ROW_KINDS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, one embed model")
    parser.add_argument("--out", type=Path, help="also write the rows here (.tsv or .jsonl)")
    parser.add_argument("--jobs", default=",".join(kinds),
                        help=f"which rows to run (comma-separated from {', '.join(kinds)})")
    parser.add_argument("--models", help="embed rows: only these models (comma-separated)")
    parser.add_argument("--hours", help="embed rows: only these night lengths of the grid, in "
                                        "hours (comma-separated, e.g. 0.1667)")
    parser.add_argument("--datasets", type=lambda text: text.split(","),
                        help="embed rows: their data sets (comma-separated from "
                             f"{', '.join(validate_memory.EMBED_DATASETS)}; default "
                             f"{','.join(validate_memory.GRIDS['full']['embed_datasets'])})")
    parser.add_argument("--workdir", type=Path,
                        help="keep generated inputs here and reuse them (default: a temp dir)")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                        help="cuda: the GPU grid (device and host, predicted vs measured)")
    parser.add_argument("--fresh-clone", type=int, metavar="N",
                        help="run the test demo workflow N times in a fresh clone of HEAD")
    parser.add_argument("--fresh-venv", action="store_true",
                        help="with --fresh-clone: install a new venv there (scripts/install.sh)")
    parser.add_argument("--with-grid", action="store_true",
                        help="with --fresh-clone: each run also runs the clone's --quick grid")
    args = parser.parse_args(argv)
    if args.fresh_clone:
        checkout = Path(__file__).resolve().parents[1]  # this script's checkout
        return validate_fresh_clone.fresh_clone_runs(checkout, args.fresh_clone,
                                                     args.fresh_venv, args.with_grid)
    if args.device == "cuda":
        return validate_gpu_memory.gpu_grid(args.workdir)
    return validate_memory.cpu_grid(args)


if __name__ == "__main__":
    sys.exit(main())
