"""Sleep arousal (the reference's sleep_arousal, task preset arousal.json): one probe per
threshold of arousal seconds per epoch, 0, 1, 3, 5, 7 and 9 s; the headline is 3 s."""

from embedprobe.tasks.sleep_events.task import SleepEvents

TASK = SleepEvents("sleep_arousal", fields={"arousal": ("arousal",)},
                   thresholds=(0.0, 1.0, 3.0, 5.0, 7.0, 9.0), headline=("arousal", 3.0))
