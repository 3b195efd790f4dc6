"""The Bonn reader on clips written by its look-alike: plain text files, one per 23.6 s clip."""

from __future__ import annotations

import shutil

import numpy as np
import pandas as pd
import pytest
import scipy.signal
import yaml

from embedprobe.core.errors import DataError, UsageError
from embedprobe.datasets.bonn import lookalike
from embedprobe.datasets.bonn import reader as bonn
from embedprobe.pipeline.channel_maps import CHANNEL_MAP_DIR, plan_from_entry

SETTINGS = {"clips_per_set": 4, "sets": ["Z", "O", "N", "F", "S"], "seed": 0}
# The distributed names (ukbonn zips; n.zip's upper-case extension), in the zips' set order.
NAMES = [f"{s}/{s}00{k}.{'TXT' if s == 'N' else 'txt'}" for s in "ZONFS" for k in range(1, 5)]


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    root = tmp_path_factory.mktemp("bonn")
    files = lookalike.write_lookalike(root, SETTINGS)
    return root, files, lookalike.plan(SETTINGS)


@pytest.fixture
def copy(demo, tmp_path):
    """A copy of the look-alike to spoil."""
    target = tmp_path / "bonn"
    shutil.copytree(demo[0], target)
    (target / "MANIFEST.tsv").unlink()
    return target


def test_layout_is_the_unpacked_zips(demo):
    root, files, _ = demo
    assert [f.relative_to(root).as_posix() for f in files] == [*NAMES, "MANIFEST.tsv"]
    for f in files[:-1]:
        raw = f.read_bytes()
        lines = raw.split(b"\r\n")
        assert lines[-1] == b"" and len(lines) == bonn.N_SAMPLES + 1  # CRLF after every sample
        assert all(line.lstrip(b"-").isdigit() for line in lines[:-1])  # integers, no header
    manifest = (root / "MANIFEST.tsv").read_text().splitlines()
    assert manifest[0] == "file\tbytes" and manifest[1].startswith("Z/Z001.txt\t")


def test_reader_recovers_every_clip_its_set_and_class(demo):
    root, _, plans = demo
    recordings = bonn.find_recordings(root)
    assert [r.recording for r in recordings] == [p.recording for p in plans] == sorted(
        f"{s}00{k}" for s in "ZONFS" for k in range(1, 5))
    for rec, plan in zip(recordings, plans, strict=True):
        assert rec.subject == rec.recording  # no subject ids: each clip its own subject
        assert rec.set == rec.session == plan.set
        assert rec.files == (root / plan.relative,) == (rec.signal_path,)
        assert bonn.recording_label(rec) == plan.label
        assert plan.label == ("ictal" if plan.set == "S" else "non_ictal")
        assert bonn.read_events(rec) == []
    assert bonn.CLASSES == ("non_ictal", "ictal")
    header = bonn.read_header(recordings[0])
    assert (header.channels, header.sfreq, header.n_samples) == (("FZ",), 173.61, 4097)


def test_signals_are_the_written_microvolts_in_volts(demo):
    root, _, plans = demo
    by_id = {r.recording: r for r in bonn.find_recordings(root)}
    for plan in (plans[0], plans[-5], plans[12]):  # F001, S004, S001
        written = lookalike.synthesize(plan, SETTINGS["seed"])
        assert np.array_equal(written, np.round(written))  # the files hold integers
        signals = bonn.read_signals(by_id[plan.recording], ["FZ"])
        assert signals.sfreq == 173.61 and signals.data.shape == (1, 4097)
        np.testing.assert_allclose(signals.data[0], written * 1e-6, rtol=1e-6, atol=1e-12)
    with pytest.raises(DataError, match="no channel Cz") as info:
        bonn.read_signals(by_id["Z002"], ["Cz"])
    assert info.value.fix


def test_the_sets_differ_as_documented(demo):
    root, _, _ = demo
    rms = {}
    for rec in bonn.find_recordings(root):
        rms.setdefault(rec.set, []).append(bonn.read_clip(rec).std())
    mean = {s: np.mean(v) for s, v in rms.items()}
    assert mean["Z"] < mean["N"] < mean["F"] < mean["S"] and mean["O"] < mean["N"]
    assert mean["S"] > 2.5 * max(mean["Z"], mean["O"], mean["N"], mean["F"])


def test_same_settings_write_the_same_bytes(tmp_path):
    small = {"clips_per_set": 1, "sets": ["O", "S"], "seed": 0}
    a = lookalike.write_lookalike(tmp_path / "a", small)
    b = lookalike.write_lookalike(tmp_path / "b", small)
    c = lookalike.write_lookalike(tmp_path / "c", small | {"seed": 1})
    assert [f.relative_to(tmp_path / "a").as_posix() for f in a] == [
        "O/O001.txt", "S/S001.txt", "MANIFEST.tsv"]
    assert [f.read_bytes() for f in a] == [f.read_bytes() for f in b]
    assert a[0].read_bytes() != c[0].read_bytes()


def test_folds_go_over_clips_stratified_on_the_class(demo):
    from embedprobe.probing.folds import recording_level_plan

    root, _, _ = demo
    rows = [{"recording": r.recording, "subject": r.subject, "session": r.session,
             "label": bonn.CLASSES.index(bonn.recording_label(r))}
            for r in bonn.find_recordings(root) for _ in range(2)]  # two 10 s windows a clip
    plan = recording_level_plan(pd.DataFrame(rows), {"folds": 4, "fold_seed": 0}, {})
    assert plan.unit == "subject"
    ictal = {f"S00{k}" for k in range(1, 5)}
    assert plan.n_folds == 4
    for k, fold in enumerate(plan.parts):
        assert len(fold) == 20
        tested = set(plan.members(k, "test"))
        assert len(tested & ictal) == 1 and len(tested) == 5  # one ictal clip per test fold


# ------------------------------------------------------------------------------- bad inputs


def _clip_path(root, name):
    return root / name[0] / name


@pytest.mark.parametrize("change, message", [
    (lambda lines: lines[:-1], "4096 samples, a Bonn clip has 4097"),
    (lambda lines: [*lines, b"12"], "4098 samples, a Bonn clip has 4097"),
    (lambda lines: lines[:7] + [b"12 13"] + lines[8:], r"line 8: '12 13' is not a number"),
    (lambda lines: lines[:2] + [b"abc"] + lines[3:], r"line 3: 'abc' is not a number"),
    (lambda lines: lines[:4] + [b""] + lines[5:], r"line 5: '' is not a number"),
    (lambda lines: lines[:9] + [b"nan"] + lines[10:], r"line 10: 'nan' is not a number"),
])
def test_a_damaged_clip_is_refused_naming_the_file(copy, change, message):
    path = _clip_path(copy, "F002.txt")
    lines = path.read_bytes().split(b"\r\n")[:-1]
    path.write_bytes(b"\r\n".join(change(lines)) + b"\r\n")
    rec = next(r for r in bonn.find_recordings(copy) if r.recording == "F002")
    for read in (bonn.read_header, lambda r: bonn.read_signals(r, ["FZ"])):
        with pytest.raises(DataError, match=message) as info:
            read(rec)
        assert str(path) in info.value.message and "zip" in info.value.fix


def test_a_clip_with_lf_line_ends_and_no_final_one_is_read(copy):
    path = _clip_path(copy, "O003.txt")
    before = bonn.read_clip(next(r for r in bonn.find_recordings(copy) if r.recording == "O003"))
    path.write_bytes(path.read_bytes().replace(b"\r\n", b"\n").rstrip(b"\n"))
    after = bonn.read_clip(next(r for r in bonn.find_recordings(copy) if r.recording == "O003"))
    assert np.array_equal(before, after)


def test_a_binary_file_is_refused(copy):
    path = _clip_path(copy, "Z001.txt")
    path.write_bytes(b"\x00\xff" * 100)
    rec = bonn.find_recordings(copy)[-4]
    with pytest.raises(DataError, match="not a plain ASCII text file") as info:
        bonn.read_header(rec)
    assert str(path) in info.value.message and info.value.fix


@pytest.mark.parametrize("move, message, fix", [
    (("S/S001.txt", "Z/S001.txt"), "a clip of set S in the folder of set Z", "folder named S"),
    (("S/S001.txt", "S001.txt"), "which is not a set folder", "folder named S"),
    (("Z/Z001.txt", "Z/X001.txt"), "set letter X is not one of Z, O, N, F, S", "Z001.txt"),
    (("Z/Z001.txt", "Z/A001.txt"), "set letter A is not one of", "sets A-E"),
    (("Z/Z001.txt", "Z/Z101.txt"), "clip number 101: a set holds clips 001-100", "names"),
    (("Z/Z001.txt", "Z/notes.txt"), "not a Bonn clip name", "remove it"),
    (("Z/Z001.txt", "copy/Z/Z002.txt"), "clip Z002 is there twice", "one copy"),
])
def test_a_file_out_of_place_is_refused_naming_it(copy, move, message, fix):
    source, target = (copy / p for p in move)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(source, target)
    source.unlink()
    with pytest.raises(DataError, match=message) as info:
        bonn.find_recordings(copy)
    assert str(target) in info.value.message and fix in info.value.fix


def test_set_folders_by_the_papers_names_and_deeper_are_found(copy, tmp_path):
    nested = tmp_path / "elsewhere"
    for letter, alias in zip("ZONFS", ("setA", "b", "C", "SETD", "s"), strict=True):
        shutil.copytree(copy / letter, nested / "Dataset" / alias)
    (nested / "Dataset" / "README.txt").write_text("not a clip, not in a set folder")
    found = bonn.find_recordings(nested)
    assert [r.recording for r in found] == [r.recording for r in bonn.find_recordings(copy)]
    assert found[0].path == nested / "Dataset" / "SETD" / "F001.txt"


def test_a_missing_clip_and_an_empty_set_folder_are_incomplete(copy):
    _clip_path(copy, "O002.txt").unlink()
    for f in (copy / "S").iterdir():
        f.unlink()
    recordings = {r.recording: r for r in bonn.find_recordings(copy)}
    incomplete = {k: r.problem for k, r in recordings.items() if r.problem}
    assert incomplete == {
        "O002": f"O002.txt is missing from {copy / 'O'} (it holds clips up to O004)",
        "S001": f"set folder {copy / 'S'} holds no clips (S001.txt ... are missing)"}
    assert len(recordings) == 17 and recordings["O002"].files == ()
    with pytest.raises(DataError, match="O002: O002.txt is missing") as info:
        bonn.read_header(recordings["O002"])
    assert "allow_partial=true" in info.value.fix
    assert bonn.find_recordings(copy / "Z")[0].recording == "Z001"  # a set alone is no error
    with pytest.raises(DataError, match="does not exist"):
        bonn.find_recordings(copy / "nowhere")


def test_setting_errors_and_foreign_files(tmp_path):
    with pytest.raises(UsageError, match="Bonn: unknown look-alike setting"):
        lookalike.plan({"clips": 3})
    for bad in ({"clips_per_set": 0}, {"clips_per_set": 101}):
        with pytest.raises(UsageError, match="clips_per_set"):
            lookalike.plan(bad)
    for bad in ([], ["Z", "Z"], ["A"]):
        with pytest.raises(UsageError, match="the Bonn sets are"):
            lookalike.plan({"sets": bad})
    assert [c.recording for c in lookalike.plan({"clips_per_set": 1, "sets": ["S", "Z"]})] \
        == ["S001", "Z001"]
    lookalike.write_lookalike(tmp_path, {"clips_per_set": 2, "sets": ["Z"]})
    with pytest.raises(UsageError, match="would not write"):  # a smaller one over it
        lookalike.write_lookalike(tmp_path, {"clips_per_set": 1, "sets": ["Z"]})


# ------------------------------------------------------------------- class signature, maps


def _clip_features(root):
    """Per clip the mean over its two 10 s windows of log relative band powers, each window
    first divided by its 95th percentile (BIOT's scaling): amplitude alone does not count."""
    features, labels = [], []
    for rec in bonn.find_recordings(root):
        x = bonn.read_signals(rec, ["FZ"]).data[0].astype(np.float64)
        width = round(10 * bonn.SFREQ)
        windows = np.stack([x[:width], x[width:2 * width]])
        windows /= np.percentile(np.abs(windows), 95, axis=1, keepdims=True)
        freqs, power = scipy.signal.welch(windows, bonn.SFREQ, nperseg=256)
        bands = np.stack([power[:, (freqs >= lo) & (freqs < hi)].sum(1)
                          for lo, hi in ((0.5, 3), (3, 6), (6, 9), (9, 13), (13, 25), (25, 40))],
                         axis=1)
        features.append(np.log(bands / bands.sum(1, keepdims=True)).mean(0))
        labels.append(bonn.recording_label(rec) == "ictal")
    return np.array(features), np.array(labels)


def test_the_ictal_signature_survives_scaling_and_shuffled_labels_do_not(tmp_path):
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import StratifiedKFold, cross_val_predict
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    lookalike.write_lookalike(tmp_path, {"clips_per_set": 10, "seed": 3})
    x, y = _clip_features(tmp_path)
    model = make_pipeline(StandardScaler(), LogisticRegression(C=0.1, max_iter=1000))
    folds = StratifiedKFold(5, shuffle=True, random_state=0)
    score = cross_val_predict(model, x, y, cv=folds, method="decision_function")
    assert roc_auc_score(y, score) > 0.95
    shuffled = np.random.default_rng(0).permutation(y)
    chance = [roc_auc_score(shuffled, cross_val_predict(
        model, x, shuffled, cv=StratifiedKFold(5, shuffle=True, random_state=k),
        method="decision_function")) for k in range(3)]
    assert np.mean(chance) < 0.75


def test_the_channel_map_gives_every_family_the_one_channel_or_a_reason():
    from braindecode.models.eegpt import CHANNEL_DICT
    from braindecode.models.labram import LABRAM_CHANNEL_ORDER

    from embedprobe.core.config import load_config
    from embedprobe.models.electrodes import template_positions

    path = CHANNEL_MAP_DIR / "bonn.yaml"
    entries = yaml.safe_load(path.read_text())
    assert set(entries) == {e["family"] for e in load_config()["models"].values()}
    named = {"labram": {n.upper() for n in LABRAM_CHANNEL_ORDER},
             "eegpt": set(CHANNEL_DICT), "signal_jepa": set(template_positions()),
             "luna": set(template_positions()), "reve": set(template_positions())}
    for family, entry in entries.items():
        plan = plan_from_entry(path, family, entry)
        if family == "biot":  # 16 bipolar slots, none of them Bonn's channel
            assert plan.ruled_out and "16 bipolar" in plan.reason
            continue
        if family == "eegnetv4":  # the reference leaves it out of abnormal EEG
            assert plan.ruled_out and "epilepsy" in plan.reason
            continue
        assert plan.recorded == plan.model_names == bonn.EEG_CHANNELS, family
        assert set(plan.model_names) <= named.get(family, set(plan.model_names)), family
