"""The runtime install (scripts/install.sh without --test) holds every third-party package a
documented command needs: each module the package or the scripts import comes from a
distribution pinned in envs/requirements.txt, and `snakemake --report` has its extras there
too. The test extras pull in more (pytest brings pygments), so no other test would notice a
gap. envs/embedprobe.yaml, the conda environment, pins the same."""

from __future__ import annotations

import ast
import re
import sys
from importlib.metadata import packages_distributions, requires

import yaml

from embedprobe.models import time_series

from helpers.project import PACKAGE, PROJECT, SCRIPTS

REQUIREMENTS = PROJECT / "envs" / "requirements.txt"
CONDA_ENV = PROJECT / "envs" / "embedprobe.yaml"
# conda's names for what pip calls otherwise
CONDA_NAMES = {"pytorch": "torch"}


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(lines) -> dict[str, str]:
    """Normalized distribution name -> its requirement line (no comments, no blanks)."""
    found = {}
    for line in lines:
        line = line.split("#", 1)[0].strip()
        if line:
            name = re.match(r"[A-Za-z0-9._-]+", line).group(0)
            found[normalized(name)] = re.sub(r"\s+", "", line)
    return found


def requirements() -> dict[str, str]:
    return pins(REQUIREMENTS.read_text().splitlines())


def imported_modules(paths) -> dict[str, set[str]]:
    """Top-level module -> the files importing it, for absolute imports (lazy ones included)."""
    modules: dict[str, set[str]] = {}
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                modules.setdefault(name.split(".")[0], set()).add(str(path.relative_to(PROJECT)))
    return modules


def third_party(modules: dict[str, set[str]]) -> dict[str, set[str]]:
    return {m: files for m, files in modules.items()
            if m not in sys.stdlib_module_names and m != "embedprobe"}


def test_every_imported_package_is_pinned_for_the_runtime_install():
    sources = [*PACKAGE.rglob("*.py"), *SCRIPTS.glob("*.py")]
    modules = third_party(imported_modules(sources))
    # the heavy ones, so that a parser that found nothing cannot pass
    assert {"numpy", "torch", "h5py", "braindecode", "mne", "pandas"} <= set(modules)
    dists = packages_distributions()
    pinned = requirements()
    extra = pins((PROJECT / time_series.EXTRA_REQUIREMENTS).read_text().splitlines())
    missing = []
    for module, files in sorted(modules.items()):
        if module in time_series.EXTRA_MODULES:  # the optional extra: pinned in its own file
            assert normalized(time_series.EXTRA_MODULES[module]) in extra, module
            continue
        names = dists.get(module)
        assert names, f"{module} (imported by {sorted(files)[0]}) is installed by no package"
        if not any(normalized(name) in pinned for name in names):
            missing.append(f"{module} ({'/'.join(names)}; imported by {sorted(files)[0]})")
    assert not missing, f"not in {REQUIREMENTS.name}: {missing}"


def test_the_report_extras_are_pinned():
    """`snakemake --report report.html demo` (docs/usage.md) needs snakemake's `reports` extra:
    without pygments it stops with `Python package pygments must be installed`."""
    extras = [req for req in requires("snakemake") or ()
              if re.search(r"""extra\s*==\s*["']reports["']""", req)]
    names = {normalized(re.match(r"[A-Za-z0-9._-]+", req).group(0)) for req in extras}
    assert "pygments" in names, extras  # what snakemake's report needs today
    pinned = requirements()
    assert names <= set(pinned), f"{sorted(names - set(pinned))} not in {REQUIREMENTS.name}"
    assert re.fullmatch(r"pygments==[0-9.]+", pinned["pygments"]), pinned["pygments"]


def test_the_conda_env_pins_what_requirements_pins():
    env = yaml.safe_load(CONDA_ENV.read_text())
    deps = env["dependencies"]
    pip_section = next(d["pip"] for d in deps if isinstance(d, dict) and "pip" in d)
    conda = pins(d for d in deps if isinstance(d, str))
    from_conda = {}
    for name, line in conda.items():  # conda's `name=version` is pip's `name==version`
        if name in CONDA_NAMES:
            pip_name = CONDA_NAMES[name]
            from_conda[pip_name] = re.sub(r"^[^=<>!~]+=(?!=)", f"{pip_name}==", line)
    listed = pins(pip_section) | from_conda
    assert listed == requirements()
