"""The embed batch size has one owner: preflight decides it and writes it in the pair's JSON;
embed reads it there; --batch-size is only the user's explicit override."""

from __future__ import annotations

import json
from argparse import Namespace

from embedprobe.cli import embed_knobs
from embedprobe.core.config import load_config
from embedprobe.core.units import MIB as MiB
from embedprobe.memory.estimate import fit_knobs


def preflight_json(tmp_path, knobs: dict):
    path = tmp_path / "pair.json"
    path.write_text(json.dumps({"jobs": {"embed": {"knobs": knobs, "total": 500 * MiB,
                                                   "request_mb": 600}}}))
    return str(path)


def test_embed_takes_preflights_decision_over_the_config(tmp_path, capsys):
    config = load_config()
    config["embed"].update(batch_size=64, reader_threads=3)
    args = Namespace(estimate=preflight_json(tmp_path, {"batch_size": 8, "n_workers": 1}),
                     batch_size=None)
    assert embed_knobs(args, config) == {"batch_size": 8, "n_workers": 1}
    assert capsys.readouterr().err == ""


def test_batch_size_flag_overrides_only_the_batch(tmp_path):
    args = Namespace(estimate=preflight_json(tmp_path, {"batch_size": 8, "n_workers": 1}),
                     batch_size=5)
    assert embed_knobs(args, load_config()) == {"batch_size": 5, "n_workers": 1}


def test_without_preflight_the_request_is_used_and_said_to_be_unsized(capsys):
    config = load_config()
    config["embed"].update(batch_size=16, reader_threads=0)
    knobs = embed_knobs(Namespace(estimate=None, batch_size=None), config)
    assert knobs == {"batch_size": 16, "n_workers": 0}
    assert "not sized to the memory limit" in capsys.readouterr().err


def test_the_knobs_embed_reads_are_the_ones_fit_knobs_chose(tmp_path):
    """What preflight writes (the estimate's knobs) is what embed runs with."""
    inputs = {"batch_size": 64, "n_channels": 2, "n_samples": 6000, "feature_dim": 256,
              "weights_bytes": 13e6, "recording_bytes": 46e6, "night_windows": 1000,
              "batch_activation_bytes": 2 * 1024 * MiB, "activation_batch_size": 64,
              "n_workers": 2}
    calibration = {"jobs": {}}
    at_16 = fit_knobs("embed_cpu", {**inputs, "batch_size": 16}, calibration, None)
    chosen = fit_knobs("embed_cpu", inputs, calibration, at_16.request_mb * MiB)
    path = tmp_path / "pair.json"
    path.write_text(json.dumps({"jobs": {"embed": chosen.as_dict()}}))
    args = Namespace(estimate=str(path), batch_size=None)
    assert embed_knobs(args, load_config()) == {"batch_size": 16, "n_workers": 2}
