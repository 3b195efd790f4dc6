"""Motor imagery: one embedding per trial cut after its cue; leave-one-subject-out folds.

A trial starts `trial_offset_seconds` after its cue (default 1 s) and lasts the dataset's
`epoch_seconds` (default 3 s): the 1-4 s window of the reference's default BCI variant (its
confound control: after the visual evoked response to the cue, within the imagery period of
both datasets: PhysioNet MMI cues last ~4.1 s, BNCI 2014-001's imagery 4 s). The index
keeps that start; the no_filtering variants embed the whole trial, from the cue to the same
end (datasets/registry.entry_window), as the reference does without confound control.
"""

from __future__ import annotations

from embedprobe.core.units import CONFOUND_CONTROL_SECONDS
from embedprobe.tasks.bci.trials import TrialTask

# Label index = position; the readers name classes as MOABB does. Weibo 2014 adds its last
# three: the compound imageries and its cued rest trials, which its entry renames from MOABB's
# "rest" (moabb_events) so that PhysioNet's rest between cues, also "rest", stays out.
CLASSES = ("left_hand", "right_hand", "feet", "tongue", "hands", "left_hand_right_foot",
           "right_hand_left_foot", "cued_rest")

TASK = TrialTask("motor_imagery", CLASSES, cut="trial",
                 offset_seconds=CONFOUND_CONTROL_SECONDS["motor_imagery"],
                 what="motor-imagery trial")
