"""The package's shape: folders by subsystem, empty __init__ files, imports that run downward and
never in a circle, and one owner for the tables keyed by a name."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import yaml

from helpers import project as paths
from helpers.project import PROJECT

PACKAGE = paths.PACKAGE

# Each subsystem's rank: a module imports only modules of its own rank or below (docs/
# development.md). The index labels units with the dataset's task, so tasks sit below pipeline;
# the fold job reads the store, so it is pipeline's. The API (DataFrames of what the commands
# print) sits just below cli, which prints them.
# measure (peaks, limits, cgroups, the GPU, the allocator) sits just above core: check and
# embed (pipeline) measure, and the memory model (memory) reads what they measured.
# devtools (what the calibration, validation and benchmark scripts run) sits above everything:
# no rule or command imports it.
RANKS = {"core": 0, "measure": 0.5, "datasets": 1, "models": 1, "probing": 2, "reporting": 3,
         "tasks": 4, "pipeline": 5, "memory": 6, "smk": 7, "api": 8, "cli": 9, "devtools": 10}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imported(path: Path, name: str) -> set[str]:
    """Every embedprobe module `path` imports, at the top or inside a function."""
    known = modules()
    found = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            names = [f"{base}.{a.name}" for a in node.names]
            # `from package import module` depends on the module (the __init__ is empty)
            targets = names if any(n in known for n in names) else [base]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target.startswith("embedprobe.") and target != name:
                found.add(target)
    return found


def import_graph() -> dict[str, set[str]]:
    return {name: imported(path, name) for name, path in modules().items()}


def rank(name: str) -> float:
    parts = name.split(".")
    if len(parts) < 2:
        return -1  # embedprobe itself (__version__)
    return RANKS[parts[1]]


def test_the_top_level_holds_only_cli_and_folders():
    files = sorted(p.name for p in PACKAGE.iterdir() if p.is_file() and p.suffix == ".py")
    assert files == ["__init__.py", "cli.py"]
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders == set(RANKS) - {"cli"}


def test_init_files_are_empty():
    """Lazy imports are load-bearing (parse time, measured memory baselines): an __init__ that
    imports would load its whole subsystem."""
    inits = [p for p in PACKAGE.rglob("__init__.py") if p.parent != PACKAGE]
    assert inits and all(p.read_text() == "" for p in inits)
    top = ast.parse((PACKAGE / "__init__.py").read_text())
    assert not [n for n in ast.walk(top) if isinstance(n, ast.Import | ast.ImportFrom)]


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every circle a depth-first walk of the graph meets, as the modules around it."""
    state: dict[str, int] = {}
    cycles = []

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append(trail[trail.index(nxt):] + [nxt] if nxt in trail else [node, nxt])
            elif nxt not in state:
                visit(nxt, [*trail, nxt])
        state[node] = 2

    for start in sorted(graph):
        if start not in state:
            visit(start, [start])
    return cycles


def test_no_module_imports_in_a_circle():
    graph = import_graph()
    # the walk sees every import form: top-level, lazy, `from package import module`
    assert "embedprobe.models.registry" in graph["embedprobe.models.encoder"]
    assert "embedprobe.pipeline.fold_job" in graph["embedprobe.cli"]
    assert "embedprobe.pipeline.store" in graph["embedprobe.pipeline.fold_job"]
    assert "embedprobe.models.checkpoints" in graph["embedprobe.models.registry"]
    assert find_cycles(graph) == []


def test_the_walk_finds_a_circle_where_there_is_one(tmp_path, monkeypatch):
    """The walk above is not blind: two modules that import each other inside functions."""
    package = tmp_path / "embedprobe"
    (package / "core").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "core" / "__init__.py").write_text("")
    (package / "core" / "a.py").write_text("def f():\n    from embedprobe.core.b import g\n")
    (package / "core" / "b.py").write_text("def g():\n    from embedprobe.core import a\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", package)
    graph = import_graph()
    assert graph["embedprobe.core.a"] == {"embedprobe.core.b"}
    assert graph["embedprobe.core.b"] == {"embedprobe.core.a"}
    assert find_cycles(graph) == [["embedprobe.core.a", "embedprobe.core.b", "embedprobe.core.a"]]


def test_imports_run_downward():
    upward = [f"{name} ({rank(name)}) imports {target} ({rank(target)})"
              for name, targets in import_graph().items() for target in sorted(targets)
              if rank(target) > rank(name)]
    assert upward == []


def test_every_module_imports_in_a_fresh_interpreter():
    """In a child that finds the package as the tests do (this checkout's, conftest.py)."""
    code = ("import importlib, json, embedprobe\n"
            f"names = {sorted(modules())!r}\n"
            "bad = {}\n"
            "for n in names:\n"
            "    try:\n"
            "        importlib.import_module(n)\n"
            "    except Exception as e:\n"
            "        bad[n] = repr(e)\n"
            "print(json.dumps([embedprobe.__file__, bad]))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, cwd=PROJECT)
    assert done.returncode == 0, done.stderr
    found, bad = json.loads(done.stdout.splitlines()[-1])
    assert Path(found).resolve().parent == PACKAGE
    assert bad == {}


def test_no_rule_imports_the_development_tools():
    """devtools ranks above cli, so no module of the package imports it (the test above); the
    rules and the Snakefile, which the rank walk does not read, name it nowhere either."""
    rules = [PROJECT / "Snakefile", *(PROJECT / "workflow" / "rules").glob("*.smk")]
    assert len(rules) > 3
    assert [p.name for p in rules if "devtools" in p.read_text()] == []


# sys.path changed: a method that edits it in place, an item or slice set, an assignment
SYS_PATH_EDIT = re.compile(r"sys\.path\s*(\.\s*(insert|append|extend|remove|pop|clear)\b"
                           r"|\[[^\]]*\]\s*=(?!=)|[+]?=(?!=))")


def test_scripts_are_thin_mains_over_the_installed_package():
    """Each Python script is a main that parses its arguments and calls embedprobe.devtools or
    the package: no other function or class, no import of another script, and the package found
    as installed (scripts/install.sh installs it), never through a sys.path edit."""
    scripts = sorted((PROJECT / "scripts").glob("*.py"))
    assert len(scripts) > 5
    siblings = {p.stem for p in scripts}
    for path in scripts:
        tree = ast.parse(path.read_text())
        defined = [n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)]
        assert defined == ["main"], (path.name, defined)
        imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import)
                    for a in n.names}
        imported |= {n.module.split(".")[0] for n in ast.walk(tree)
                     if isinstance(n, ast.ImportFrom) and n.module}
        assert not imported & siblings, path.name


def test_no_test_or_script_edits_sys_path():
    """Tests find the package as the scripts do (conftest.py checks it is this checkout's) and
    their helpers through pytest's rootdir conftest; child processes through their folder."""
    edited = "sys.path"  # (joined here, so that this file holds no edit itself)
    for line in (".insert(0, x)", ".append(x)", "[:0] = [x]", " += [x]", " = [x]"):
        assert SYS_PATH_EDIT.search(edited + line), line
    for line in ("[0]", " == x", ")"):
        assert not SYS_PATH_EDIT.search(edited + line), line
    files = [*(PROJECT / "scripts").glob("*.py"), *(PROJECT / "tests").rglob("*.py")]
    edits = [f"{p.relative_to(PROJECT)}:{n}" for p in files
             for n, line in enumerate(p.read_text().splitlines(), 1)
             if SYS_PATH_EDIT.search(line)]
    assert edits == []


def test_the_schema_names_exactly_the_formats_and_tasks_the_registries_own():
    from embedprobe.datasets.registry import FORMATS
    from embedprobe.tasks.registry import TASKS

    schema = yaml.safe_load((PROJECT / "workflow" / "schemas" / "config.schema.yaml").read_text())
    dataset = schema["properties"]["datasets"]["additionalProperties"]["properties"]
    assert dataset["format"]["enum"] == list(FORMATS)
    labelling = {f.task for f in FORMATS.values()}
    assert labelling <= set(TASKS)
    assert set(dataset["labels"]["enum"]) == {t for t in TASKS if t in labelling}
    benchmark = schema["properties"]["benchmarks"]["additionalProperties"]["properties"]
    assert set(benchmark["task"]["enum"]) == set(TASKS)
