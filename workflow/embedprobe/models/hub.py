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

The checkpoint's own config.json is compared with the model entry and the dataset's channel map
before any data is read (`checkpoint_mismatch`): a checkpoint that cannot serve the pair rules it
out with the reason; nothing is resized.

The original authors' files (a Lightning `.ckpt`, a `.pth` holding `{"model": ...}`) load through
`KEY_MAPS`: containers and known prefixes are stripped, then the family's names are mapped onto
braindecode's (see `to_braindecode`).
"""

from __future__ import annotations

import inspect
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from embedprobe.core.errors import WeightsError
from embedprobe.core.hashing import sha256_file

HUB_PREFIX = "hf:"
ALLOW_PATTERNS = ["config.json", "*.safetensors"]
WEIGHTS_FILE = "model.safetensors"


def hub_repo(weights: str) -> str | None:
    """`hf:braindecode/x` -> `braindecode/x`; None for `random` or a local file."""
    return weights[len(HUB_PREFIX):] if weights.startswith(HUB_PREFIX) else None


def hub_cache(roots: dict) -> Path:
    return Path(roots["weights_root"]) / "hub"


def manifest_path(roots: dict) -> Path:
    return hub_cache(roots) / "manifest.json"


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


def manifest_key(repo: str, revision: str) -> str:
    return f"{repo}@{revision}"


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

    @property
    def weights(self) -> Path:
        return self.folder / WEIGHTS_FILE

    @property
    def sha256(self) -> str:
        return self.files[WEIGHTS_FILE]

    def config(self) -> dict:
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


def locate(repo: str, revision: str, roots: dict) -> HubState:
    """The fetched snapshot, resolved from the local cache only (no network, no download)."""
    go_offline()
    import huggingface_hub
    from huggingface_hub.errors import LocalEntryNotFoundError

    cache = hub_cache(roots)
    entry = read_manifest(roots).get(manifest_key(repo, revision))
    where = f"{repo} at revision {revision}"
    try:
        folder = Path(huggingface_hub.snapshot_download(
            repo, revision=revision, cache_dir=str(cache), allow_patterns=ALLOW_PATTERNS,
            local_files_only=True))
    except (LocalEntryNotFoundError, FileNotFoundError, OSError, ValueError):
        return HubState(None, f"weights not fetched: {where} is not in {cache}")
    if entry is None or entry.get("commit") != folder.name:
        return HubState(None, f"weights not fetched: {where} is in {cache} but not in its "
                              f"manifest {manifest_path(roots).name} (not fetched by embedprobe, "
                              "or the revision moved)")
    missing = [name for name in entry["files"] if not (folder / name).is_file()]
    if WEIGHTS_FILE not in entry["files"]:
        missing.append(WEIGHTS_FILE)
    if missing:
        return HubState(None, f"weights not fetched: {where}: {', '.join(missing)} missing "
                              f"from {folder}")
    return HubState(HubCheckpoint(repo, revision, folder.name, folder, dict(entry["files"])))


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


def fetch(repo: str, revision: str, roots: dict) -> tuple[str, dict]:
    """Download one repo at one revision into the cache unless the manifest says it is there.

    Returns ("fetched" | "already fetched", manifest entry)."""
    _go_online()
    import huggingface_hub

    cache = hub_cache(roots)
    manifest = read_manifest(roots)
    key = manifest_key(repo, revision)
    entry = manifest.get(key)
    bad: list[str] = []
    if entry:
        folder = cache / f"models--{repo.replace('/', '--')}" / "snapshots" / entry["commit"]
        bad = _files_ok(folder, entry["files"])
        if not bad and WEIGHTS_FILE in entry["files"]:
            return "already fetched", entry
    try:
        folder = Path(huggingface_hub.snapshot_download(
            repo, revision=revision, cache_dir=str(cache), allow_patterns=ALLOW_PATTERNS,
            force_download=bool(bad)))
    except Exception as exc:  # the hub raises many types (network, auth, revision, repo)
        raise WeightsError(
            f"cannot fetch {repo} at revision {revision}: {type(exc).__name__}: "
            f"{' '.join(str(exc).split())[:300]}",
            fix="check the repo and revision in config/models.yaml, and run this on a node "
                "that reaches huggingface.co") from exc

    files = {p.relative_to(folder).as_posix(): sha256_file(p)
             for p in sorted(folder.rglob("*")) if p.is_file()}
    if WEIGHTS_FILE not in files:
        raise WeightsError(f"{repo} at revision {revision} has no {WEIGHTS_FILE} "
                           f"(files: {', '.join(files) or 'none'})",
                           fix="name a repo published with save_pretrained / push_to_hub")
    entry = {"repo": repo, "revision": revision, "commit": folder.name, "files": files,
             "fetched": time.strftime("%Y-%m-%dT%H:%M:%S")}
    manifest = read_manifest(roots)
    manifest[key] = entry
    _write_manifest(roots, manifest)
    return "fetched", entry


def fetch_models(config: dict, roots: dict, models: list[str] | None = None) -> list[str]:
    """Fetch every hub checkpoint named (default: all in config); one line per model."""
    from embedprobe.models.registry import model_spec

    names = models or [m for m, e in config["models"].items() if hub_repo(e["weights"])]
    lines = []
    for model in names:
        spec = model_spec(config, model)
        repo = hub_repo(spec.weights)
        if repo is None:
            lines.append(f"{model}: not a hub checkpoint (weights: {spec.weights}), nothing "
                         "to fetch")
            continue
        state, entry = fetch(repo, spec.revision, roots)
        lines.append(f"{model}: {state} {repo}@{spec.revision} (commit "
                     f"{entry['commit'][:12]}, {WEIGHTS_FILE} sha256 "
                     f"{entry['files'][WEIGHTS_FILE][:12]})")
    return lines


# ------------------------------------------------------------------------------ the checkpoint
# against the pair

# Hyperparameters that shape the weights or what they mean: the checkpoint's config.json must
# agree with what the model entry builds (its sfreq, and the class defaults plus `params:`).
MUST_MATCH = {
    "BIOT": ("sfreq", "embed_dim", "num_layers", "num_heads", "hop_length"),
    "Labram": ("sfreq", "patch_size", "embed_dim", "num_layers", "num_heads"),
    "CBraMod": ("sfreq", "patch_size", "dim_feedforward", "n_layer", "nhead"),
    "EEGPT": ("sfreq", "patch_size", "patch_stride", "embed_num", "embed_dim", "depth",
              "num_heads"),
}
# BIOT learns one channel token per input position: a checkpoint with C tokens serves a dataset
# of up to C channels (the first ones, as BIOT's own code does: "N_channels >= your actual
# channels"); the others embed channels by name (LaBraM, EEGPT) or not at all (CBraMod).
POSITIONAL_CHANNELS = {"BIOT"}


def checkpoint_channels(ckpt: dict) -> int | None:
    if ckpt.get("n_chans"):
        return int(ckpt["n_chans"])
    return len(ckpt["chs_info"]) if ckpt.get("chs_info") else None


def built_kwargs(spec, n_chans: int) -> dict:
    """What the model entry builds: the class defaults, the architecture's kwargs, `params:`."""
    import braindecode.models

    from embedprobe.models.architectures import ARCHITECTURES

    arch = ARCHITECTURES[spec.architecture]
    cls = getattr(braindecode.models, arch.class_name)
    defaults = {name: p.default for name, p in inspect.signature(cls.__init__).parameters.items()
                if p.default is not inspect.Parameter.empty}
    return defaults | arch.build_kwargs(n_chans, spec.sfreq, spec.n_times) | spec.params


def checkpoint_mismatch(spec, ckpt: dict, n_chans: int, ch_names=()) -> str:
    """Why this checkpoint cannot serve the pair ('' when it can)."""
    reasons = []
    ours = built_kwargs(spec, n_chans)
    for key in MUST_MATCH.get(spec.architecture, ("sfreq",)):
        if key in ckpt and ckpt[key] is not None and key in ours and ours[key] is not None:
            if float(ckpt[key]) != float(ours[key]):
                source = "the model entry" if key == "sfreq" or key in spec.params else \
                    "braindecode's default"
                reasons.append(f"{key} {ckpt[key]} in the checkpoint, {ours[key]} from {source}")
    have = checkpoint_channels(ckpt)
    if have is not None and spec.architecture in POSITIONAL_CHANNELS and n_chans > have:
        reasons.append(f"it has {have} channel tokens, the channel map gives {n_chans} "
                       f"channels ({', '.join(ch_names)})")
    return "; ".join(reasons)


def build_channels(spec, ckpt: dict, n_chans: int) -> int:
    """The channel count to build with: BIOT keeps the checkpoint's tokens (the first
    `n_chans` are used); the others are built for the dataset's channels."""
    have = checkpoint_channels(ckpt)
    if spec.architecture in POSITIONAL_CHANNELS and have and have >= n_chans:
        return have
    return n_chans


# ------------------------------------------------------------------------------ original files

# Per family: the prefixes that wrap the original authors' module names, and their braindecode
# names (first match wins), and keys that braindecode does not keep.
#
# braindecode 1.8.1 offers no key map of its own for these families (EEGModuleMixin.mapping is
# None for BIOT, Labram, CBraMod and EEGPT), so the maps below are written from the original
# repositories; LaBraM and CBraMod have none here (their files load only in braindecode's names).
#
# BIOT (github.com/ycq091044/BIOT): the pretrained encoder files hold BIOTEncoder's own names
# (patch_embedding, transformer, positional_encoding, channel_tokens, index); BIOTClassifier
# holds them under `biot.` with its head `classifier.clshead.1`; UnsupervisedPretrain under
# `biot.` with a `prediction` head. braindecode's BIOT holds the encoder under `encoder.` with
# the same inner names, the head as `final_layer.classification_head`, and `index` as a
# non-persistent buffer.
#
# EEGPT (github.com/BINE022/EEGPT): the released Lightning `.ckpt` holds the pretraining module:
# `encoder.` (the online encoder), `target_encoder.` (its moving average, which the authors'
# downstream code loads: the `target_encoder.` keys of `state_dict`), `predictor.` and
# `reconstructor.` (pretraining only; braindecode's EEGPT docstring says to ignore them).
# braindecode's EEGPT holds the encoder as `target_encoder.` with the same inner names.
KEY_MAPS: dict[str, dict] = {
    "BIOT": {
        "rename": [
            ("biot.", "encoder."),
            ("classifier.clshead.1.", "final_layer.classification_head."),
            ("patch_embedding.", "encoder.patch_embedding."),
            ("transformer.", "encoder.transformer."),
            ("positional_encoding.", "encoder.positional_encoding."),
            ("channel_tokens.", "encoder.channel_tokens."),
        ],
        "drop": ("encoder.index", "index", "prediction."),
    },
    "EEGPT": {
        "rename": [],
        "drop": ("encoder.", "predictor.", "reconstructor."),
    },
}
# Wrappers around a state_dict: Lightning's `state_dict`, a `.pth`'s `model` (or `module`).
CONTAINERS = ("state_dict", "model", "module", "model_state_dict")
# Prefixes of the module that held the network: LightningModule.model, DataParallel.module.
PREFIXES = ("model.", "module.", "net.")
# A frozen encoder uses no head: heads are loaded when they fit and ignored when they differ.
HEAD_PREFIXES = ("final_layer.", "head.", "classifier.")
# Key prefixes a checkpoint may hold that the model built here does not use: EEGPT's channel ids
# (our forward computes them from the mapped names) and braindecode's downstream channel
# projection (`chan_proj.`, never pretrained; the entry builds chan_proj_type="none").
IGNORED = {"EEGPT": ("chans_id", "chan_proj.")}


def unwrap(state) -> dict:
    """The tensors of a checkpoint dict, whatever container holds them."""
    while isinstance(state, dict):
        inner = next((state[k] for k in CONTAINERS if isinstance(state.get(k), dict)), None)
        if inner is None:
            break
        state = inner
    return {k: v for k, v in state.items() if hasattr(v, "shape")}


def to_braindecode(state: dict, architecture: str, expected: set[str]) -> dict:
    """Original names -> braindecode's: strip the wrapper prefixes, then the family's map
    (renames; dropped keys are those braindecode's model does not have). A checkpoint all in
    braindecode's names passes unchanged."""
    if set(state) <= expected:
        return state
    for prefix in PREFIXES:
        if state and all(k.startswith(prefix) for k in state):
            state = {k[len(prefix):]: v for k, v in state.items()}
    table = KEY_MAPS.get(architecture)
    if table is None:
        return state
    mapped = {}
    for key, value in state.items():
        if key not in expected:
            for old, new in table["rename"]:
                if key.startswith(old):
                    key = new + key[len(old):]
                    break
        if key in expected or not key.startswith(table["drop"]):
            mapped[key] = value
    return mapped


def fit_state(model, state: dict, architecture: str, source: Path):
    """Load `state` into `model`: the encoder strictly, a head only when it fits.
    Unexpected, missing and mis-shaped keys are named in the error."""
    own = model.state_dict()
    state = to_braindecode(state, architecture, set(own))
    ignored = IGNORED.get(architecture, ())
    state = {k: v for k, v in state.items() if not k.startswith(ignored)}
    head = {k for k in own if k.startswith(HEAD_PREFIXES)}
    state = {k: v for k, v in state.items()
             if not (k in head and tuple(v.shape) != tuple(own[k].shape))
             and not (k.startswith(HEAD_PREFIXES) and k not in own)}
    unexpected = sorted(set(state) - set(own))
    missing = sorted(k for k in set(own) - set(state) if k not in head
                     and not k.startswith(ignored))
    shapes = sorted(f"{k} {tuple(v.shape)} vs {tuple(own[k].shape)}" for k, v in state.items()
                    if k in own and tuple(v.shape) != tuple(own[k].shape))
    if unexpected or missing or shapes:
        parts = [f"{label} ({len(keys)}): {', '.join(keys[:6])}"
                 + (", ..." if len(keys) > 6 else "")
                 for label, keys in (("unexpected keys", unexpected), ("missing keys", missing),
                                     ("shapes differ (checkpoint vs model)", shapes)) if keys]
        raise WeightsError(
            f"weights {source} do not fit {architecture}: " + "; ".join(parts),
            fix=f"check the checkpoint belongs to {architecture} and its params in "
                "models.yaml; original-format names are mapped by KEY_MAPS in "
                "workflow/embedprobe/models/hub.py")
    model.load_state_dict(state, strict=False)
    return model
