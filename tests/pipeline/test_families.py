"""Every family's random init through the workflow's own steps on generated Sleep-EDF nights:
check (reader, channel map, preprocessing, a real braindecode model, one 4-window batch) and a
one-batch embed into a real HDF5 store (the run over every family end to end is the
families_demo benchmark: docs/measurements)."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

from embedprobe.core.config import load_config
from embedprobe.models.architectures import ARCHITECTURES
from embedprobe.models.registry import model_spec
from embedprobe.pipeline.check import OK, check_pair
from embedprobe.pipeline.context import DatasetContext
from embedprobe.pipeline.embed import EmbedSettings, run_embed
from embedprobe.pipeline.index import build_index, write_index

from helpers.check_config import DATASET, make_config

# The families added from braindecode's list (BIOT, LaBraM, CBraMod and EEGPT go through check
# and embed in the workflow tests already).
RANDOM_IDS = ["bendr_random", "signal_jepa_random", "luna_random", "reve_random",
              "steegformer_random", "codebrain_random", "eegdino_random", "chronos_random",
              "moment_random"]
# The time-series models need their optional extra (models/time_series.py;
# tests/models/test_time_series.py checks the skip without it)
NEEDS_EXTRA = {"chronos_random": "chronos", "moment_random": "transformers"}


def test_the_list_is_every_added_family():
    families = {e["family"] for e in load_config()["models"].values()}
    # EEGNet's motor-imagery classifiers are ruled out of sleep staging: their check on a
    # motor-imagery look-alike is tests/models/test_eegnet.py
    assert families - {"biot", "labram", "cbramod", "eegpt", "eegnetv4"} == {
        model_spec(load_config(), m).family for m in RANDOM_IDS}


@pytest.fixture(scope="module")
def indexed(demo_root, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("families")
    config, roots = make_config(demo_root.parent, tmp)
    config.update(roots)
    index = tmp / "index.tsv"
    write_index(build_index(DatasetContext.build(config, roots, DATASET)), index)
    return config, roots, index, tmp


@pytest.mark.parametrize("model_id", RANDOM_IDS)
def test_each_family_checks_and_embeds_one_batch(indexed, model_id):
    if model_id in NEEDS_EXTRA:
        pytest.importorskip(NEEDS_EXTRA[model_id], reason="scripts/install.sh --time-series")
    config, roots, index, tmp = indexed
    spec = model_spec(config, model_id, DATASET)
    width = ARCHITECTURES[spec.architecture].width * (2 if spec.readout == "cls_mean" else 1)
    check = check_pair(DatasetContext.build(config, roots, DATASET), model_id, 4)
    assert check.status == OK, check.reason
    assert check.forward == f"(4, {width}) finite" and check.batch_activation_bytes > 0
    out = tmp / f"{model_id}.h5"
    run_embed(DatasetContext.build(config, roots, DATASET), model_id, index, out,
              EmbedSettings(batch_size=4, reader_threads=1, limit_batches=1))
    with h5py.File(out, "r") as store:
        embeddings = store["embeddings"][:]
        assert embeddings.shape == (4, width) and np.isfinite(embeddings).all()
        assert store.attrs["model"] == model_id
    assert embeddings.std(axis=0).max() > 0  # the windows differ
