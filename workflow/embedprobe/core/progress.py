"""Progress for long steps: a live line on a terminal, a line per tenth of the work elsewhere."""

from __future__ import annotations

import sys
import time


def format_duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds >= 3600:
        return f"{seconds // 3600}h {seconds % 3600 // 60:02d}m"
    return f"{seconds // 60}m {seconds % 60:02d}s"


class Progress:
    """Off a terminal: one line per tenth of the work, at most one every `min_interval` s."""

    def __init__(self, label: str, total: int, unit: str = "batches", stream=None,
                 min_interval: float = 5.0, clock=time.monotonic):
        self.label, self.total, self.unit = label, max(total, 1), unit
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty()
        self.min_interval = min_interval
        self.clock = clock
        self.started = clock()
        self.last_line = -float("inf")
        self.next_tenth = 1
        self.first_done: int | None = None

    def line(self, done: int) -> str:
        elapsed = self.clock() - self.started
        fraction = done / self.total
        if self.first_done is None:
            self.first_done = done
        fresh = done - self.first_done  # resumed work does not count toward the rate
        left = ""
        if fresh > 0 and done < self.total:
            left = f", ~{format_duration(elapsed / fresh * (self.total - done))} left"
        return (f"{self.label}: {fraction:.0%} ({done}/{self.total} {self.unit}, "
                f"{format_duration(elapsed)}{left})")

    def update(self, done: int, stage: str = "") -> None:
        text = self.line(done) + (f" {stage}" if stage else "")
        if self.live:
            self.stream.write("\r\033[K" + text)
            self.stream.flush()
            return
        now = self.clock()
        tenth = int(10 * done / self.total)
        if tenth >= self.next_tenth and now - self.last_line >= self.min_interval:
            self.stream.write(text + "\n")
            self.stream.flush()
            self.last_line = now
            self.next_tenth = tenth + 1

    def close(self, message: str) -> None:
        if self.live:
            self.stream.write("\r\033[K")
        elapsed = format_duration(self.clock() - self.started)
        self.stream.write(f"{self.label}: {message} ({elapsed})\n")
        self.stream.flush()
