"""A stand-in embed loop for the crash tests: deterministic rows into a real EmbeddingWriter.

    python tests/helpers/cache_writer.py OUT LOG --n 600 --dim 16 --batch 32 [--kill-at POINT:K]
        [--tokens T]   (a token store: rows of T x dim)

Row r's embedding is a fixed function of r, so any mix of runs must give the same file. Each
run appends `open <durable_rows> <batch_size_hint>` to LOG, then `computed <start> <end>` for
every batch it computes (before appending it), and `finished` at the end. `--kill-at POINT:K`
SIGKILLs the process the K-th time it reaches POINT: one of the store's crash points
(partial_created, rows_flushed, durable, final_written, renamed) or `computed` (a batch is
computed but not yet appended); K may be `last` for the final batch of `computed`/`rows_flushed`.
After opening, the script prints `ready` on stdout so a parent can time a kill of its own.
"""

from __future__ import annotations

import argparse
import os
import signal

import numpy as np
import pandas as pd

from embedprobe.pipeline import store_writer
from embedprobe.pipeline.store_identity import CacheIdentity, canonical_json
from embedprobe.pipeline.window_table import window_table_sha256


def window_table(n: int) -> pd.DataFrame:
    rows = np.arange(n)
    return pd.DataFrame({
        "recording": [f"rec{r // 100:03d}" for r in rows],
        "subject": [f"sub{r // 250:02d}" for r in rows],
        "start": (rows % 100) * 3000,
        "label": (rows % 5).astype(np.int8),
        "night": rows // 100 % 2,
    })


def embeddings_for(start: int, end: int, dim: int) -> np.ndarray:
    rows = np.arange(start, end, dtype=np.float64)[:, None]
    return (np.sin(rows * 0.37 + np.arange(dim)) * (rows + 1)).astype(np.float32)


def identity_for(table: pd.DataFrame, weights: str = "w" * 64) -> CacheIdentity:
    return CacheIdentity(
        dataset="demo", model="toy", windows_sha256=window_table_sha256(table),
        preprocessing=canonical_json({"sfreq": 200}), weights_sha256=weights,
        code_version="test",
    )


class Killer:
    """Counts visits to each point and SIGKILLs this process at the chosen one."""

    def __init__(self, spec: str | None, n_batches: int):
        self.point, self.at = (spec.split(":") if spec else (None, "0"))
        self.at = n_batches if self.at == "last" else int(self.at)
        self.seen: dict[str, int] = {}

    def __call__(self, point: str, batch_index: int | None = None) -> None:
        self.seen[point] = self.seen.get(point, 0) + 1
        visit = batch_index + 1 if batch_index is not None else self.seen[point]
        if point == self.point and visit == self.at:
            os.kill(os.getpid(), signal.SIGKILL)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("log")
    parser.add_argument("--n", type=int, default=600)
    parser.add_argument("--dim", type=int, default=16)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--kill-at")
    parser.add_argument("--tokens", type=int, default=0)
    args = parser.parse_args()
    row = (args.tokens, args.dim) if args.tokens else args.dim

    n_batches = -(-args.n // args.batch)
    kill = Killer(args.kill_at, n_batches)
    batch_index = {"i": 0}  # the batch being written, for `rows_flushed:last`
    store_writer._crash_point = lambda name: kill(
        name, batch_index["i"] if name == "rows_flushed" else None)

    table = window_table(args.n)
    log = open(args.log, "a", buffering=1)
    with store_writer.EmbeddingWriter(args.out, identity_for(table), args.n, row, table,
                               chunk_rows=64) as writer:
        log.write(f"open {writer.durable_rows} {writer.batch_size_hint}\n")
        print("ready", flush=True)
        for start in range(writer.durable_rows, args.n, args.batch):
            end = min(args.n, start + args.batch)
            batch_index["i"] = start // args.batch
            rows = embeddings_for(start, end, int(np.prod(row))).reshape(end - start, *
                                                                        np.atleast_1d(row))
            log.write(f"computed {start} {end}\n")
            kill("computed", batch_index["i"])
            writer.append(rows)
            writer.remember_batch_size(args.batch)
        writer.finish()
    log.write("finished\n")


if __name__ == "__main__":
    main()
