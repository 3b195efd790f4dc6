"""A recording's statistics from one filtered stretch at a time (window_recipe.recording_statistic),
so that a reader holds a stretch of a recording, never the whole of it.

`Q95Stream` gives preprocess.recording_q95 of all the samples added, bit for bit: numpy's
linear quantile needs two order statistics of |x| in µV, and non-negative float32 values
order as their bit patterns do. One pass counts every value by the top bits of its pattern
(COARSE_BINS counts an input) and keeps the values of a band of those bins around the
quantile, whose rank within the band the counts below it give; the band narrows around the
running estimate whenever the kept values pass `cap` (the samples of one stretch). Where the
two order statistics end up outside the band (a recording whose later hours change its scale
by more than the band allowed for, a flat channel), a second pass counts the bins that hold
them value by value (FINE_BINS counts each): exact either way, bounded memory either way.

`MomentsStream` gives preprocess.recording_zscore's mean and SD: each stretch's float64 mean
and sum of squared deviations merged (Chan et al.'s pairwise update); against numpy's
whole-recording mean and std within 1e-12 relative (tests/pipeline/test_streamed_statistics.py).
"""

from __future__ import annotations

import numpy as np

from embedprobe.pipeline.preprocess import (
    MICROVOLTS_PER_VOLT,
    PERCENTILE,
    quantile_lerp,
    quantile_rank,
)

COARSE_SHIFT = 16  # a coarse bin: a value's top 15 bits (|x| has no sign bit): 1/128 of a binade
COARSE_BINS = 1 << 15
FINE_BINS = 1 << COARSE_SHIFT  # the values one coarse bin holds
BAND_HALF_WIDTH = 128  # coarse bins each side of the first stretch's quantile: a factor 2
NAN_BITS = 0x7F800000  # patterns above it are NaNs (np.quantile then gives NaN)


def abs_microvolt_bits(row: np.ndarray) -> np.ndarray:
    """|row| in µV as recording_q95 computes it (float32), as uint32 bit patterns."""
    values = row.astype(np.float32) * np.float32(MICROVOLTS_PER_VOLT)
    np.abs(values, out=values)
    return values.view(np.uint32)


class Q95Stream:
    """Each input's 95th percentile of |x| in µV over every sample added, exactly."""

    def __init__(self, n_inputs: int, cap: int, q: float = PERCENTILE):
        self.q, self.cap = q, max(int(cap), FINE_BINS)
        self.coarse = np.zeros((n_inputs, COARSE_BINS), np.int64)
        self.nan = np.zeros(n_inputs, bool)
        self.band: list[tuple[int, int] | None] = [None] * n_inputs  # [lo, hi) coarse bins
        self.kept: list[list[np.ndarray]] = [[] for _ in range(n_inputs)]
        self.lost = np.zeros(n_inputs, bool)  # the band lost its values: a second pass counts
        self.fine: dict[int, np.ndarray] = {}  # second pass: input -> (bins, FINE_BINS) counts
        self.second = False

    def add(self, data: np.ndarray) -> None:
        """Count (inputs, samples) filtered volts."""
        for i, row in enumerate(data):
            bits = abs_microvolt_bits(row)
            coarse = bits >> COARSE_SHIFT
            if self.second:
                if i in self.fine:
                    self._count_fine(i, bits, coarse)
                continue
            counts = np.bincount(coarse, minlength=COARSE_BINS)
            self.coarse[i] += counts
            self.nan[i] |= bool(counts[NAN_BITS >> COARSE_SHIFT:].any()) and bool(
                (bits > NAN_BITS).any())
            if self.lost[i]:
                continue
            if self.band[i] is None:  # around this stretch's own quantile
                centre = _bin_of(np.cumsum(counts), quantile_rank(len(row), self.q)[0])
                self.band[i] = (max(0, centre - BAND_HALF_WIDTH),
                                min(COARSE_BINS, centre + BAND_HALF_WIDTH + 1))
            lo, hi = self.band[i]
            self.kept[i].append(bits[(coarse >= lo) & (coarse < hi)])
            if sum(len(k) for k in self.kept[i]) > self.cap:
                self._narrow(i)

    def _narrow(self, i: int) -> None:
        """Halve input i's band around the running quantile until its values fit in cap."""
        lo, hi = self.band[i]
        kept = np.concatenate(self.kept[i])
        cumulative = np.cumsum(self.coarse[i])
        centre = _bin_of(cumulative, quantile_rank(int(cumulative[-1]), self.q)[0])
        half = (hi - lo) // 2
        while len(kept) > self.cap // 2:
            half //= 2
            lo, hi = max(lo, centre - half), min(hi, centre + half + 1)
            if lo >= hi or half == 0:  # one bin holds more than cap, or the estimate left it
                self.lost[i], self.kept[i], self.band[i] = True, [], None
                return
            kept = kept[((kept >> COARSE_SHIFT) >= lo) & ((kept >> COARSE_SHIFT) < hi)]
        self.band[i], self.kept[i] = (lo, hi), [kept]

    def _count_fine(self, i: int, bits: np.ndarray, coarse: np.ndarray) -> None:
        lo = self.band[i][0]
        fine = self.fine[i]
        inside = bits[(coarse >= lo) & (coarse < lo + len(fine))] - np.uint32(lo << COARSE_SHIFT)
        fine += np.bincount(inside, minlength=fine.size).reshape(fine.shape)

    def needs_second_pass(self) -> bool:
        """Whether an input's order statistics lie outside its band: then the caller adds
        every stretch again, and this counts the bins that hold them value by value."""
        if self.second:
            return False
        for i in range(len(self.coarse)):
            bins = self._rank_bins(i)
            band = self.band[i]
            if self.nan[i] or (band and not self.lost[i] and band[0] <= min(bins)
                               and max(bins) < band[1]):
                continue
            self.band[i] = (min(bins), max(bins) + 1)
            self.kept[i] = []
            self.fine[i] = np.zeros((self.band[i][1] - self.band[i][0], FINE_BINS), np.int64)
        self.second = bool(self.fine)
        return self.second

    def _ranks(self, i: int) -> tuple[list[int], float]:
        n = int(self.coarse[i].sum())
        below, gamma = quantile_rank(n, self.q)
        return ([below] if below + 1 >= n else [below, below + 1]), gamma

    def _rank_bins(self, i: int) -> list[int]:
        cumulative = np.cumsum(self.coarse[i])
        return [_bin_of(cumulative, rank) for rank in self._ranks(i)[0]]

    def result(self) -> np.ndarray:
        """(inputs,) float32, as recording_q95 over the whole of what was added."""
        out = np.empty(len(self.coarse), np.float32)
        for i in range(len(out)):
            if self.nan[i]:
                out[i] = np.nan
                continue
            ranks, gamma = self._ranks(i)
            below = int(self.coarse[i, :self.band[i][0]].sum())  # values under the band
            values = (self._from_fine(i, ranks, below) if i in self.fine
                      else self._from_kept(i, ranks, below))
            order = values.view(np.float32)
            out[i] = order[0] if len(order) == 1 else quantile_lerp(
                order[:1], order[1:], gamma)[0]
        return out

    def _from_kept(self, i: int, ranks: list[int], below: int) -> np.ndarray:
        # Only the values of the coarse bins holding the ranks are partitioned (the counts
        # say how many lie under them), not every kept one: a band of a factor 2 each side
        # of the quantile keeps most of a stretch.
        bins = self._rank_bins(i)
        first, last = int(min(bins)), int(max(bins))
        below += int(self.coarse[i, self.band[i][0]:first].sum())
        kept = [k[((k >> COARSE_SHIFT) >= first) & ((k >> COARSE_SHIFT) <= last)]
                for k in self.kept[i]]
        kept = np.concatenate(kept) if kept else np.empty(0, np.uint32)
        local = [rank - below for rank in ranks]
        kept.partition(local)
        return kept[local]

    def _from_fine(self, i: int, ranks: list[int], below: int) -> np.ndarray:
        lo = self.band[i][0]
        cumulative = np.cumsum(self.fine[i].ravel())
        return np.array([(lo << COARSE_SHIFT) + _bin_of(cumulative, rank - below)
                         for rank in ranks], np.uint32)


def _bin_of(cumulative: np.ndarray, rank: int) -> int:
    """The bin holding the value of 0-based `rank`, from the bins' cumulative counts."""
    return int(np.searchsorted(cumulative, rank, side="right"))


class MomentsStream:
    """Each input's mean and SD (numpy's std: ddof 0) over every sample added, in float64."""

    def __init__(self, n_inputs: int, cap: int | None = None):
        self.n = 0
        self.mean = np.zeros(n_inputs)
        self.m2 = np.zeros(n_inputs)  # sum of squared deviations from the mean

    def add(self, data: np.ndarray) -> None:
        count = data.shape[-1]
        if not count:
            return
        mean = np.empty(len(data))
        m2 = np.empty(len(data))
        for i, row in enumerate(data):  # one float64 row at a time, not the stretch
            mean[i] = row.mean(dtype=np.float64)
            deviations = row.astype(np.float64) - mean[i]
            deviations *= deviations  # as numpy's std: one stretch gives its bytes
            m2[i] = deviations.sum()
        total = self.n + count
        delta = mean - self.mean
        self.m2 += m2 + delta * delta * (self.n * count / total)
        self.mean += delta * (count / total)
        self.n = total

    def needs_second_pass(self) -> bool:
        return False

    def result(self) -> np.ndarray:
        """(2, inputs) float64: the mean and the SD, as recording_zscore gives them."""
        return np.stack([self.mean, np.sqrt(self.m2 / max(self.n, 1))])
