"""Defaults live in the schema: loading fills every absent key that has one, and no module
repeats it as a `.get(key, default)` literal."""

from __future__ import annotations

import re

import yaml

from embedprobe.core.config import SCHEMA_PATH, check_names, fill_defaults, load_config

from helpers.project import PACKAGE


def loaded_default(item: dict):
    """A key's default as loading fills it: a section's (embed, probe, download) the defaults
    of its own keys, nested sections too."""
    if item.get("type") == "object" and "properties" in item:
        return {k: loaded_default(v) for k, v in item["properties"].items()
                if "default" in v}
    return item["default"]


def schema_defaults() -> dict:
    schema = yaml.safe_load(SCHEMA_PATH.read_text())
    return {k: loaded_default(v) for k, v in schema["properties"].items() if "default" in v}


def test_an_empty_config_gets_every_schema_default():
    filled = fill_defaults({"benchmarks": {"b": {"task": "sleep_staging"}}})
    assert filled["embed"] == {"batch_size": 32, "reader_threads": 2, "threads": 2,
                               "device": "cpu", "shards": 1}
    assert filled["probe"] == {"threads": 2, "n_jobs": 1}
    assert filled["memory"]["margin"] == 0.15 and filled["memory"]["retry_factor"] == 1.5
    assert filled["download"]["hosts"]["physionet"] == "https://physionet.org/files"
    assert filled["download"]["retries"] == 3
    assert filled["benchmarks"]["b"] == {"task": "sleep_staging", "folds": 5, "fold_seed": 42}
    assert {k: filled[k] for k in schema_defaults()} == schema_defaults()


def test_set_values_are_kept_and_checking_fills_overrides_too():
    config = load_config()
    config["embed"] = {"batch_size": 8}  # as a --config embed={batch_size: 8} leaves it
    config["benchmarks"]["mine"] = {"task": "sleep_staging", "datasets": ["sleep_edf_demo"],
                                    "models": ["biot_random"], "folds": 3}
    check_names(config)
    assert config["embed"] == {"batch_size": 8, "reader_threads": 2, "threads": 2,
                               "device": "cpu", "shards": 1}
    assert (config["benchmarks"]["mine"]["folds"], config["benchmarks"]["mine"]["fold_seed"]) \
        == (3, 42)


def test_the_shipped_config_files_agree_with_the_schema_defaults():
    """config.yaml documents the settings; where it sets one the schema has a default for, it
    sets the default (so a user who deletes the line gets the same run)."""
    shipped = yaml.safe_load((PACKAGE.parents[1] / "config" / "config.yaml").read_text())
    for key, default in schema_defaults().items():
        if key in shipped:
            assert shipped[key] == default, key


def test_no_module_repeats_a_schema_default():
    keys = [k for k, v in schema_defaults().items() if not isinstance(v, dict)]
    keys += ["folds", "fold_seed", "batch_size", "reader_threads", "n_jobs", "device",
             "retries"]
    keys += list(schema_defaults()["memory"])  # limit_mb, margin, ...
    keys += ["epoch_seconds"]  # datasets/registry.entry_unit_seconds owns its default per task
    names = "|".join(keys)
    pattern = re.compile(rf"""\.get\(["']({names})["'],\s*[^)]""")
    offenders = [f"{path.relative_to(PACKAGE)}: {line.strip()}"
                 for path in PACKAGE.rglob("*.py")
                 for line in path.read_text().splitlines()
                 if pattern.search(line)]
    assert offenders == []


def test_no_signature_or_field_repeats_a_schema_default():
    """`margin: float = 0.15` in a function or a dataclass repeats memory.margin as surely as
    a `.get("margin", 0.15)` does: a parameter or field named for a schema key has no default
    equal to the schema's (take None and read the config, or core.config.schema_default).
    Not checked: n_jobs and threads, where 1 is a function's serial default, not the setting's."""
    defaults = {k: v for k, v in schema_defaults().items() if not isinstance(v, dict)}
    defaults |= {k: v for k, v in schema_defaults()["memory"].items() if v is not None}
    for section in ("embed", "download"):
        defaults |= {k: v for k, v in schema_defaults()[section].items()
                     if not isinstance(v, dict) and k not in ("threads",)}
    defaults |= {"folds": 5, "n_folds": 5, "fold_seed": 42, "seed": 42}
    numeric = {k: v for k, v in defaults.items()
               if isinstance(v, int | float) and not isinstance(v, bool)}
    names = "|".join(numeric)
    pattern = re.compile(rf"\b({names})\s*(?::\s*[\w\[\] |.]+?)?\s*=\s*([0-9][0-9_.]*)\s*[,)#\n]")
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        for line in path.read_text().splitlines():
            for name, value in pattern.findall(line + "\n"):
                if float(value.replace("_", "")) == float(numeric[name]):
                    offenders.append(f"{path.relative_to(PACKAGE)}: {line.strip()}")
    assert offenders == []


def test_a_units_length_has_one_default_per_labelling_task():
    from embedprobe.core.config import load_config
    from embedprobe.datasets.registry import unit_seconds
    from embedprobe.models.registry import model_spec

    config = load_config()
    config["datasets"]["chbmit_demo"].pop("epoch_seconds", None)
    config["datasets"]["physionet_mi_demo"].pop("epoch_seconds", None)
    config["datasets"]["sleep_edf_demo"]["epoch_seconds"] = 20
    assert unit_seconds(config, "chbmit_demo") == 10.0
    assert unit_seconds(config, "physionet_mi_demo") == 3.0
    assert unit_seconds(config, "sleep_edf_demo") == 20.0
    # the model's window follows the unit where the unit is shorter
    assert model_spec(config, "biot_random", "physionet_mi_demo").window_seconds == 3.0


def test_a_sourced_benchmark_takes_its_sources_folds_unless_it_sets_them():
    """The hypnogram benchmark reads its source's fold k: an override of the source's folds
    (as the small demos' --configfile sets them) carries over; its own setting is kept (and
    the task's check then refuses a mismatch)."""
    config = load_config()
    assert config["benchmarks"]["demo_hypnogram"]["folds"] == config["benchmarks"]["demo"]["folds"]
    bench = {"task": "sleep_staging", "datasets": ["d"], "models": ["m"], "folds": 3,
             "fold_seed": 7}
    filled = fill_defaults({"benchmarks": {
        "src": bench, "follows": {"task": "sleep_hypnogram", "source": "src"},
        "own": {"task": "sleep_hypnogram", "source": "src", "folds": 4},
        "orphan": {"task": "sleep_hypnogram", "source": "gone"}}})["benchmarks"]
    assert (filled["follows"]["folds"], filled["follows"]["fold_seed"]) == (3, 7)
    assert (filled["own"]["folds"], filled["own"]["fold_seed"]) == (4, 7)
    assert (filled["orphan"]["folds"], filled["orphan"]["fold_seed"]) == (5, 42)
