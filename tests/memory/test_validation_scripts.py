"""The memory validation's own parts: its verdict per fresh-clone run, its load generator and
its slow model (what the contended rows rely on)."""

from __future__ import annotations

import sys
import time
from types import SimpleNamespace

import pandas as pd
import psutil

from embedprobe.core.config import load_config
from embedprobe.devtools.calibrate_memory import PLANS, kept_fit
from embedprobe.devtools.validate_fresh_clone import run_line
from embedprobe.devtools.validate_memory import (
    GRIDS,
    chosen_grid,
    cpu_load,
    with_token_entries,
)
from embedprobe.devtools.workloads import SEIZURE_DATASET
from embedprobe.models.registry import model_spec
from embedprobe.pipeline.embed import EmbedSettings
from embedprobe.pipeline.protocol import RECORDING_Q95, preprocessing
from embedprobe.pipeline.window_parts import PART_WINDOWS

from helpers.project import PROJECT


def runs(peaks, requests, statuses=None) -> pd.DataFrame:
    jobs = ["embed"] + [f"probe/demo/fold{k}" for k in range(len(peaks) - 1)]
    return pd.DataFrame({"job": jobs, "estimate_mb": [p * 0.95 for p in peaks],
                         "request_mb": requests, "peak_mb": peaks,
                         "status": statuses or ["ok"] * len(peaks)})


def test_a_fresh_clone_run_passes_only_when_every_peak_is_covered():
    line, ok = run_line(1, 0, runs([700.0, 150.0, 188.0], [749, 179, 208]))
    assert ok and line.startswith("run 1: exit 0, 3 jobs, embed peak 700 of 749 MB")
    assert "closest embed 700 of 749 MB" in line and "3/3 covered: pass" in line
    line, ok = run_line(2, 0, runs([741.0, 150.0, 209.0], [749, 179, 208]))
    assert not ok and "closest probe/demo/fold1 209 of 208 MB, 2/3 covered: FAIL" in line
    assert not run_line(3, 1, runs([700.0], [749]))[1]  # snakemake failed
    assert run_line(4, 1, pd.DataFrame()) == ("run 4: exit 1, no runs table", False)


def test_the_load_generator_runs_busy_processes_and_stops_them():
    before = {p.pid for p in psutil.Process().children()}
    with cpu_load(3, seconds=60):
        busy = [p for p in psutil.Process().children() if p.pid not in before]
        assert len(busy) == 3 and all(p.is_running() for p in busy)
        time.sleep(1.0)  # busy: they burn CPU time (however loaded the machine is)
        assert sum(p.cpu_times().user for p in busy) > 0.1
    assert not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in busy)


def test_the_slow_model_is_read_from_the_environment(monkeypatch):
    monkeypatch.setenv("EMBEDPROBE_FAULT_SLOW_BATCH_S", "0.25")
    assert EmbedSettings.from_environment(batch_size=8, reader_threads=2).slow_batch_seconds == 0.25
    monkeypatch.delenv("EMBEDPROBE_FAULT_SLOW_BATCH_S")
    assert EmbedSettings.from_environment(batch_size=8, reader_threads=2).slow_batch_seconds is None


def normalisations(models) -> set:
    config = load_config()
    return {preprocessing(config, SEIZURE_DATASET,
                          model_spec(config, model, SEIZURE_DATASET)).normalisation
            for model in models}


def test_the_grids_run_seizure_data_with_and_without_the_recording_statistic():
    """The embed rows on the CHB-MIT look-alike: BIOT with its recording statistic over files
    longer than a part (it then reads more than its largest stretch), a model without it."""
    for grid in (GRIDS["full"], PLANS["quick"], PLANS["full"]):
        models = grid.get("seizure_embed_models") or [m for m, *_ in grid["embed_seizure"]]
        assert normalisations(models) == {RECORDING_Q95, None}
    files = GRIDS["full"]["seizure_embed_files"]
    assert any(windows > PART_WINDOWS for windows, _ in files)
    assert any(windows > PART_WINDOWS for _, windows, _ in PLANS["quick"]["embed_seizure"])
    assert normalisations(GRIDS["quick"]["seizure_embed_models"]) == {RECORDING_Q95}


def test_a_refit_of_some_job_types_keeps_the_others_fit_rows():
    old = {"embed_cpu": {"fit_max_over_prediction_mb": 18.0},
           "probe_ridge": {"fit_max_over_prediction_mb": 1.1},
           "in_sample": [{"job": "embed_cpu", "run": "old embed", "error": 0.05},
                         {"job": "probe_ridge", "run": "40 x 16", "error": 0.0}]}
    new = {"embed_cpu": {"fit_max_over_prediction_mb": 3.0},
           "in_sample": [{"job": "embed_cpu", "run": "new embed", "error": 0.01}]}
    fit = kept_fit(old, new, ("embed_cpu",))
    assert fit["embed_cpu"] == {"fit_max_over_prediction_mb": 3.0}
    assert fit["probe_ridge"] == {"fit_max_over_prediction_mb": 1.1}
    assert [row["run"] for row in fit["in_sample"]] == ["40 x 16", "new embed"]


def test_a_part_of_the_embed_rows_is_chosen_by_model_and_night_length():
    grid = chosen_grid(SimpleNamespace(quick=False, models="biot_random,luna_random",
                                       hours="0.1667"))
    assert grid["embed_models"] == ("biot_random",) and grid["family_models"] == ("luna_random",)
    assert grid["embed_hours"] == grid["family_hours"] == (1 / 6,)
    assert grid["seizure_embed_models"] == ("biot_random",) and grid["seizure_embed_files"]
    alone = chosen_grid(SimpleNamespace(quick=False, models="luna_random", hours=None))
    assert alone["embed_models"] == () and alone["seizure_embed_files"] == ()
    assert alone["family_hours"] == GRIDS["full"]["family_hours"]
    assert chosen_grid(SimpleNamespace(quick=True, models=None, hours=None)) == GRIDS["quick"]


def test_the_embed_rows_data_sets_are_chosen_by_name(tmp_path):
    """--datasets: the default grid reads Sleep-EDF and CHB-MIT; naming dcsm gives the DCSM
    look-alike's nights (psg.h5 at the demo's 64 Hz or the release's 256, written as asked);
    an unknown name is refused with the names to use."""
    import h5py
    import pytest

    from embedprobe.devtools.validate_memory import embed_sets

    assert GRIDS["full"]["embed_datasets"] == ("sleep_edf", "chbmit")
    args = SimpleNamespace(quick=True, models="biot_random", hours="0.25", datasets=["dcsm"])
    grid = chosen_grid(args)
    assert grid["embed_datasets"] == ("dcsm",) and grid["dcsm_embed_nights"] == ((0.25, 64.0),)
    sets = list(embed_sets(grid, tmp_path, contended=False))
    assert len(sets) == 1
    demo, size, models, _ = sets[0]
    assert demo.dataset == "dcsm_demo" and models == ("biot_random",) and "64 Hz" in size
    assert demo.n_windows == 4 * 30  # 4 nights of 15 min, 30 s windows
    psg = next((tmp_path / "embed_dcsm_0.25h_64hz").rglob("psg.h5"))
    with h5py.File(psg) as h5:
        assert h5.attrs["sample_rate"] == 64.0
    assert (1.0, 256.0) in GRIDS["quick"]["dcsm_embed_nights"]  # the release's rate
    with pytest.raises(SystemExit, match="unknown embed data sets \\['edf'\\]"):
        chosen_grid(SimpleNamespace(quick=True, models=None, hours=None, datasets=["edf"]))


def test_the_family_token_rows_cover_every_family_with_a_patch_grid():
    """Every family but the two without a patch grid gets a token row, its entry the pooled
    one with `pooling: tokens`; the shipped token entries are kept as declared."""
    from embedprobe.models.architectures import ARCHITECTURES

    config = load_config()
    token_models = GRIDS["full"]["family_token_models"]
    classes = {model_spec(config, m.removesuffix("_tokens"), SEIZURE_DATASET).architecture
               for m in token_models}
    with_grid = {name for name, arch in ARCHITECTURES.items() if arch.tokens is not None}
    assert classes == with_grid
    entries = with_token_entries(config["models"], token_models)
    assert entries["luna_random_tokens"] == config["models"]["luna_random"] | {"pooling": "tokens"}
    assert entries["eegpt_random_tokens"] is config["models"]["eegpt_random_tokens"]
    assert "luna_random_tokens" not in config["models"]  # the project's config is left alone


def test_the_calibration_measures_the_store_writers_own_buffers(tmp_path):
    """The calibration's store child: a writer of 1,000 pooled rows grows by its buffers (a
    few MB of h5py's and HDF5's) while appending, and by its finish block of 1 MB of rows and
    the window table it reads back while finishing (2026-12-05: 3.1 and 3.1 MB)."""
    import subprocess

    from embedprobe.devtools.calibrate_memory import child_argv, child_result

    params = {"n_windows": 1000, "feature_dim": 256, "batch_size": 32,
              "out": str(tmp_path / "store.h5"), "finish_block_bytes": 16 * 2**20}
    run = subprocess.run(child_argv("store_writer", params), capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    grew = child_result(SimpleNamespace(stdout=run.stdout))
    assert 32 * 256 * 4 < grew["appending"] < 20 * 2**20, grew
    assert 0 < grew["finishing"] < 20 * 2**20, grew
    assert (tmp_path / "store.h5").is_file() and not (tmp_path / "store.h5.partial").exists()


def test_a_kept_grid_is_predicted_again_with_another_table(tmp_path):
    """reestimate_grid joins each embed row with its kept preflight record by model and window
    count, and predicts it from the record's inputs with the table given: with a table whose
    factor is doubled, the row's activations count twice; an unknown row is exit 2 (usage)."""
    import json
    import subprocess

    import yaml

    from embedprobe.core.units import MIB
    from embedprobe.memory.calibration import CALIBRATION_PATH, load_calibration
    from embedprobe.memory.estimate import estimate

    inputs = {"batch_size": 32, "n_channels": 2, "n_samples": 6000, "feature_dim": 256,
              "weights_bytes": 4_000_000, "recording_bytes": 6 * MIB, "night_windows": 138,
              "n_workers": 2, "n_windows": 552, "resample_ratio": 2.0,
              "batch_activation_bytes": 200 * MIB, "activation_batch_size": 32,
              "measured_baseline_bytes": 440 * MIB}
    shipped = load_calibration(CALIBRATION_PATH)
    record = estimate("embed_cpu", inputs, shipped, None).as_dict() | {"inputs": inputs}
    folder = tmp_path / "w" / "families" / "embed_0.167h" / "preflight"
    folder.mkdir(parents=True)
    (folder / "luna_random.json").write_text(json.dumps({"jobs": {"embed": record}}))
    rows = tmp_path / "rows.tsv"
    rows.write_text("job\tmodel\tsize\tpredicted_mb\trequest_mb\tmeasured_mb\tseconds\n"
                    "embed\tluna_random\t552 windows, 10 min sleep/night\t0\t0\t700.0\t60.0\n")
    doubled = yaml.safe_load(CALIBRATION_PATH.read_text())
    doubled["jobs"]["embed_cpu"]["activation_factor"] *= 2
    table = tmp_path / "doubled.yaml"
    table.write_text(yaml.safe_dump(doubled))

    def run(rows_path):
        return subprocess.run([sys.executable, str(PROJECT / "scripts" / "reestimate_grid.py"),
                               "--workdir", str(tmp_path / "w"), "--rows", str(rows_path),
                               "--table", str(table)], capture_output=True, text=True,
                              timeout=120)

    done = run(rows)
    assert done.returncode in (0, 1), done.stderr
    again = estimate("embed_cpu", inputs, load_calibration(table), None)
    line = next(x for x in done.stdout.splitlines() if x.startswith("| embed | luna_random"))
    assert f"| {again.total / MIB:,.0f} | {again.request_mb:,} | 700 |" in line
    grown = (again.terms["batch activations"]
             - estimate("embed_cpu", inputs, shipped, None).terms["batch activations"])
    assert grown >= 200 * MIB * shipped["jobs"]["embed_cpu"]["activation_factor"] * 0.99
    missing = tmp_path / "missing.tsv"
    missing.write_text(rows.read_text().replace("552 windows", "999 windows"))
    refused = run(missing)
    assert refused.returncode == 2 and "no preflight record for luna_random at 999" in \
        refused.stderr and "fix:" in refused.stderr
