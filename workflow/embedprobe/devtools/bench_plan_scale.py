"""Index and plan time on a large cohort (scripts/bench_plan_scale.py).

A generated NSRR (SHHS) look-alike of N short nights stands for a real cohort of thousands of
files (SHHS has 8,444). Timed, each as the real command in a child process:

- `embedprobe index` of the cohort, twice (the second finds the EDF headers the first cached),
  and of a one-night cohort: the difference over N - 1 nights is the time per file without the
  start-up;
- `snakemake -n <benchmark>` with the cohort as the benchmark's `shhs` (the benchmark's other
  datasets absent: skipped with their fix, as on a cluster that holds one cohort);
- a bare Snakemake of the same DAG: a Snakefile written into a temporary folder with the same
  rules, the same jobs with the same wildcards, log and benchmark files, and the same input
  edges (the cohort's files included, which Snakemake stats), its input functions plain
  dictionary lookups and no embedprobe code. The difference is what the project's own input
  functions, config validation and plan lines add;
- a bare Snakefile of one rule: Snakemake's own start-up (on a machine with SLURM's client tools
  and no controller, its SLURM plugin waits on `scontrol` at every start).

Times are wall seconds and the child's CPU seconds (user + system).
"""

from __future__ import annotations

import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from embedprobe.devtools.workloads import PACKAGE_PARENT

PROJECT = PACKAGE_PARENT.parent  # the folder that holds the Snakefile
DATASET = "shhs"  # the benchmark's dataset the cohort stands in for (format nsrr)
NIGHT_HOURS = 0.1  # 12 epochs of 30 s: the look-alike's shortest night with its events
FOLDS = 5
TABLE_COLUMNS = ("step", "files", "wall_s", "cpu_s", "per_file_ms", "jobs")


@dataclass
class Row:
    step: str
    files: int
    wall_s: float
    cpu_s: float
    per_file_ms: float | None = None
    jobs: int | None = None


@dataclass
class Job:
    """One job of a dry run, as `snakemake -n` prints it."""

    rule: str
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    logs: list[str] = field(default_factory=list)
    benchmark: str = ""
    wildcards: dict[str, str] = field(default_factory=dict)
    resources: dict[str, str] = field(default_factory=dict)  # as printed: mem_mb, runtime, ...


def write_cohort(root: Path, nights: int, seed: int = 0) -> Path:
    """An SHHS look-alike of `nights` shhs1 nights of NIGHT_HOURS under root/shhs, and the
    reference-shaped fold manifest of them; returns the manifest's path."""
    from embedprobe.datasets.nsrr.lookalike import plan, write_fold_manifest, write_lookalike

    settings = {"study": DATASET, "participants": nights, "second_visits": 0,
                "hours": NIGHT_HOURS, "seed": seed}
    write_lookalike(root / DATASET, settings)
    stems = [p.stem for p in plan(settings)]
    return write_fold_manifest(root / "shhs_folds.json", stems, FOLDS, seed)


def write_config(folder: Path, data_root: Path, manifest: Path, nights: int) -> Path:
    """The run's configfile: its roots in `folder`, the cohort as the `shhs` entry."""
    path = folder / "config.yaml"
    path.write_text(json.dumps({  # JSON is YAML
        "data_root": str(data_root), "results_root": str(folder / "results"),
        "cache_root": str(folder / "cache"), "weights_root": str(folder / "weights"),
        "datasets": {DATASET: {"fold_manifest": str(manifest),
                               "expected_recordings": nights}}}, indent=1))
    return path


def timed(command: list[str], cwd: Path, env: dict | None = None) -> tuple[float, float, str]:
    """(wall seconds, the child's CPU seconds, its stdout and stderr); a failure raises with
    the child's output."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    output = done.stdout + done.stderr
    if done.returncode:
        raise RuntimeError(f"{' '.join(command)} exited {done.returncode}:\n{output[-3000:]}")
    return wall, cpu, output


def child_env() -> dict:
    """This checkout's package first on the children's path, its Python's scripts on PATH."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PACKAGE_PARENT),
                                                      env.get("PYTHONPATH")]))
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


def index_command(config: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "embedprobe.cli", "index", "--dataset", DATASET,
            "--out", str(out), "--configfile", str(config)]


def snakemake() -> str:
    return str(Path(sys.executable).parent / "snakemake")


# --- the dry run's jobs and the bare Snakefile ---------------------------------------------

_FIELDS = {"input": "inputs", "output": "outputs", "log": "logs"}


def parse_dry_run(text: str) -> list[Job]:
    """The jobs `snakemake -n` printed (its `rule NAME:` or `localrule NAME:` blocks)."""
    jobs: list[Job] = []
    for line in text.splitlines():
        head = re.match(r"^(?:local)?rule (\w+):$", line)
        if head:
            jobs.append(Job(head[1]))
            continue
        item = re.match(r"^    (\w+): (.*)$", line)
        if not (item and jobs):
            continue
        key, value = item[1], item[2]
        if key in _FIELDS:
            setattr(jobs[-1], _FIELDS[key], value.split(", "))
        elif key == "benchmark":
            jobs[-1].benchmark = value
        elif key in ("wildcards", "resources"):
            setattr(jobs[-1], key, dict(pair.split("=", 1) for pair in value.split(", ")))
    return jobs


def bare_snakefile(jobs: list[Job], folder: Path, target: str) -> Path:
    """A Snakefile in `folder` of the same DAG as `jobs`: per rule the same wildcards and as
    many outputs, logs and benchmark; each job's inputs the bare counterpart of what another
    job writes, else the same file (the data). No embedprobe code: dictionary lookups."""
    rules: dict[str, list[Job]] = {}
    for job in jobs:
        rules.setdefault(job.rule, []).append(job)
    bare: dict[str, str] = {}  # an output of the project's DAG -> the bare one

    def place(rule: str, names: list[str], kind: str, n: int) -> list[str]:
        stem = "/".join("{" + w + "}" for w in names) or "one"
        return [f"{rule}/{stem}/{kind}{k}" for k in range(n)]

    patterns = {}
    for rule, members in rules.items():
        names = sorted(members[0].wildcards)
        first = members[0]
        patterns[rule] = (names, place(rule, names, "out", len(first.outputs)),
                          place("logs/" + rule, names, "log", len(first.logs)),
                          place("benchmarks/" + rule, names, "bench", 1 if first.benchmark
                                else 0))
        for job in members:
            values = {w: job.wildcards[w] for w in names}
            for real, pattern in zip(job.outputs, patterns[rule][1], strict=True):
                bare[real] = pattern.format(**values)
    lines = ["# the DAG of an embedprobe dry run, without embedprobe (bench_plan_scale.py)",
             "INPUTS = {}", ""]
    table = {rule: {"|".join(job.wildcards[w] for w in patterns[rule][0]):
                    [bare.get(path, path) for path in job.inputs] for job in members}
             for rule, members in rules.items()}
    lines[1] = f"INPUTS = {json.dumps(table)}"
    for rule, (names, outputs, logs, benchmarks) in patterns.items():
        key = " + '|' + ".join(f"w.{w}" for w in names) or "''"
        lines += ["", f"rule {rule}:", f"    input: lambda w: INPUTS[{rule!r}][{key}]"]
        if outputs:
            lines.append(f"    output: {', '.join(repr(o) for o in outputs)}")
        if logs:
            lines.append(f"    log: {', '.join(repr(o) for o in logs)}")
        if benchmarks:
            lines.append(f"    benchmark: {benchmarks[0]!r}")
        if outputs:
            lines.append("    shell: 'touch {output}'")
    lines[2] = f"localrules: {target}"
    path = folder / "Snakefile"
    path.write_text("\n".join(lines) + "\n")
    return path


def job_count(text: str) -> int:
    """The dry run's `total` of its job stats."""
    found = re.search(r"^total\s+(\d+)$", text, re.M)
    return int(found[1]) if found else 0


# --- the run ---------------------------------------------------------------------------------


def run(nights: int, benchmark: str = "sleep_stage", workdir: Path | None = None,
        progress=print) -> list[Row]:
    """Generate the cohort, time index and the plans; the table's rows."""
    with tempfile.TemporaryDirectory(prefix="bench_plan_scale_", dir=workdir) as tmp:
        return _run(Path(tmp), nights, benchmark, progress)


def _run(tmp: Path, nights: int, benchmark: str, progress) -> list[Row]:
    env = child_env()
    rows = []
    one, many = tmp / "one", tmp / "many"
    for folder, n in ((one, 1), (many, nights)):
        folder.mkdir()
        start = time.perf_counter()
        manifest = write_cohort(folder / "data", n)
        write_config(folder, folder / "data", manifest, n)
        progress(f"cohort of {n} nights written in {time.perf_counter() - start:.1f} s")
    files = nights * 2  # each night's EDF and its NSRR XML (the inputs of index)
    wall, cpu, _ = timed(index_command(one / "config.yaml", one / "index.tsv"), tmp, env)
    rows.append(Row("index, 1 night (start-up)", 2, wall, cpu))
    startup = wall
    for run_name in ("first", "second"):
        wall, cpu, _ = timed(index_command(many / "config.yaml", many / "index.tsv"), tmp, env)
        rows.append(Row(f"index, {run_name} run", files, wall, cpu,
                        1000 * (wall - startup) / max(nights - 1, 1)))
        progress(f"index {run_name} run: {wall:.1f} s")
    plan = [snakemake(), "-n", benchmark, "--configfile", str(many / "config.yaml")]
    wall, cpu, text = timed(plan, PROJECT, env)
    jobs = parse_dry_run(text)
    rows.append(Row(f"snakemake -n {benchmark}: embedprobe", files, wall, cpu, None,
                    job_count(text)))
    progress(f"embedprobe plan: {wall:.1f} s, {len(jobs)} jobs")
    bare = tmp / "bare"
    bare.mkdir()
    bare_snakefile(jobs, bare, benchmark)
    wall, cpu, text = timed([snakemake(), "-n", benchmark], bare, env)
    rows.append(Row(f"snakemake -n {benchmark}: bare, same DAG", files, wall, cpu, None,
                    job_count(text)))
    empty = tmp / "empty"
    empty.mkdir()
    (empty / "Snakefile").write_text("rule one:\n    output: 'one'\n    shell: 'touch {output}'\n")
    wall, cpu, text = timed([snakemake(), "-n"], empty, env)
    rows.append(Row("snakemake -n: bare, one rule (start-up)", 0, wall, cpu, None,
                    job_count(text)))
    return rows


def format_table(rows: list[Row]) -> str:
    """The rows as a Markdown table (TABLE_COLUMNS)."""
    def cell(value) -> str:
        if value is None:
            return ""
        return f"{value:.2f}" if isinstance(value, float) else str(value)

    lines = ["| " + " | ".join(TABLE_COLUMNS) + " |", "|" + "---|" * len(TABLE_COLUMNS)]
    lines += ["| " + " | ".join(cell(getattr(r, c)) for c in TABLE_COLUMNS) + " |"
              for r in rows]
    return "\n".join(lines)
