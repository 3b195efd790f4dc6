"""A Hugging Face Hub made of local folders, for the hub tests (no network)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
from fnmatch import fnmatch
from pathlib import Path

import huggingface_hub

from embedprobe import cli
from embedprobe.models.registry import RANDOM, build_model

REAL_DOWNLOAD = huggingface_hub.snapshot_download
# Any request to the hub from a job would go here, and fail: nothing listens on port 9.
NO_HUB = {"HF_ENDPOINT": "http://127.0.0.1:9", "HF_HUB_OFFLINE": "0"}


def publish(hub_dir: Path, repo: str, spec, n_chans: int, seed: int = 5,
            ch_names: tuple[str, ...] = (), **changes) -> Path:
    """A repo as braindecode publishes it: save_pretrained of a (random) model."""
    spec = dataclasses.replace(spec, weights=RANDOM, seed=seed, **changes)
    model, _ = build_model(spec, n_chans, roots={}, ch_names=ch_names)
    folder = hub_dir / repo
    if folder.exists():
        shutil.rmtree(folder)
    model.save_pretrained(folder)
    return folder


class FakeHub:
    """snapshot_download from local folders: counts the downloads, knows revision `main`."""

    def __init__(self, hub_dir: Path):
        self.hub_dir, self.calls = hub_dir, []

    def __call__(self, repo_id, *, revision=None, cache_dir=None, allow_patterns=None,
                 local_files_only=False, force_download=False, **kwargs):
        if local_files_only:
            return REAL_DOWNLOAD(repo_id, revision=revision, cache_dir=cache_dir,
                                 allow_patterns=allow_patterns, local_files_only=True)
        self.calls.append((repo_id, revision, force_download))
        source = self.hub_dir / repo_id
        if revision != "main" or not source.is_dir():
            raise ValueError(f"Revision Not Found for url: https://huggingface.co/api/models/"
                             f"{repo_id}/revision/{revision}")
        commit = hashlib.sha1(f"{repo_id}{revision}".encode()).hexdigest()
        repo_cache = Path(cache_dir) / f"models--{repo_id.replace('/', '--')}"
        snapshot = repo_cache / "snapshots" / commit
        snapshot.mkdir(parents=True, exist_ok=True)
        for path in sorted(source.rglob("*")):  # a repo's folders too (EEGNet's, one a set)
            name = path.relative_to(source).as_posix()
            if path.is_file() and any(fnmatch(name, p) for p in allow_patterns):
                if force_download or not (snapshot / name).exists():
                    (snapshot / name).parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(path, snapshot / name)
        (repo_cache / "refs").mkdir(exist_ok=True)
        (repo_cache / "refs" / revision).write_text(commit)
        return str(snapshot)


def fetch_cli(config, *models):
    return cli.main(["--job-config", json.dumps(config), "fetch-weights", *models])


def commit_of(repo: str, revision: str = "main") -> str:
    """The commit FakeHub resolves a revision to."""
    return hashlib.sha1(f"{repo}{revision}".encode()).hexdigest()


def tiny_night(root: Path, dataset: str, models: list[str]) -> tuple[dict, Path]:
    """One subject, one short night in `dataset`'s Sleep-EDF demo format under `root`,
    indexed by the real `index` step; the shipped config with a demo benchmark of `models`.
    Returns (config, index)."""
    import subprocess
    import sys

    from embedprobe.core.config import load_config
    from embedprobe.datasets.sleep_edf.lookalike import generate

    generate(root / "data" / "tiny-edf", n_subjects=1, nights=1, hours=0.25, seed=3)
    config = load_config()
    config["datasets"] = {dataset: {**config["datasets"][dataset], "path": "tiny-edf",
                                    "expected_recordings": 1}}
    config["benchmarks"] = {"demo": {**config["benchmarks"]["demo"], "datasets": [dataset],
                                     "models": models}}
    config.update(data_root=str(root / "data"), cache_root=str(root / "cache"),
                  results_root=str(root / "results"))
    index = root / "index.tsv"
    subprocess.run([sys.executable, "-m", "embedprobe.cli", "--job-config", json.dumps(
        config | {"weights_root": str(root / "w")}), "index", "--dataset", dataset, "--out",
        str(index)], check=True, capture_output=True)
    return config, index
