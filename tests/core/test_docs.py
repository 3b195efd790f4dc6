"""The documentation a newcomer navigates: README.md, docs/ and config/README.md.

Pure file reads: the README stays short and keeps its Quick start, every document is reachable
from the README, every relative link (and its #anchor) resolves, and commit ids appear only in
docs/measurements/, where each campaign names the code it measured.
"""

from __future__ import annotations

import re
from collections import deque
from pathlib import Path

import pytest

from helpers.project import PROJECT as ROOT

README = ROOT / "README.md"
DOCS = ROOT / "docs"
MEASUREMENTS = DOCS / "measurements"
CONFIG_README = ROOT / "config" / "README.md"

README_MAX_LINES = 260
QUICK_START = [
    "bash scripts/install.sh && .venv/bin/snakemake demo --cores 2",
    "bash scripts/install.sh .venv --test && .venv/bin/python -m pytest",
]

FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.MULTILINE | re.DOTALL)
INLINE_CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"(?<!!)\[(?:[^\]\n]*)\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$", re.MULTILINE)
# A commit id: 7-40 lowercase hex digits holding at least one digit and one letter.
HEX_WORD = re.compile(r"\b[0-9a-f]{7,40}\b")


def documents() -> list[Path]:
    return [README, CONFIG_README, *sorted(DOCS.rglob("*.md"))]


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def prose(text: str) -> str:
    """The text without fenced code blocks and inline code spans (links there are not links)."""
    return INLINE_CODE.sub("", FENCE.sub("", text))


def links(path: Path) -> list[str]:
    return LINK.findall(prose(path.read_text(encoding="utf-8")))


def is_external(target: str) -> bool:
    return bool(re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target))


def resolve(source: Path, target: str) -> tuple[Path, str]:
    """(the file or folder a relative link points to, its #anchor or "")."""
    target, _, anchor = target.partition("#")
    return (source if not target else (source.parent / target).resolve()), anchor


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lowercase, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"`([^`]*)`", r"\1", heading)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found, seen = set(), {}
    for match in HEADING.finditer(FENCE.sub("", path.read_text(encoding="utf-8"))):
        base = slug(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def test_the_documents_exist():
    for path in (README, CONFIG_README, DOCS / "usage.md", DOCS / "output.md", DOCS / "methods.md",
                 DOCS / "memory.md", DOCS / "extending.md", DOCS / "development.md"):
        assert path.is_file(), f"{rel(path)} is missing"
    assert list(MEASUREMENTS.glob("*.md")), "docs/measurements/ holds no measurement file"


def test_the_readme_is_short():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, (
        f"README.md has {len(lines)} lines (at most {README_MAX_LINES}): move detail into docs/")


def test_quick_start_holds_exactly_its_two_commands():
    text = README.read_text(encoding="utf-8")
    section = re.search(r"^## Quick start\s*$(.*?)(?=^## )", text + "\n## end\n",
                        re.MULTILINE | re.DOTALL)
    assert section, "README.md has no '## Quick start' section"
    block = re.search(r"^```[a-z]*\n(.*?)^```", section.group(1), re.MULTILINE | re.DOTALL)
    assert block, "the Quick start section has no code block"
    commands = [line.strip() for line in block.group(1).splitlines()
                if line.strip() and not line.strip().startswith("#")]
    assert commands == QUICK_START


@pytest.mark.parametrize("path", documents(), ids=rel)
def test_relative_links_resolve(path):
    broken = []
    for target in links(path):
        if is_external(target):
            continue
        where, anchor = resolve(path, target)
        if not where.exists():
            broken.append(f"{target}: no such file")
        elif anchor and where.suffix == ".md" and anchor not in anchors(where):
            broken.append(f"{target}: no heading with the anchor #{anchor} in {rel(where)}")
    assert not broken, f"{rel(path)}: broken links:\n" + "\n".join(broken)


def test_every_document_is_reachable_from_the_readme():
    reached, queue = {README}, deque([README])
    while queue:
        source = queue.popleft()
        for target in links(source):
            if is_external(target):
                continue
            where, _ = resolve(source, target)
            if where.is_dir() and (where / "README.md").is_file():
                where = where / "README.md"
            if where.suffix == ".md" and where.is_file() and where not in reached:
                reached.add(where)
                queue.append(where)
    missing = [rel(p) for p in documents() if p not in reached]
    assert not missing, "not linked from README.md (directly or through a linked doc): " + (
        ", ".join(missing))


@pytest.mark.parametrize("path", [p for p in documents() if MEASUREMENTS not in p.parents],
                         ids=rel)
def test_commit_ids_only_in_measurement_files(path):
    found = [word for word in HEX_WORD.findall(path.read_text(encoding="utf-8"))
             if re.search(r"[0-9]", word) and re.search(r"[a-f]", word)]
    assert not found, (f"{rel(path)} names commits {sorted(set(found))}: commit ids belong in "
                       "docs/measurements/ only")


def test_measurement_files_name_their_command():
    for path in sorted(MEASUREMENTS.glob("*.md")):
        if path.name == "README.md":
            continue
        assert re.match(r"\d{4}-\d{2}-\d{2}-", path.name), f"{rel(path)}: not dated"
        assert "**Command:**" in path.read_text(encoding="utf-8"), f"{rel(path)}: no command"


def test_every_model_id_is_documented_with_its_source():
    """Each id of config/models.yaml has its row in methods.md's model table; each hub
    checkpoint its row (repo, source, licence) in usage.md's table of pretrained weights."""
    import yaml

    models = yaml.safe_load((ROOT / "config" / "models.yaml").read_text())["models"]
    methods = (DOCS / "methods.md").read_text(encoding="utf-8")
    table = methods[methods.index("\n## Models\n"):methods.index("\n## Reading windows\n")]
    usage = (DOCS / "usage.md").read_text(encoding="utf-8")
    hub_table = usage[usage.index("\n## Pretrained weights from the Hub\n"):]
    for model_id, entry in models.items():
        assert f"`{model_id}`" in table, model_id
        if str(entry["weights"]).startswith("hf:"):
            row = next((line for line in hub_table.splitlines()
                        if line.startswith("|") and f"`{model_id}`" in line), None)
            assert row is not None, model_id
            assert entry["weights"][len("hf:"):] in row, model_id
