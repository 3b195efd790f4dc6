"""What the embedding store's writer holds: appending batches, then finish(), side by side for
finish blocks of several sizes, against the embed estimate's HDF5 term.

Each (store, block) pair runs in its own child process: a writer of the store's rows appended
in batches of 32 (as embed appends them), then finish(), which reads every row back in blocks,
checks it and copies it to the final file (pipeline/store_writer.FINISH_BLOCK_BYTES; the child sets
the block size it is given). A child reports its resident growth while appending (over its
imports and the window table) and during finish() (over what it held before). The estimate
column is the embed estimate's term for the same store (memory/formulas.store_rows_held with
the calibration table's constants: its buffers and the larger of a batch of rows and what
finish() holds, 1.5 blocks at the shipped size and the window table it reads back).
scripts/bench_store_memory.py runs it; each child is this module run with `python -m`.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from tempfile import TemporaryDirectory

from embedprobe.core.units import MIB

STORES = {  # name -> (windows, row)
    "pooled 1,000 x 256": (1000, (256,)),
    "pooled 100,000 x 256": (100_000, (256,)),
    "tokens 832 x 240 x 512 (ST-EEGFormer)": (832, (240, 512)),
}
BATCH = 32


def child(path: str, windows: int, row: list[int], block_mib: int) -> None:
    from embedprobe.devtools.workloads import store_writer_growth
    from embedprobe.pipeline import store_writer

    store_writer.FINISH_BLOCK_BYTES = block_mib * MIB  # finish() reads the module's value
    appending, finishing = store_writer_growth(Path(path), windows, tuple(row), BATCH)
    print(json.dumps({"appending": appending, "finishing": finishing}))


def estimate_term(windows: int, row: tuple[int, ...]) -> float:
    from embedprobe.memory.calibration import load_calibration
    from embedprobe.memory.estimate import JOB_TYPES, job_constants
    from embedprobe.memory.formulas import store_rows_held

    constants = job_constants("embed_cpu", load_calibration())
    inputs = {"batch_size": BATCH, "feature_dim": math.prod(row), "n_windows": windows,
              "finish_block_bytes": JOB_TYPES["embed_cpu"].defaults["finish_block_bytes"]}
    return constants["hdf5_buffer_bytes"] + store_rows_held(inputs, constants)


def run(blocks: list[int], repeats: int) -> int:
    """The table: each store with each finish block of `blocks` MiB, the most of `repeats`."""
    print("| store | store MB | finish block MiB | appending MB | finish MB | "
          "estimate's HDF5 term MB |\n|---|---|---|---|---|---|")
    with TemporaryDirectory() as folder:
        for name, (windows, row) in STORES.items():
            store_mb = windows * math.prod(row) * 4 / MIB
            for block in blocks:
                grew = []
                for repeat in range(repeats):
                    out = Path(folder) / f"{block}-{repeat}.h5"
                    run = subprocess.run(
                        [sys.executable, "-m", __name__, str(out), str(windows),
                         json.dumps(list(row)), str(block)],
                        capture_output=True, text=True, check=True)
                    grew.append(json.loads(run.stdout.splitlines()[-1]))
                    out.unlink()
                appending = max(g["appending"] for g in grew) / MIB
                finishing = max(g["finishing"] for g in grew) / MIB
                print(f"| {name} | {store_mb:,.1f} | {block} | {appending:,.1f} | "
                      f"{finishing:,.1f} | {estimate_term(windows, row) / MIB:,.1f} |",
                      flush=True)
    return 0


if __name__ == "__main__":  # a child: STORE WINDOWS ROW BLOCK_MIB
    path, windows, row, block = sys.argv[1:]
    child(path, int(windows), json.loads(row), int(block))
