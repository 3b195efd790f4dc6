"""Time the sleep-staging probe: the straightforward protocol against embedprobe's fast probe.

Both run in this process on one hard synthetic embedding set (embedprobe.devtools.synthetic: 5
imbalanced classes, correlated power-law features, 8% label noise). The reference is
StandardScaler + one independent scikit-learn lbfgs fit per C (max_iter 1000); the fast probe is
embedprobe.probing.logistic.fit_logistic_probe(method="fast").

"Same answer" (exit 1 when it fails): the fast probe's test kappa within 0.005 of the reference's,
and the reference's validation kappa at the fast probe's chosen C within 0.002 of the best
reference validation kappa over the grid. scripts/bench_probe.py runs it.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time

TEST_KAPPA_LIMIT = 0.005
VAL_KAPPA_LIMIT = 0.002
TARGET_SPEEDUP = 10.0


def progress_printer(label: str, quiet: bool):
    if quiet:
        return None

    def show(done: int, total: int, message: str) -> None:
        print(f"  {label} [{done}/{total}] {message}", file=sys.stderr, flush=True)

    return show


def full_data_kappas(result) -> dict[float, float]:
    """Validation kappas of the fits made on all training rows."""
    return result.refit_val_kappa_by_C or result.val_kappa_by_C


def table(results) -> str:
    header = ("method", "seconds", "chosen C", "val kappa at C", "best val kappa", "test kappa")
    rows = [header]
    for r in results:
        kappas = full_data_kappas(r)
        rows.append(
            (
                r.method,
                f"{r.seconds:.1f}",
                f"{r.chosen:g}",
                f"{r.val_kappa:.4f}",
                f"{max(kappas.values()):.4f}",
                f"{r.test_metrics['kappa']:.4f}",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    return "\n".join("  ".join(map(str.rjust, row, widths)) for row in rows)


def per_C_lines(result) -> list[str]:
    lines = []
    for C, kappa in result.val_kappa_by_C.items():
        iterations = result.iterations_by_C[C]
        line = f"  {result.method:9s} C={C:<6g} val kappa {kappa:.4f}, {iterations} it"
        if C in result.refit_val_kappa_by_C:
            line += (
                f"; on all rows {result.refit_val_kappa_by_C[C]:.4f}, "
                f"{result.refit_iterations_by_C[C]} it"
            )
        if not result.converged_by_C.get(C, True):
            line += "  (did NOT reach the criterion)"
        lines.append(line)
    return lines


def run(args: argparse.Namespace) -> int:
    """Both probes on the set `args` sizes, the tables printed; 1 when the answers differ."""
    from embedprobe.devtools.synthetic import hard_probe_splits
    from embedprobe.probing.logistic import C_GRID, fit_logistic_probe
    from embedprobe.probing.split import Split

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(
        f"machine: {cores} cores, {platform.processor() or platform.machine()}, "
        f"load average at start {os.getloadavg()[0]:.2f}"
    )
    started = time.perf_counter()
    data = hard_probe_splits(args.n_train, args.n_val, args.n_test, args.dim, args.seed)
    print(
        f"data: train {args.n_train}, val {args.n_val}, test {args.n_test} x {args.dim} float32, "
        f"5 classes, seed {args.seed} ({time.perf_counter() - started:.1f} s to generate)"
    )
    split = Split.of(*((data[f"X_{p}"], data[f"y_{p}"]) for p in ("train", "val", "test")))
    reference = fit_logistic_probe(
        split, C_grid=C_GRID, method="reference",
        progress=progress_printer("reference", args.quiet),
    )  # fmt: skip
    fast = fit_logistic_probe(
        split, C_grid=C_GRID, method="fast", search_rows=args.search_rows,
        progress=progress_printer("fast", args.quiet),
    )  # fmt: skip

    print()
    print(table([reference, fast]))
    print()
    print("per C (validation kappa, lbfgs iterations):")
    print("\n".join(per_C_lines(reference) + per_C_lines(fast)))
    ref_iterations = sum(reference.iterations_by_C.values())
    fast_iterations = sum(fast.iterations_by_C.values()) + sum(fast.refit_iterations_by_C.values())
    print(
        f"iterations in all: reference {ref_iterations}, fast {fast_iterations} "
        f"({ref_iterations / max(fast_iterations, 1):.1f}x fewer; the load-independent part of "
        "the speed-up, fast search iterations on a subsample counted as full ones)"
    )
    print(f"fast criterion: {fast.criterion}")
    print(f"reference criterion: {reference.criterion}")
    print()

    speedup = reference.seconds / fast.seconds
    test_diff = fast.test_metrics["kappa"] - reference.test_metrics["kappa"]
    ref_best_C = max(reference.val_kappa_by_C, key=reference.val_kappa_by_C.get)
    ref_best = reference.val_kappa_by_C[ref_best_C]
    ref_at_fast_C = reference.val_kappa_by_C[fast.chosen]
    val_gap = ref_best - ref_at_fast_C
    test_ok = abs(test_diff) <= TEST_KAPPA_LIMIT
    val_ok = val_gap <= VAL_KAPPA_LIMIT
    verdict = "met" if speedup >= TARGET_SPEEDUP else "NOT met"
    print(
        f"speed-up: {speedup:.1f}x ({reference.seconds:.1f} s / {fast.seconds:.1f} s; "
        f"target >= {TARGET_SPEEDUP:g}x: {verdict})"
    )
    print(
        f"test kappa difference (fast - reference): {test_diff:+.4f} "
        f"(limit {TEST_KAPPA_LIMIT}): {'ok' if test_ok else 'FAILED'}"
    )
    print(
        f"reference val kappa at the fast probe's C={fast.chosen:g}: {ref_at_fast_C:.4f}; "
        f"best over the grid {ref_best:.4f} (C={ref_best_C:g}); gap {val_gap:.4f} "
        f"(limit {VAL_KAPPA_LIMIT}): {'ok' if val_ok else 'FAILED'}"
    )
    print(f"load average at end {os.getloadavg()[0]:.2f}")
    if not (test_ok and val_ok):
        print("error: the fast probe's answer differs from the reference's", file=sys.stderr)
        return 1
    return 0

