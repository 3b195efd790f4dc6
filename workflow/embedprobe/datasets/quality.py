"""Data quality per recording, at index time: what would otherwise pass silently.

A flat channel gives one identical embedding for every window of its night (check only sees the
first batch); a clipped one, a header whose scaling gives NaN or infinity, a unit that is not a
voltage (or amplitudes a thousand times off), a sampling rate unlike the other recordings': each
is a `warning:` naming the recording and the channel, and with `exclude_bad_recordings: true`
the recording is left out of the index (and listed in the benchmark's summary).

The scan reads the 16-bit samples of the kept windows straight from the EDF data records
(a memory map: no float copy of the night), so clipping is judged on the digital values the
recorder wrote. A format whose files are not EDF (BNCI 2014-001's .mat) is scanned on the
float volts its reader returns: the same checks, plus NaN or infinite samples, and clipping
judged as samples piled at the channel's own minimum or maximum.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from embedprobe.datasets.base import Signals
from embedprobe.datasets.edf import SignalHeader, read_edf_header

FLAT_SHARE = 0.5  # a channel flat (one digital value) in at least half of its windows
CLIP_SHARE = 0.05  # at least 5% of its samples at the digital minimum or maximum
MAX_RMS_V = 1e-3  # EEG is tens of microvolts: 1 mV RMS means the unit is off (x1000)
MIN_RMS_V = 1e-8  # 0.01 uV RMS (and not flat): the unit is off the other way
VOLT_UNITS = {"v": 1.0, "mv": 1e-3, "uv": 1e-6, "µv": 1e-6, "μv": 1e-6, "nv": 1e-9}
WINDOW_CHUNK = 256  # windows scanned at a time (bounded memory on 20-hour nights)
QUALITY_COLUMNS = ["recording", "channel", "problem", "detail", "excluded"]


@dataclass(frozen=True)
class Problem:
    recording: str
    channel: str
    problem: str  # flat, clipped, nan_inf, unit, rate
    detail: str

    def warning(self) -> str:
        where = f"{self.recording} channel {self.channel}" if self.channel else self.recording
        return f"warning: {where}: {self.detail}"


def _windows(samples: np.ndarray, starts: np.ndarray, epoch: int):
    """The kept windows' samples, WINDOW_CHUNK windows at a time, as (windows, epoch) int16."""
    for first in range(0, len(starts), WINDOW_CHUNK):
        block = starts[first: first + WINDOW_CHUNK]
        yield samples[block[:, None] + np.arange(epoch)[None, :]]


def scan(reader, rec, channels, starts: np.ndarray, epoch: int) -> list[Problem]:
    """The problems of one recording of any format: EDF files from their 16-bit samples,
    others from the float volts their reader returns."""
    if rec.signal_path.suffix.lower() == ".edf":
        return scan_recording(rec.recording, rec.signal_path, channels, starts, epoch)
    present = set(reader.read_header(rec).channels)
    wanted = [c for c in channels if c in present]  # the reader refuses a missing one itself
    if not wanted:
        return []
    return scan_signals(rec.recording, reader.read_signals(rec, wanted), starts, epoch)


def scan_recording(recording: str, psg: Path, channels, starts: np.ndarray,
                   epoch: int) -> list[Problem]:
    """The problems of one recording's channels over its kept windows (empty when clean)."""
    header = read_edf_header(psg)
    # case-blind: some Siena files write "EEG FP2" where the reader reports "EEG Fp2"
    signals = {sig.label.casefold(): sig for sig in header.signals}
    data = np.memmap(psg, np.int16, "r", offset=header.header_bytes,
                     shape=(header.n_records, sum(header.samples_per_record)))
    problems = []
    for channel in channels:
        sig = signals.get(channel.casefold())
        if sig is None:  # the reader refuses a missing channel with its own message
            continue
        problems += _scan_channel(recording, sig, data, starts, epoch)
    del data
    return problems


def _scan_channel(recording, sig: SignalHeader, data, starts, epoch) -> list[Problem]:
    out = []

    def problem(kind: str, detail: str) -> None:
        out.append(Problem(recording, sig.label, kind, detail))

    prange, drange = sig.physical_max - sig.physical_min, sig.digital_max - sig.digital_min
    if not (math.isfinite(prange) and prange != 0 and drange > 0):
        problem("nan_inf", f"its header scales samples to NaN or infinity (physical "
                           f"{sig.physical_min}..{sig.physical_max}, digital "
                           f"{sig.digital_min}..{sig.digital_max})")
        return out
    unit = VOLT_UNITS.get(sig.unit.lower())
    if unit is None:
        problem("unit", f"unit {sig.unit!r} is not a voltage (EEG is in uV, mV or V)")
    samples = np.asarray(data[:, sig.offset: sig.offset + sig.samples_per_record]).reshape(-1)
    stats = _window_stats(samples, starts, epoch, sig.digital_min, sig.digital_max)
    if stats is None:
        return out
    if stats.flat >= FLAT_SHARE * stats.windows:
        problem("flat", stats.flat_detail())
    if stats.clipped >= CLIP_SHARE * stats.total:
        problem("clipped", f"saturated: {stats.clipped / stats.total:.0%} of its samples sit "
                           f"at the physical minimum or maximum ({sig.physical_min:g} .. "
                           f"{sig.physical_max:g} {sig.unit}): the signal is clipped")
    if unit is not None and stats.live:
        rms = stats.rms() * abs(prange / drange) * unit
        if rms > MAX_RMS_V or rms < MIN_RMS_V:
            problem("unit", f"amplitude {rms * 1e6:.4g} uV RMS in unit {sig.unit!r} is far "
                            "from EEG's tens of microvolts: the unit (or the physical range) "
                            "in its header is likely wrong")
    return out


def scan_signals(recording: str, signals: Signals, starts: np.ndarray,
                 epoch: int) -> list[Problem]:
    """The same checks on float samples in volts (a reader of files that are not EDF)."""
    out = []
    for channel, samples in zip(signals.ch_names, signals.data, strict=True):
        finite = samples[np.isfinite(samples)]
        if not finite.size:
            out.append(Problem(recording, channel, "nan_inf", "every sample is NaN or "
                                                              "infinite"))
            continue
        low, high = float(finite.min()), float(finite.max())
        stats = _window_stats(samples, starts, epoch, low, high)
        if stats is None:
            continue
        if stats.nonfinite:
            out.append(Problem(recording, channel, "nan_inf",
                               f"{stats.nonfinite} of its samples in kept windows are NaN or "
                               "infinite: the encoder would turn them into NaN embeddings"))
        if stats.flat >= FLAT_SHARE * stats.windows:
            out.append(Problem(recording, channel, "flat", stats.flat_detail()))
        # a live channel's extremes are single samples; clipping piles samples on them
        if high > low and stats.clipped >= CLIP_SHARE * stats.total:
            out.append(Problem(recording, channel, "clipped",
                               f"saturated: {stats.clipped / stats.total:.0%} of its samples "
                               f"sit at its minimum or maximum ({low * 1e6:.4g} .. "
                               f"{high * 1e6:.4g} uV): the signal is clipped"))
        if stats.live:
            rms = stats.rms()
            if rms > MAX_RMS_V or rms < MIN_RMS_V:
                out.append(Problem(recording, channel, "unit",
                                   f"amplitude {rms * 1e6:.4g} uV RMS is far from EEG's tens "
                                   "of microvolts: the file's values are likely in another "
                                   "unit than the reader assumes"))
    return out


@dataclass
class _Stats:
    windows: int  # kept windows that fit in the channel
    flat: int  # windows of one constant value
    clipped: int  # samples at the lower or upper limit
    total: int  # samples looked at
    nonfinite: int  # NaN or infinite samples
    sum_sq: float  # squared deviations from each live window's mean (samples' own unit)
    live: int  # samples of windows that are neither flat nor hold a NaN

    def rms(self) -> float:
        return math.sqrt(self.sum_sq / self.live)

    def flat_detail(self) -> str:
        return (f"flat (one constant value) in {self.flat} of its {self.windows} windows "
                f"({self.flat / self.windows:.0%}): every such window would get the same "
                "embedding")


def _window_stats(samples: np.ndarray, starts: np.ndarray, epoch: int, low, high
                  ) -> _Stats | None:
    """Counts over the kept windows of one channel; None when no window fits in it."""
    starts = starts[(starts >= 0) & (starts + epoch <= len(samples))]
    if not len(starts):
        return None
    stats = _Stats(len(starts), 0, 0, 0, 0, 0.0, 0)
    floating = np.issubdtype(samples.dtype, np.floating)
    for block in _windows(samples, starts, epoch):
        if floating:
            stats.nonfinite += int((~np.isfinite(block)).sum())
        # in float64: an int16 difference wraps; NaN for a window holding a NaN
        spread = np.subtract(block.max(axis=1), block.min(axis=1), dtype=np.float64)
        stats.flat += int((spread == 0).sum())
        stats.clipped += int(((block <= low) | (block >= high)).sum())
        stats.total += block.size
        moving = block[spread > 0].astype(np.float64)
        if moving.size:
            centred = moving - moving.mean(axis=1, keepdims=True)
            stats.sum_sq += float((centred**2).sum())
            stats.live += moving.size
    return stats


def rate_problems(rates: dict[str, float], channel_label: str) -> list[Problem]:
    """Recordings whose sampling rate differs from the one most recordings have."""
    if not rates:
        return []
    values = list(rates.values())
    usual = max(set(values), key=values.count)
    return [Problem(rec, channel_label, "rate",
                    f"sampling rate {rate:g} Hz where the other recordings have {usual:g} Hz")
            for rec, rate in sorted(rates.items()) if rate != usual]
