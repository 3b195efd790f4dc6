"""The sleep-event tasks' parts against known answers: the seconds of events in each window,
the probes per field and threshold (a planted signature found, shuffled labels at chance), the
pooled columns and the AUPRC chance level."""

from __future__ import annotations

import numpy as np
import pytest

from embedprobe.probing.split import Split
from embedprobe.reporting.chance import chance_level
from embedprobe.tasks.registry import task_for
from embedprobe.tasks.sleep_events.overlap import (
    field_overlap_seconds,
    merged_intervals,
    overlap_seconds,
)
from embedprobe.tasks.sleep_events.probe import EventProbe, event_scores, fit_event_probes


def test_overlap_seconds_by_hand():
    """Spans 10-20 and 15-40 join into 10-40; 85-200 runs over two windows; a 0 s event
    counts nothing: windows of 30 s at 0, 30, 60, 90 hold 20, 10, 5 and 30 s."""
    spans = [(10, 20), (15, 40), (85, 200), (50, 50)]
    assert merged_intervals(spans).tolist() == [[10, 40], [85, 200]]
    got = overlap_seconds(np.array([0, 30, 60, 90]), 30, spans)
    assert got.tolist() == [20, 10, 5, 30]
    assert overlap_seconds(np.array([0.0, 30.0]), 30, []).tolist() == [0, 0]


def test_overlap_matches_a_sample_count_on_random_spans():
    """Against counting covered 1 ms steps, over 200 random spans."""
    rng = np.random.default_rng(0)
    onsets = rng.uniform(0, 3000, 200)
    spans = list(zip(onsets, onsets + rng.uniform(0, 40, 200), strict=True))
    starts = np.arange(0, 3000, 30.0)
    grid = np.arange(0, 3030, 0.001) + 0.0005
    covered = np.zeros(len(grid), bool)
    for a, b in spans:
        covered[(grid >= a) & (grid < b)] = True
    by_count = covered[:len(starts) * 30000].reshape(len(starts), 30000).sum(1) / 1000
    assert np.allclose(overlap_seconds(starts, 30, spans), by_count, atol=2e-3)


def test_a_field_of_several_kinds_sums_them_capped_at_the_epoch_as_the_reference():
    """The reference's readers (dataio/ucddb.py, dataio/physionet2026.py) add each kind's share
    of the epoch and clip the sum at 1: an obstructive apnea 5-25 s inside a hypopnea 0-30 s
    makes 20 + 30 = 50 s, capped at 30; a central apnea 40-50 s beside a hypopnea 45-55 s
    makes 10 + 10 = 20 s where their union is 15 s; nothing in the third epoch. Written here as
    the reference's fractions (overlap / 30, summed, np.clip 0..1, x 30 s)."""
    spans = {"apnea_obstructive": [(5, 25)], "apnea_central": [(40, 50)],
             "hypopnea": [(0, 30), (45, 55)]}
    starts = np.array([0.0, 30.0, 60.0])
    fractions = np.zeros(3)
    for kind_spans in spans.values():
        for a, b in kind_spans:
            for ep, s0 in enumerate(starts):
                fractions[ep] += max(0.0, min(b, s0 + 30) - max(a, s0)) / 30
    reference = np.clip(fractions, 0.0, 1.0) * 30
    got = field_overlap_seconds(starts, 30, spans)
    assert got.tolist() == reference.tolist() == [30.0, 20.0, 0.0]
    assert field_overlap_seconds(starts, 30, spans, "union").tolist() == [30.0, 15.0, 0.0]
    # one kind: the same either way (a kind is the union of its own spans)
    one = {"hypopnea": [(0, 30), (10, 20)]}
    assert field_overlap_seconds(starts, 30, one).tolist() == [30.0, 0.0, 0.0]


def test_respiratory_event_any_is_the_references_rdi_without_periodic_breathing():
    fields = task_for("sleep_respiratory").fields
    assert set(fields["respiratory_event_any"]) == set(fields["rdi"])
    assert "periodic_breathing" not in fields["respiratory_event_any"]


def test_an_unknown_field_overlap_is_refused_with_the_choices():
    from embedprobe.core.errors import UsageError
    from embedprobe.tasks.sleep_events.task import field_overlap

    assert field_overlap({}) == "capped_sum"
    assert field_overlap({"probe": {"field_overlap": "union"}}) == "union"
    with pytest.raises(UsageError, match="capped_sum, union") as error:
        field_overlap({"probe": {"field_overlap": "max"}})
    assert "field_overlap: capped_sum" in error.value.fix


def test_event_scores_by_hand():
    """Probabilities 0.1 0.6 0.4 0.9 for labels 0 0 1 1: ranks give AUROC 0.75, average
    precision (1 + 2/3) / 2 = 0.8333; at 0.5 the predictions 0 1 0 1 give BA 0.5, F1 0.5."""
    got = event_scores(np.array([0, 0, 1, 1]), np.array([0.1, 0.6, 0.4, 0.9]))
    assert got["auroc"] == pytest.approx(0.75)
    assert got["auprc"] == pytest.approx(0.8333, abs=1e-4)
    assert got["balanced_accuracy"] == pytest.approx(0.5)
    assert got["macro_f1"] == pytest.approx(0.5)
    assert np.isnan(event_scores(np.zeros(3, int), np.array([0.2, 0.3, 0.9]))["auprc"])


def planted(n: int = 900, signal: float = 1.5, seed: int = 0):
    """Windows whose event seconds (0-30) shift 4 of 16 features by `signal` x seconds / 10."""
    rng = np.random.default_rng(seed)
    seconds = np.where(rng.random(n) < 0.35, rng.uniform(0, 30, n), 0.0)
    X = rng.standard_normal((n, 16)).astype(np.float32)
    X[:, :4] += (signal * seconds / 10)[:, None]
    parts = np.array(["train", "val", "test"])[np.arange(n) % 3]
    masks = {p: parts == p for p in ("train", "val", "test")}
    return X, masks, seconds


def test_the_probes_find_a_planted_signature_and_not_shuffled_labels():
    X, masks, seconds = planted()
    probes = [EventProbe("arousal", 3.0), EventProbe("arousal", 0.0), EventProbe("arousal", 40)]
    split = Split.cut(X, seconds, masks)
    results = fit_event_probes(split, {"arousal": seconds}, probes, (1.0,))
    head = results["arousal@3s"]
    share = float((seconds[masks["test"]] > 3).mean())
    assert head.details["positive_share"] == pytest.approx(share)
    assert head.test_metrics["auprc"] > 0.9 and head.test_metrics["auroc"] > 0.9
    assert head.chosen == 1.0 and not head.selection.fell_back  # a grid of one: no scoring
    assert results["arousal@0s"].test_metrics["auprc"] > 0.8  # 0.1 s of event barely moves
    # no window holds more than 40 s of a 30 s epoch: one class, skipped with the reason
    assert "one class only" in results["arousal@40s"]
    shuffled = np.random.default_rng(1).permutation(seconds)
    chance = fit_event_probes(split, {"arousal": shuffled}, probes[:1], (1.0,))
    head, share = chance["arousal@3s"].test_metrics, chance["arousal@3s"].details["positive_share"]
    assert abs(head["auroc"] - 0.5) < 0.1 and abs(head["auprc"] - share) < 0.1


def test_a_C_grid_is_chosen_on_validation_auprc():
    X, masks, seconds = planted(signal=0.3)
    results = fit_event_probes(Split.cut(X, seconds, masks), {"a": seconds},
                               [EventProbe("a", 3.0)],
                               (1e-4, 1.0))
    head = results["a@3s"]
    assert head.chosen == max((1e-4, 1.0), key=head.selection.scores.get)
    assert set(head.selection.scores) == {1e-4, 1.0} and np.isfinite(head.test_metrics["auprc"])


@pytest.mark.parametrize("name, headline, n_thresholds", [
    ("sleep_arousal", ("arousal", 3.0), 6), ("sleep_respiratory", ("ahi", 10.0), 6),
    ("sleep_limb", ("limb_movement_periodic", 0.5), 7)])
def test_the_reference_presets(name, headline, n_thresholds):
    task = task_for(name)
    assert task.headline == headline and len(task.thresholds) == n_thresholds
    assert task.metrics[0] == "auprc" and task.sd_ddof == 0 and not task.defines_units


def test_respiratory_fields_count_no_rera_in_the_headline():
    fields = task_for("sleep_respiratory").fields
    assert "rera" not in fields["ahi"] and "rera" in fields["rdi"]
    assert set(fields["ahi"]) == {"apnea_obstructive", "apnea_central", "apnea_mixed",
                                  "hypopnea"}


class _Reader:
    FORMAT = "fake"
    EVENT_KINDS = ("apnea_obstructive", "hypopnea")


def test_fields_the_format_does_not_annotate_are_skipped_with_the_reason():
    probes, skipped = task_for("sleep_respiratory").probes({}, _Reader)
    assert probes[0].key == "ahi@10s"
    assert "rera" in skipped and "periodic_breathing" in skipped and "apnea_central" in skipped
    assert {p.field for p in probes} == {"ahi", "apnea_obstructive", "hypopnea", "apnea_any",
                                         "rdi", "respiratory_event_any"}
    assert len(probes) == 6 * 6
    custom, _ = task_for("sleep_respiratory").probes({"probe": {"thresholds": [5]}}, _Reader)
    assert [p.key for p in custom][:2] == ["ahi@10s", "ahi@5s"]


def test_a_format_without_the_headline_kinds_is_refused():
    from embedprobe.core.errors import UsageError

    with pytest.raises(UsageError, match="arousal events, which the fake format") as error:
        task_for("sleep_arousal").check_recordings(_Reader, [])
    assert "sleep_arousal" in error.value.fix


def test_pooled_columns_and_the_auprc_chance():
    task = task_for("sleep_arousal")
    folds = [{"positive_share": s, "probes": {"arousal@3s": {"auprc": a},
                                              "arousal@0s": {"auprc": a + 0.1}}}
             for s, a in ((0.2, 0.6), (0.3, 0.8))]
    pooled = task.pooled_scores(folds)
    assert pooled == {"positive_share": 0.25, "auprc_3s": 0.7, "auprc_0s": 0.8}
    assert chance_level("auprc", pooled) == 0.25
