"""Where each electrode sits, for the families that embed a channel by its position.

SignalJEPA and LUNA turn each channel's 3-D position (braindecode's `chs_info[i]["loc"]`) into
its channel embedding; without positions braindecode gives them NaN or made-up positions and
the embeddings are silently meaningless. REVE looks its channels up by name in its own position
bank (models/hub.py fetches the published one with the weights); a random-init REVE is given a
bank of these same positions, so it never reaches for the network.

Positions are MNE's 10-05 template (`colin27_1005`, head coordinates in metres; MNE names
`standard_1005` the same template); names are matched without regard to case, and the old
temporal names (T3, T4, T5, T6) are in it. A channel map gives these families electrode names
(config/channel_maps/): a bipolar derivation takes the name of one of its electrodes.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from embedprobe.core.errors import ModelError

TEMPLATE = "colin27_1005"
MNE_LOC_LENGTH = 12  # an MNE channel's `loc`: its position, then the reference's and a normal


@cache
def template_positions() -> dict[str, tuple[float, float, float]]:
    """Upper-case electrode name -> (x, y, z) in metres, from MNE's 10-05 template."""
    import mne

    montage = mne.channels.make_standard_montage(TEMPLATE)
    return {name.upper(): tuple(float(v) for v in pos)
            for name, pos in montage.get_positions()["ch_pos"].items()}


def positions(ch_names: tuple[str, ...], family: str,
              known: dict[str, tuple[float, float, float]] | None = None) -> np.ndarray:
    """(channels, 3) float32 positions of the named electrodes in `known` (default: the
    template); a name without a position is refused rather than guessed."""
    table = template_positions() if known is None else known
    unknown = [name for name in ch_names if name.upper() not in table]
    if unknown:
        source = f"MNE's {TEMPLATE} template" if known is None else "its position bank"
        raise ModelError(
            f"{family} embeds channels by position and {source} has none for {unknown}",
            fix="rename them in the dataset's channel map (config/channel_maps/) to 10-05 "
                "electrode names (a bipolar derivation: one of its electrodes)")
    return np.array([table[name.upper()] for name in ch_names], np.float32)


def chs_info(ch_names: tuple[str, ...], family: str) -> list[dict]:
    """braindecode's channel description: each name with its template position as `loc`."""
    locations = np.zeros((len(ch_names), MNE_LOC_LENGTH))
    locations[:, :3] = positions(ch_names, family)
    return [{"ch_name": name, "loc": loc} for name, loc in zip(ch_names, locations, strict=True)]
