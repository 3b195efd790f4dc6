"""Published checkpoints by name: fetched once on a node with internet, loaded offline everywhere.

A model entry `weights: hf:braindecode/<repo>` with `revision:` names a Hugging Face Hub repo.
`embedprobe fetch-weights` (and `snakemake weights`) downloads its `config.json` and
`*.safetensors` into `<weights_root>/hub` in the hub's own cache layout
(`models--org--name/snapshots/<commit>/...`, `refs/<revision>`) and records, in
`<weights_root>/hub/manifest.json`, the commit the revision resolved to and each file's sha256.
A re-run downloads nothing when the manifest's files are there with those hashes.

Every other step runs with the hub offline (`HF_HUB_OFFLINE=1`, `local_files_only=True`): the
snapshot is resolved from the local cache only, each file checked against the manifest, and a
checkpoint not fetched yet is a `weights not fetched` skip whose fix is the fetch command.

What a checkpoint's files mean for a pair (its config, its key names) is models/checkpoints.py;
which model names which checkpoint is models/registry.py. This module knows only the Hub.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from embedprobe.core.errors import WeightsError
from embedprobe.core.hashing import sha256_file
from embedprobe.core.paths import output_path

HUB_PREFIX = "hf:"
WEIGHTS_FILE = "model.safetensors"  # save_pretrained's name; an entry's `hub_file:` names another


def allow_patterns(weights_file: str = WEIGHTS_FILE) -> list[str]:
    """What is fetched of a checkpoint's repo: its config and its weights file."""
    return ["config.json", weights_file]


def hub_repo(weights: str) -> str | None:
    """`hf:braindecode/x` -> `braindecode/x`; None for `random` or a local file."""
    return weights[len(HUB_PREFIX):] if weights.startswith(HUB_PREFIX) else None


def hub_cache(roots: dict) -> Path:
    return output_path("hub_dir", roots)


def manifest_path(roots: dict) -> Path:
    return output_path("hub_manifest", roots)


def read_manifest(roots: dict) -> dict:
    path = manifest_path(roots)
    if not path.is_file():
        return {}
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError:
        return {}


def _write_manifest(roots: dict, manifest: dict) -> None:
    path = manifest_path(roots)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, path)


def manifest_key(repo: str, revision: str, file: str = WEIGHTS_FILE) -> str:
    """One manifest entry per (repo, revision, main file): a companion file of a repo (a
    vocabulary beside some weights) has its own."""
    return f"{repo}@{revision}" if file == WEIGHTS_FILE else f"{repo}@{revision}:{file}"


def go_offline() -> None:
    """Every step but fetch-weights: the hub library must not reach the network.
    huggingface_hub reads the variable once, at import: an imported one is told too."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    _set_hub_offline(True)


def _go_online() -> None:
    """fetch-weights only (a process that went offline before, e.g. a test, included)."""
    os.environ.pop("HF_HUB_OFFLINE", None)
    _set_hub_offline(False)


def _set_hub_offline(offline: bool) -> None:
    constants = sys.modules.get("huggingface_hub.constants")
    if constants is not None:
        constants.HF_HUB_OFFLINE = offline


def fetch_command(model_id: str) -> str:
    return f"embedprobe fetch-weights {model_id}"


# ------------------------------------------------------------------------------ offline lookup


@dataclass(frozen=True)
class HubCheckpoint:
    repo: str
    revision: str
    commit: str
    folder: Path
    files: dict  # name -> sha256, as recorded at fetch time
    main_file: str = WEIGHTS_FILE  # the file it was fetched for: its weights, or a companion

    @property
    def weights(self) -> Path:
        return self.folder / self.main_file

    @property
    def sha256(self) -> str:
        return self.files[self.main_file]

    def config(self) -> dict:
        """The checkpoint's config.json; {} for a repo published without one (LUNA's)."""
        if "config.json" not in self.files:
            return {}
        path = self.folder / "config.json"
        try:
            return json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise WeightsError(f"cannot read the checkpoint's config {path}: {exc}",
                               fix="embedprobe fetch-weights   # fetches it again") from exc


@dataclass(frozen=True)
class HubState:
    checkpoint: HubCheckpoint | None
    reason: str = ""  # why it cannot be used (not fetched, a file missing)


def locate(repo: str, revision: str, roots: dict, main_file: str = WEIGHTS_FILE,
           patterns: list[str] | None = None) -> HubState:
    """The fetched snapshot, resolved from the local cache only (no network, no download)."""
    go_offline()
    import huggingface_hub
    from huggingface_hub.errors import LocalEntryNotFoundError

    cache = hub_cache(roots)
    entry = read_manifest(roots).get(manifest_key(repo, revision, main_file))
    where = f"{repo} at revision {revision}"
    try:
        folder = Path(huggingface_hub.snapshot_download(
            repo, revision=revision, cache_dir=str(cache),
            allow_patterns=patterns or allow_patterns(main_file), local_files_only=True))
    except (LocalEntryNotFoundError, FileNotFoundError, OSError, ValueError):
        return HubState(None, f"weights not fetched: {where} is not in {cache}")
    if entry is None or entry.get("commit") != folder.name:
        return HubState(None, f"weights not fetched: {where} is in {cache} but not in its "
                              f"manifest {manifest_path(roots).name} (not fetched by embedprobe, "
                              "or the revision moved)")
    missing = [name for name in entry["files"] if not (folder / name).is_file()]
    if main_file not in entry["files"]:
        missing.append(main_file)
    if missing:
        return HubState(None, f"weights not fetched: {where}: {', '.join(missing)} missing "
                              f"from {folder}")
    return HubState(HubCheckpoint(repo, revision, folder.name, folder, dict(entry["files"]),
                                  main_file))


def verified_weights(checkpoint: HubCheckpoint, model_id: str) -> str:
    """The weights file's sha256, which must be the one recorded at fetch time."""

    digest = sha256_file(checkpoint.weights)
    if digest != checkpoint.sha256:
        raise WeightsError(
            f"weights for '{model_id}' are damaged: {checkpoint.weights} has sha256 "
            f"{digest[:12]}..., fetched as {checkpoint.sha256[:12]}...",
            fix=fetch_command(model_id) + "   # on a node with internet: re-downloads it")
    return digest


# ------------------------------------------------------------------------------ fetching


def _files_ok(folder: Path, files: dict) -> list[str]:
    """The recorded files that are absent or whose sha256 differs."""

    return [name for name, digest in files.items()
            if not (folder / name).is_file() or sha256_file(folder / name) != digest]


def fetch(repo: str, revision: str, roots: dict, main_file: str = WEIGHTS_FILE,
          patterns: list[str] | None = None) -> tuple[str, dict]:
    """Download one repo at one revision into the cache unless the manifest says it is there:
    `patterns` (default: config.json and `main_file`), of which `main_file` must exist.

    Returns ("fetched" | "already fetched", manifest entry)."""
    _go_online()
    import huggingface_hub

    cache = hub_cache(roots)
    manifest = read_manifest(roots)
    key = manifest_key(repo, revision, main_file)
    entry = manifest.get(key)
    bad: list[str] = []
    if entry:
        folder = cache / f"models--{repo.replace('/', '--')}" / "snapshots" / entry["commit"]
        bad = _files_ok(folder, entry["files"])
        if not bad and main_file in entry["files"]:
            return "already fetched", entry
    try:
        folder = Path(huggingface_hub.snapshot_download(
            repo, revision=revision, cache_dir=str(cache),
            allow_patterns=patterns or allow_patterns(main_file), force_download=bool(bad)))
    except Exception as exc:  # the hub raises many types (network, auth, revision, repo)
        raise WeightsError(
            f"cannot fetch {repo} at revision {revision}: {type(exc).__name__}: "
            f"{' '.join(str(exc).split())[:300]}",
            fix="check the repo and revision in config/models.yaml, and run this on a node "
                "that reaches huggingface.co") from exc

    files = {p.relative_to(folder).as_posix(): sha256_file(p)
             for p in sorted(folder.rglob("*")) if p.is_file()}
    if main_file not in files:
        raise WeightsError(f"{repo} at revision {revision} has no {main_file} "
                           f"(files: {', '.join(files) or 'none'})",
                           fix="name a repo published with save_pretrained / push_to_hub, or "
                               "its weights file with hub_file: in config/models.yaml")
    entry = {"repo": repo, "revision": revision, "commit": folder.name, "files": files,
             "fetched": time.strftime("%Y-%m-%dT%H:%M:%S")}
    manifest = read_manifest(roots)
    manifest[key] = entry
    _write_manifest(roots, manifest)
    return "fetched", entry
