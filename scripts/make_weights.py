#!/usr/bin/env python3
"""Write a checkpoint for MODEL_ID: the model built from its seed, saved as a plain state_dict.

Usage: python scripts/make_weights.py MODEL_ID OUT_PATH [--format pt|safetensors]
                                      [--n-chans N] [--seed S]
What it writes and why: embedprobe/devtools/make_weights.py.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from embedprobe.core.errors import EmbedprobeError
from embedprobe.devtools.make_weights import write_weights


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model_id", help="a model id from config/models.yaml")
    parser.add_argument("out_path", type=Path, help="file to write (.pt or .safetensors)")
    parser.add_argument("--format", choices=("pt", "safetensors"),
                        help="default: from the file name's suffix")
    parser.add_argument("--n-chans", type=int, default=2,
                        help="input channels the model is built for (Sleep-EDF: 2)")
    parser.add_argument("--seed", type=int, help="default: the model's seed in models.yaml")
    args = parser.parse_args(argv)
    try:
        digest = write_weights(args.model_id, args.out_path, args.format, args.n_chans, args.seed)
    except EmbedprobeError as exc:
        print(exc.render(), file=sys.stderr)
        return exc.exit_code
    print(f"wrote {args.out_path} ({args.out_path.stat().st_size / 1e6:.1f} MB), sha256 {digest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
