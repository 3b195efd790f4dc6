"""Predict a finished validation grid's embed rows again with another calibration table, against
the peaks the grid measured: how a refit would have done on the same runs, without running them
again.

scripts/validate_memory.py --workdir W --out rows.tsv keeps each embed job's preflight record
(W/<set>/<night length>/preflight/<model>.json: the formula inputs check and the window index
gave) beside the rows. Each row is joined with its record by model and window count (its `size`
starts with it), and its estimate recomputed from those inputs with --table. The verdicts are
validate_memory's. The peaks stay those of the grid's runs: a new grid measures new ones, which
spread 10-20% from run to run (docs/memory.md). scripts/reestimate_grid.py runs it.
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

from embedprobe.core.units import MIB
from embedprobe.devtools.validate_memory import (
    Row,
    per_job_lines,
    table_header,
    table_line,
    verdicts,
)
from embedprobe.memory.calibration import load_calibration
from embedprobe.memory.estimate import estimate, request_mb


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


def run(workdir: Path, rows_path: Path, table: Path) -> int:
    """The grid's embed rows predicted again with `table`, and the verdicts, printed: 0 when
    every target holds, 1 when one fails, 2 for a path that is missing or another grid's."""
    for path in (workdir, rows_path, table):
        if not path.exists():
            print(f"error: {path} does not exist\nfix: pass a finished grid's --workdir and "
                  "--out, and a calibration table", file=sys.stderr)
            return 2
    with rows_path.open() as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    try:
        out = reestimated(rows, embed_records(workdir), load_calibration(table))
    except LookupError as missing:
        print(f"error: {missing.args[0]}\nfix: pass the --workdir of the grid that wrote "
              f"{rows_path}", file=sys.stderr)
        return 2
    print("\n".join(table_header() + [table_line(row) for row in out]))
    print()
    print("\n".join(per_job_lines(out)))
    results = verdicts(out)
    for line, passed in results:
        print(f"{'PASS' if passed else 'FAIL'}: {line}")
    return 0 if all(passed for _, passed in results) else 1

