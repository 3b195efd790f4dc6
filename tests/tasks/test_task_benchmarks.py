"""Seizure detection and the four BCI benchmarks end to end: the real snakemake on the
look-alike datasets.

The demos are the config's own (`epilepsy_demo`; `bci_demo`: motor imagery, ERP, SSVEP and
cognitive state, leave one subject out): every step runs (generation, index, check, preflight,
embed, probe, aggregate, figures, summary, leaderboard). Motor imagery (whose no_filtering
trial starts at the cue) and ERP (whose does not) run in all four variants; SSVEP and cognitive
state in their default one, since each variant costs a check, an embed and a probe per subject
(docs/measurements/2026-12-07-suite-time.md); tests/core/test_variants.py checks their
variants' filters without running them.
"""

import json

import numpy as np
import pandas as pd
import pytest
import yaml

from embedprobe.tasks.seizure.scoring import curve_from_json, event_auc_over_folds

from helpers.project import PROJECT, SMALL_JOBS, snakemake

pytestmark = pytest.mark.workflow

EPILEPSY_DATASETS = ("chbmit_demo", "siena_demo")
# benchmark -> its datasets: (subjects, classes, the default variant's balanced accuracy
# above which the look-alike's class signature counts as found)
BCI_BENCHMARKS = {
    "bci_mi_demo": {"bnci2014_001_demo": (4, 4, 0.32), "physionet_mi_demo": (5, 4, 0.27)},
    "bci_erp_demo": {"bnci2014_008_demo": (4, 2, 0.6)},
    "bci_ssvep_demo": {"nakanishi2015_demo": (4, 12, 0.3)},
    # DREAMER's valence: 0.736 measured (docs/measurements/2026-12-07-dreamer.md)
    "bci_cognitive_demo": {"eegmat_demo": (4, 2, 0.6), "dreamer_demo": (4, 2, 0.6)},
}
VARIANTS = ("default", "token_flattening", "no_filtering", "no_filtering_token_flattening")
# the benchmarks run in every variant; the others in their default one (the fixture's config)
ALL_VARIANTS = ("bci_mi_demo", "bci_erp_demo")
DEFAULT_ONLY = {"benchmarks": {b: {"variants": ["default"]} for b in BCI_BENCHMARKS
                               if b not in ALL_VARIANTS}}
# CBraMod's 1 s patch tokens of 200 features: a unit's tokens, by dataset run in every variant
# (confound filtering; the no_filtering variants take motor imagery's trial whole from the cue:
# one token more)
TOKENS = {"bnci2014_001_demo": 3, "physionet_mi_demo": 3, "bnci2014_008_demo": 1}
WHOLE_TRIAL_TOKENS = {"bnci2014_001_demo": 4, "physionet_mi_demo": 4}
MODEL = "cbramod_random"


@pytest.fixture(scope="module")
def epilepsy_run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("epilepsy")
    run = snakemake(workdir, *SMALL_JOBS, "epilepsy_demo")
    assert run.returncode == 0, run.stderr[-3000:]
    return workdir, run


@pytest.fixture(scope="module")
def bci_run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("bci")
    # every variant of ALL_VARIANTS (a run's default is the default variant alone)
    config = workdir / "default_only.yaml"
    config.write_text(yaml.safe_dump(DEFAULT_ONLY))
    run = snakemake(workdir, "--configfile", str(config), *SMALL_JOBS, "bci_demo",
                    config=("variants=all",))
    assert run.returncode == 0, run.stderr[-3000:]
    return workdir, run


def variants_of(benchmark: str) -> tuple[str, ...]:
    return VARIANTS if benchmark in ALL_VARIANTS else ("default",)


def results(workdir, benchmark, dataset) -> pd.Series:
    table = pd.read_csv(workdir / f"results/{benchmark}/{dataset}/results.tsv", sep="\t")
    assert len(table) == 1, table
    return table.iloc[0]


def test_epilepsy_demo_detects_the_generated_seizures(epilepsy_run):
    workdir, run = epilepsy_run
    for dataset in EPILEPSY_DATASETS:
        row = results(workdir, "epilepsy_demo", dataset)
        assert row["status"] == "ok" and row["folds"] == "5/5"
        # The look-alikes are made hard (datasets/synth/seizure.py): a random encoder's probe
        # finds most seizures, not all, and raises false alarms: between chance (AUROC 0.5)
        # and perfect on every score, the folds differing.
        assert 0.6 < row["auroc_mean"] < 0.97 and row["auprc_mean"] > 0.3, row.to_dict()
        assert 0.6 < row["event_auc_mean"] < 0.95 and row["event_auc_sd"] > 0, row.to_dict()
        assert 0 < row["ovlp_f1_mean"] < 1 and np.isfinite(row["fa_per_24h_mean"])
        folds = [json.loads((workdir / f"results/epilepsy_demo/{dataset}/biot_random/"
                             f"fold{k}.json").read_text()) for k in range(5)]
        fold = folds[0]
        assert fold["chosen"] in (0.001, 0.01, 0.1, 1.0, 10.0, 100.0)
        assert 0 < fold["threshold"] < 1 and fold["n_test_seizure_windows"] > 0
        assert set(fold["metrics"]) >= {"auroc", "auprc", "balanced_accuracy", "mcc",
                                        "sensitivity_at_fpr", "event_sensitivity",
                                        "fa_per_24h", "event_auc", "ovlp_f1"}
        # the headline is the area of the folds' NaN-median curve, the per-fold mean beside it
        over = event_auc_over_folds([curve_from_json(f["event_curve"]) for f in folds])
        assert row["event_auc_mean"] == pytest.approx(over.headline, abs=1e-4)
        assert row["event_auc_sd"] == pytest.approx(over.sd, abs=1e-4)
        assert row["event_auc_fold_mean"] == pytest.approx(
            np.nanmean([f["metrics"]["event_auc"] for f in folds]), abs=1e-4)
        for figure in ("roc_pr", "event_curve"):
            png = workdir / f"results/epilepsy_demo/{dataset}/biot_random/{figure}.png"
            assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    summary = (workdir / "results/epilepsy_demo/summary.md").read_text()
    assert "Headline: event_auc" in summary and "| chbmit_demo | biot_random |" in summary


def test_epilepsy_index_labels_windows_by_seizure_overlap(epilepsy_run):
    workdir, _ = epilepsy_run
    for dataset in EPILEPSY_DATASETS:
        index = pd.read_csv(workdir / f"results/index/{dataset}.tsv", sep="\t")
        # 5 patients x 2 files x 6 min of 10 s windows, every patient with seizures
        assert len(index) == 5 * 2 * 36 and index["subject"].nunique() == 5
        assert set(index["label"]) == {0, 1}
        assert (index.groupby("subject")["label"].sum() > 0).all()


def test_a_benchmark_added_in_yaml_only_is_a_target(epilepsy_run, tmp_path):
    """A copy of epilepsy_demo under a new name: `snakemake <name>` runs it (the same
    embeddings, the same folds: the same scores)."""
    workdir, _ = epilepsy_run
    bench = yaml.safe_load((PROJECT / "config/benchmarks.yaml").read_text())[
        "benchmarks"]["epilepsy_demo"]
    config = {"benchmarks": {"my_seizures": bench | {"datasets": ["siena_demo"]}}}
    extra = tmp_path / "mine.yaml"
    extra.write_text(yaml.safe_dump(config))
    run = snakemake(workdir, "--configfile", str(extra), *SMALL_JOBS, "my_seizures")
    assert run.returncode == 0, run.stderr[-3000:]
    row = results(workdir, "my_seizures", "siena_demo")
    reference = results(workdir, "epilepsy_demo", "siena_demo")
    assert row["folds"] == "5/5" and row["auroc_mean"] == reference["auroc_mean"]
    assert (workdir / "results/leaderboard/my_seizures.md").is_file()


@pytest.mark.parametrize("benchmark", BCI_BENCHMARKS)
def test_each_bci_paradigm_is_above_chance_per_held_out_subject_in_every_variant(bci_run,
                                                                                 benchmark):
    workdir, _ = bci_run
    variants = variants_of(benchmark)
    for dataset, (subjects, classes, found) in BCI_BENCHMARKS[benchmark].items():
        table = pd.read_csv(workdir / f"results/{benchmark}/{dataset}/results.tsv", sep="\t")
        assert sorted(table["model"]) == sorted(f"{v}/{MODEL}" for v in variants)
        assert (table["status"] == "ok").all() and (table["folds"] == f"{subjects}/{subjects}"
                                                    ).all(), table
        assert (table["n_classes"] == classes).all()
        assert np.allclose(table["chance"], 1 / classes, atol=1e-3), table["chance"]
        default = table.set_index("model").loc[f"default/{MODEL}"]
        assert default["balanced_accuracy_mean"] > found, default.to_dict()
        for variant in variants:  # results under <dataset>/<variant>/
            folds = [json.loads((workdir / f"results/{benchmark}/{dataset}/{variant}/{MODEL}/"
                                 f"fold{k}.json").read_text()) for k in range(subjects)]
            # Leave one subject out: each fold tests one subject, every subject once.
            tested = [f["test_subjects"] for f in folds]
            assert all(len(t) == 1 for t in tested) and len({t[0] for t in tested}) == subjects
            scores = np.array([f["metrics"]["balanced_accuracy"] for f in folds])
            row = table.set_index("model").loc[f"{variant}/{MODEL}"]
            assert row["balanced_accuracy_mean"] == pytest.approx(scores.mean(), abs=1e-4)
            assert row["balanced_accuracy_sd"] == pytest.approx(scores.std(ddof=0), abs=1e-4)


def test_the_plan_names_each_datasets_loso_fold_count(bci_run):
    _, run = bci_run
    for benchmark, datasets in BCI_BENCHMARKS.items():
        for dataset, (subjects, _, _) in datasets.items():
            assert f"plan: {benchmark}: {dataset} LOSO ({subjects})" in run.stderr


def test_variants_that_share_preprocessing_and_pooling_share_a_store(bci_run):
    """One store per (dataset, model, preprocessing, pooling): the default variant reads the
    plain model's, token_flattening config/models.yaml's cbramod_random_tokens (the same
    entry, tokens kept), the two no_filtering variants stores of their own; token stores
    hold (units, tokens, 200) and the probes read them flattened."""
    from embedprobe.pipeline.store import open_embeddings

    workdir, _ = bci_run
    cache = workdir / "cache/embeddings"
    for dataset, tokens in TOKENS.items():
        stores = {"default": cache / f"{dataset}/{MODEL}.h5",
                  "token_flattening": cache / f"{dataset}/{MODEL}_tokens.h5",
                  "no_filtering": cache / f"{dataset}/no_filtering/{MODEL}.h5",
                  "no_filtering_token_flattening":
                      cache / f"{dataset}/no_filtering_token_flattening/{MODEL}.h5"}
        assert sorted(p.relative_to(cache).as_posix() for p in cache.glob(f"{dataset}/**/*.h5")
                      ) == sorted(p.relative_to(cache).as_posix() for p in stores.values())
        keys = {}
        for variant, path in stores.items():
            with open_embeddings(path) as store:
                flat = "token" in variant
                n = len(store.windows)
                count = (WHOLE_TRIAL_TOKENS.get(dataset, tokens)
                         if variant.startswith("no_filtering") else tokens)
                assert store.embeddings.shape == ((n, count, 200) if flat else (n, 200))
                assert store.load().shape == (n, count * 200 if flat else 200)
                keys[variant] = json.loads(store.identity.preprocessing)
        filters = {v: key["preprocessing"]["filters"] for v, key in keys.items()}
        assert filters["default"] == filters["token_flattening"] != filters["no_filtering"]
        assert filters["no_filtering"] == filters["no_filtering_token_flattening"]
        moved = {v: key.get("window_start_seconds", 0.0) for v, key in keys.items()}
        whole = -1.0 if dataset in WHOLE_TRIAL_TOKENS else 0.0
        assert moved == {"default": 0.0, "token_flattening": 0.0, "no_filtering": whole,
                         "no_filtering_token_flattening": whole}


@pytest.mark.parametrize("benchmark", BCI_BENCHMARKS)
def test_on_shuffled_labels_each_paradigms_probe_is_near_chance(bci_run, benchmark):
    """The default variant's embeddings with the units' labels shuffled: the LOSO probe, as
    the workflow fits it, finds nothing."""
    from embedprobe.pipeline.store import open_embeddings
    from embedprobe.probing.folds import distinct, fold_split, loso_plan
    from embedprobe.probing.logistic import fit_logistic_probe
    from embedprobe.probing.split import Split

    workdir, _ = bci_run
    for dataset, (_, classes, _) in BCI_BENCHMARKS[benchmark].items():
        with open_embeddings(workdir / f"cache/embeddings/{dataset}/{MODEL}.h5") as store:
            X = np.asarray(store.load(), dtype=np.float32)
            windows = store.windows
        y = np.random.default_rng(0).permutation(windows["label"].to_numpy())
        plan = loso_plan(distinct(windows["subject"]), 42)
        scores = []
        for fold in range(len(distinct(windows["subject"]))):
            parts = fold_split(plan, windows, fold)
            result = fit_logistic_probe(Split.cut(X, y, parts))
            scores.append(result.test_metrics["balanced_accuracy"])
        assert abs(np.mean(scores) - 1 / classes) < 0.08, (dataset, scores)


def test_the_bci_leaderboard_has_a_column_per_benchmark_and_variant(bci_run):
    workdir, _ = bci_run
    board = (workdir / "results/leaderboard/bci_demo.md").read_text()
    header = next(x for x in board.splitlines() if x.startswith("| model |"))
    columns = 0
    for benchmark, datasets in BCI_BENCHMARKS.items():
        for dataset in datasets:
            for variant in variants_of(benchmark):
                assert f"| {benchmark}[{variant}]/{dataset} (balanced_accuracy) |" in header
                columns += 1
    # MI's two datasets and ERP's in every variant; SSVEP's one and the cognitive two in the
    # default one; and no other column
    assert columns == 3 * len(VARIANTS) + 3
    assert header.count("(balanced_accuracy)") == columns
    line = next(x for x in board.splitlines() if x.startswith(f"| {MODEL} |"))
    assert line.count("+-") == columns, board


def test_motor_imagery_trials_start_a_second_after_each_cue(bci_run):
    workdir, _ = bci_run
    index = pd.read_csv(workdir / "results/index/bnci2014_001_demo.tsv", sep="\t")
    assert (index["sfreq"] == 250).all() and len(index) == 4 * 48
    assert sorted(index["label"].value_counts().tolist()) == [48, 48, 48, 48]


def test_token_stores_run_end_to_end_beside_the_pooled_demo(bci_run, tmp_path):
    """Two token models (`pooling: tokens`) on the motor-imagery look-alike the demo indexed:
    the stores hold (trials, tokens, width), preflight sizes the probes at the flattened width
    (EEGPT's 24,576: the probe's diagonal form), every probe's peak is inside its request, and
    the flattened CBraMod tokens find the trials' class signature."""
    from embedprobe.memory.report import read_runs
    from embedprobe.pipeline.store import open_embeddings

    workdir, _ = bci_run
    models = {"cbramod_random_tokens": (3, 200), "eegpt_random_tokens": (12, 2048)}
    extra = tmp_path / "tokens.yaml"
    extra.write_text(yaml.safe_dump({"benchmarks": {"my_tokens": {
        "task": "motor_imagery", "datasets": ["bnci2014_001_demo"], "models": list(models),
        "folds": 4, "probe": {"C_grid": [0.001, 0.01, 0.1, 1.0]}}}}))
    run = snakemake(workdir, "--configfile", str(extra), *SMALL_JOBS, "my_tokens")
    assert run.returncode == 0, run.stderr[-3000:]
    table = pd.read_csv(workdir / "results/my_tokens/bnci2014_001_demo/results.tsv", sep="\t")
    assert set(table["model"]) == set(models) and (table["status"] == "ok").all()
    for model, (tokens, width) in models.items():
        with open_embeddings(workdir / f"cache/embeddings/bnci2014_001_demo/{model}.h5") as st:
            assert st.embeddings.shape == (4 * 48, tokens, width)
            assert st.load().shape == (4 * 48, tokens * width)
        record = json.loads((workdir / f"results/preflight/bnci2014_001_demo/{model}/"
                             "my_tokens.json").read_text())
        fold = record["jobs"]["probe/my_tokens/fold0"]
        assert fold["job"] == "probe_bci" and fold["inputs"]["dim"] == tokens * width
    cbramod = table.set_index("model").loc["cbramod_random_tokens"]
    assert cbramod["balanced_accuracy_mean"] > 0.25 + 0.07, cbramod.to_dict()
    runs = read_runs(workdir / "results/memory/runs.tsv")
    probes = runs[runs["job"].str.startswith("probe/my_tokens/")]
    assert len(probes) == 8 and (probes["peak_mb"] <= probes["request_mb"]).all(), probes


@pytest.mark.parametrize("run_name, benchmark, probe_job, model", [
    ("epilepsy_run", "epilepsy_demo", "probe_seizure", "biot_random"),
    ("bci_run", "bci_mi_demo", "probe_bci", f"default/{MODEL}")])
def test_memory_panel_and_refit_read_the_task_probes(run_name, benchmark, probe_job, model,
                                                     request):
    """The newer tasks' probe jobs are in their benchmark's memory panel, and a refit from the
    runs table finds every run's inputs in the split preflight files (the pair's JSON for
    embed, the benchmark's for its folds)."""
    from embedprobe.memory.refit import join_runs
    from embedprobe.memory.report import read_runs

    workdir, _ = request.getfixturevalue(run_name)
    bench = yaml.safe_load((PROJECT / "config/benchmarks.yaml").read_text())[
        "benchmarks"][benchmark]
    panel = workdir / f"results/memory/{benchmark}"
    assert (panel / "memory.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    table = (panel / "summary.md").read_text()
    for dataset in bench["datasets"]:
        folds = BCI_BENCHMARKS.get(benchmark, {}).get(dataset, (bench["folds"],))[0]
        assert f"| probe | {dataset} | {model} | {folds} |" in table, table
    runs = read_runs(workdir / "results/memory/runs.tsv")
    joined = join_runs(runs, workdir / "results/preflight")
    assert joined.skipped == {}
    assert {job: len(rows) for job, rows in joined.runs.items()} == {
        "embed_cpu": int(runs["rule"].eq("embed").sum()),
        probe_job: int(runs["rule"].eq("probe").sum())}
