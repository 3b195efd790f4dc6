"""The project's config over conftest's generated Sleep-EDF demo, for check and preflight tests."""

from __future__ import annotations

from embedprobe.core.config import load_config

from helpers.project import with_local_weights

DATASET = "sleep_edf_expanded"
N_RECORDINGS = 10  # conftest's demo: 5 subjects x 2 nights


def make_config(data_root, tmp, expected=N_RECORDINGS, allow_partial=False):
    """The project's config with the Sleep-EDF entry pointed at the demo and every root in tmp."""
    config = with_local_weights(load_config())
    config["datasets"][DATASET].update(path="sleep-edf", expected_recordings=expected)
    config["allow_partial"] = allow_partial
    roots = {"data_root": str(data_root), "cache_root": str(tmp / "cache"),
             "results_root": str(tmp / "results"), "weights_root": str(tmp / "weights")}
    return config, roots
