"""The 34 sleep-architecture features of one hypnogram, as the reference computes them.

The reference's sleep_hypnogram (NeuroAtlas `neuroatlas hypnogram features`, App. C.2 Table 2)
computes these per recording from the predicted and from the scored epoch sequences (stages
0 W, 1 N1, 2 N2, 3 N3, 4 REM, one per 30 s epoch, unscored epochs left out and the rest
kept in order). Times are in hours; "relative" counts are per hour of total sleep time. The
definitions follow the reference's, one by one:

  TST, SleepEff          non-wake time; TST over the time of all epochs
  TimeW ... TimeR        each stage's time;  RelN1 ... RelR: N1 ... REM time over TST
  Awakenings, ChToR,     epochs entering W, REM, N3 from another stage; SlStCh: every
  ChToN3, SlStCh         change of stage between consecutive epochs
  TimeBetween{W,R,N3}    mean gap between consecutive bouts of the stage (NaN under 2 bouts)
  {W,R,N3}BoutDur        mean bout length of the stage (NaN without one)
  SleepOnsetN1, ..N2     time from the first epoch to the first N1 / N2 epoch
  WASO                   wake between the first and the last non-wake epoch (0 without sleep)
  RemLatency             from the first non-wake epoch to the first REM epoch
  Rel{Awakenings,SlStCh,ChToR,ChToN3}  the counts over TST;  RelWakeTime: WASO over TST
  RelOcc{N1,N2,N3,R}     the stage's mean position within the sleep period (0 at its first
                         epoch, 1 at its last)
Every ratio whose denominator is 0 is NaN.
"""

from __future__ import annotations

import numpy as np

W, N1, N2, N3, REM = 0, 1, 2, 3, 4
STAGE_KEYS = {W: "W", N1: "N1", N2: "N2", N3: "N3", REM: "R"}
FEATURES = (
    "TST", "SleepEff", "TimeW", "TimeN1", "TimeN2", "TimeN3", "TimeR",
    "RelN1", "RelN2", "RelN3", "RelR", "Awakenings", "SlStCh", "ChToR", "ChToN3",
    "TimeBetweenW", "TimeBetweenR", "TimeBetweenN3", "WBoutDur", "RBoutDur", "N3BoutDur",
    "SleepOnsetN1", "SleepOnsetN2", "WASO", "RemLatency", "RelAwakenings", "RelSlStCh",
    "RelChToR", "RelChToN3", "RelWakeTime", "RelOccN1", "RelOccN2", "RelOccN3", "RelOccR",
)
NAN = float("nan")


def _ratio(a: float, b: float) -> float:
    return a / b if b > 0 else NAN


def bouts(stages: np.ndarray, stage: int) -> tuple[np.ndarray, np.ndarray]:
    """(first epoch, length) of each run of `stage`."""
    inside = np.concatenate([[0], (stages == stage).astype(np.int8), [0]])
    edges = np.diff(inside)
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    return starts, ends - starts


def _bout_gap_and_length(stages: np.ndarray, stage: int, hours: float) -> tuple[float, float]:
    starts, lengths = bouts(stages, stage)
    if not len(starts):
        return NAN, NAN
    gaps = starts[1:] - (starts[:-1] + lengths[:-1])
    return (float(gaps.mean()) * hours if len(gaps) else NAN), float(lengths.mean()) * hours


def _first(stages: np.ndarray, stage: int) -> int | None:
    found = np.flatnonzero(stages == stage)
    return int(found[0]) if len(found) else None


def hypnogram_features(stages, epoch_seconds: float = 30.0) -> dict[str, float]:
    """The 34 features of one recording's epoch sequence (module docstring)."""
    stages = np.asarray(stages, dtype=np.int64)
    hours = epoch_seconds / 3600
    n = len(stages)
    time = {key: float((stages == s).sum()) * hours for s, key in STAGE_KEYS.items()}
    tst = (n - (stages == W).sum()) * hours
    out = {"TST": float(tst), "SleepEff": _ratio(tst, n * hours)}
    out |= {f"Time{key}": time[key] for key in STAGE_KEYS.values()}
    out |= {f"Rel{key}": _ratio(time[key], tst) for key in ("N1", "N2", "N3", "R")}

    before, after = stages[:-1], stages[1:]
    entering = {s: int(((after == s) & (before != s)).sum()) for s in (W, REM, N3)}
    out |= {"Awakenings": entering[W], "SlStCh": int((before != after).sum()),
            "ChToR": entering[REM], "ChToN3": entering[N3]}
    for stage in (W, REM, N3):
        gap, length = _bout_gap_and_length(stages, stage, hours)
        out[f"TimeBetween{STAGE_KEYS[stage]}"] = gap
        out[f"{STAGE_KEYS[stage]}BoutDur"] = length

    onset_n1, onset_n2 = _first(stages, N1), _first(stages, N2)
    out["SleepOnsetN1"] = NAN if onset_n1 is None else onset_n1 * hours
    out["SleepOnsetN2"] = NAN if onset_n2 is None else onset_n2 * hours
    asleep = np.flatnonzero(stages != W)
    period = (int(asleep[0]), int(asleep[-1])) if len(asleep) else None
    first_rem = _first(stages, REM)
    if period:
        onset, last = period
        out["WASO"] = float((stages[onset:last + 1] == W).sum()) * hours
        out["RemLatency"] = (NAN if first_rem is None or first_rem < onset
                             else (first_rem - onset) * hours)
    else:
        out["WASO"], out["RemLatency"] = 0.0, NAN

    for name, count in (("Awakenings", out["Awakenings"]), ("SlStCh", out["SlStCh"]),
                        ("ChToR", out["ChToR"]), ("ChToN3", out["ChToN3"]),
                        ("WakeTime", out["WASO"])):
        out[f"Rel{name}"] = _ratio(count, tst)
    for stage in (N1, N2, N3, REM):
        out[f"RelOcc{STAGE_KEYS[stage]}"] = _relative_position(stages, stage, period)
    return {name: float(out[name]) for name in FEATURES}


def _relative_position(stages: np.ndarray, stage: int, period) -> float:
    """The stage's mean epoch position within the sleep period, 0 at its first epoch."""
    if period is None or period[1] == period[0]:
        return NAN
    onset, last = period
    found = np.flatnonzero(stages[onset:last + 1] == stage)
    return float(found.mean() / (last - onset)) if len(found) else NAN


def feature_agreement(scored: np.ndarray, predicted: np.ndarray) -> dict[str, dict[str, float]]:
    """Per feature (columns in FEATURES order, one row per recording): Pearson r between the
    predicted and the scored values, their mean absolute error and the count of recordings
    where both are defined; r is NaN under 2 such recordings or where either side is
    constant (the reference's summary)."""
    out = {}
    for k, name in enumerate(FEATURES):
        a, b = scored[:, k], predicted[:, k]
        both = np.isfinite(a) & np.isfinite(b)
        a, b = a[both], b[both]
        r = (float(np.corrcoef(a, b)[0, 1]) if len(a) >= 2 and a.std() > 0 and b.std() > 0
             else NAN)
        out[name] = {"pearson_r": r, "mae": float(np.abs(b - a).mean()) if len(a) else NAN,
                     "n": int(both.sum())}
    return out


def mean_pearson_r(agreement: dict[str, dict[str, float]]) -> float:
    """The headline: the mean of the features' r where it is defined."""
    values = [v["pearson_r"] for v in agreement.values() if np.isfinite(v["pearson_r"])]
    return float(np.mean(values)) if values else NAN
