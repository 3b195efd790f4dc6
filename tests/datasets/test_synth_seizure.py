"""The synthetic seizures the CHB-MIT and Siena look-alikes share: where their power lies, how
they start, how strong they are, how long they last and which kinds there are."""

import numpy as np
import pytest
import scipy.signal

from embedprobe.datasets.synth import seizure as synth

SFREQ = 256.0
ELECTRODES = ("F7", "T7", "P7", "C3", "CZ", "C4", "O1", "FP2")


def one_seizure(kind: str, seed: int, duration: int = 40, ratio: float = 1.2):
    """(electrodes x samples discharge in uV, its 0..1 envelope) of one seizure at 5 s in 50 s,
    its focus on T7; the patient's background RMS 15 uV."""
    positions = np.stack([synth._position(e) for e in ELECTRODES])
    patient = synth.Patient((-1.0, 0.0), 10.0, 15.0, ratio, kind, 1.0)
    rng = np.random.default_rng(seed)
    return synth._seizure(rng, synth.Seizure(5, duration), SFREQ, positions, patient,
                          int(50 * SFREQ))


@pytest.mark.parametrize("kind", synth.SEIZURE_KINDS)
def test_a_seizure_holds_its_power_in_2_to_30_hz(kind):
    # what the reference's 0.5 Hz high-pass and the powerline notch leave alone
    for seed in range(5):
        wave, _ = one_seizure(kind, seed)
        freqs, power = scipy.signal.welch(wave, SFREQ, nperseg=int(2 * SFREQ))
        inside = power[:, (freqs >= 2) & (freqs <= 30)].sum()
        assert inside / power.sum() > 0.9, (kind, seed)


def test_a_seizure_builds_up_over_seconds():
    # a build-up of 2-12 s (at most 40% of the seizure): its first second is far weaker than
    # its 13th-16th seconds, by which every build-up is over
    for seed in range(10):
        wave, envelope = one_seizure("rhythmic_theta", seed)
        onset = int(5 * SFREQ)
        first = wave[:, onset:onset + int(SFREQ)].std()
        later = wave[:, onset + int(12 * SFREQ):onset + int(16 * SFREQ)].std()
        assert first < 0.5 * later, seed
        assert envelope[:onset].max() == 0 and envelope[onset + int(16 * SFREQ)] > 0.5


def test_seizures_are_a_few_times_the_background_at_most():
    # the discharge's RMS over the seizure, at the strongest electrode, against the 15 uV
    # background: the patient's ratio (1.2) x a strength of 0.3-1.3 x the field's unevenness
    levels = []
    for seed in range(20):
        wave, envelope = one_seizure("spike_wave", seed)
        during = envelope > 0
        levels.append(wave[:, during].std(axis=1).max() / 15.0)
    assert 0.1 < min(levels) and max(levels) < 4.0
    assert np.median(levels) < 2.0  # far from the easy 8x of a textbook discharge


def test_seizure_lengths_and_kinds_vary():
    rng = np.random.default_rng(0)
    durations = np.array([s.duration for _ in range(2000)
                          for s in synth.place_seizures(rng, 1, 0, 600)])
    assert durations.min() >= synth.MIN_SEIZURE_S and durations.max() <= synth.MAX_SEIZURE_S
    # 20 + 70 u^2: short ones more often; median 20 + 70 / 4 = 37.5 s, and P(<= 55 s) =
    # P(u <= sqrt(1/2)) = 0.71 (uniform lengths: 0.5)
    assert 35 < np.median(durations) < 40
    assert 0.68 < np.mean(durations <= 55) < 0.74
    kinds = {synth.patient_traits(np.random.default_rng(k)).kind for k in range(30)}
    assert kinds == set(synth.SEIZURE_KINDS)


def test_seizures_fit_their_span_and_keep_their_gap():
    rng = np.random.default_rng(1)
    # two need 20 + 20 (gap) + 20 s: in 30 s one fits (cut to 30 s at most), in 19 s none
    (only,) = synth.place_seizures(rng, 2, 0, 30)
    assert 20 <= only.duration <= 30 and 0 <= only.onset and only.end <= 30
    assert synth.place_seizures(rng, 1, 0, 19) == []
    for _ in range(50):
        pair = synth.place_seizures(rng, 2, 10, 350)
        assert len(pair) == 2 and pair[1].onset - pair[0].end >= synth.SEIZURE_GAP_S
        assert pair[0].onset >= 10 and pair[1].end <= 350
