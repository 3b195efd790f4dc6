"""The readers' one file search (datasets/walk.py): through linked folders, once per real
folder, so a data root whose dataset folder is a link is found and a link cycle ends."""

import pytest

from embedprobe.datasets import registry
from embedprobe.datasets.sleep_edf import reader as sleep_edf
from embedprobe.datasets.walk import find_paths

from helpers.realdata import realdata


def test_a_linked_subfolder_is_searched(tmp_path):
    disk = tmp_path / "big" / "disk" / "cassette"
    disk.mkdir(parents=True)
    (disk / "SC4001E0-PSG.edf").write_bytes(b"")
    (disk / "notes.txt").write_text("")
    root = tmp_path / "data"
    root.mkdir()
    (root / "sleep-cassette").symlink_to(disk, target_is_directory=True)
    assert list(root.rglob("*-PSG.edf")) == []  # why the helper exists (Python 3.11)
    assert find_paths(root, "*-PSG.edf") == [root / "sleep-cassette" / "SC4001E0-PSG.edf"]
    assert find_paths(root) == [root / "sleep-cassette",
                                root / "sleep-cassette" / "SC4001E0-PSG.edf",
                                root / "sleep-cassette" / "notes.txt"]


def test_a_link_cycle_is_entered_once(tmp_path):
    folder = tmp_path / "root" / "a"
    folder.mkdir(parents=True)
    (folder / "x.edf").write_bytes(b"")
    (folder / "loop").symlink_to(folder, target_is_directory=True)  # a/loop -> a
    (folder / "up").symlink_to(tmp_path / "root", target_is_directory=True)  # a/up -> root
    assert find_paths(tmp_path / "root", "*.edf") == [folder / "x.edf"]


def test_two_links_to_one_folder_find_its_files_once(tmp_path):
    disk = tmp_path / "disk"
    disk.mkdir()
    (disk / "PN00-1.edf").write_bytes(b"")
    root = tmp_path / "root"
    root.mkdir()
    (root / "one").symlink_to(disk, target_is_directory=True)
    (root / "two").symlink_to(disk, target_is_directory=True)
    assert find_paths(root, "*.edf") == [root / "one" / "PN00-1.edf"]


def test_a_pattern_is_a_name_not_a_path(tmp_path):
    with pytest.raises(ValueError, match="names, not paths"):
        find_paths(tmp_path, "*/x.edf")


def test_a_dataset_whose_folder_is_a_link_is_found(tmp_path):
    """The real SC4001E0 files behind a linked `sleep-cassette`: 1 of 1 recordings, not 0."""
    root = tmp_path / "sleep-edf"
    root.mkdir()
    real = realdata("sleep-edf-first-5-minutes", "sleep-cassette").resolve()
    (root / "sleep-cassette").symlink_to(real, target_is_directory=True)
    recordings = sleep_edf.find_recordings(root)
    assert [(r.recording, r.psg, r.hypnogram) for r in recordings] == [
        ("SC4001E0", root / "sleep-cassette/SC4001E0-PSG.edf",
         root / "sleep-cassette/SC4001EC-Hypnogram.edf")]
    config = {"datasets": {"sc": {"format": "sleep_edf", "path": "sleep-edf",
                                  "expected_recordings": 1}}}
    status = registry.data_status(config, {"data_root": str(tmp_path)}, "sc")
    assert (status.state, status.found, status.expected) == ("found", 1, 1)
