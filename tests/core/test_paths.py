"""core/paths.py is the one table of output paths: every entry is used, the rules spell no path
outside it, and its two fillers give the rules their wildcards and Python code its files."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from embedprobe.core.paths import (
    JOB_NAMES,
    PATTERNS,
    ROOTS,
    failure_record,
    job_pattern,
    output_path,
    pattern,
)
from embedprobe.memory.records import estimate_path, job_key

from helpers.project import PROJECT

PACKAGE = PROJECT / "workflow" / "embedprobe"
SNAKEFILES = [PROJECT / "Snakefile", *sorted((PROJECT / "workflow" / "rules").glob("*.smk"))]
FIELD = re.compile(r"\{(\w+)\}")
# How code names an entry: the rules through common.smk's out(), Python through the fillers.
RULE_USE = re.compile(r'\bout\(\s*"(\w+)"')
CODE_USE = re.compile(r'\b(?:pattern|output_path|job_pattern)\(\s*"(\w+)"')
ROOTS_DICT = {"data_root": "D", "cache_root": "C", "results_root": "R", "weights_root": "W"}


def snakefile_text() -> str:
    return "\n".join(p.read_text() for p in SNAKEFILES)


def code_text() -> str:
    return "\n".join(p.read_text() for p in sorted(PACKAGE.rglob("*.py"))
                     if p != PACKAGE / "core" / "paths.py")


def rules() -> dict[str, dict[str, str]]:
    """rule name -> directive -> its body, from the Snakefiles (the target rules of the
    Snakefile's loop are named `target`)."""
    found: dict[str, dict[str, str]] = {}
    for path in SNAKEFILES:
        rule, directive, indent = None, None, 0
        for line in path.read_text().splitlines():
            head = re.match(r"^(\s*)rule\s*(\w*)\s*:", line)
            if head:
                rule, directive, indent = head.group(2) or "target", None, len(head.group(1))
                found.setdefault(rule, {})
                continue
            if rule is None or not line.strip() or line.strip().startswith("#"):
                continue  # comments inside a rule belong to no directive
            depth = len(line) - len(line.lstrip())
            if depth <= indent:
                rule = None
                continue
            start = re.match(r"^\s*(\w+):(.*)$", line)
            if start and depth == indent + 4:
                directive = start.group(1)
                found[rule][directive] = start.group(2)
            elif directive:
                found[rule][directive] += "\n" + line
    return found


def test_every_entry_is_used_by_a_rule_or_by_code():
    rules_text = snakefile_text()
    used = {*RULE_USE.findall(rules_text), *CODE_USE.findall(rules_text),
            *CODE_USE.findall(code_text())}
    assert used <= set(PATTERNS), sorted(used - set(PATTERNS))  # no name outside the table
    # a `*_dir` entry is used through the patterns it is a field of
    used |= {field for name in used for field in FIELD.findall(PATTERNS[name])
             if field in PATTERNS}
    assert sorted(set(PATTERNS) - used) == []


def test_every_rule_has_its_log_and_benchmark_and_nothing_else_there():
    table = rules()
    named = {rule: body for rule, body in table.items() if rule != "target"}
    assert set(named) == set(JOB_NAMES)
    for rule, body in named.items():
        assert body["log"].strip() == f'log_file("{rule}"),', rule
        assert body["benchmark"].strip() == f'benchmark_file("{rule}")', rule


def test_the_rules_spell_no_output_path_outside_the_table():
    text = snakefile_text()
    assert not re.findall(r"\{(?:RESULTS|CACHE|DATA|ROOTS\[)", text)
    assert not re.search(r"^(RESULTS|CACHE|DATA)\s*=", text, re.M)
    for rule, body in rules().items():
        for line in body.get("output", "").splitlines():
            if '"' not in line or re.match(r"\s*(caption|category|subcategory)=", line):
                continue
            assert "out(" in line, f"rule {rule}: {line.strip()}"
        for line in body.get("input", "").splitlines():
            assert not re.search(r'"[^"]*/[^"]*"', line), f"rule {rule}: {line.strip()}"


def test_a_rule_log_has_exactly_the_wildcards_of_its_outputs():
    for rule, body in rules().items():
        if rule == "target":
            continue
        outputs = RULE_USE.findall(body["output"])
        assert outputs, rule
        wildcards = {f for name in outputs for f in FIELD.findall(pattern(name, ROOTS_DICT))}
        assert set(FIELD.findall(JOB_NAMES[rule])) == wildcards, rule


def test_the_smk_modules_build_no_path_from_a_root():
    for path in sorted((PACKAGE / "smk").glob("*.py")):
        text = path.read_text()
        assert not re.search(r"(data|cache|results|weights)_root\W*\]", text), path.name


def test_fields_are_roots_dirs_or_wildcards_that_name_no_entry():
    for name, template in PATTERNS.items():
        for field in FIELD.findall(template):
            if field in ROOTS or field.endswith("_dir"):
                assert field in ROOTS or field in PATTERNS, (name, field)
            else:
                assert field not in PATTERNS, (name, field)


def test_pattern_fills_the_roots_and_leaves_the_wildcards():
    assert pattern("embeddings", ROOTS_DICT) == "C/embeddings/{dataset}/{model}.h5"
    assert pattern("preflight_probe", ROOTS_DICT, model="m") == \
        "R/preflight/{dataset}/m/{benchmark}.json"
    assert job_pattern("job_log", "probe", ROOTS_DICT) == \
        "R/logs/probe/{benchmark}/{dataset}/{model}/fold{fold}.log"
    assert job_pattern("job_benchmark", "weights", ROOTS_DICT) == "R/benchmarks/weights.tsv"
    assert pattern("fold_result", ROOTS_DICT, benchmark="b", dataset="d", model="m", fold=3) \
        == "R/b/d/m/fold3.json"


def test_output_path_fills_everything_or_names_what_is_missing():
    assert output_path("hub_manifest", ROOTS_DICT) == Path("W/hub/manifest.json")
    assert output_path("runs", {"results_root": "/x/"}) == Path("/x/memory/runs.tsv")
    with pytest.raises(KeyError, match="'fold'"):
        output_path("fold_result", ROOTS_DICT, benchmark="b", dataset="d", model="m")
    assert failure_record(Path("R/check/d/m.json")) == Path("R/check/d/m.json.failure.json")


def test_a_preflight_estimate_is_where_the_rule_writes_it():
    preflight = Path("R") / "preflight"
    assert estimate_path(preflight, "d", "m") == output_path("preflight", ROOTS_DICT,
                                                             dataset="d", model="m")
    assert estimate_path(preflight, "d", "m", job_key("b", 2)) == output_path(
        "preflight_probe", ROOTS_DICT, dataset="d", model="m", benchmark="b")
    # another preflight root (refit's --preflight-root) keeps the layout under it
    assert estimate_path("/elsewhere", "d", "m") == Path("/elsewhere/d/m.json")
