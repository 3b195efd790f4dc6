"""Fitting the memory calibration's constants to measured peaks, and refitting them from the
runs table (`embedprobe calibrate --from-runs`).

Two users: scripts/calibrate_memory.py measures the project's real jobs in child processes and
fits the shipped table; `embedprobe calibrate --from-runs` joins each finished job of the user's
own runs table (results/memory/runs.tsv: measured peak beside estimate) with the formula inputs
its preflight JSON kept, and refits the same constants plus the job's baseline (the
interpreter and libraries of that cluster, which is what differs most between machines).

Both fits are envelope fits (fit_constants): the tightest constants >= 0 under which the job's
own terms (estimate.JOB_TYPES) cover every run's whole measured peak, because a request has to
cover the unlucky run; a run the calibration repeats (embed) is covered at its typical peak,
each repeat within REPEAT_ALLOWANCE, the embed request's margin taking the rest. A refit from
runs is refused for a job type whose runs cannot identify its constants: fewer runs than
constants, a constant whose inputs do not vary between the runs, constants that move together in
every run, or a term too small next to the peaks to be told from run-to-run noise. Refused job
types keep the constants of the table in use.
"""

from __future__ import annotations

import copy
import json
import math
import platform
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import numpy as np
import yaml

from embedprobe.core.errors import UsageError
from embedprobe.core.units import MIB
from embedprobe.memory.calibration import load_calibration
from embedprobe.memory.estimate import (
    COMPOSED,
    DEFAULT_CONSTANTS,
    JOB_TYPES,
    estimate,
    job_constants,
    job_inputs,
)
from embedprobe.memory.records import estimate_path, is_shard_key

# What each job's fit sets: its job type's `fitted` constants (estimate.JOB_TYPES owns them).
# Its keys are the job types scripts/calibrate_memory.py fits, in the order of its --jobs.
FITTED = {name: t.fitted for name, t in JOB_TYPES.items() if t.fitted}


def _with_intercept(names) -> tuple[str, ...]:
    """A refit from the user's runs also fits one constant term (no import child measures the
    baseline there): the job's fitted overhead where it has one, else its baseline (two
    constant terms could not be told apart)."""
    names = tuple(dict.fromkeys(names))
    return names if "overhead_bytes" in names else ("baseline_bytes", *names)


# What a user's runs cannot tell from their intercept: reused_heap_bytes lowers every run whose
# forward pass outgrows it by the same amount, as a lower baseline would; the calibration's
# runs identify it (a small model's pass fits in it, a large one's does not), a user's runs of
# one or two models need not.
NOT_FROM_RUNS = {"embed_cpu": ("reused_heap_bytes",)}
FROM_RUNS = {job: _with_intercept(n for n in names if n not in NOT_FROM_RUNS.get(job, ()))
             for job, names in FITTED.items()}
# embed on a GPU node fits its host-side copies (the calibration script copies embed_cpu's,
# having no GPU runs to fit them on)
FROM_RUNS["embed_gpu"] = _with_intercept(("recording_copies", "window_copies"))
# Job types whose constants are those of others (estimate.COMPOSED) and no fit of their own
# refit the union of their parts' constants.
for _job, _parts in COMPOSED.items():
    FROM_RUNS.setdefault(_job, _with_intercept(
        name for part in _parts for name in FITTED.get(part, ())))

# Identifiability thresholds of a refit from runs.
MIN_SPREAD = 0.10  # a constant's column must vary by 10% of its largest value between runs
MIN_TERM_SHARE = 0.01  # and its term reach 1% of the peak in at least one run
MAX_CONDITION = 1e6  # the scaled design's condition number (above: constants move together)
ESTIMATE_TOLERANCE_MB = 0.051  # runs.tsv rounds the estimate to 0.1 MB
PROVENANCE_FROM_RUNS = "fitted from runs"
INTERCEPTS = ("baseline_bytes", "overhead_bytes")  # constant terms: the same in every run


# ------------------------------------------------------------------------- the envelope fit


def _total(job: str, values: dict, inputs: dict) -> float:
    return float(estimate(job, inputs, {"jobs": {job: values}}, None).total)


def linearised(job: str, runs: list[dict], names, constants: dict
               ) -> tuple[np.ndarray, np.ndarray]:
    """(design, rest) of the estimate as a linear function of the constants `names`: its
    tangents at `constants` where it is convex in one of them (JobType.convex), else exactly
    (design_matrix)."""
    if set(JOB_TYPES[job].convex) & set(names):
        return tangent_matrix(job, runs, names, constants)
    return design_matrix(job, runs, names, constants)


def design_matrix(job: str, runs: list[dict], names, constants: dict
                  ) -> tuple[np.ndarray, np.ndarray]:
    """(design, rest): a run's column for constant k is the estimate with k = 1 (the other
    fitted ones 0) minus the estimate with all of them 0; rest is that last estimate. Every
    term is linear in each fitted constant, so total = rest + design @ constants."""
    zero = {**constants, **dict.fromkeys(names, 0.0)}
    design, rest = [], []
    for run in runs:
        base = _total(job, zero, run["inputs"])
        design.append([_total(job, {**zero, name: 1.0}, run["inputs"]) - base for name in names])
        rest.append(base)
    return np.array(design, float).reshape(len(runs), len(names)), np.array(rest, float)


def fit_constants(job: str, runs: list[dict], names, constants: dict) -> tuple[dict, float]:
    """The tightest constants under which the job's own formula covers every run's peak.

    A request must cover the unlucky run, not the average one, so this is an envelope fit: a
    linear program that minimises the summed relative over-prediction subject to no run being
    under-predicted, every constant >= 0 (with repeats, below: the summed relative error). Most
    terms are linear in each fitted constant, so a run's column for constant k is the estimate
    with k = 1 (the other fitted ones 0) minus the estimate with all of them 0. A term that
    takes the larger of a constant's product and an input (embed's reader part:
    max(recording_copies x signal, windows); JobType.convex) is convex instead: the fit runs on
    its tangents, first at `constants`, then again at the constants just fitted (a convex
    estimate lies above its tangents, so constants that cover every run on them cover it for
    real) until they settle, from the given constants and from starts on either side of them,
    the best covering fit winning. Runs are {"inputs": estimate inputs, "peak": bytes}. Returns
    the constants and the largest over-prediction of the fit, in bytes.

    A run measured several times (the calibration's embed jobs) also gives `peaks`, every
    repeat: its `peak` is then the typical one (their median), which the fit approaches from
    either side (its |error| counts), and it covers each repeat within REPEAT_ALLOWANCE: the
    same job's peaks spread 10-20% from run to run
    (docs/measurements/2026-12-05-typical-run.md), which the embed request's margin
    (memory.embed_margin, 20%) is there to take, so fitting the highest repeat would put every
    job's estimate half a spread high.
    """
    peaks = np.array([run["peak"] for run in runs], float)
    floors = np.array([max(run["peak"], max(run.get("peaks") or [0.0]) / (1 + REPEAT_ALLOWANCE))
                       for run in runs], float)
    convex = set(JOB_TYPES[job].convex) & set(names)
    fit = partial(_fit_from, job, runs, names, constants, peaks, floors, bool(convex))
    if not convex:
        values, totals = fit(constants)  # linear in every constant: one exact program
        return values, float((totals - peaks).max())
    # Convex: the program on tangents can settle where a run sits on a kink of the larger of
    # two amounts (its tangent there points one way only); fits from starts on either side
    # of the given constants, the best one that covers every run counts.
    best = None
    for start in _starts(constants, convex):
        try:
            values, totals = fit(start)
        except RuntimeError:
            continue  # no covering constants on this start's tangents
        if np.all(totals >= floors - ROUNDING_BYTES):
            score = _l1(totals, peaks)
            if best is None or score < best[0] - 1e-9:
                best = (score, values, totals)
    if best is None:
        raise RuntimeError(f"{job}: no constants >= 0 cover every run; a term the formula "
                           "lacks is growing")
    return best[1], float((best[2] - peaks).max())


def _l1(totals: np.ndarray, typical: np.ndarray) -> float:
    return float(np.abs((totals - typical) / typical).sum())


def _starts(constants: dict, convex: set) -> list[dict]:
    """The given constants, and each fitted convex one halved, doubled and (at 0) set to one
    unit of its kind: a factor 1, a byte count 1 MiB."""
    merged = dict(constants)
    starts = [merged]
    for name in sorted(convex):
        value = float(merged.get(name, 0.0) or 0.0)
        moved = [value * 0.5, value * 2] if value else [MIB if name.endswith("_bytes") else 1.0]
        starts += [{**merged, name: v} for v in moved]
    return starts


def _fit_from(job: str, runs: list[dict], names, constants: dict, peaks: np.ndarray,
              floors: np.ndarray, convex: bool, start: dict) -> tuple[dict, np.ndarray]:
    """The program from `start`: exact where the estimate is linear in the constants, else on
    its tangents at `start`, then at the constants just fitted, until they settle."""
    design, rest = linearised(job, runs, names, start)
    previous = None
    for _ in range(LINEARISATIONS):
        coef = _envelope(job, design, floors - rest, peaks - rest, peaks)
        values = dict(zip(names, coef.tolist(), strict=True))
        totals = np.array([_exact_total(job, {**constants, **values}, run["inputs"])
                           for run in runs])
        settled = previous is not None and np.allclose(coef, previous, rtol=1e-7, atol=1e-9)
        if settled or not convex:
            break
        previous = coef
        design, rest = tangent_matrix(job, runs, names, {**constants, **values})
    return values, totals


# How far above its estimate a repeat of a typical run may peak: half the embed request's margin,
# so a request covers the repeats seen with 10% to spare.
REPEAT_ALLOWANCE = 0.10
ROUNDING_BYTES = 1024  # the estimate rounds each term to whole bytes: a fit is off by a few
LINEARISATIONS = 10  # fits of a convex estimate on its tangents, at most (two or three do)


def _envelope(job: str, design: np.ndarray, floor: np.ndarray, typical: np.ndarray,
              peaks: np.ndarray) -> np.ndarray:
    """The linear program: constants >= 0 with design @ constants >= floor, the summed
    relative error against `typical` smallest (over-prediction, and under-prediction where a
    floor lies below its typical peak: a repeated run's). Where floor == typical (a run
    measured once) it is the envelope: no run under its peak, the summed over-prediction
    smallest."""
    from scipy.optimize import linprog

    # In units of the typical peak, so the objective and the constraints are all of order 1
    # (HiGHS ignores an objective that is tiny next to its constraints).
    scale = np.where(design.max(axis=0) > 0, design.max(axis=0), 1.0)
    unit = float(np.median(peaks))
    scaled = design / scale
    runs, constants = scaled.shape
    weight = unit / peaks  # a unit of bytes, relative to each run's peak
    # variables: the scaled constants, then each run's shortfall below its typical peak
    # (|error| = over - under + 2 x shortfall: the shortfall counts twice)
    objective = np.concatenate([(scaled * weight[:, None]).sum(axis=0), 2 * weight])
    # each run twice: its estimate above its floor, and with its shortfall above its typical peak
    below = np.vstack([np.hstack([-scaled, np.zeros((runs, runs))]),
                       np.hstack([-scaled, -np.eye(runs)])])
    limits = np.concatenate([-floor / unit, -typical / unit])
    fit = linprog(c=objective, A_ub=below, b_ub=limits,
                  bounds=[(0, None)] * (constants + runs), method="highs")
    if not fit.success:
        raise RuntimeError(f"{job}: no constants >= 0 cover every run ({fit.message}); "
                           "a term the formula lacks is growing")
    return fit.x[:constants] * unit / scale


def _exact_total(job: str, constants: dict, inputs: dict) -> float:
    """The sum of the job's terms, unrounded (Estimate rounds each term to whole bytes)."""
    i = job_inputs(job, inputs)
    c = job_constants(job, {"jobs": {job: constants}})
    return float(sum(formula(i, c) for _, formula in JOB_TYPES[job].terms))


TANGENT_STEP = 1e-6  # relative: well inside any kink's piece, well above float rounding


def tangent_matrix(job: str, runs: list[dict], names, constants: dict
                   ) -> tuple[np.ndarray, np.ndarray]:
    """(design, rest) of the tangents at `constants`: column k the estimate's slope in
    constant k (a one-sided difference), rest what the tangent gives at all of them 0."""
    constants = job_constants(job, {"jobs": {job: constants}})  # defaults where unset
    point = np.array([float(constants[name]) for name in names])
    design, rest = [], []
    for run in runs:
        here = _exact_total(job, constants, run["inputs"])
        slopes = []
        for name, value in zip(names, point, strict=True):
            step = TANGENT_STEP * max(abs(value), 1.0)
            moved = _exact_total(job, {**constants, name: value + step}, run["inputs"])
            slopes.append((moved - here) / step)
        design.append(slopes)
        rest.append(here - float(np.dot(slopes, point)))
    return np.array(design, float).reshape(len(runs), len(names)), np.array(rest, float)


def rounded(name: str, value: float) -> float | int:
    """Whole bytes for byte counts, four significant digits for factors (rounded up, so a
    covering fit stays covering)."""
    if name.endswith("_bytes"):
        return int(math.ceil(value))
    digits = 3 - math.floor(math.log10(abs(value))) if value else 0
    return float(math.ceil(value * 10**digits) / 10**digits)


# ------------------------------------------------------------ joining runs with their inputs


def _job_inputs(entry: dict) -> dict:
    """The formula inputs a preflight entry kept, as the job ran them: the knobs preflight
    chose (the ridge form it resolved, the fits at once) pinned, GPU batch sizes as ints."""
    inputs = dict(entry.get("inputs") or {})
    for name, value in (entry.get("knobs") or {}).items():
        if name in inputs:
            inputs[name] = value
    for name in ("gpu_peaks", "gpu_reserved_peaks"):
        if isinstance(inputs.get(name), dict):
            inputs[name] = {int(size): value for size, value in inputs[name].items()}
    return inputs


@dataclass
class Joined:
    """Ok runs with their inputs, by job type, and what was left out and why."""

    runs: dict[str, list[dict]] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)
    hosts: set = field(default_factory=set)

    def skip(self, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1


def join_runs(table, preflight_root: Path, joined: Joined | None = None) -> Joined:
    """Each ok run of a runs table (a DataFrame) with its job's inputs from the preflight JSON.

    Left out (counted by reason): runs that did not finish ok, without an estimate or a peak,
    whose pair or job has no preflight entry, whose preflight kept no inputs (written before
    estimates carried them), and stale ones: the preflight was made again since the run (its
    total is not the estimate the run recorded), so its inputs may not be the run's.
    """
    joined = joined or Joined()
    cache: dict[Path, dict | None] = {}
    for row in table.to_dict("records"):
        if row.get("status") != "ok":
            joined.skip("not ok (failed, out of memory or killed)")
            continue
        if not _number(row.get("estimate_mb")) or not _number(row.get("peak_mb")):
            joined.skip("no estimate or no peak recorded")
            continue
        if is_shard_key(str(row["job"])):
            joined.skip("an embed shard (sized by its pair's whole estimate)")
            continue
        # embed's inputs are in the pair's JSON, a probe fold's in its benchmark's
        path = estimate_path(preflight_root, str(row["dataset"]), str(row["model"]),
                             str(row["job"]))
        if path not in cache:
            cache[path] = json.loads(path.read_text()) if path.is_file() else None
        entry = (cache[path] or {}).get("jobs", {}).get(str(row["job"]))
        if entry is None:
            joined.skip(f"no preflight entry under {preflight_root}")
            continue
        if not entry.get("inputs"):
            joined.skip("preflight kept no formula inputs (made before they were written: "
                        "rerun preflight)")
            continue
        if abs(entry["total"] / MIB - float(row["estimate_mb"])) > ESTIMATE_TOLERANCE_MB:
            joined.skip("stale: preflight made again since the run")
            continue
        joined.runs.setdefault(entry["job"], []).append({
            "inputs": _job_inputs(entry), "peak": float(row["peak_mb"]) * MIB,
            "label": f"{row['dataset']}/{row['model']} {row['job']} attempt {row['attempt']}"})
        if row.get("host"):
            joined.hosts.add(str(row["host"]))
    return joined


def _number(value) -> bool:
    try:
        return value is not None and math.isfinite(float(value)) and float(value) > 0
    except (TypeError, ValueError):
        return False


# ---------------------------------------------------------------- identifiability and refit


@dataclass
class JobRefit:
    """One job type's outcome: refitted (values) or kept (reason)."""

    job: str
    n_runs: int
    names: tuple[str, ...] = ()
    values: dict = field(default_factory=dict)
    unused: tuple[str, ...] = ()  # constants no run exercises: kept
    reason: str | None = None
    max_over_mb: float | None = None
    error_before: float | None = None  # median |estimate - peak| / peak, table in use
    error_after: float | None = None

    @property
    def refitted(self) -> bool:
        return self.reason is None


def refuse_reason(job: str, runs: list[dict], names, constants: dict
                  ) -> tuple[str | None, tuple[str, ...], tuple[str, ...]]:
    """(reason the runs cannot identify the constants or None, constants to fit, constants no
    run exercises)."""
    design, _ = linearised(job, runs, names, constants)
    peaks = np.array([run["peak"] for run in runs], float)
    used = [k for k in range(len(names)) if np.any(design[:, k] > 0)]
    unused = tuple(names[k] for k in range(len(names)) if k not in used)
    fit_names = tuple(names[k] for k in used)
    if not fit_names:
        return "no run exercises any of its constants", fit_names, unused
    if len(runs) < len(fit_names):
        return (f"too few runs: {len(runs)} for {len(fit_names)} constant"
                f"{'' if len(fit_names) == 1 else 's'} "
                f"({', '.join(fit_names)})"), fit_names, unused
    design = design[:, used]
    alike, small = [], []
    for k, name in enumerate(fit_names):
        column = design[:, k]
        if name not in INTERCEPTS and (column.max() - column.min()) < MIN_SPREAD * column.max():
            alike.append(name)
        scale = max(abs(float(constants.get(name) or 0.0)),
                    abs(float(DEFAULT_CONSTANTS.get(job, {}).get(name) or 0.0)), 1.0)
        if name not in INTERCEPTS and np.max(column * scale / peaks) < MIN_TERM_SHARE:
            small.append(name)
    if alike:
        return (f"runs too alike: the term of {', '.join(alike)} varies by less than "
                f"{MIN_SPREAD:.0%} between the {len(runs)} runs"), fit_names, unused
    if small:
        return (f"runs too alike: the term of {', '.join(small)} stays under "
                f"{MIN_TERM_SHARE:.0%} of every run's peak, not to be told from noise"
                ), fit_names, unused
    scaled = design / design.max(axis=0)
    singular_vectors = np.linalg.svd(scaled)
    values = singular_vectors.S
    if values.min() <= values.max() / MAX_CONDITION:
        direction = np.abs(singular_vectors.Vh[-1])
        together = [fit_names[k] for k in np.argsort(-direction) if direction[k] > 0.2]
        return (f"runs too alike: {', '.join(together)} move together in every run "
                "(rank-deficient)"), fit_names, unused
    return None, fit_names, unused


def median_error(job: str, runs: list[dict], calibration: dict) -> float:
    errors = [abs(estimate(job, run["inputs"], calibration, None).total - run["peak"])
              / run["peak"] for run in runs]
    return float(np.median(errors))


def refit(joined: Joined, calibration: dict, jobs=None) -> list[JobRefit]:
    """Refit each job type with runs (or those named in `jobs`) against `calibration` (the
    table in use, as calibration.load_calibration returns it)."""
    outcomes = []
    for job in sorted(set(joined.runs) | set(jobs or ())):
        if jobs and job not in jobs:
            continue
        runs = joined.runs.get(job, [])
        outcome = JobRefit(job, len(runs))
        outcomes.append(outcome)
        if job not in FROM_RUNS:
            outcome.reason = "no constants of this job type are refitted from runs"
            continue
        if not runs:
            outcome.reason = "no finished runs of this job type"
            continue
        constants = job_constants(job, calibration)
        outcome.error_before = median_error(job, runs, calibration)
        reason, names, unused = refuse_reason(job, runs, FROM_RUNS[job], constants)
        outcome.names, outcome.unused, outcome.reason = names, unused, reason
        if reason is not None:
            continue
        try:
            values, miss = fit_constants(job, runs, names, constants)
        except RuntimeError as exc:
            outcome.reason = str(exc)
            continue
        outcome.values = {name: rounded(name, value) for name, value in values.items()}
        outcome.max_over_mb = miss / MIB
        new = copy.deepcopy(calibration)
        new["jobs"].setdefault(job, {}).update(outcome.values)
        outcome.error_after = median_error(job, runs, new)
    return outcomes


# ------------------------------------------------------------------------ the written table

HEADER = """\
# Memory calibration refitted from measured runs by `embedprobe calibrate --from-runs`: each
# finished job of the runs table(s) below joined with the formula inputs its preflight JSON kept.
# Constants marked "fitted from runs" are the tightest (>= 0) under which the formulas of
# workflow/embedprobe/memory/formulas.py cover every one of those runs' measured peaks; the
# others are the table this one was based on (environment.based_on). Point the config key
# memory.calibration at this file to use it.
"""


def refitted_table(base_path: Path, calibration: dict, outcomes: list[JobRefit],
                   sources: list[tuple[Path, Path]], joined: Joined) -> dict:
    """The calibration YAML's content: the table in use with the refitted constants replaced."""
    raw = yaml.safe_load(Path(base_path).read_text()) or {}
    jobs = copy.deepcopy(calibration["jobs"])
    provenance = copy.deepcopy(raw.get("provenance") or {})
    for outcome in outcomes:
        if outcome.refitted:
            jobs.setdefault(outcome.job, {}).update(outcome.values)
            provenance.setdefault(outcome.job, {}).update(
                dict.fromkeys(outcome.values, PROVENANCE_FROM_RUNS))
    fit = {}
    for outcome in outcomes:
        entry = {"runs": outcome.n_runs,
                 "status": "refitted" if outcome.refitted else "kept"}
        if outcome.reason:
            entry["reason"] = outcome.reason
        if outcome.unused:
            entry["not_exercised_kept"] = list(outcome.unused)
        if outcome.error_before is not None:
            entry["median_abs_error_before"] = round(outcome.error_before, 4)
        if outcome.error_after is not None:
            entry["median_abs_error_after"] = round(outcome.error_after, 4)
            entry["fit_max_over_prediction_mb"] = round(outcome.max_over_mb, 2)
        fit[outcome.job] = entry
    return {
        "environment": {
            "date": time.strftime("%Y-%m-%d %H:%M:%S %z"),
            "host": platform.node(),
            "source": "embedprobe calibrate --from-runs",
            "runs_tables": [str(runs) for runs, _ in sources],
            "preflight_roots": [str(root) for _, root in sources],
            "run_hosts": sorted(joined.hosts),
            "based_on": str(base_path),
        },
        "jobs": jobs,
        "provenance": provenance,
        "fit": fit,
    }


def write_table(path: Path, table: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(HEADER + yaml.safe_dump(table, sort_keys=False, width=100))


def drift_lines(calibration: dict, outcomes: list[JobRefit]) -> list[str]:
    """Per refitted constant: the table in use's value, the refitted one, the change."""
    lines = [f"{'constant':<40} {'in use':>14} {'refitted':>14} {'change':>9}"]
    for outcome in outcomes:
        for name, value in outcome.values.items():
            before = calibration["jobs"].get(outcome.job, {}).get(name)
            if before is None:
                before = job_constants(outcome.job, calibration).get(name)
            if before in (None, 0):
                change = "n/a" if value == before else "from 0"
            else:
                change = f"{(value - before) / abs(before):+.1%}"
            lines.append(f"{outcome.job + '.' + name:<40} {_shown(name, before):>14} "
                         f"{_shown(name, value):>14} {change:>9}")
    return lines


def _shown(name: str, value: float) -> str:
    """Large byte counts in MB, per-row bytes and factors as they are."""
    return f"{value / MIB:,.1f} MB" if name.endswith("_bytes") and value >= MIB else \
        f"{value:.6g}"


def outcome_lines(outcomes: list[JobRefit]) -> list[str]:
    """One line per job type: refitted (median error before -> after) or kept (why)."""
    lines = []
    for o in outcomes:
        if o.refitted:
            unused = f"; not exercised, kept: {', '.join(o.unused)}" if o.unused else ""
            lines.append(f"{o.job}: refitted from {o.n_runs} runs, median |error| "
                         f"{o.error_before:.1%} -> {o.error_after:.1%}, largest "
                         f"over-prediction {o.max_over_mb:.1f} MB{unused}")
        else:
            runs = f"{o.n_runs} run" + ("" if o.n_runs == 1 else "s")
            lines.append(f"{o.job}: kept the table's constants ({runs}): {o.reason}")
    return lines


def calibrate_from_runs(run_tables: list[Path], preflight_root: Path | None, out: Path,
                        base_path: Path, jobs=None) -> tuple[list[JobRefit], Joined, list[str]]:
    """Join, refit and write; returns (outcomes, joined runs, printed lines).

    A UsageError (exit 2, nothing written) when no job type could be refitted, or when a job
    type named in `jobs` could not.
    """
    from embedprobe.memory.report import read_runs

    calibration = load_calibration(base_path)
    joined = Joined()
    sources = []
    for runs_path in run_tables:
        root = Path(preflight_root) if preflight_root else Path(runs_path).parent.parent / \
            "preflight"
        if not root.is_dir():
            raise UsageError(f"no preflight results at {root} for the runs table {runs_path}",
                             fix="name them: --preflight-root RESULTS/preflight")
        join_runs(read_runs(Path(runs_path)), root, joined)
        sources.append((Path(runs_path), root))
    outcomes = refit(joined, calibration, jobs)
    lines = outcome_lines(outcomes)
    refused = [o for o in outcomes if not o.refitted]
    if not any(o.refitted for o in outcomes) or (jobs and refused):
        skipped = "; ".join(f"{n} {why}" for why, n in joined.skipped.items())
        detail = "\n".join(f"  {line}" for line in lines) or "  no finished runs with inputs"
        raise UsageError(
            "cannot refit the memory calibration from these runs:\n" + detail
            + (f"\n  left out: {skipped}" if skipped else ""),
            fix="refit from more, and more varied, finished jobs (other datasets, models, batch "
                "sizes or fold sizes), or keep the table in use; scripts/calibrate_memory.py "
                "measures every constant on this machine")
    write_table(out, refitted_table(base_path, calibration, outcomes, sources, joined))
    return outcomes, joined, lines
