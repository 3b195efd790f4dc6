"""EDF headers read once per file version: in a process (edf.read_edf_header) and between jobs
(datasets/header_cache.py, written by index, loaded by the next index and by preflight)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from embedprobe.cli import main
from embedprobe.core.errors import DataError
from embedprobe.core.paths import output_path
from embedprobe.datasets import edf, header_cache
from embedprobe.datasets.nsrr import lookalike

NIGHTS = {"study": "shhs", "participants": 3, "second_visits": 0, "hours": 0.1, "seed": 0}


@pytest.fixture
def night_files(tmp_path) -> list[Path]:
    files = lookalike.write_lookalike(tmp_path / "data" / "demo" / "shhs", NIGHTS)
    return sorted(p for p in files if p.suffix == ".edf")


@pytest.fixture
def parses(monkeypatch) -> list[Path]:
    """The headers parsed from their files (not taken from what is kept), in order; nothing
    kept from other tests (a fresh process)."""
    monkeypatch.setattr(edf, "_HEADERS", {})
    parsed: list[Path] = []
    parse = edf._parse_edf_header

    def counted(path):
        parsed.append(Path(path))
        return parse(path)

    monkeypatch.setattr(edf, "_parse_edf_header", counted)
    return parsed


def test_a_header_is_parsed_once_until_its_file_changes(night_files, parses):
    path = night_files[0]
    first = edf.read_edf_header(path)
    assert edf.read_edf_header(path) is first and parses == [path]
    info = path.stat()
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns + 1_000_000))  # replaced in place
    assert edf.read_edf_header(path) == first and parses == [path, path]
    with open(path, "r+b") as f:  # cut short: refused at every read, never kept
        f.truncate(info.st_size - 100)
    for _ in range(2):
        with pytest.raises(DataError, match="truncated"):
            edf.read_edf_header(path)
    assert len(parses) == 4


def test_saved_headers_load_equal_and_a_changed_file_is_read_again(night_files, parses,
                                                                    tmp_path):
    read = {p: edf.read_edf_header(p) for p in night_files}
    cache = tmp_path / "headers.json"
    assert header_cache.save(cache, [*night_files, tmp_path / "not_read.edf"]) == 3
    edf._HEADERS.clear()  # another job
    assert header_cache.load(cache) == 3
    assert {p: edf.read_edf_header(p) for p in night_files} == read
    assert parses == night_files  # the first reads only
    changed = night_files[1]
    with open(changed, "ab") as f:  # a record more than the header says: size differs
        f.write(b"\0" * 2)
    assert edf.read_edf_header(changed) == read[changed]
    assert parses == [*night_files, changed]


@pytest.mark.parametrize("text", ["{not json", json.dumps({"version": 999, "headers": {}}),
                                  json.dumps({"version": 1, "headers": {"x.edf": {}}})])
def test_a_damaged_or_foreign_cache_is_ignored(night_files, parses, tmp_path, text):
    cache = tmp_path / "headers.json"
    cache.write_text(text)
    assert header_cache.load(cache) == 0
    edf.read_edf_header(night_files[0])
    assert parses == night_files[:1]


def test_index_keeps_the_headers_and_a_second_index_parses_none(night_files, parses,
                                                                tmp_path):
    roots = {r: str(tmp_path / r.removesuffix("_root")) for r in
             ("data_root", "cache_root", "results_root", "weights_root")}
    config = tmp_path / "config.yaml"
    config.write_text(json.dumps({**roots, "datasets": {"shhs_demo": {
        "expected_recordings": 3}}}))
    command = ["index", "--dataset", "shhs_demo", "--out", str(tmp_path / "index.tsv"),
               "--configfile", str(config)]
    assert main(command) == 0
    assert sorted(set(parses)) == night_files  # the index and its quality scan: one parse
    assert len(parses) == len(night_files)
    kept = json.loads(output_path("edf_headers", roots, dataset="shhs_demo").read_text())
    assert sorted(kept["headers"]) == [str(p) for p in night_files]
    first = (tmp_path / "index.tsv").read_text()
    edf._HEADERS.clear()  # the next job
    parses.clear()
    assert main(command) == 0
    assert parses == [] and (tmp_path / "index.tsv").read_text() == first
