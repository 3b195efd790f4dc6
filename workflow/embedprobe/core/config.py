"""Load the merged configuration, check names against the schema, resolve the roots."""

from __future__ import annotations

import copy
import functools
import os
from pathlib import Path

import yaml

from embedprobe.core.errors import UsageError
from embedprobe.core.model_aliases import expand_models
from embedprobe.core.names import closest  # other modules import it from here too
from embedprobe.core.paths import ROOTS, limited_roots
from embedprobe.core.variants import materialize

PROJECT_ROOT = Path(__file__).resolve().parents[3]
SCHEMA_PATH = PROJECT_ROOT / "workflow" / "schemas" / "config.schema.yaml"
CONFIG_FILES = ("config.yaml", "benchmarks.yaml", "datasets.yaml", "models.yaml")
# Each root defaults to a folder of its own name: data_root -> data, ...
ROOT_DEFAULTS = {root: root.removesuffix("_root") for root in ROOTS}


def load_config(config_dir: Path = PROJECT_ROOT / "config") -> dict:
    """The merged config files, as Snakemake's `configfile:` directives merge them, with the
    schema's defaults filled in."""
    merged: dict = {}
    for name in CONFIG_FILES:
        merged.update(yaml.safe_load((config_dir / name).read_text()) or {})
    return expand_benchmark_models(fill_defaults(merged))


def expand_benchmark_models(config: dict) -> dict:
    """Each benchmark's `models:` with its aliases (all_pretrained, all_random, a family)
    replaced by their model ids, in place (core/model_aliases.py), then a benchmark with
    `variants:` given one model id per variant (core/variants.py); ids stay ids, so expanding
    twice changes nothing. Returns the config."""
    for bench_id, bench in config.get("benchmarks", {}).items():
        if "models" in bench:
            bench["models"] = expand_models(bench["models"], config.get("models", {}),
                                            f"benchmark '{bench_id}'",
                                            config.get("reference_models"))
    return materialize(config)


def fill_defaults(config: dict) -> dict:
    """Every absent key the schema gives a `default`, filled in place, in nested objects and in
    every entry of a named-entries object (each benchmark, ...): the schema is the one owner
    of defaults, and the code reads config[key]. Returns the config."""
    inherit_source_folds(config)
    _fill(config, _schema())
    return config


def inherit_source_folds(config: dict) -> None:
    """A benchmark with a `source` (sleep_hypnogram) takes the folds and fold_seed of the
    benchmark it reads unless it sets them itself: fold k must be the source's fold k, and an
    override of the source's folds (--config, --configfile) then carries over."""
    benchmarks = config.get("benchmarks") or {}
    for bench in benchmarks.values():
        source = benchmarks.get(bench.get("source")) if isinstance(bench, dict) else None
        if not isinstance(source, dict):
            continue
        for key in ("folds", "fold_seed"):
            if key not in bench and key in source:
                bench[key] = copy.deepcopy(source[key])


def _fill(value, schema: dict) -> None:
    if not isinstance(value, dict) or schema.get("type") != "object":
        return
    known = schema.get("properties", {})
    for key, item in known.items():
        if key not in value and "default" in item:
            value[key] = copy.deepcopy(item["default"])
        if key in value:
            _fill(value[key], item)
    if isinstance(schema.get("additionalProperties"), dict):
        for key, item in value.items():
            if key not in known:
                _fill(item, schema["additionalProperties"])


def _schema() -> dict:
    return yaml.safe_load(SCHEMA_PATH.read_text())


@functools.cache
def _schema_default(keys: tuple[str, ...]):
    item = _schema()
    for key in keys:
        item = item["properties"][key]
    return item["default"]


def schema_default(*keys: str):
    """The schema's default of a nested key (`schema_default("memory", "margin")`), for code
    that runs without a loaded config (a tool, an estimate asked for a total) and so must not
    repeat the number."""
    return copy.deepcopy(_schema_default(keys))


def _check_keys(value, schema: dict, where: str) -> None:
    """Unknown keys anywhere in the config, with the closest valid key, before type checks."""
    if not isinstance(value, dict) or schema.get("type") != "object":
        return
    known = schema.get("properties", {})
    for key, item in value.items():
        if key in known:
            _check_keys(item, known[key], f"{where}{key}.")
        elif isinstance(schema.get("additionalProperties"), dict):
            _check_keys(item, schema["additionalProperties"], f"{where}{key}.")
        elif schema.get("additionalProperties") is False:
            raise UsageError(
                f"unknown config key '{where}{key}'{closest(key, known)}",
                fix=f"valid keys here: {', '.join(sorted(known))}",
            )


# The flat `memory_<key>` settings, now nested under `memory:`: an old spelling is refused by
# name with the new one in the fix, so an old config file or command line does not silently
# run on the defaults. The keys are the schema's `memory` properties (memory_settings).
def memory_settings(schema: dict) -> tuple[str, ...]:
    """The keys of `memory:` the schema defines, in its order (the order a refusal names them)."""
    return tuple(schema["properties"]["memory"]["properties"])


def check_moved_keys(config: dict, schema: dict | None = None) -> None:
    """`memory_margin` and the other flat spellings of the memory settings are a usage error
    naming their new place (`memory.margin`), in the forms a config file, embedprobe and
    snakemake take. `schema`: the loaded schema, where the caller holds it."""
    from shlex import quote

    from embedprobe.core.overrides import yaml_line

    if not any(str(key).startswith("memory_") for key in config):
        return  # no old spelling: the schema need not be read
    moved = {key: config[f"memory_{key}"] for key in memory_settings(schema or _schema())
             if f"memory_{key}" in config}
    if not moved:
        return
    one = len(moved) == 1
    raise UsageError(
        f"config key{'' if one else 's'} {', '.join(f'memory_{k}' for k in moved)} "
        f"{'is' if one else 'are'} now {', '.join(f'memory.{k}' for k in moved)}: the memory "
        "settings are nested under `memory:`",
        fix=f"write `memory: {yaml_line(moved)}` in the config file, or --config "
            + " ".join(quote(f"memory.{k}={yaml_line(v)}") for k, v in moved.items())
            + f" on embedprobe, or --config {quote(f'memory={yaml_line(moved)}')} on snakemake")


BOOLEAN_WORDS = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}
PYTHON_TYPES = {"boolean": (bool,), "integer": (int,), "number": (int, float),
                "null": (type(None),), "object": (dict,), "array": (list,)}


def coerce_strings(value, schema: dict) -> None:
    """Snakemake's --config reads `allow_partial=true` and every value of a mapping
    (`memory={margin: 0.2}`) as text: each string where the schema wants no string becomes
    the value it reads as (`true`, `0.2`, `null`), when that is of a type the schema takes.
    In place, at every level; what reads as no such value stays for the checks to name."""
    if not isinstance(value, dict) or schema.get("type") != "object":
        return
    known = schema.get("properties", {})
    extra = schema.get("additionalProperties")
    for key, item in value.items():
        spec = known.get(key, extra if isinstance(extra, dict) else None)
        if spec is None:
            continue
        if isinstance(item, str):
            value[key] = _typed(item, spec)
        else:
            coerce_strings(item, spec)


def _typed(text: str, spec: dict):
    types = spec.get("type", [])
    types = [types] if isinstance(types, str) else list(types)
    for member in spec.get("anyOf", ()):  # e.g. folds: an integer, or `loso`
        types += [member["type"]] if isinstance(member.get("type"), str) else []
    if not types or "string" in types:
        return text
    if "boolean" in types and text.lower() in BOOLEAN_WORDS:
        return BOOLEAN_WORDS[text.lower()]
    try:
        read = yaml.safe_load(text)
    except yaml.YAMLError:
        return text
    wanted = tuple(t for name in types for t in PYTHON_TYPES.get(name, ()))
    if isinstance(read, bool) and "boolean" not in types:  # YAML's `yes`: no number
        return text
    return read if isinstance(read, wanted) else text


def _check_values(config: dict, schema: dict) -> None:
    """Values against the schema (types, ranges, choices), the most relevant error named by its
    place in the config, with the choices or the place to fix it."""
    import jsonschema

    validator = jsonschema.validators.validator_for(schema)(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(config))
    if error is None:
        return
    where = ".".join(str(part) for part in error.absolute_path) or "the config"
    choices = error.schema.get("enum") if isinstance(error.schema, dict) else None
    fix = (f"set {where} to one of: {', '.join(map(str, choices))}" if choices else
           f"correct {where} in config/*.yaml, or in the --config / --configfile that sets it")
    raise UsageError(f"config {where}: {error.message}", fix=fix)


def check_names(config: dict) -> None:
    """Every key is known, every value fits the schema, and every benchmark names datasets and
    models the config defines (model aliases expanded: core/model_aliases.py); then the schema's
    defaults are filled in (fill_defaults)."""
    schema = _schema()
    coerce_strings(config, schema)
    check_moved_keys(config, schema)
    _check_keys(config, schema, "")
    _check_values(config, schema)
    fill_defaults(config)
    expand_benchmark_models(config)
    for bench_id, bench in config.get("benchmarks", {}).items():
        defined = config.get("datasets", {})
        for name in bench.get("datasets", []):
            if name not in defined:
                raise UsageError(
                    f"benchmark '{bench_id}' names unknown dataset '{name}'"
                    f"{closest(name, defined)}",
                    fix=f"use one of: {', '.join(sorted(defined))} (config/datasets.yaml)",
                )


def resolve_roots(config: dict, environ=os.environ) -> dict:
    """Roots from --config, else EMBEDPROBE_<ROOT> from the environment, else the default;
    a capped run (limit_batches) writes to `<root>_limited` instead (paths.limited_roots)."""
    roots = {}
    for key, default in ROOT_DEFAULTS.items():
        value = config.get(key) or environ.get(f"EMBEDPROBE_{key.upper()}") or default
        roots[key] = str(value).rstrip("/")
        if "{" in roots[key] or "}" in roots[key]:
            # Snakemake reads braces in a path as a wildcard; every other character is quoted.
            raise UsageError(f"{key} {roots[key]!r} holds a brace, which Snakemake reads as a "
                             "wildcard in every path under it",
                             fix=f"choose a folder without {{ or }} for {key} (--config "
                                 f"{key}=... or EMBEDPROBE_{key.upper()})")
    return limited_roots(config, roots)


def lookup(config: dict, kind: str, name: str) -> dict:
    """One dataset, model or benchmark entry; an unknown name is a usage error."""
    entries = config.get(kind, {})
    if name not in entries:
        raise UsageError(
            f"unknown {kind[:-1]} '{name}'{closest(name, entries)}",
            fix=f"use one of: {', '.join(sorted(entries))} (config/{kind}.yaml)",
        )
    return entries[name]
