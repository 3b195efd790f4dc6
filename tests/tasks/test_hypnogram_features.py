"""The 34 hypnogram features on a small known hypnogram, computed by hand, and the agreement
(Pearson r per feature, its mean) against numpy's."""

from __future__ import annotations

import math

import numpy as np
import pytest

from embedprobe.tasks.hypnogram.features import (
    FEATURES,
    feature_agreement,
    hypnogram_features,
    mean_pearson_r,
)

# W W N1 N2 N2 W N2 N3 N3 R R W, 30 s epochs: one epoch is 1/120 h
NIGHT = [0, 0, 1, 2, 2, 0, 2, 3, 3, 4, 4, 0]
E = 1 / 120
BY_HAND = {
    "TST": 8 * E, "SleepEff": 8 / 12,
    "TimeW": 4 * E, "TimeN1": 1 * E, "TimeN2": 3 * E, "TimeN3": 2 * E, "TimeR": 2 * E,
    "RelN1": 1 / 8, "RelN2": 3 / 8, "RelN3": 2 / 8, "RelR": 2 / 8,
    # changes: W>N1 N1>N2 N2>W W>N2 N2>N3 N3>R R>W; entries into W: 2, into R: 1, into N3: 1
    "Awakenings": 2, "SlStCh": 7, "ChToR": 1, "ChToN3": 1,
    # W bouts at 0 (2 epochs), 5 (1), 11 (1): gaps 3 and 5 epochs, mean length 4/3
    "TimeBetweenW": 4 * E, "WBoutDur": 4 / 3 * E,
    "TimeBetweenR": math.nan, "RBoutDur": 2 * E, "TimeBetweenN3": math.nan, "N3BoutDur": 2 * E,
    "SleepOnsetN1": 2 * E, "SleepOnsetN2": 3 * E,
    # sleep period: epochs 2 ... 10; one W inside it (epoch 5); first REM at 9
    "WASO": 1 * E, "RemLatency": 7 * E,
    "RelAwakenings": 2 / (8 * E), "RelSlStCh": 7 / (8 * E), "RelChToR": 1 / (8 * E),
    "RelChToN3": 1 / (8 * E), "RelWakeTime": 1 / 8,
    # positions within the period (0 ... 8): N1 at 0; N2 at 1, 2, 4; N3 at 5, 6; R at 7, 8
    "RelOccN1": 0.0, "RelOccN2": (7 / 3) / 8, "RelOccN3": 5.5 / 8, "RelOccR": 7.5 / 8,
}


def test_there_are_the_reference_s_34_features():
    assert len(FEATURES) == 34 == len(set(FEATURES)) and set(BY_HAND) == set(FEATURES)


@pytest.mark.parametrize("name", FEATURES)
def test_each_feature_matches_the_hand_computed_value(name):
    got = hypnogram_features(NIGHT)[name]
    if math.isnan(BY_HAND[name]):
        assert math.isnan(got)
    else:
        assert got == pytest.approx(BY_HAND[name], rel=1e-12)


def test_a_night_without_sleep_has_no_ratios():
    got = hypnogram_features([0, 0, 0])
    assert got["TST"] == 0 and got["WASO"] == 0
    assert all(math.isnan(got[n]) for n in ("RelN1", "RemLatency", "RelOccR", "RelAwakenings"))


def test_agreement_is_numpy_s_pearson_r_and_its_mean():
    rng = np.random.default_rng(0)
    scored = rng.normal(size=(6, len(FEATURES)))
    predicted = scored + rng.normal(scale=0.5, size=scored.shape)
    predicted[:, 1] = 3.0  # constant: r undefined
    predicted[0, 2] = np.nan  # one recording left out of that feature
    got = feature_agreement(scored, predicted)
    assert got[FEATURES[0]]["pearson_r"] == pytest.approx(
        np.corrcoef(scored[:, 0], predicted[:, 0])[0, 1])
    assert math.isnan(got[FEATURES[1]]["pearson_r"])
    assert got[FEATURES[2]]["n"] == 5 and got[FEATURES[2]]["pearson_r"] == pytest.approx(
        np.corrcoef(scored[1:, 2], predicted[1:, 2])[0, 1])
    assert got[FEATURES[0]]["mae"] == pytest.approx(np.abs(predicted[:, 0] - scored[:, 0]).mean())
    finite = [v["pearson_r"] for v in got.values() if not math.isnan(v["pearson_r"])]
    assert len(finite) == 33 and mean_pearson_r(got) == pytest.approx(np.mean(finite))
    same = feature_agreement(scored, scored)
    assert mean_pearson_r(same) == pytest.approx(1.0)
