#!/usr/bin/env python3
"""Write a synthetic Sleep-EDF expanded demo (real file names and EDF+ formats) into OUT_DIR.

Usage: python scripts/make_demo_data.py OUT_DIR [--subjects 10 --nights 2 --hours 1.0 --seed 0]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from embedprobe.core.errors import EmbedprobeError
from embedprobe.datasets.sleep_edf.lookalike import generate


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path, help="folder to write into (created if needed)")
    parser.add_argument("--subjects", type=int, default=10, help="subjects (1-100)")
    parser.add_argument("--nights", type=int, default=2, choices=(1, 2), help="nights per subject")
    parser.add_argument("--hours", type=float, default=1.0, help="sleep period per night (h)")
    parser.add_argument("--seed", type=int, default=0, help="same seed, same bytes")
    args = parser.parse_args(argv)
    began = time.perf_counter()
    try:
        files = generate(args.out_dir, args.subjects, args.nights, args.hours, args.seed)
    except EmbedprobeError as exc:
        print(exc.render(), file=sys.stderr)
        return exc.exit_code
    size_mb = sum(f.stat().st_size for f in files) / 1e6
    print(
        f"wrote {len(files)} files ({size_mb:.1f} MB) to {args.out_dir} "
        f"in {time.perf_counter() - began:.1f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
