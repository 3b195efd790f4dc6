"""`embedprobe --configfile FILE --config KEY=VALUE ...`: the overrides Snakemake takes, by hand.

Applied over config/*.yaml in the order Snakemake applies them (the files, then each
`--configfile` merged key by key, then `--config`); values are YAML (`true`, `16`, `[1, 2]`,
`{exclude: true}`), and a key may be dotted (`embed.batch_size=16`) to set one nested value.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from embedprobe.core.errors import UsageError


def merge(base: dict, update: dict) -> dict:
    """Merge `update` into `base` key by key (nested mappings merged, the rest replaced)."""
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            merge(base[key], value)
        else:
            base[key] = value
    return base


def parse_assignment(entry: str) -> dict:
    """`a.b=1` -> {"a": {"b": 1}}; the value parsed as YAML (empty: null)."""
    key, sep, text = entry.partition("=")
    if not sep or not key or any(not part for part in key.split(".")):
        raise UsageError(f"--config {entry!r}: not KEY=VALUE",
                         fix="write each setting as KEY=VALUE, e.g. --config "
                             "allow_partial=true (a dotted key sets a nested value: "
                             "embed.batch_size=16)")
    try:
        value = yaml.safe_load(text) if text else None
    except yaml.YAMLError:
        value = text  # as Snakemake does: what YAML cannot read stays a string
    for part in reversed(key.split(".")):
        value = {part: value}
    return value


def for_snakemake(entry: str) -> str:
    """A --config KEY=VALUE as snakemake takes it: a dotted key (`memory.margin=0.2`), which
    snakemake refuses, as the mapping it sets (`memory={margin: 0.2}`); others as they are."""
    key = entry.partition("=")[0]
    if "." not in key:
        return entry
    (top, value), = parse_assignment(entry).items()
    return f"{top}={yaml_line(value)}"


def yaml_line(value) -> str:
    """A value as YAML on one line (`0.2`, `{margin: 0.2}`), as --config takes it."""
    text = yaml.safe_dump(value, default_flow_style=True, width=10**6).strip()
    return text.removesuffix("...").strip()  # a scalar's document end


def read_configfile(path: str | Path) -> dict:
    path = Path(path)
    try:
        loaded = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise UsageError(f"--configfile {path}: cannot read it ({exc.strerror})",
                         fix="give the path of an existing YAML file") from exc
    except yaml.YAMLError as exc:
        raise UsageError(f"--configfile {path}: not valid YAML ({exc})",
                         fix=f"correct the YAML in {path}") from exc
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise UsageError(f"--configfile {path}: holds a {type(loaded).__name__}, not a mapping",
                         fix=f"write {path} as KEY: VALUE lines, as config/config.yaml is")
    return loaded


def apply_overrides(config: dict, configfiles=(), assignments=()) -> dict:
    """The config with every --configfile merged, then every --config assignment."""
    for path in configfiles or ():
        merge(config, read_configfile(path))
    for entry in assignments or ():
        merge(config, parse_assignment(entry))
    return config


def split_overrides(argv: list[str]) -> tuple[list[str], list[str], list[str]]:
    """Take `--configfile FILE` and `--config KEY=VALUE ...` out of argv, wherever they stand
    (before or after the step, as with snakemake): (the rest, the files, the assignments).

    `--config` takes the words after it while they hold a `=`, so `--config a=1 index ...`
    leaves `index` to the step parser."""
    rest, files, entries = [], [], []
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "--configfile" and i + 1 < len(argv):
            files.append(argv[i + 1])
            i += 2
        elif word.startswith("--configfile="):
            files.append(word.split("=", 1)[1])
            i += 1
        elif word == "--config":
            i += 1
            taken = 0
            while i < len(argv) and "=" in argv[i] and not argv[i].startswith("-"):
                entries.append(argv[i])
                i += 1
                taken += 1
            if not taken:
                raise UsageError("--config needs KEY=VALUE after it",
                                 fix="write each setting as KEY=VALUE, e.g. --config "
                                     "allow_partial=true")
        else:
            rest.append(word)
            i += 1
    return rest, files, entries


def with_config(argv: list[str], assignment: str) -> list[str]:
    """argv with one more KEY=VALUE: inside its --config when it has one (a second --config
    would replace the first in snakemake), else as a new --config at the end."""
    if "--config" in argv:
        at = argv.index("--config") + 1
        return [*argv[:at], assignment, *argv[at:]]
    return [*argv, "--config", assignment]


def rerun_with(invocation: list[str] | None, assignment: str, otherwise: str = "") -> str:
    """A `fix:` that is the command to run: `invocation` (the command line the user typed,
    program first) again with the setting added (a comment after `#` says the other way);
    with none (a workflow job, the Python API: no command was typed), where to set it."""
    import shlex

    if invocation:
        command = shlex.join(with_config(invocation, assignment))
        return command + (f"   # {otherwise}" if otherwise else "")
    key, _, value = assignment.partition("=")
    return (f"set {key}: {value} in config/config.yaml, or add {assignment} to the --config "
            f"of your snakemake command" + (f"; {otherwise}" if otherwise else ""))


def invocation_from(argv: list[str]) -> list[str]:
    """The command as a user can type it again: the program by name when it is on PATH."""
    import os
    import shutil
    import sys

    program = argv[0]
    name = os.path.basename(program)
    if name == "__main__.py":  # python -m snakemake
        return [sys.executable, "-m", os.path.basename(os.path.dirname(program)), *argv[1:]]
    if shutil.which(name) and os.path.realpath(shutil.which(name)) == os.path.realpath(program):
        program = name
    return [program, *argv[1:]]
