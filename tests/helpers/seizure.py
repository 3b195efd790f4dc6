"""Shared checks of the seizure look-alikes: is the seizure signature there after each channel of
each window is divided by its 95th percentile (BIOT's scaling), and do the channel maps fit."""

from __future__ import annotations

import numpy as np
import scipy.signal

from embedprobe.pipeline.channel_maps import CHANNEL_MAP_DIR, channel_plan, map_entries

WINDOW_S = 10
BANDS = ((1, 2.5), (2.5, 6), (6, 9), (9, 13), (13, 20), (20, 30), (30, 45))


def window_features(reader, root, channels):
    """Per 10 s window: log relative band powers averaged over channels, the label (overlaps
    a seizure) and the patient."""
    features, labels, patients = [], [], []
    for rec in reader.find_recordings(root):
        signals = reader.read_signals(rec, channels)
        events = reader.read_events(rec)
        width = int(WINDOW_S * signals.sfreq)
        for i in range(signals.data.shape[1] // width):
            x = signals.data[:, i * width:(i + 1) * width].astype(np.float64)
            x /= np.percentile(np.abs(x), 95, axis=1, keepdims=True)
            freqs, power = scipy.signal.welch(x, signals.sfreq, nperseg=int(2 * signals.sfreq))
            bands = np.stack([power[:, (freqs >= lo) & (freqs < hi)].sum(1) for lo, hi in BANDS],
                             axis=1)
            features.append(np.log(bands / bands.sum(1, keepdims=True)).mean(0))
            start, end = i * WINDOW_S, (i + 1) * WINDOW_S
            labels.append(any(start < e.end and e.onset < end for e in events))
            patients.append(rec.subject)
    return np.array(features), np.array(labels), np.array(patients)


def band_power_auroc(reader, root, channels) -> tuple[float, int, int]:
    """(pooled AUROC of a band-power logistic regression, leave one patient out; windows;
    seizure windows)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    x, y, patients = window_features(reader, root, channels)
    scores = np.zeros(len(y))
    for patient in np.unique(patients):
        test = patients == patient
        model = make_pipeline(StandardScaler(), LogisticRegression(class_weight="balanced"))
        model.fit(x[~test], y[~test])
        scores[test] = model.decision_function(x[test])
    return float(roc_auc_score(y, scores)), len(y), int(y.sum())


def ruled_out_of_its_tasks(config: dict, map_name: str, family: str) -> bool:
    """Whether the reference leaves the family out of the task of every dataset that reads
    the map (its catalogue's `rule_out:`): such a map skips the family."""
    from embedprobe.core.reference_models import rule_out_reason
    from embedprobe.datasets.registry import labelling_task_name

    tasks = {labelling_task_name(entry) for dataset, entry in config["datasets"].items()
             if entry.get("channel_map", dataset) == map_name}
    return bool(tasks) and all(rule_out_reason(config["reference_models"], family, task)
                               for task in tasks)


def check_channel_map(map_name: str, recorded: set[str]) -> dict:
    """Every family's plan of the map: its recorded channels exist, its model names are unique
    and known to the model's braindecode table. Returns family -> plan."""
    from braindecode.models.eegpt import CHANNEL_DICT
    from braindecode.models.labram import LABRAM_CHANNEL_ORDER

    from embedprobe.core.config import load_config
    from embedprobe.models.electrodes import template_positions

    positions = set(template_positions())  # the families that embed a channel by position
    tables = {"labram": {n.upper() for n in LABRAM_CHANNEL_ORDER},
              "eegpt": {n.upper() for n in CHANNEL_DICT},
              "signal_jepa": positions, "luna": positions, "reve": positions}
    families = map_entries(CHANNEL_MAP_DIR / f"{map_name}.yaml")  # a like: map resolved
    shipped = load_config()
    assert set(families) == {e["family"] for e in shipped["models"].values()}
    config = {"datasets": {"demo": {"channel_map": map_name}}}
    plans = {}
    for family in families:
        plan = channel_plan(config, "demo", family)
        if ruled_out_of_its_tasks(shipped, map_name, family):  # EEGNet's MI classifiers
            assert plan.ruled_out, family
            continue
        assert not plan.ruled_out, (family, plan.reason)
        assert set(plan.recorded) <= recorded, (family, set(plan.recorded) - recorded)
        assert len(set(plan.model_names)) == len(plan.model_names), family
        if family in tables:
            assert {n.upper() for n in plan.model_names} <= tables[family], family
        if family == "eegdino":  # its 19 channel slots
            assert len(plan.model_names) <= 19
        plans[family] = plan
    return plans
