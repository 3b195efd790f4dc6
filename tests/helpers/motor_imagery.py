"""The cheap check of a motor-imagery look-alike's class signature, shared by its tests."""

from __future__ import annotations

import numpy as np
import scipy.signal

from helpers.loso import loso_scores


def band_power_accuracy(reader, recordings, classes) -> float:
    """Leave-one-subject-out balanced accuracy of log band powers (0.5-4.5 s after each cue,
    each channel first divided by its 95th percentile, as BIOT scales) + logistic regression."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    features, labels, groups = [], [], []
    for rec in recordings:
        channels = [c for c in reader.read_header(rec).channels if not c.startswith("EOG")]
        signals = reader.read_signals(rec, channels)
        for event in reader.read_events(rec):
            if event.description not in classes:
                continue
            start = round((event.onset + 0.5) * signals.sfreq)
            window = signals.data[:, start:start + round(4 * signals.sfreq)].astype(float)
            window /= np.percentile(np.abs(window), 95, axis=1, keepdims=True)
            freqs, power = scipy.signal.welch(window, signals.sfreq, nperseg=signals.sfreq)
            bands = [power[:, (freqs >= lo) & (freqs < hi)].mean(1)
                     for lo, hi in ((4, 8), (8, 13), (13, 20), (20, 30))]
            features.append(np.log(np.stack(bands, 1)).ravel())
            labels.append(classes.index(event.description))
            groups.append(rec.subject)
    model = make_pipeline(StandardScaler(), LogisticRegression(C=0.1, max_iter=1000))
    scores = loso_scores(model, np.array(features), np.array(labels), np.array(groups))
    return float(np.mean(scores))
