"""The readers' speed-ups keep the store's bytes: windows of a generated night long enough for
two statistic stretches and two parts, against digests of what main made before them
(docs/measurements/2026-12-08-reader-speed.md), and reader processes that share a recording's
statistic through files."""

from __future__ import annotations

import hashlib
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from embedprobe.models.registry import model_spec
from embedprobe.pipeline import window_recipe
from embedprobe.pipeline.channel_maps import channel_plan
from embedprobe.pipeline.context import DatasetContext
from embedprobe.pipeline.index import build_index
from embedprobe.pipeline.window_parts import PART_WINDOWS, statistic_stretch
from embedprobe.pipeline.window_source import PROCESSES, THREADS, WindowSource

from helpers.lookalike import generated_sleep_edf

DATASET = "sleep_edf_demo"
# sha256 of every window, in index order, as main made them on this night before the readers'
# speed-ups (the measurement page names the commit), with numpy 2.4.6 and scipy 1.17.1: the
# digest moves if a reader's arithmetic does (or those libraries change theirs: then recompute
# it with main's readers).
MAIN_DIGESTS = {
    "biot_random": "cb652de2310acfc0cb88ac125ae10c9783d600cfc43ff09d69c284ff6638c00f",
    "cbramod_random": "d01cd95bf771813cc88bb94dbb50c18bf692bf2959b64fb407cadf190dbb9482",
}


@pytest.fixture(scope="module")
def night(tmp_path_factory):
    """One generated night of 4.5 h sleep (about 6 h recorded at 100 Hz): two stretches of
    BIOT's streamed statistic and two parts."""
    config, roots = generated_sleep_edf(tmp_path_factory.mktemp("reader_bytes"), DATASET,
                                        n_subjects=1, nights=1, hours=4.5, seed=3)
    return config, roots, build_index(DatasetContext.build(config, roots, DATASET))


def digest(stream) -> tuple[str, int]:
    h, count = hashlib.sha256(), 0
    for windows in stream:
        h.update(np.ascontiguousarray(windows).tobytes())
        count += len(windows)
    return h.hexdigest(), count


@pytest.mark.parametrize("model", sorted(MAIN_DIGESTS))
def test_the_readers_make_mains_bytes(night, model, monkeypatch):
    config, roots, index = night
    monkeypatch.setattr(window_recipe, "_STATISTICS", {})
    spec = model_spec(config, model, DATASET)
    source = WindowSource(DatasetContext.build(config, roots, DATASET), spec,
                          channel_plan(config, DATASET, spec.family), index)
    assert len(index) > PART_WINDOWS  # two parts
    # windows past the first stretch: the statistic takes two
    assert int(index["start"].max()) > statistic_stretch(30.0, 100.0)
    for kind, workers in [(THREADS, 0), (PROCESSES, 2)]:
        got, count = digest(source.stream(0, workers, kind))
        assert count == len(index)
        assert got == MAIN_DIGESTS[model], (kind, workers)


def test_reader_processes_compute_a_recordings_statistic_once_and_share_it(tmp_path,
                                                                           monkeypatch):
    """Two readers (threads here, each with its own file lock as a process has) wanting one
    recording's statistic: one computes it, the other waits and reads its file, bit for
    bit; another recording is computed anew."""
    computed = []

    def slow(recipe, rec, index_sfreq):
        computed.append(rec.signal_path)
        time.sleep(0.3)  # long enough that the other reader asks meanwhile
        return np.array([1.25, np.float32(1) / 3], np.float32)

    monkeypatch.setattr(window_recipe, "streamed_statistic", slow)
    window_recipe.share_statistics(str(tmp_path))
    try:
        rec = SimpleNamespace(signal_path=Path("/data/night 1.edf"))
        results = []
        readers = [threading.Thread(target=lambda: results.append(
            window_recipe._shared_statistic(None, rec, None))) for _ in range(2)]
        for reader in readers:
            reader.start()
        for reader in readers:
            reader.join()
        assert computed == [rec.signal_path]
        assert [r.tobytes() for r in results] == [slow(None, rec, None).tobytes()] * 2
        window_recipe._shared_statistic(None, SimpleNamespace(signal_path=Path("/n2")), None)
        assert len(computed) == 3  # the check above called it once more, then night 2
    finally:
        window_recipe.share_statistics(None)
