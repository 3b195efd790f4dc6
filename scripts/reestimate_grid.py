#!/usr/bin/env python
"""Predict a finished validation grid's embed rows again with another calibration table, against
the peaks the grid measured: how a refit would have done on the same runs, without running them
again.

scripts/validate_memory.py --workdir W --out rows.tsv keeps each embed job's preflight record
(W/<set>/<night length>/preflight/<model>.json: the formula inputs check and the window index
gave) beside the rows. Each row is joined with its record by model and window count (its `size`
starts with it), and its estimate recomputed from those inputs with --table. The verdicts are
validate_memory's. The peaks stay those of the grid's runs: a new grid measures new ones, which
spread 10-20% from run to run (docs/memory.md).

Usage:
  PYTHONPATH=workflow python scripts/reestimate_grid.py --workdir W --rows rows.tsv \
      --table config/memory_calibration.yaml
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow"))
sys.path.insert(0, str(ROOT / "scripts"))

from validate_memory import Row, per_job_lines, table_header, table_line, verdicts  # noqa: E402

from embedprobe.core.units import MIB  # noqa: E402
from embedprobe.memory.calibration import load_calibration  # noqa: E402
from embedprobe.memory.estimate import estimate, request_mb  # noqa: E402


def embed_records(workdir: Path) -> dict[tuple[str, int], dict]:
    """Each kept embed record's job entry by (model, window count)."""
    records = {}
    for path in sorted(workdir.glob("*/*/preflight/*.json")):
        entry = json.loads(path.read_text())["jobs"]["embed"]
        records[(path.stem, int(entry["inputs"]["n_windows"]))] = entry
    return records


def reestimated(rows: list[dict], records: dict, calibration: dict) -> list[Row]:
    out = []
    for row in rows:
        if row["job"] != "embed":
            continue
        windows = int(row["size"].split(" windows")[0])
        entry = records.get((row["model"], windows))
        if entry is None:
            raise LookupError(f"no preflight record for {row['model']} at {windows} windows "
                              "under the workdir")
        total = estimate(entry["job"], entry["inputs"], calibration, None).total
        out.append(Row("embed", row["model"], row["size"], round(total / MIB, 1),
                       request_mb(total, entry["margin"]), float(row["measured_mb"]),
                       float(row["seconds"])))
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", type=Path, required=True, help="the grid's --workdir")
    parser.add_argument("--rows", type=Path, required=True, help="the grid's --out (.tsv)")
    parser.add_argument("--table", type=Path, required=True, help="the calibration table")
    args = parser.parse_args(argv)
    for path in (args.workdir, args.rows, args.table):
        if not path.exists():
            print(f"error: {path} does not exist\nfix: pass a finished grid's --workdir and "
                  "--out, and a calibration table", file=sys.stderr)
            return 2
    with args.rows.open() as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    try:
        out = reestimated(rows, embed_records(args.workdir), load_calibration(args.table))
    except LookupError as missing:
        print(f"error: {missing.args[0]}\nfix: pass the --workdir of the grid that wrote "
              f"{args.rows}", file=sys.stderr)
        return 2
    print("\n".join(table_header() + [table_line(row) for row in out]))
    print()
    print("\n".join(per_job_lines(out)))
    results = verdicts(out)
    for line, passed in results:
        print(f"{'PASS' if passed else 'FAIL'}: {line}")
    return 0 if all(passed for _, passed in results) else 1


if __name__ == "__main__":
    sys.exit(main())
