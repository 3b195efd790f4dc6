"""Fixtures and checks every look-alike's tests share: a demo written once, a copy to spoil,
same bytes again."""

from __future__ import annotations

import hashlib
import re
import shutil
from pathlib import Path

import edfio
import pandas as pd
import pytest

from embedprobe.core.config import load_config
from embedprobe.core.errors import DataError

from helpers.results import roots_in


def demo_fixture(lookalike, settings: dict, folder: str):
    """A module-scoped `demo` fixture: (root, the files written, lookalike.plan(settings)),
    written once per test module (the look-alike is the slow part)."""

    @pytest.fixture(scope="module")
    def demo(tmp_path_factory):
        root = tmp_path_factory.mktemp(folder)
        return root, lookalike.write_lookalike(root, settings), lookalike.plan(settings)

    return demo


def generated_sleep_edf(root: Path, dataset: str, **generate_args) -> tuple[dict, dict]:
    """(config, roots): `dataset`'s entry (a Sleep-EDF one) pointed at a look-alike generated
    under `root` with `generate_args` (n_subjects, nights, hours, seed)."""
    from embedprobe.datasets.sleep_edf.lookalike import generate

    config = load_config()
    config["datasets"][dataset].update(
        expected_recordings=generate_args["n_subjects"] * generate_args["nights"],
        path="sleep-edf")
    roots = roots_in(root)
    generate(Path(roots["data_root"]) / "sleep-edf", **generate_args)
    return config, roots


def written_thrice(lookalike, tmp_path, settings: dict, other_seed: int):
    """The look-alike's files written twice with `settings` (into tmp_path/a and /b) and once
    with another seed (/c), for the same-settings-same-bytes checks."""
    return (lookalike.write_lookalike(tmp_path / "a", settings),
            lookalike.write_lookalike(tmp_path / "b", settings),
            lookalike.write_lookalike(tmp_path / "c", settings | {"seed": other_seed}))


def copy_fixture(*folders: str):
    """A `copy` fixture: the module's `demo` look-alike copied to tmp_path/<folders>, to spoil
    without touching the one the module shares."""

    @pytest.fixture
    def copy(demo, tmp_path):
        target = tmp_path.joinpath(*folders)
        shutil.copytree(demo[0], target)
        return target

    return copy


def check_seed_decides_the_bytes(lookalike, tmp_path, settings: dict, suffix: str = "") -> None:
    """Seed 0 twice writes the same bytes; seed 1 writes none of them (files ending in
    `suffix`)."""
    written = written_thrice(lookalike, tmp_path, settings | {"seed": 0}, 1)
    first, again, other = ({f.relative_to(tmp_path / folder).as_posix():
                            hashlib.sha256(f.read_bytes()).hexdigest()
                            for f in files if f.name.endswith(suffix)}
                           for folder, files in zip("abc", written, strict=True))
    assert again == first
    assert set(other.values()).isdisjoint(first.values())


def check_refused_at(reader, root, source, target, says: str, move: bool = False):
    """`source` copied (or moved) to `target`, a place outside the layout: the reader's
    find_recordings(root) refuses it, naming target, with a fix. Returns the error."""
    target.parent.mkdir(parents=True, exist_ok=True)
    (shutil.move if move else shutil.copy)(source, target)
    with pytest.raises(DataError, match=re.escape(says)) as err:
        reader.find_recordings(root)
    assert str(target) in err.value.message and err.value.fix
    return err.value


def check_refused_without(reader, root, path, label: str, says: str) -> None:
    """The EDF at `path` written again without the signal `label`: the reader's read_header
    refuses its recording, naming the file, with a fix."""
    edf = edfio.read_edf(path)
    edf.drop_signals([label])
    edf.write(path)
    rec = next(r for r in reader.find_recordings(root) if r.edf == path)
    with pytest.raises(DataError, match=says) as err:
        reader.read_header(rec)
    assert str(path) in err.value.message and err.value.fix


def fold_table(recordings, labels) -> pd.DataFrame:
    """The index's columns a fold plan reads: one row a recording, `labels` in their order."""
    return pd.DataFrame({"recording": [r.recording for r in recordings],
                         "subject": [r.subject for r in recordings],
                         "session": [r.session for r in recordings],
                         "label": list(labels)})


def first_channels(reader, root) -> set[str]:
    """The channels the reader's first recording under root holds, as its header names them."""
    return set(reader.read_header(reader.find_recordings(root)[0]).channels)
