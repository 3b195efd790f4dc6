"""The test demo workflow, N times in a row, in a fresh clone: every job's peak against its request.

What a new user runs (a clean checkout, optionally a new venv): `snakemake demo` on the test
suite's small demo (5 subjects x 2 nights, 0.5 h of sleep each). Each run's jobs are read back
from its results/memory/runs.tsv. A run passes when snakemake exits 0 and every job's measured
peak is below the memory it was given. Run by `scripts/validate_memory.py --fresh-clone N`.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
import yaml

SMALL_DEMO = {"datasets": {"sleep_edf_demo": {"expected_recordings": 10,
                                              "generator": {"subjects": 5, "nights": 2,
                                                            "hours": 0.5, "seed": 0}}}}


def clone(checkout: Path, into: Path, fresh_venv: bool) -> Path:
    """A clone of `checkout`'s HEAD; returns the Python to run it with (a new venv, or this
    one)."""
    subprocess.run(["git", "clone", "-q", str(checkout), str(into)], check=True)
    if not fresh_venv:
        return Path(sys.executable)
    subprocess.run(["bash", "scripts/install.sh", ".venv"], cwd=into, check=True)
    return into / ".venv" / "bin" / "python"


def clone_env(checkout: Path) -> dict:
    """The clone's package ahead of any editable install of another checkout in the venv: its
    jobs must run the clone's code, not the working tree's."""
    return {**os.environ, "PYTHONPATH": str(checkout / "workflow")}


def run_demo(checkout: Path, python: Path, work: Path, config: Path) -> tuple[int, pd.DataFrame]:
    roots = [f"{name}_root={work}/{name}" for name in ("data", "cache", "results", "weights")]
    done = subprocess.run(
        [str(python.parent / "snakemake"), "-s", str(checkout / "Snakefile"), "--directory",
         str(work), "--config", *roots, "--configfile", str(config), "--cores", "2", "demo"],
        capture_output=True, text=True, cwd=work, env=clone_env(checkout))
    table = work / "results" / "memory" / "runs.tsv"
    runs = pd.read_csv(table, sep="\t") if table.is_file() else pd.DataFrame()
    if done.returncode:
        print(done.stderr[-2000:], file=sys.stderr)
    return done.returncode, runs


def run_line(k: int, code: int, runs: pd.DataFrame) -> tuple[str, bool]:
    if runs.empty:
        return f"run {k}: exit {code}, no runs table", False
    covered = runs["peak_mb"] < runs["request_mb"]
    closest = runs.assign(share=runs["peak_mb"] / runs["request_mb"]).sort_values("share").iloc[-1]
    embed = runs[runs["job"] == "embed"].iloc[-1]
    ok = code == 0 and bool(covered.all()) and (runs["status"] == "ok").all()
    return (f"run {k}: exit {code}, {len(runs)} jobs, embed peak {embed.peak_mb:,.0f} of "
            f"{embed.request_mb:,} MB (estimate {embed.estimate_mb:,.0f}), closest "
            f"{closest.job} {closest.peak_mb:,.0f} of {closest.request_mb:,} MB, "
            f"{int(covered.sum())}/{len(runs)} covered: {'pass' if ok else 'FAIL'}"), ok


def run_grid(checkout: Path, python: Path) -> tuple[str, bool]:
    """The clone's quick validation grid; its verdict lines."""
    done = subprocess.run([str(python), "scripts/validate_memory.py", "--quick"], cwd=checkout,
                          capture_output=True, text=True,
                          env=clone_env(checkout))
    verdicts = [line for line in done.stdout.splitlines() if line.startswith(("PASS", "FAIL"))]
    return "; ".join(verdicts) or done.stderr[-500:], done.returncode == 0


def fresh_clone_runs(checkout: Path, n: int, fresh_venv: bool = False, grid: bool = False
                     ) -> int:
    """The demo `n` times in a fresh clone of `checkout` (with `grid`, the quick grid after
    each); 0 when every run passed."""
    passed = 0
    with tempfile.TemporaryDirectory(prefix="fresh_clone_") as tmp:
        fresh = Path(tmp) / "fresh"
        python = clone(checkout, fresh, fresh_venv)
        config = Path(tmp) / "small_demo.yaml"
        config.write_text(yaml.safe_dump(SMALL_DEMO))
        print(f"fresh clone of {checkout} at {fresh}; python {python}", flush=True)
        for k in range(1, n + 1):
            work = Path(tmp) / f"run{k}"
            work.mkdir()
            code, runs = run_demo(fresh, python, work, config)
            line, ok = run_line(k, code, runs)
            print(line, flush=True)
            if grid:
                verdicts, grid_ok = run_grid(fresh, python)
                print(f"  quick grid: {verdicts}: {'pass' if grid_ok else 'FAIL'}", flush=True)
                ok = ok and grid_ok
            passed += ok
    print(f"{passed} of {n} runs passed")
    return 0 if passed == n else 1
