"""The checkpoint registry: build a braindecode model from config, load local weights safely."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from embedprobe.core.config import closest, lookup
from embedprobe.core.errors import ModelError, UsageError, WeightsError
from embedprobe.core.hashing import sha256_file
from embedprobe.core.units import UNIT_SECONDS
from embedprobe.core.variants import BCI_GROUP, CONFOUND, for_task, listed_models
from embedprobe.datasets.registry import entry_window, labelling_task_name
from embedprobe.models import braindecode_import, checkpoints, hub, time_series
from embedprobe.models.architectures import ARCHITECTURES, MEAN, POOLINGS, READOUTS, TOKENS

# The Snakefile asks model_spec and the weights' state at parse time: the snakemake process
# in every cluster job must not load torch (~220 MB beyond what the job's request allows).
if TYPE_CHECKING:
    import torch

RANDOM = "random"


@dataclass(frozen=True)
class ModelSpec:
    model_id: str
    family: str
    architecture: str
    weights: str
    sfreq: float
    window_seconds: float
    seed: int = 0
    scaling: str = "none"
    params: dict = field(default_factory=dict)
    revision: str = "main"  # for `weights: hf:org/name`: a branch, tag or commit hash
    # How a window's tokens become its vector (architectures.READOUTS): the entry's
    # `readout_by_task` for the dataset's labelling task, else its `readout`. It changes the
    # embeddings, so it belongs to whatever identifies them.
    readout: str = MEAN
    # `mean`: one vector per window; `tokens`: one per time patch (architectures.POOLINGS),
    # stored as (windows, tokens, width) and flattened by the probes. The readout is unused.
    pooling: str = MEAN
    # for `weights: hf:...`: the weights file in the repo (LUNA's repo holds one per size)
    hub_file: str = hub.WEIGHTS_FILE
    # BCI tasks: `confound` (the paradigm's confound filter) or `none` (the model's own band):
    # set per variant (core/variants.py); pipeline/protocol.py reads it
    bci_filtering: str = CONFOUND

    @property
    def n_times(self) -> int:
        return int(round(self.sfreq * self.window_seconds))


def model_spec(config: dict, model_id: str, dataset: str | None = None) -> ModelSpec:
    """The model's settings for a dataset (None: the entry's own). Its window is the entry's
    `window_seconds_by_task` for the dataset's labelling task, else its `window_seconds`; a
    unit (10 s seizure window, 3 s trial, the no_filtering variants' 4 s motor-imagery trial:
    datasets/registry.entry_window) shorter than that is taken whole: each family here
    takes any whole number of its patches, and nothing is padded or interpolated. The readout
    and the scaling follow the labelling task the same way (`readout_by_task`,
    `scaling_by_task`)."""
    entry = dict(lookup(config, "models", model_id))
    return entry_model_spec(model_id, entry, None if dataset is None else
                            lookup(config, "datasets", dataset))


def entry_model_spec(model_id: str, entry: dict, dataset_entry: dict | None) -> ModelSpec:
    """model_spec of the model's config entry (a copy: it is changed here) for a dataset's
    config entry (None: the entry's own)."""
    entry.pop("group", None)  # the alias group that lists it (core/model_aliases.py)
    by_task = entry.pop("readout_by_task", None) or {}
    scaling_by_task = entry.pop("scaling_by_task", None) or {}
    window_by_task = entry.pop("window_seconds_by_task", None) or {}
    check_task_names(model_id, "scaling_by_task", scaling_by_task)
    check_task_names(model_id, "window_seconds_by_task", window_by_task)
    task = None
    if dataset_entry is not None:
        task = labelling_task_name(dataset_entry)
        window = for_task(window_by_task, task) or entry["window_seconds"]
        unit = entry_window(dataset_entry, entry.get("bci_filtering", CONFOUND))[1]
        entry["window_seconds"] = min(window, unit)
    if entry["architecture"] not in ARCHITECTURES:
        raise UsageError(
            f"model '{model_id}': unknown architecture '{entry['architecture']}'"
            f"{closest(entry['architecture'], ARCHITECTURES)}",
            fix=f"use one of: {', '.join(sorted(ARCHITECTURES))} (config/models.yaml)",
        )
    entry["readout"] = readout_for(model_id, entry, by_task, task)
    check_pooling(model_id, entry)
    entry["scaling"] = for_task(scaling_by_task, task) or entry.get("scaling", "none")
    return ModelSpec(model_id=model_id, **entry)


def check_pooling(model_id: str, entry: dict) -> None:
    """`pooling: tokens` needs an architecture that has per-patch tokens to keep."""
    pooling = entry.get("pooling", MEAN)
    if pooling not in POOLINGS:
        raise UsageError(f"model '{model_id}': pooling '{pooling}'{closest(pooling, POOLINGS)}",
                         fix=f"use one of: {', '.join(POOLINGS)} (config/models.yaml)")
    arch = ARCHITECTURES[entry["architecture"]]
    if pooling == TOKENS and arch.tokens is None:
        raise UsageError(f"model '{model_id}': pooling 'tokens' is not offered by "
                         f"{entry['architecture']}: {arch.no_tokens}",
                         fix="remove `pooling: tokens` from its entry (config/models.yaml) "
                             "and probe its pooled vector")


def check_task_names(model_id: str, key: str, by_task: dict) -> None:
    """A `<setting>_by_task` mapping names labelling tasks (or `bci`: every BCI task) only."""
    unknown = sorted(set(by_task) - set(UNIT_SECONDS) - {BCI_GROUP})
    if unknown:
        raise UsageError(
            f"model '{model_id}': {key} names unknown labelling task(s) "
            f"{', '.join(unknown)}{closest(unknown[0], UNIT_SECONDS)}",
            fix=f"use tasks among: {', '.join(sorted(UNIT_SECONDS))} (config/models.yaml)")


def readout_for(model_id: str, entry: dict, by_task: dict, task: str | None) -> str:
    """The entry's readout for a labelling task (None: no dataset), checked against what its
    architecture offers, with every `readout_by_task` name checked too."""
    check_task_names(model_id, "readout_by_task", by_task)
    offered = ARCHITECTURES[entry["architecture"]].readouts
    for name in [entry.get("readout", MEAN), *by_task.values()]:
        if name not in offered:
            known = name in READOUTS
            raise UsageError(
                f"model '{model_id}': readout '{name}' "
                + ("is not offered by " + entry["architecture"] if known else
                   f"is unknown{closest(name, READOUTS)}"),
                fix=f"use one of {entry['architecture']}'s readouts: {', '.join(offered)} "
                    "(config/models.yaml)")
    return for_task(by_task, task) or entry.get("readout", MEAN)


def weights_path(spec: ModelSpec, roots: dict) -> Path | None:
    """The weights file; for a hub checkpoint its fetched model.safetensors, or the hub
    cache folder while it is not fetched."""
    if spec.weights == RANDOM:
        return None
    repo = hub.hub_repo(spec.weights)
    if repo is not None:
        state = hub_state(spec, roots)
        return state.checkpoint.weights if state.checkpoint else hub.hub_cache(roots)
    path = Path(spec.weights)
    return path if path.is_absolute() else Path(roots["weights_root"]) / path


def weights_state(spec: ModelSpec, roots: dict) -> str:
    if spec.weights == RANDOM:
        return "not needed"
    if hub.hub_repo(spec.weights) is not None:
        return "not fetched" if not_fetched(spec, roots) else "found"
    return "found" if weights_path(spec, roots).is_file() else "missing"


def hub_state(spec: ModelSpec, roots: dict) -> hub.HubState:
    return hub.locate(hub.hub_repo(spec.weights), spec.revision, roots, spec.hub_file)


def not_fetched(spec: ModelSpec, roots: dict) -> str:
    """Why a hub checkpoint, or a file it needs besides its weights, is not fetched ('' when
    everything is)."""
    return hub_state(spec, roots).reason or companions(spec, roots)[1]


def companions(spec: ModelSpec, roots: dict) -> tuple[dict[str, Path], str]:
    """The files a pretrained model of this family needs besides its weights
    (checkpoints.COMPANIONS: REVE's position bank, ST-EEGFormer's channel vocabulary), fetched
    with them: ({name: local path}, '') or ({}, why one is missing); ({}, '') for random
    init."""
    if spec.weights == RANDOM:
        return {}, ""
    found = {}
    for name, (repo, revision, file) in checkpoints.COMPANIONS.get(spec.architecture,
                                                                   {}).items():
        state = hub.locate(repo, revision, roots, file, patterns=[file])
        if state.checkpoint is None:
            return {}, state.reason
        found[name] = state.checkpoint.weights
    return found, ""


def checkpoint_against_pair(spec: ModelSpec, roots: dict,
                            ch_names: tuple[str, ...]) -> tuple[hub.HubCheckpoint | None, str]:
    """(the fetched hub checkpoint, why its config.json cannot serve these channels: '' when
    it can); (None, '') for local or random weights and checkpoints not fetched. Shared by the
    plan and check, so both rule a pair out for the same reason."""
    if hub.hub_repo(spec.weights) is None:
        return None, ""
    checkpoint = hub_state(spec, roots).checkpoint
    if checkpoint is None:
        return None, ""
    return checkpoint, checkpoints.checkpoint_mismatch(spec, checkpoint.config(), len(ch_names),
                                               ch_names)


def missing_weights(spec: ModelSpec, roots: dict) -> tuple[str, str] | None:
    """(reason, fix) when the pair is skipped for its weights (or for its family's optional
    package: models/time_series.py) before running, else None."""
    missing = time_series.package_missing(spec.architecture)
    if missing:
        return missing, time_series.INSTALL_LINE
    if hub.hub_repo(spec.weights) is not None:  # located once, not again for the reason
        reason = not_fetched(spec, roots)
        return (reason, hub.fetch_command(spec.model_id)) if reason else None
    state = weights_state(spec, roots)
    if state == "missing":
        path = weights_path(spec, roots)
        return (f"weights not found at {path}",
                f"copy the checkpoint for {spec.model_id} to {path} "
                "(or set weights_root / EMBEDPROBE_WEIGHTS_ROOT)")
    return None


def load_state_dict(path: Path) -> dict:
    """A checkpoint is untrusted: tensors only, never pickled code."""
    try:
        if path.suffix == ".safetensors":
            from safetensors.torch import load_file

            return load_file(str(path))
        import torch

        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises several types for bad or unsafe files
        raise WeightsError(
            f"cannot load weights {path}: {exc}",
            fix="provide a state_dict saved with torch.save(model.state_dict()) or safetensors",
        ) from exc
    return checkpoints.unwrap(state) if isinstance(state, dict) else state


def constructor_kwargs(spec: ModelSpec, n_chans: int, ch_names: tuple[str, ...],
                       files: dict) -> dict:
    """The architecture's kwargs for `n_chans` channels, those its channels' names or
    positions give (`files`: the companions), then the entry's `params:`."""
    arch = ARCHITECTURES[spec.architecture]
    kwargs = arch.build_kwargs(n_chans, spec.sfreq, spec.n_times)
    if arch.channel_kwargs is not None:
        if len(ch_names) != n_chans:
            raise ModelError(
                f"{spec.architecture} embeds each channel by its name or position: it needs "
                f"the {n_chans} channel names, {len(ch_names)} were given",
                fix="build it through the channel map (models/encoder.py Encoder)")
        kwargs |= arch.channel_kwargs(tuple(ch_names), files, spec.params)
    return kwargs | spec.params


def build_model(spec: ModelSpec, n_chans: int, roots: dict,
                ch_names: tuple[str, ...] = ()) -> tuple[torch.nn.Module, str]:
    """The model in eval mode and the sha256 identifying its weights ('random:<seed>').
    `ch_names`: the model's channel names, which the families that embed a channel by name or
    position need (architectures.Architecture.channel_kwargs)."""
    braindecode_models = braindecode_import.braindecode_models()
    import torch

    arch = ARCHITECTURES[spec.architecture]
    if arch.builder is not None:
        return _build_outside_braindecode(spec, roots)
    torch.manual_seed(spec.seed)
    if hub.hub_repo(spec.weights) is not None:
        return _build_from_hub(spec, n_chans, roots, ch_names)
    kwargs = constructor_kwargs(spec, n_chans, ch_names, {})
    model = getattr(braindecode_models, arch.class_name)(**kwargs)
    path = weights_path(spec, roots)
    if path is None:
        return model.eval(), f"random:{spec.seed}"
    if not path.is_file():
        raise WeightsError(
            f"weights for '{spec.model_id}' not found: looked for {path}",
            fix=f"copy the checkpoint to {path} (or set weights_root / EMBEDPROBE_WEIGHTS_ROOT)",
        )
    state = checkpoints.fit_window_shapes(load_state_dict(path), spec.architecture,
                                          model.state_dict())
    own = set(model.state_dict())
    mapped = set(checkpoints.to_braindecode(state, spec.architecture, own))
    if mapped != set(state) and mapped & own:
        # the original authors' names, which the family's key map knows
        model = checkpoints.fit_state(model, state, spec.architecture, path)
        return model.eval(), sha256_file(path)
    try:
        model.load_state_dict(state, strict=True)
    except RuntimeError as exc:
        raise WeightsError(
            f"weights {path} do not fit {spec.architecture} as configured for "
            f"'{spec.model_id}': {' '.join(str(exc).split())[:400]}",
            fix="check the checkpoint belongs to this architecture and its params in models.yaml",
        ) from exc
    return model.eval(), sha256_file(path)


def _build_outside_braindecode(spec: ModelSpec, roots: dict) -> tuple[torch.nn.Module, str]:
    """A family built by its own package (models/time_series.py): the random init, or its
    fetched hub checkpoint read offline (checked against the manifest first)."""
    time_series.require_package(spec.architecture)
    build = ARCHITECTURES[spec.architecture].builder
    if spec.weights == RANDOM:
        return build(None, spec.seed, spec.params).eval(), f"random:{spec.seed}"
    if hub.hub_repo(spec.weights) is None:
        raise UsageError(f"model '{spec.model_id}': {spec.architecture} loads a hub checkpoint "
                         f"(weights: hf:org/name) or random init, not a file ({spec.weights})",
                         fix="name its hub repo in config/models.yaml")
    state = hub_state(spec, roots)
    if state.checkpoint is None:
        raise WeightsError(f"'{spec.model_id}': {state.reason}",
                           fix=hub.fetch_command(spec.model_id) + "   # on a node with internet")
    digest = hub.verified_weights(state.checkpoint, spec.model_id)
    return build(state.checkpoint.folder, spec.seed, spec.params).eval(), digest


def _build_from_hub(spec: ModelSpec, n_chans: int, roots: dict,
                    ch_names: tuple[str, ...]) -> tuple[torch.nn.Module, str]:
    """A fetched hub checkpoint, from the local cache only; checked against its manifest and
    against the pair (its config.json) before its weights are read."""
    braindecode_models = braindecode_import.braindecode_models()

    arch = ARCHITECTURES[spec.architecture]
    state = hub_state(spec, roots)
    if state.checkpoint is None:
        raise WeightsError(f"'{spec.model_id}': {state.reason}",
                           fix=hub.fetch_command(spec.model_id) + "   # on a node with internet")
    checkpoint = state.checkpoint
    ckpt = checkpoint.config()
    mismatch = checkpoints.checkpoint_mismatch(spec, ckpt, n_chans)
    if mismatch:
        raise WeightsError(f"checkpoint {checkpoint.repo}@{checkpoint.commit[:12]} cannot serve "
                           f"'{spec.model_id}': {mismatch}",
                           fix="use a checkpoint made for this montage and rate, or rule the "
                               "family out in the dataset's channel map")
    files, missing = companions(spec, roots)
    if missing:
        raise WeightsError(f"'{spec.model_id}': {missing}",
                           fix=hub.fetch_command(spec.model_id) + "   # on a node with internet")
    digest = hub.verified_weights(checkpoint, spec.model_id)
    kwargs = constructor_kwargs(spec, checkpoints.build_channels(spec, ckpt, n_chans), ch_names,
                                files)
    model = getattr(braindecode_models, arch.class_name)(**kwargs)
    weights = load_state_dict(checkpoint.weights)
    model = checkpoints.fit_state(model, weights, spec.architecture, checkpoint.weights)
    return model.eval(), digest


def fetch_models(config: dict, roots: dict, models: list[str] | None = None) -> list[str]:
    """Fetch every hub checkpoint named (default: all in config); one line per model."""
    names = models or [m for m, e in listed_models(config["models"]).items()
                       if hub.hub_repo(e["weights"])]
    lines = []
    for model in names:
        spec = model_spec(config, model)
        repo = hub.hub_repo(spec.weights)
        if repo is None:
            lines.append(f"{model}: not a hub checkpoint (weights: {spec.weights}), nothing "
                         "to fetch")
            continue
        state, entry = hub.fetch(repo, spec.revision, roots, spec.hub_file)
        lines.append(f"{model}: {state} {repo}@{spec.revision} (commit "
                     f"{entry['commit'][:12]}, {spec.hub_file} sha256 "
                     f"{entry['files'][spec.hub_file][:12]})")
        for name, (other, revision, file) in checkpoints.COMPANIONS.get(spec.architecture,
                                                                        {}).items():
            state, entry = hub.fetch(other, revision, roots, file, patterns=[file])
            lines.append(f"{model}: {state} {name} {other}@{revision}/{file} (commit "
                         f"{entry['commit'][:12]}, sha256 {entry['files'][file][:12]})")
    return lines
