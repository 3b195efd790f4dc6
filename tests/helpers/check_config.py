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


def checked_pair(demo_root, tmp, model: str = "biot_random", batch_size: int = 32):
    """The demo's config (its roots inside, as a job's config carries them), roots, window
    index and a passing check of `model` on it."""
    from embedprobe.pipeline.check import OK, check_pair
    from embedprobe.pipeline.context import DatasetContext
    from embedprobe.pipeline.index import build_index, write_index

    config, roots = make_config(demo_root.parent, tmp)
    config.update(roots)
    index = tmp / "index.tsv"
    write_index(build_index(DatasetContext.build(config, roots, DATASET)), index)
    check = check_pair(DatasetContext.build(config, roots, DATASET), model, batch_size)
    assert check.status == OK, check.note
    return config, roots, index, check
