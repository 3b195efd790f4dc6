"""The formula table: every term counts, knobs come before more memory, the table loads, and
every other list of memory job types names only the registered ones."""

from __future__ import annotations

import json
import math
import random

import pytest

from embedprobe.core.errors import OutOfMemory, UsageError
from embedprobe.core.units import MIB
from embedprobe.memory import estimate as estimates
from embedprobe.memory.calibration import CALIBRATION_PATH, load_calibration
from embedprobe.memory.estimate import estimate, fit_knobs

CALIBRATION = {"jobs": estimates.DEFAULT_CONSTANTS}
GiB = 1024 * MIB


def random_inputs(job: str, rng: random.Random) -> dict:
    """Inputs of plausible size; booleans and forms are varied by their own tests."""
    if job.startswith("embed"):
        batch = rng.choice([1, 4, 16, 64])
        low = rng.randint(1, 8)
        high = low + rng.randint(1, 24)
        peak_low = rng.uniform(1e7, 1e9)
        inputs = {
            "batch_size": max(batch, high),  # at or above the measured sizes: the line is exact
            "n_channels": rng.randint(1, 64), "n_samples": rng.randint(100, 10_000),
            "feature_dim": rng.randint(8, 4096), "weights_bytes": rng.uniform(1e5, 1e9),
            "recording_bytes": rng.uniform(1e6, 2e9), "resample_ratio": rng.uniform(0.5, 3),
            # BIOT's whole-recording statistic, or none (0)
            "statistic_bytes": rng.choice([0, rng.uniform(1e6, 4e9)]),
            "n_workers": rng.randint(0, 4), "n_windows": rng.randint(0, 500_000),
            "night_windows": rng.randint(1, 2_000),
            "batch_activation_bytes": rng.uniform(1e5, 1e9), "activation_batch_size": low,
            "gpu_peaks": {low: peak_low, high: peak_low + rng.uniform(1e6, 1e9)},
            "gpu_total_bytes": 80 * GiB,
        }
        return inputs
    if job in ("probe_logistic", "probe_seizure"):
        # a width on one side of the eigen form's limit (probing/probe_forms) and its double
        # on the same side: the diagonal form past it drops the p x p matrices, so a width
        # doubled across it lowers that term, as it lowers the probe's real memory
        dim = rng.choice([rng.randint(2, 2047), rng.randint(4097, 30_000)])
        # some folds smaller than the store block the fold job reads (64 MiB), some larger
        rows = rng.choice([500_000, 2_000])
        return {"n_train": rng.randint(100, rows), "n_val": rng.randint(10, rows // 10),
                "n_test": rng.randint(10, rows // 10), "dim": dim,
                "n_classes": rng.randint(2, 10), "n_jobs": rng.randint(1, 8),
                "n_fits": rng.randint(1, 8), "dtype_bytes": rng.choice([4, 8]),
                # a knob, not a size: not grown (numeric_changes leaves booleans alone)
                "streamed": rng.choice([False, True])}
    if job == "probe_recording":  # one row per unit: the stream's inputs and the fit's
        stream = random_inputs("aggregate_subject_mean", rng)
        units = rng.randint(4, 5_000)
        return stream | {"n_units": units, "n": rng.randint(2, units), "p": stream["dim"]
                         * rng.choice([1, 2]), "n_classes": rng.randint(2, 6),
                         "n_fits": rng.randint(1, 7), "with_std": rng.choice([0, 1]),
                         "unit_rows": rng.randint(1, 3_000)}
    if job in estimates.COMPOSED:
        parts = [random_inputs(part, rng) for part in estimates.COMPOSED[job]]
        return {k: v for part in parts for k, v in part.items()}
    if job == "probe_ridge":
        return {"n": rng.randint(10, 200_000), "p": rng.randint(2, 50_000),
                "n_jobs": rng.randint(1, 4), "n_fits": rng.randint(1, 8),
                "dtype_bytes": rng.choice([4, 8])}
    return {"dim": rng.randint(2, 4096), "chunk_rows": rng.randint(1, 100_000),
            "n_subjects": rng.randint(1, 2000), "n_rows": rng.randint(1, 5_000_000)}


def numeric_changes(inputs: dict) -> list[tuple[str, dict]]:
    """Every input made larger, one at a time (whole numbers stay whole)."""
    changes = []
    for name, value in inputs.items():
        if name == "gpu_peaks":
            shifted = {b: p + 5e7 for b, p in value.items()}
            steeper = {**value, max(value): value[max(value)] + 5e7}
            changes += [("gpu_peaks+", {name: shifted}), ("gpu_peaks^", {name: steeper})]
        elif isinstance(value, bool) or name in ("activation_batch_size", "gpu_total_bytes"):
            continue  # a larger measured batch means less per window; the limit is no term
        elif isinstance(value, int):
            changes.append((name, {name: value * 2 + 1}))
        elif isinstance(value, float):
            changes.append((name, {name: value * 1.5}))
    changes.append(("on_cluster", {"on_cluster": True}))
    return changes


# Constants that stand for memory the job does not take: more of them lowers the estimate (the
# freed heap a forward pass reuses; formulas._batch_activations).
LOWERING = {"reused_heap_bytes"}


def constant_changes(job: str, lowering: bool = False) -> list[tuple[str, dict]]:
    calibration = estimates.job_constants(job, CALIBRATION)
    return [(f"constant {name}", {"jobs": {job: {**calibration, name: value * 1.5 + 1}}})
            for name, value in calibration.items() if (name in LOWERING) == lowering]


@pytest.mark.parametrize("job", sorted(estimates.JOB_TYPES))
def test_each_formula_is_at_least_each_term_and_grows_with_each(job):
    rng = random.Random(job)
    responded = set()
    for _ in range(25):
        inputs = random_inputs(job, rng)
        base = estimate(job, inputs, CALIBRATION, None)
        assert base.total == sum(base.terms.values())
        assert set(base.terms) == {name for name, _ in estimates.JOB_TYPES[job].terms}
        for name, value in base.terms.items():
            assert 0 <= value <= base.total, name
        perturbations = [(label, {**inputs, **change}, CALIBRATION)
                         for label, change in numeric_changes(inputs)]
        perturbations += [(label, inputs, calibration)
                          for label, calibration in constant_changes(job)]
        for label, changed_inputs, calibration in perturbations:
            after = estimate(job, changed_inputs, calibration, None)
            assert after.total >= base.total, f"{job}: total fell when {label} grew"
            for name, value in after.terms.items():
                grown = value - base.terms[name]
                if grown > 0:
                    responded.add(name)
                    # the total grows by at least what the term grew: no term is offset
                    assert after.total - base.total >= grown, (job, label, name)
        for label, calibration in constant_changes(job, lowering=True):
            assert estimate(job, inputs, calibration, None).total <= base.total, (job, label)
    # every term responds to some input or constant: no term is a constant zero
    assert responded == set(base.terms), set(base.terms) - responded


def test_logistic_known_answer():
    constants = {"baseline_bytes": 100 * MIB, "embeddings_copies": 2.0, "window_row_bytes": 150,
                 "fit_data_copies": 1.0, "workspace_factor": 1.0, "block_rows": 10_000,
                 "square_copies": 2.0}
    calibration = {"jobs": {"probe_logistic": constants}}
    inputs = {"n_train": 100_000, "n_val": 10_000, "n_test": 10_000, "dim": 256,
              "n_classes": 5, "n_jobs": 3, "n_fits": 6}
    result = estimate("probe_logistic", inputs, calibration, limit_bytes=4 * GiB)
    terms = result.terms
    assert terms["interpreter and libraries"] == 100 * MIB
    # the fold's parts as the job reads them (x embeddings_copies, 2 here); the training part
    # is standardised in place: no standardised copy, whatever n_jobs
    assert terms["the fold's parts as read (float32, one copy of each row; none streamed)"] \
        == 120_000 * 256 * 4 * 2
    assert terms["window table"] == 120_000 * 150
    assert not any("standardised training rows" in name for name in terms)
    assert terms["solver workspace per parallel fit"] == 3 * (100_000 * 5 * 8 + 20 * 257 * 5 * 8)
    # OpenBLAS's buffers: a float32 copy of at most 40,000 rows (the default blas_rows) a fit
    blas = 40_000 * 256 * 4
    assert terms["BLAS threads' buffers per parallel fit"] == 3 * blas
    assert terms["each further parallel fit's heap"] == 0  # thread_heap_bytes 0 by default
    assert terms["row blocks (standardise, score)"] == 10_000 * 256 * 4
    assert terms["preconditioner (p x p float64)"] == (2 + 3) * 256 * 256 * 8
    fits = (3 * (100_000 * 5 * 8 + 20 * 257 * 5 * 8) + 3 * blas + 10_000 * 256 * 4
            + (2 + 3) * 256 * 256 * 8)
    # the two store blocks the read holds (here the whole fold: 120,000 x 256 x 4 B) are
    # freed before the fits, which hold more: nothing beyond them
    assert fits > 120_000 * 256 * 4 and terms["the store block being read"] == 0
    assert terms["streamed: two blocks of rows (read and gathered, or gathered and "
                 "standardised)"] == 0
    assert terms["scheduler processes"] == 0
    assert result.total == sum(terms.values()) == 100 * MIB + 245_760_000 + 18_000_000 + fits \
        == 516_975_840
    assert result.request_mb == 567  # ceil(516,975,840 * 1.15 / 2**20)
    assert result.limit_mb == 4096 and result.verdict == "ok"
    assert result.knobs == {"n_jobs": 3, "streamed": 0}
    # one fit at a time holds less than the read: the read counts what it holds beyond it
    one = estimate("probe_logistic", inputs | {"n_jobs": 1}, calibration, None).terms
    one_fit = (100_000 * 5 * 8 + 20 * 257 * 5 * 8 + blas + 10_000 * 256 * 4
               + (2 + 1) * 256 * 256 * 8)
    assert one["the store block being read"] == 120_000 * 256 * 4 - one_fit == 65_901_536
    # a further fit's own heap, where the table gives one
    heaped = {"jobs": {"probe_logistic": constants | {"thread_heap_bytes": 20 * MIB}}}
    assert estimate("probe_logistic", inputs, heaped, None).terms[
        "each further parallel fit's heap"] == 2 * 20 * MIB
    # streamed: no copy of the rows; two blocks of at most 64 MiB (65,536 rows of 256)
    streamed = estimate("probe_logistic", inputs | {"streamed": 1}, calibration, None).terms
    assert streamed["the fold's parts as read (float32, one copy of each row; none "
                    "streamed)"] == 0
    assert streamed["streamed: two blocks of rows (read and gathered, or gathered and "
                    "standardised)"] == 2 * 65_536 * 256 * 4
    assert streamed["solver workspace per parallel fit"] == 3 * (65_536 * 5 * 8 + 20 * 257 * 5 * 8)
    # a streamed fit reads while it fits: its one block counts whole
    assert streamed["the store block being read"] == 64 * MIB


def test_seizure_known_answer():
    """scikit-learn's lbfgs per C: float64 vectors per training row, no p x p preconditioner."""
    constants = {"baseline_bytes": 100 * MIB, "overhead_bytes": 1 * MIB,
                 "embeddings_copies": 2.0, "window_row_bytes": 150, "fit_data_copies": 1.0,
                 "workspace_factor": 5.0, "block_rows": 8192}
    calibration = {"jobs": {"probe_seizure": constants}}
    inputs = {"n_train": 30_000, "n_val": 10_000, "n_test": 10_000, "dim": 256, "n_jobs": 2,
              "n_fits": 6}
    terms = estimate("probe_seizure", inputs, calibration, None).terms
    assert terms["interpreter and libraries"] == 100 * MIB
    assert terms["job start-up beyond its imports"] == MIB
    assert terms["the fold's parts as read (float32, one copy of each row; none streamed)"] \
        == 50_000 * 256 * 4 * 2
    assert terms["window table"] == 50_000 * 150
    assert terms["standardised training rows (float32, shared by the fits)"] == 30_000 * 256 * 4
    assert terms["solver workspace per parallel fit (scikit-learn lbfgs)"] \
        == 2 * (30_000 * 8 * 5 + 20 * 257 * 8)
    assert terms["row blocks (standardise, score)"] == 8192 * 256 * 4
    assert terms["validation scores of every C (float64)"] == 6 * 10_000 * 8
    assert not any("preconditioner" in name for name in terms)
    assert fit_knobs("probe_seizure", {**inputs, "n_jobs": 6}, calibration, 10 * MIB).tried \
        == [f"n_jobs={k}" for k in (5, 4, 3, 2, 1)]


def test_each_job_type_is_one_object():
    """Terms, inputs, constants, knobs and cheaper settings live on the job type."""
    brain_age = estimates.JOB_TYPES["probe_brain_age"]
    assert brain_age.composed_of == ("aggregate_subject_mean", "probe_ridge")
    assert estimates.COMPOSED == {"probe_brain_age": brain_age.composed_of,
                                  "probe_recording": ("aggregate_subject_mean",),
                                  "probe_events": ("probe_seizure",),
                                  "probe_bci": ("probe_logistic",)}
    assert estimates.JOB_TYPES["embed_gpu"].device == "embed_gpu_device"
    for name, kind in estimates.JOB_TYPES.items():
        assert kind.name == name and kind.terms and kind.required
        assert estimates.DEFAULT_CONSTANTS[name] == kind.constants
    with pytest.raises(UsageError, match="no memory formula"):
        estimates.registered_job("probe_svm")


def test_verdict_compares_request_with_margin_to_limit():
    inputs = {"dim": 256, "chunk_rows": 4096, "n_subjects": 80, "n_rows": 100_000}
    total = estimate("aggregate_subject_mean", inputs, CALIBRATION, None).total
    need = estimates.request_mb(total, 0.15)
    assert estimate("aggregate_subject_mean", inputs, CALIBRATION, need * MIB).verdict == "ok"
    small = (need - 1) * MIB
    assert estimate("aggregate_subject_mean", inputs, CALIBRATION, small).verdict == "too_big"
    # the same total fits a margin of 0
    assert estimate("aggregate_subject_mean", inputs, CALIBRATION, small, margin=0.0).verdict \
        == "ok"


def test_ridge_form_follows_the_shape():
    wide = estimate("probe_ridge", {"n": 80, "p": 20_000}, CALIBRATION, None)
    tall = estimate("probe_ridge", {"n": 200_000, "p": 256}, CALIBRATION, None)
    assert wide.knobs["ridge_form"] == "dual" and tall.knobs["ridge_form"] == "primal"
    workspace = "solver workspace per parallel fit (gram p x p or kernel n x n)"
    assert wide.terms[workspace] == 80 * 80 * 8 * 2
    assert tall.terms[workspace] == 256 * 256 * 8 * 2


def test_fit_knobs_lowers_parallel_fits_to_the_most_that_fit():
    inputs = {"n_train": 400_000, "n_val": 50_000, "n_test": 50_000, "dim": 1024,
              "n_classes": 5, "n_jobs": 6, "n_fits": 6}
    limit = estimate("probe_logistic", {**inputs, "n_jobs": 2}, CALIBRATION, None).request_mb
    result = fit_knobs("probe_logistic", inputs, CALIBRATION, limit * MIB)
    assert result.verdict == "ok" and result.knobs["n_jobs"] == 2
    assert result.tried == ["n_jobs=5", "n_jobs=4", "n_jobs=3", "n_jobs=2"]
    assert estimate("probe_logistic", inputs, CALIBRATION, limit * MIB).verdict == "too_big"


def test_fit_knobs_switches_a_forced_primal_ridge_to_dual():
    inputs = {"n": 2_000, "p": 60_000, "ridge_form": "primal"}
    dual = estimate("probe_ridge", {**inputs, "ridge_form": "dual"}, CALIBRATION, None)
    result = fit_knobs("probe_ridge", inputs, CALIBRATION, dual.request_mb * MIB)
    assert result.verdict == "ok" and result.knobs["ridge_form"] == "dual"
    assert result.tried == ["ridge_form=dual"]


def embed_inputs(**overrides) -> dict:
    return {"batch_size": 64, "n_channels": 2, "n_samples": 6000, "feature_dim": 256,
            "weights_bytes": 13e6, "recording_bytes": 46e6, "resample_ratio": 2.0,
            "batch_activation_bytes": 2 * GiB, "activation_batch_size": 64, "n_workers": 2,
            "night_windows": 1000, **overrides}


def test_fit_knobs_halves_the_batch_before_dropping_reader_threads():
    inputs = embed_inputs()
    at_16 = estimate("embed_cpu", {**inputs, "batch_size": 16}, CALIBRATION, None)
    result = fit_knobs("embed_cpu", inputs, CALIBRATION, at_16.request_mb * MIB)
    assert result.verdict == "ok"
    assert result.knobs == {"batch_size": 16, "n_workers": 2}
    assert result.tried == ["batch_size=32", "batch_size=16"]


def test_too_big_names_the_knobs_tried_and_the_partition_that_fits():
    inputs = {"n_train": 4_000_000, "n_val": 500_000, "n_test": 500_000, "dim": 2048,
              "n_classes": 5, "n_jobs": 4, "n_fits": 6}
    # the rows held need ~45 GB; streamed, the window table of 5 million rows ~2 GB
    partitions = {"standard": 1_500, "bigmem": 4_000, "huge": 2_000_000}
    result = fit_knobs("probe_logistic", inputs, CALIBRATION, GiB, partitions=partitions)
    assert result.verdict == "too_big"
    # one fit at a time, then the rows left in the store: still over 1 GiB
    assert result.knobs == {"n_jobs": 1, "streamed": 1}
    assert result.tried[-2:] == ["n_jobs=1", "streamed=1"]
    assert "n_jobs=1, streamed=1" in result.fix and "partition 'bigmem'" in result.fix
    assert f"{result.request_mb:,} MB" in result.fix
    with pytest.raises(OutOfMemory) as caught:
        result.raise_if_too_big()
    assert caught.value.fix == result.fix and "window table" in caught.value.message
    alone = fit_knobs("probe_logistic", inputs, CALIBRATION, GiB)
    assert "at least" in alone.fix and "partition '" not in alone.fix


def test_gpu_batch_is_chosen_to_fit_the_device():
    # 1 GiB fixed + 100 MiB per window on a 16 GiB device
    peaks = {8: GiB + 8 * 100 * MIB, 32: GiB + 32 * 100 * MIB}
    inputs = embed_inputs(batch_size=256, gpu_peaks=peaks, gpu_total_bytes=16 * GiB)
    result = fit_knobs("embed_gpu", inputs, CALIBRATION, 64 * GiB)
    assert result.verdict == "ok" and result.knobs["batch_size"] == 64
    terms = result.device.terms
    assert terms["allocator peak at the smallest measured batch (weights, buffers, activations)"] \
        == GiB + 8 * 100 * MIB
    assert terms["batch activations of the further windows"] == (64 - 8) * 100 * MIB
    assert terms["allocator slack"] == math.ceil(0.2 * (GiB + 64 * 100 * MIB))
    assert "batch activations" not in result.terms  # activations live on the device
    tiny = fit_knobs("embed_gpu", {**inputs, "gpu_total_bytes": 512 * MIB}, CALIBRATION,
                     64 * GiB)
    assert tiny.verdict == "too_big" and "GPU with at least" in tiny.fix


def test_breakdown_lists_largest_term_first_and_serialises():
    result = estimate("embed_cpu", embed_inputs(), CALIBRATION, 8 * GiB)
    lines = str(result).splitlines()
    assert lines[0].startswith("embed_cpu: ")
    assert "batch activations" in lines[1]  # 2.4 GiB after the factor: the largest term
    assert json.loads(json.dumps(result.as_dict()))["terms"] == result.terms


def test_missing_inputs_and_unknown_jobs_are_usage_errors():
    with pytest.raises(UsageError, match="lacks inputs \\['n_classes'\\]"):
        estimate("probe_logistic", {"n_train": 1, "n_val": 1, "n_test": 1, "dim": 2},
                 CALIBRATION, None)
    with pytest.raises(UsageError, match="no memory formula"):
        estimate("probe_svm", {}, CALIBRATION, None)


def test_load_calibration_fills_and_lists_missing_constants(tmp_path):
    path = tmp_path / "cal.yaml"
    path.write_text("jobs:\n  probe_logistic:\n    baseline_bytes: 123\n")
    table = load_calibration(path)
    assert table["jobs"]["probe_logistic"]["baseline_bytes"] == 123
    assert "probe_logistic.baseline_bytes" not in table["defaulted"]
    assert "probe_logistic.embeddings_copies" in table["defaulted"]
    with pytest.raises(UsageError) as caught:
        load_calibration(tmp_path / "absent.yaml")
    assert "calibrate_memory.py" in caught.value.fix
    path.write_text("jobs: [unclosed\n")
    with pytest.raises(UsageError, match="not valid YAML"):
        load_calibration(path)


def test_shipped_calibration_is_measured_here():
    table = load_calibration()
    assert table["defaulted"] == []
    for job in ("embed_cpu", "probe_logistic", "probe_ridge", "aggregate_subject_mean"):
        assert table["provenance"][job]["baseline_bytes"] == "measured"
        assert 20 * MIB < table["jobs"][job]["baseline_bytes"] < 2 * GiB
    assert table["environment"]["packages"]["scikit-learn"].startswith("1.")


def test_subject_mean_stream_counts_no_more_chunk_cache_than_the_store_holds():
    """h5py's chunk caches (1 MiB per dataset read) hold at most the store: 100 subjects x 20
    windows x 200 float32 features is 1.6 MB, so the buffer term is the store's bytes."""
    table = {"jobs": {}}
    small = {"dim": 200, "chunk_rows": 83_886, "n_subjects": 100, "n_rows": 2_000}
    large = {**small, "n_rows": 20_000}
    terms_small = estimate("aggregate_subject_mean", small, table, None).terms
    terms_large = estimate("aggregate_subject_mean", large, table, None).terms
    copies = estimates.JOB_TYPES["aggregate_subject_mean"].constants["chunk_copies"]
    store_small, store_large = 2_000 * 200 * 4, 20_000 * 200 * 4
    assert terms_small["HDF5 chunk buffers"] == store_small + store_small * copies
    assert terms_large["HDF5 chunk buffers"] == 2 * MIB + store_large * copies


# ------------------------------------------------------- one owner of the memory job types


def test_the_refit_names_only_registered_job_types_and_their_constants():
    from embedprobe.memory.refit import FITTED, FROM_RUNS

    for table in (FITTED, FROM_RUNS):
        assert set(table) <= set(estimates.JOB_TYPES)
        for job, names in table.items():
            constants = estimates.job_constants(job, {"jobs": {}})
            assert set(names) <= set(constants), (job, set(names) - set(constants))


def test_the_baseline_steps_name_registered_job_types_and_known_steps():
    from embedprobe.memory.baselines import JOB_STEP, STEP_IMPORTS
    from embedprobe.memory.refit import FITTED

    assert set(JOB_STEP) <= set(estimates.JOB_TYPES)
    assert set(JOB_STEP.values()) <= set(STEP_IMPORTS)
    assert set(FITTED) <= set(JOB_STEP)  # every job type the calibration fits has a baseline
    # both are views of the one job-type table
    assert JOB_STEP == {n: t.step for n, t in estimates.JOB_TYPES.items() if t.step}
    assert FITTED == {n: t.fitted for n, t in estimates.JOB_TYPES.items() if t.fitted}
    assert JOB_STEP["probe_bci"] == "bci" and FITTED["embed_cpu"][0] == "recording_copies"


def test_the_calibration_tables_name_only_registered_job_types():
    import yaml

    raw = yaml.safe_load(CALIBRATION_PATH.read_text())
    for section in ("jobs", "provenance"):
        assert set(raw[section]) <= {"common", *estimates.JOB_TYPES}, section
    assert set(estimates.DEFAULT_CONSTANTS) == {"common", *estimates.JOB_TYPES}
    for job, parts in estimates.COMPOSED.items():
        assert job in estimates.JOB_TYPES and set(parts) <= set(estimates.JOB_TYPES)
    for kind in estimates.JOB_TYPES.values():
        assert kind.device is None or kind.device in estimates.JOB_TYPES


def test_the_calibration_script_fits_the_refits_job_types():
    from embedprobe.devtools import calibrate_memory
    from embedprobe.memory.refit import FITTED

    assert calibrate_memory.CALIBRATED_JOBS == tuple(FITTED)
    assert set(calibrate_memory.PLANS) == {"quick", "full"}


def test_every_task_sizes_its_probe_with_a_registered_job_type():
    """Each task's probe job names a registered job type, and the step it imports is the one
    the baselines give that job type."""
    import pandas as pd

    from embedprobe.core.config import load_config
    from embedprobe.core.selection import with_fold_count
    from embedprobe.memory.baselines import JOB_STEP, STEP_IMPORTS
    from embedprobe.tasks.registry import TASKS, task_for

    config = load_config()
    seen = set()
    for benchmark, bench in config["benchmarks"].items():
        if bench["task"] in seen:
            continue
        seen.add(bench["task"])
        # as a probe job's slice holds it: `folds: loso` as its first dataset's count
        bench = with_fold_count(config, benchmark, bench["datasets"][0])
        task = task_for(bench["task"])
        # one subject per fold (leave-one-subject-out tasks need exactly that many)
        subjects = [f"S{k:03d}" for k in range(bench["folds"]) for _ in range(5)]
        table = pd.DataFrame({"recording": [f"{s}R" for s in subjects], "subject": subjects,
                              "start": 0, "label": [k % 2 for k in range(len(subjects))]})
        job_type, inputs, _ = task.probe_memory(config, bench, table, 0, 16)
        assert job_type in estimates.JOB_TYPES, benchmark
        assert estimate(job_type, inputs, CALIBRATION, None).total > 0
        # the job type names the step whose imports its baseline is (no task names its own)
        assert JOB_STEP[job_type] in STEP_IMPORTS, benchmark
        assert not hasattr(task, "probe_step"), benchmark
    assert seen == set(TASKS)


def test_the_logistic_probes_blocks_follow_its_splits_and_form():
    """A fold of a few hundred trials holds blocks of its own rows, not 8,192-row blocks: at a
    token store's 24,576 features that is the difference between 2.4 GB and a few MB. From a
    split of 8,192 rows (and 2,048 training rows) on, the calibrated blocks are unchanged; past
    the eigen form's width the diagonal form's own constant counts, and no p x p matrix."""
    from embedprobe.probing.probe_forms import EIGEN_MAX_FEATURES, block_share

    constants = {**estimates.DEFAULT_CONSTANTS["probe_logistic"], "block_rows": 24_000.0,
                 "wide_block_rows": 6_000.0}
    table = {"jobs": {"probe_logistic": constants}}

    def terms(n_train, n_val, n_test, dim):
        inputs = {"n_train": n_train, "n_val": n_val, "n_test": n_test, "dim": dim,
                  "n_classes": 4}
        return estimate("probe_logistic", inputs, table, None).terms

    assert block_share(20_000, 8_192, 8_192) == 1.0 == block_share(2_048, 8_192, 100)
    assert block_share(96, 48, 48) == (96 + 2 * 96) / 12_288
    big = terms(20_000, 8_192, 8_192, 256)
    assert big["row blocks (standardise, score)"] == 24_000 * 256 * 4
    small = terms(96, 48, 48, 256)
    assert small["row blocks (standardise, score)"] == pytest.approx(
        24_000 * (96 + 192) / 12_288 * 256 * 4)
    wide = terms(96, 48, 48, 24_576)
    assert EIGEN_MAX_FEATURES < 24_576
    assert wide["row blocks (standardise, score)"] == pytest.approx(
        6_000 * (96 + 192) / 12_288 * 24_576 * 4)
    assert wide["preconditioner (p x p float64)"] == 0
    assert terms(96, 48, 48, 4_096)["preconditioner (p x p float64)"] > 0


def test_the_motor_imagery_probe_is_sized_with_the_imports_of_its_folds():
    """Its folds draw the validation subject with scikit-learn's train_test_split: the job
    type probe_bci (the staging probe's terms and constants) measures that step's baseline."""
    from embedprobe.memory.baselines import JOB_STEP, STEP_IMPORTS

    assert estimates.COMPOSED["probe_bci"] == ("probe_logistic",)
    assert estimates.JOB_TYPES["probe_bci"].terms == estimates.JOB_TYPES["probe_logistic"].terms
    assert JOB_STEP["probe_bci"] == "bci"
    assert "sklearn.model_selection" in STEP_IMPORTS["bci"]
    assert "sklearn" not in STEP_IMPORTS["probe"]


def test_a_token_stores_finish_counts_a_block_where_it_holds_more_than_a_batch():
    """finish() reads the store back in blocks after the last batch, and its window table to
    check the final file: ST-EEGFormer's 832 windows of 240 x 512 count 1.5 blocks (the
    block, its check, h5py's write) and the table instead of a batch of rows; a pooled store
    of the same windows (1.7 MB in all) 1.5 times its rows and the table."""
    from embedprobe.pipeline.store_writer import FINISH_BLOCK_BYTES

    inputs = {"batch_size": 32, "n_channels": 19, "n_samples": 1024, "weights_bytes": 1e8,
              "recording_bytes": 1e8, "night_windows": 500, "n_windows": 832,
              "batch_activation_bytes": 5e8, "activation_batch_size": 32}
    name = next(n for n, _ in estimates.JOB_TYPES["embed_cpu"].terms if n.startswith("HDF5"))
    constants = CALIBRATION["jobs"]["embed_cpu"]
    buffers, per_window = constants["hdf5_buffer_bytes"], constants["finish_row_bytes"]
    tokens = estimate("embed_cpu", {**inputs, "feature_dim": 240 * 512}, CALIBRATION, None)
    assert tokens.inputs["finish_block_bytes"] == FINISH_BLOCK_BYTES
    assert tokens.terms[name] == math.ceil(buffers + 1.5 * 16 * MIB + 832 * per_window)
    pooled = estimate("embed_cpu", {**inputs, "feature_dim": 512}, CALIBRATION, None)
    assert pooled.terms[name] == math.ceil(buffers + 832 * 512 * 4 * 1.5 + 832 * per_window)
