"""`embedprobe data status`: which datasets are where, in the states the plan and `check` use.

One row per dataset: its state (registry.DataStatus's: `found`, `partial`, `missing`; `error`
where its files break the format's layout and the reader refuses them), the complete recordings
counted against the entry's `expected_recordings`, the folder looked in, what is wrong and the
fix (registry.fix_for, the plan's and check's own). Names select datasets directly, or through
a benchmark, a target group or `all`; none: every dataset entry.
"""

from __future__ import annotations

from embedprobe.core.errors import DataError, UsageError
from embedprobe.core.names import closest
from embedprobe.core.text import aligned_rows
from embedprobe.datasets.registry import (
    data_status,
    dataset_root,
    expected_recordings,
    fix_for,
)

COLUMNS = ("dataset", "format", "state", "recordings", "folder", "detail")
READY = "found"  # the one state in which a dataset needs nothing more
SHOWN_PROBLEMS = 3  # a row's detail names at most this many incomplete recordings


def datasets_named(config: dict, names=()) -> list[str]:
    """The datasets the names select, each once, in the order named: a dataset; a benchmark's
    datasets; a target group's benchmarks' datasets; `all` or no name: every dataset entry."""
    benchmarks, groups = config["benchmarks"], config.get("target_groups") or {}
    chosen: list[str] = []
    for name in names or ["all"]:
        if name == "all":
            found = list(config["datasets"])
        elif name in config["datasets"]:
            found = [name]
        elif name in benchmarks:
            found = list(benchmarks[name]["datasets"])
        elif name in groups:
            found = [d for b in groups[name] for d in benchmarks[b]["datasets"]]
        else:
            known = {*config["datasets"], *benchmarks, *groups}
            raise UsageError(f"'{name}' is no dataset, benchmark or target group"
                             f"{closest(name, known)}",
                             fix="name datasets of config/datasets.yaml, benchmarks or target "
                                 "groups of config/benchmarks.yaml, or none for every dataset")
        for dataset in found:
            if dataset not in chosen:
                chosen.append(dataset)
    return chosen


def availability_row(config: dict, roots: dict, dataset: str,
                     invocation: list[str] | None = None) -> dict:
    """One dataset's row (the keys of COLUMNS, then `found`, `expected` and `fix`: for
    `invocation`, the command the user typed, if any: registry.fix_for)."""
    entry = config["datasets"][dataset]
    expected = expected_recordings(entry)
    row = {"dataset": dataset, "format": entry["format"],
           "folder": str(dataset_root(config, roots, dataset)), "expected": expected}
    try:
        status = data_status(config, roots, dataset)
    except DataError as error:  # a file outside the layout: the reader names it
        return row | {"state": "error", "found": 0,
                      "recordings": f"?/{'?' if expected is None else expected}",
                      "detail": str(error), "fix": error.fix or ""}
    detail = "; ".join(status.problems[:SHOWN_PROBLEMS])
    if len(status.problems) > SHOWN_PROBLEMS:
        detail += f"; and {len(status.problems) - SHOWN_PROBLEMS} more"
    return row | {"state": status.state, "found": status.found,
                  "recordings": status.counted, "detail": detail,
                  "fix": "" if status.state == READY else fix_for(config, dataset, status,
                                                                  invocation)}


def availability(config: dict, roots: dict, names=(),
                 invocation: list[str] | None = None) -> list[dict]:
    """A row per dataset the names select (datasets_named)."""
    return [availability_row(config, roots, d, invocation)
            for d in datasets_named(config, names)]


def format_availability(rows: list[dict]) -> str:
    """An aligned table, what is wrong and the fix under each dataset that is not found, then
    the count per state."""
    columns = COLUMNS[:-1]  # the detail goes under its row
    header, *lines = aligned_rows(columns, [[str(r[c]) for c in columns] for r in rows])
    out = [header]
    for row, line in zip(rows, lines, strict=True):
        out.append(line)
        if row["state"] != READY:
            out += [f"  {row['detail']}", f"  fix: {row['fix']}"]
    counts: dict[str, int] = {}
    for row in rows:
        counts[row["state"]] = counts.get(row["state"], 0) + 1
    out.append(", ".join(f"{n} {state}" for state, n in counts.items()))
    return "\n".join(out)


def exit_code(rows: list[dict]) -> int:
    """0 when every dataset is found, 1 when one is not."""
    return 0 if all(r["state"] == READY for r in rows) else 1
