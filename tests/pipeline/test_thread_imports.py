"""No module is imported for the first time on a job's threads (core/thread_imports.py).

Why: two threads importing modules of one package for the first time at once can be handed a
partly initialised module (Python breaks an import-lock cycle that way). An embed job crashed
so under load: its reader threads imported MNE while the main thread imported braindecode,
and MNE's docstring table was half built when MNE-BIDS asked it for `verbose`. The race shows
only under load, so the tests do not wait for it: each job runs in a fresh interpreter with an
import recorder (a `sys.meta_path` finder sees every first import, and the thread it runs on)
and must import nothing on any thread but the main one. On the code before the fix the
EDF embed's reader thread imported 273 modules while the main thread imported braindecode.
"""

import json
import os
import subprocess
import sys

import pytest

from embedprobe.core.config import load_config
from embedprobe.datasets.registry import FORMATS

# Runs an `embedprobe` command (argv after the script) or a probe fit ("probes") with the
# recorder in place, and prints what it saw as JSON on its last stdout line.
RECORDER = r"""
import json, sys, threading

off_main = []
threads_started = []


class Recorder:
    def find_spec(self, name, path=None, target=None):
        if threading.current_thread() is not threading.main_thread():
            off_main.append([name, threading.current_thread().name])
        return None


sys.meta_path.insert(0, Recorder())

import concurrent.futures.thread as pool_threads

spawn = pool_threads.ThreadPoolExecutor._adjust_thread_count


def spawning(self):  # a pool thread starts: is the model stack whole already?
    threads_started.append("braindecode.models" in sys.modules and "mne_bids" in sys.modules)
    return spawn(self)


pool_threads.ThreadPoolExecutor._adjust_thread_count = spawning

if sys.argv[1] == "probes":
    import numpy as np
    from embedprobe.probing.logistic import fit_logistic_probe
    from embedprobe.probing.split import Split
    from embedprobe.tasks.seizure.probe import fit_seizure_probe
    from embedprobe.tasks.seizure.scoring import RecordingTruth, WindowTimeline

    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 16)).astype(np.float32)
    y = (X[:, 0] + rng.normal(size=600) > 0.8).astype(int)
    split = Split.of((X[:400], y[:400]), (X[400:500], y[400:500]), (X[500:], y[500:]))
    for method in ("fast", "reference"):
        fit_logistic_probe(split, method=method, n_jobs=2)
    truth = {"r": RecordingTruth(1000.0, ((200.0, 260.0),))}
    timeline = WindowTimeline(np.array(["r"] * 100), np.arange(100) * 10.0, 10.0, truth)
    fit_seizure_probe(split, timeline, n_jobs=2)
    rc = 0
else:
    from embedprobe.cli import main

    rc = main(sys.argv[1:])
print(json.dumps({"rc": rc, "off_main": off_main, "threads_started": threads_started}))
"""

# (dataset, model, generator settings): EDF through MNE (the crash), a BCI .mat run with its
# trial windows and band-pass, and a WFDB record (wfdb imported only when signals are read).
CASES = {
    "sleep_edf_demo": ("cbramod_random", {"n_subjects": 1, "nights": 1, "hours": 0.25,
                                          "seed": 3}),
    "bnci2014_001_demo": ("biot_random", {"subjects": 1, "sessions": ["T"],
                                          "runs_per_session": 1, "trials_per_run": 8,
                                          "seed": 0}),
    "physionet2018_demo": ("biot_random", {"subjects": 1, "hours": 0.25, "seed": 0}),
}


def recorded(*argv: str, env: dict | None = None) -> dict:
    done = subprocess.run([sys.executable, "-c", RECORDER, *argv], capture_output=True,
                          text=True, timeout=300, env=dict(os.environ, **(env or {})))
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    """Each case's look-alike, small, written and indexed; the job config that finds them."""
    root = tmp_path_factory.mktemp("thread_imports")
    config = load_config()
    entries = {}
    for name, (_, settings) in CASES.items():
        entry = dict(config["datasets"][name], path=name, expected_recordings=1)
        generate = __import__(FORMATS[entry["format"]].lookalike, fromlist=["x"])
        if name == "sleep_edf_demo":
            generate.generate(root / "data" / name, **settings)
        else:
            generate.write_lookalike(root / "data" / name, settings)
        entries[name] = entry
    config["datasets"] = entries
    config.update(data_root=str(root / "data"), cache_root=str(root / "cache"),
                  results_root=str(root / "results"), weights_root=str(root / "weights"))
    job = json.dumps(config)
    for name in CASES:
        subprocess.run([sys.executable, "-m", "embedprobe.cli", "--job-config", job, "index",
                        "--dataset", name, "--out", str(root / f"{name}.tsv")],
                       check=True, capture_output=True, timeout=300)
    return root, job


@pytest.mark.parametrize("dataset", list(CASES))
def test_embed_reader_threads_import_nothing(datasets, dataset, tmp_path):
    """Reader threads start after the model stack and the reading code are imported, and
    import nothing themselves."""
    root, job = datasets
    model = CASES[dataset][0]
    seen = recorded("--job-config", job, "embed", "--dataset", dataset, "--model", model,
                    "--index", str(root / f"{dataset}.tsv"), "--out", str(tmp_path / "e.h5"),
                    "--batch-size", "8", "--threads", "1",
                    env={"EMBEDPROBE_READERS": "threads"})
    assert seen["rc"] == 0
    assert seen["threads_started"] and all(seen["threads_started"]), seen["threads_started"]
    assert seen["off_main"] == [], f"{len(seen['off_main'])} first imports off the main thread"
    assert (tmp_path / "e.h5").stat().st_size > 0


def test_check_imports_nothing_off_the_main_thread(datasets, tmp_path):
    root, job = datasets
    seen = recorded("--job-config", job, "check", "--dataset", "sleep_edf_demo", "--model",
                    "biot_random", "--out", str(tmp_path / "check.json"))
    assert seen["rc"] == 0
    assert seen["off_main"] == []
    assert json.loads((tmp_path / "check.json").read_text())


def test_parallel_probe_fits_import_nothing_in_their_threads():
    """The C grid fitted two at a time (map_in_threads): the sleep-staging probe in both its
    methods and the seizure probe."""
    seen = recorded("probes")
    assert seen["rc"] == 0
    assert len(seen["threads_started"]) >= 2  # the pools did start threads
    assert seen["off_main"] == []
