"""Memory at a glance: the runs table (results/memory/runs.tsv) per rule and model.

Every embed and probe attempt appended its measured peak beside its estimate and request
(runs.JobRecord). This module reads that table back: estimate, request, measured peak, their
ratio, attempts and out-of-memory kills per (rule, dataset, model); the worst under- and
over-prediction; and memory-hours requested against used (request x seconds against peak x
seconds, what a cluster bills against what the jobs held). `embedprobe memory` prints it; the
workflow's memory_panel rule writes it as a figure and a markdown table per benchmark.
"""

from __future__ import annotations

import fcntl
import io
from dataclasses import dataclass
from pathlib import Path

import matplotlib
import matplotlib.figure
import matplotlib.ticker

matplotlib.use("Agg")  # files only: cluster nodes have no display
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from embedprobe.core.errors import UsageError  # noqa: E402
from embedprobe.core.paths import output_path  # noqa: E402

MB_PER_GB = 1024  # the scheduler's MB are MiB, so its GB are GiB
SECONDS_PER_HOUR = 3600
COLUMNS = ("rule", "dataset", "model", "jobs", "attempts", "oom", "estimate_mb", "request_mb",
           "peak_mb", "ratio_min", "ratio_max", "gbh_requested", "gbh_used")


def runs_path(results_root: str | Path) -> Path:
    return output_path("runs", {"results_root": results_root})


def read_runs(path: Path) -> pd.DataFrame:
    """The runs table, read under the writers' lock (a row being appended is not half read).

    No table is a usage error: nothing has run yet, or the results root is another one.
    """
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"no runs table at {path}: no embed or probe job has run with these "
                         "results yet",
                         fix="run the workflow first (e.g. snakemake demo --cores 2), or name "
                             "the results root that holds memory/runs.tsv: --results-root DIR")
    with open(path, encoding="utf-8") as handle:
        fcntl.flock(handle, fcntl.LOCK_SH)
        try:
            text = handle.read()
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
    if not text.strip():
        return pd.DataFrame(columns=["rule", "job", "dataset", "model", "status"])
    table = pd.read_csv(io.StringIO(text), sep="\t", dtype={"job": str, "dataset": str,
                                                           "model": str, "host": str})
    for column in ("estimate_mb", "request_mb", "peak_mb", "ratio", "seconds", "attempt"):
        if column in table:
            table[column] = pd.to_numeric(table[column], errors="coerce")
    return table


def benchmark_rows(table: pd.DataFrame, benchmark: str, bench: dict,
                   models: dict | None = None) -> pd.DataFrame:
    """The rows of one benchmark: the embed jobs of its (dataset, model) pairs and its probes;
    `models` (the config's entries) names the store each variant id reads, whose embed job
    it is (core/variants.embedding_id)."""
    from embedprobe.core.variants import embedding_id

    stores = {embedding_id(models, m) for m in bench["models"]} if models else set()
    pairs = table["dataset"].isin(bench["datasets"]) & table["model"].isin(
        stores | set(bench["models"]))
    embed = table["rule"].eq("embed")
    probe = table["rule"].eq("probe") & table["job"].str.startswith(f"probe/{benchmark}/")
    return table[pairs & (embed | probe)]


def _gbh(mb: pd.Series, seconds: pd.Series) -> float:
    return float(np.nansum(mb * seconds) / MB_PER_GB / SECONDS_PER_HOUR)


def summarise(table: pd.DataFrame) -> pd.DataFrame:
    """One row per (rule, dataset, model): jobs, attempts, OOM kills, the largest estimate,
    request and peak, the range of peak/estimate and the memory-hours requested and used."""
    rows = []
    for (rule, dataset, model), group in table.groupby(["rule", "dataset", "model"], sort=True):
        ratio = group["peak_mb"] / group["estimate_mb"]
        rows.append({
            "rule": rule, "dataset": dataset, "model": model,
            "jobs": group["job"].nunique(), "attempts": len(group),
            "oom": int(group["status"].eq("oom").sum()),
            "estimate_mb": group["estimate_mb"].max(), "request_mb": group["request_mb"].max(),
            "peak_mb": group["peak_mb"].max(),
            "ratio_min": ratio.min(), "ratio_max": ratio.max(),
            "gbh_requested": _gbh(group["request_mb"], group["seconds"]),
            "gbh_used": _gbh(group["peak_mb"], group["seconds"]),
        })
    return pd.DataFrame(rows, columns=list(COLUMNS))


@dataclass
class Extreme:
    """One attempt, named, with its peak against its estimate."""

    rule: str
    dataset: str
    model: str
    job: str
    attempt: int
    status: str
    peak_mb: float
    estimate_mb: float

    @property
    def ratio(self) -> float:
        return self.peak_mb / self.estimate_mb

    def __str__(self) -> str:
        where = f"{self.dataset}/{self.model} {self.job}, attempt {self.attempt}"
        killed = f", {self.status}" if self.status != "ok" else ""
        return (f"{where}{killed}: peak {self.peak_mb:,.0f} MB against an estimate of "
                f"{self.estimate_mb:,.0f} MB ({self.ratio - 1:+.1%})")


def extremes(table: pd.DataFrame) -> tuple[Extreme | None, Extreme | None]:
    """(worst under-prediction: the highest peak/estimate above 1, worst over-prediction: the
    lowest below 1); None where there is none."""
    known = table.dropna(subset=["peak_mb", "estimate_mb"])
    known = known[(known["estimate_mb"] > 0) & (known["peak_mb"] > 0)]
    if known.empty:
        return None, None
    ratio = known["peak_mb"] / known["estimate_mb"]

    def named(index) -> Extreme:
        row = known.loc[index]
        return Extreme(str(row["rule"]), str(row["dataset"]), str(row["model"]), str(row["job"]),
                       int(row["attempt"]), str(row["status"]), float(row["peak_mb"]),
                       float(row["estimate_mb"]))

    under = named(ratio.idxmax()) if ratio.max() > 1 else None
    over = named(ratio.idxmin()) if ratio.min() < 1 else None
    return under, over


def _ratio_text(low: float, high: float) -> str:
    if not np.isfinite(low):
        return "-"
    return f"{low:.2f}" if abs(high - low) < 0.005 else f"{low:.2f}-{high:.2f}"


def _mb(value) -> str:
    return "-" if pd.isna(value) else f"{value:,.0f}"


def _gbh_text(value: float) -> str:
    return f"{value:.3g}"


HEADINGS = ("rule", "dataset", "model", "jobs", "attempts", "OOM kills", "estimate MB",
            "request MB", "peak MB", "peak/estimate", "GB-h requested", "GB-h used")


def _cells(summary: pd.DataFrame) -> list[list[str]]:
    return [[r.rule, r.dataset, r.model, str(r.jobs), str(r.attempts), str(r.oom),
             _mb(r.estimate_mb), _mb(r.request_mb), _mb(r.peak_mb),
             _ratio_text(r.ratio_min, r.ratio_max), _gbh_text(r.gbh_requested),
             _gbh_text(r.gbh_used)] for r in summary.itertuples()]


def closing_lines(table: pd.DataFrame) -> list[str]:
    """The worst under- and over-prediction and the memory-hours, one line each."""
    under, over = extremes(table)
    requested = _gbh(table["request_mb"], table["seconds"])
    used = _gbh(table["peak_mb"], table["seconds"])
    share = f" ({used / requested:.0%} of the request used)" if requested > 0 else ""
    return [
        f"worst under-prediction: {under}" if under else
        "worst under-prediction: none, every measured peak is at or below its estimate",
        f"worst over-prediction: {over}" if over else
        "worst over-prediction: none, every measured peak is at or above its estimate",
        f"memory-hours: requested {_gbh_text(requested)} GB-h, used {_gbh_text(used)} GB-h"
        f"{share}",
    ]


def format_table(table: pd.DataFrame) -> str:
    """Aligned text: one row per (rule, dataset, model), then the closing lines."""
    cells = [list(HEADINGS), *_cells(summarise(table))]
    widths = [max(len(row[k]) for row in cells) for k in range(len(HEADINGS))]
    left = {0, 1, 2}
    lines = ["  ".join(cell.ljust(w) if k in left else cell.rjust(w)
                       for k, (cell, w) in enumerate(zip(row, widths, strict=True))).rstrip()
             for row in cells]
    return "\n".join(lines + [""] + closing_lines(table)) + "\n"


def markdown(table: pd.DataFrame) -> str:
    """The same as a markdown table, for summary.md (no heading: the caller adds its own)."""
    lines = ["| " + " | ".join(HEADINGS) + " |", "|---|---|---|" + "---:|" * 9]
    lines += ["| " + " | ".join(row) + " |" for row in _cells(summarise(table))]
    lines += [""] + [f"- {line[0].upper()}{line[1:]}." for line in closing_lines(table)]
    return "\n".join(lines) + "\n"


def as_section(memory_markdown: str, heading: str = "## Memory") -> str:
    """A memory summary.md as a section of another markdown file (its own heading dropped)."""
    body = [line for line in memory_markdown.splitlines() if not line.startswith("# ")]
    return "\n" + heading + "\n\n" + "\n".join(body).strip() + "\n"


# ----------------------------------------------------------------------------- the panel

RULE_COLOURS = {"embed": "#4C72B0", "probe": "#55A868"}
OTHER_COLOUR = "#8172B2"


def _margins(table: pd.DataFrame) -> dict[str, float]:
    """Each rule's request margin over its estimate, as first attempts were given it.

    A request is the estimate plus the margin rounded up to a whole MB, so each attempt
    brackets the margin between (request - 1) / estimate and request / estimate; the middle of
    what all attempts share (a small job's rounding alone would read 15% as 16%), or of each
    one's bracket where they share none (the margin was changed between runs)."""
    first = table[table["attempt"].eq(1) & (table["estimate_mb"] > 0)]
    first = first.dropna(subset=["request_mb", "estimate_mb"])
    margins = {}
    for rule, group in first.groupby("rule"):
        low = (group["request_mb"] - 1) / group["estimate_mb"]
        high = group["request_mb"] / group["estimate_mb"]
        if low.max() <= high.min():
            margin = (low.max() + high.min()) / 2 - 1
        else:
            margin = float(np.median((low + high) / 2)) - 1
        if margin > 0:
            margins[str(rule)] = float(margin)
    return margins


def panel_figure(table: pd.DataFrame, title: str) -> matplotlib.figure.Figure:
    """Left: measured peak against estimate per attempt (log-log), y = x, the request margin as
    a band above it, out-of-memory kills marked. Right: memory-hours requested and used."""
    fig, (scatter, bars) = plt.subplots(1, 2, figsize=(11, 4.4),
                                        gridspec_kw={"width_ratios": [1.15, 1]})
    known = table.dropna(subset=["peak_mb", "estimate_mb"])
    known = known[(known["peak_mb"] > 0) & (known["estimate_mb"] > 0)]
    if known.empty:
        for ax in (scatter, bars):
            ax.text(0.5, 0.5, "no measured runs yet", ha="center", va="center",
                    transform=ax.transAxes)
            ax.set_axis_off()
    else:
        _scatter(scatter, known, _margins(table))
        _bars(bars, table)
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    return fig


def plot_panel(table: pd.DataFrame, title: str, out: Path) -> None:
    """The panel (panel_figure) as a PNG at `out`."""
    fig = panel_figure(table, title)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)


def _scatter(ax, known: pd.DataFrame, margins: dict[str, float]) -> None:
    low = float(min(known["estimate_mb"].min(), known["peak_mb"].min())) / 1.3
    high = float(max(known["estimate_mb"].max(), known["peak_mb"].max())) * 1.3
    line = np.geomspace(low, high, 50)
    # one band per distinct margin, the widest lightest: a peak inside its band is covered
    by_margin: dict[float, list[str]] = {}
    for rule, margin in sorted(margins.items()):
        by_margin.setdefault(round(margin, 2), []).append(rule)
    for shade, (margin, rules) in zip(("#E4E4E4", "#C8C8C8", "#B0B0B0"),
                                      sorted(by_margin.items(), reverse=True), strict=False):
        ax.fill_between(line, line, line * (1 + margin), color=shade,
                        label=f"request = estimate +{margin:.0%} ({', '.join(rules)})")
    ax.plot(line, line, "k--", linewidth=1, label="peak = estimate")
    ok = known[known["status"].eq("ok")]
    for rule, group in ok.groupby("rule"):
        ax.scatter(group["estimate_mb"], group["peak_mb"], s=28, alpha=0.85,
                   color=RULE_COLOURS.get(str(rule), OTHER_COLOUR), label=f"{rule} (ok)")
    oom = known[known["status"].eq("oom")]
    if len(oom):
        ax.scatter(oom["estimate_mb"], oom["peak_mb"], s=80, marker="X", color="#C44E52",
                   label="out-of-memory kill (last sampled peak)")
    other = known[~known["status"].isin(["ok", "oom"])]
    if len(other):
        ax.scatter(other["estimate_mb"], other["peak_mb"], s=40, marker="s",
                   facecolors="none", edgecolors="#555555", label="failed or killed")
    ax.set_xscale("log")
    ax.set_yscale("log")
    plain = matplotlib.ticker.FuncFormatter(lambda value, _: f"{value:,.0f}")
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_formatter(plain)
        axis.set_minor_formatter(plain)
        axis.set_tick_params(which="minor", labelsize=7)
    ax.set_xlim(low, high)
    ax.set_ylim(low, high)
    ax.set_xlabel("estimate (MB)")
    ax.set_ylabel("measured peak (MB)")
    ax.set_title("measured peak against estimate, per attempt", fontsize=10)
    ax.legend(fontsize=7, loc="upper left")


def _bars(ax, table: pd.DataFrame) -> None:
    summary = summarise(table)
    labels = [f"{r.rule}\n{r.model}" + (f"\n{r.dataset}" if summary["dataset"].nunique() > 1
                                        else "") for r in summary.itertuples()]
    x = np.arange(len(summary))
    ax.bar(x - 0.2, summary["gbh_requested"], 0.4, color="#BBBBBB", label="requested")
    ax.bar(x + 0.2, summary["gbh_used"], 0.4,
           color=[RULE_COLOURS.get(r, OTHER_COLOUR) for r in summary["rule"]],
           label="used (peak)")
    for k, r in enumerate(summary.itertuples()):
        if r.gbh_requested > 0:
            ax.text(k + 0.2, r.gbh_used, f"{r.gbh_used / r.gbh_requested:.0%}", ha="center",
                    va="bottom", fontsize=8)
    ax.set_xticks(x, labels, fontsize=8)
    positive = summary["gbh_requested"][summary["gbh_requested"] > 0]
    if len(positive) and positive.max() > 30 * positive.min():
        ax.set_yscale("log")  # embed jobs can hold hours where a probe fold holds seconds
    ax.set_ylabel("memory-hours (GB-h)")
    ax.set_title("memory-hours: requested against used", fontsize=10)
    ax.legend(fontsize=8)


# ------------------------------------------------------------------------- the command


def memory_report(results_root: str | Path, benchmark: str | None = None,
                  bench: dict | None = None, figure: Path | None = None,
                  summary: Path | None = None, models: dict | None = None) -> str:
    """The text table (returned); the figure and the markdown written where named.

    With outputs to write (the workflow's memory_panel rule), a missing runs table or no rows
    writes a panel that says so, with a warning; by hand it is a usage error.
    """
    import sys

    path = runs_path(results_root)
    try:
        table = read_runs(path)
        if benchmark is not None:
            table = benchmark_rows(table, benchmark, bench, models)
        if table.empty:
            where = f" of benchmark '{benchmark}'" if benchmark else ""
            raise UsageError(f"the runs table {path} has no rows{where}",
                             fix="run the benchmark's embed and probe jobs first")
    except UsageError as exc:
        if figure is None and summary is None:
            raise
        print(f"warning: {exc.message}; the memory panel says so", file=sys.stderr)
        table = pd.DataFrame(columns=["rule", "job", "dataset", "model", "attempt", "status",
                                      "estimate_mb", "request_mb", "peak_mb", "seconds"])
        text = f"No measured runs: {exc.message}.\n"
    else:
        text = format_table(table)
    title = f"memory: {benchmark}" if benchmark else "memory"
    if figure is not None:
        plot_panel(table, title, Path(figure))
    if summary is not None:
        body = markdown(table) if not table.empty else text
        Path(summary).parent.mkdir(parents=True, exist_ok=True)
        Path(summary).write_text(f"# Memory: {benchmark or 'all runs'}\n\n" + body)
    return text
