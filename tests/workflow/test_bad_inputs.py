"""A catalogue of damaged inputs: each is caught by name, with its exit code, message and fix.

One small generated dataset per format the project reads (Sleep-EDF: 3 subjects x 2 nights;
CHB-MIT and Siena: 2 patients x 2 files; PhysioNet MI: 2 subjects x 2 runs, EDF+ through MNE;
BNCI 2014-001: 2 subjects x 2 session .mat files) is copied and damaged per case; the steps are
called as the CLI runs them (`embedprobe.cli.main`, in process: fast). Every case checks that
earlier results and the cache are byte-identical afterwards, and a `fix:` that is a command is
run as printed. The README lists these cases (section "Bad inputs").
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from embedprobe import cli
from embedprobe.core import overrides
from embedprobe.core.errors import DataError
from embedprobe.datasets import quality
from embedprobe.datasets.bnci2014_001 import lookalike as bnci2014_001_lookalike
from embedprobe.datasets.bnci2014_001 import reader as bnci2014_001
from embedprobe.datasets.bonn import lookalike as bonn_lookalike
from embedprobe.datasets.chbmit import lookalike as chbmit_lookalike
from embedprobe.datasets.dcsm import lookalike as dcsm_lookalike
from embedprobe.datasets.dod import lookalike as dod_lookalike
from embedprobe.datasets.epilepsiae import lookalike as epilepsiae_lookalike
from embedprobe.datasets.helsinki import lookalike as helsinki_lookalike
from embedprobe.datasets.hmc import lookalike as hmc_lookalike
from embedprobe.datasets.isruc import lookalike as isruc_lookalike
from embedprobe.datasets.mass import lookalike as mass_lookalike
from embedprobe.datasets.nsrr import lookalike as nsrr_lookalike
from embedprobe.datasets.physionet2018 import lookalike as physionet2018_lookalike
from embedprobe.datasets.physionet_mi import lookalike as physionet_mi_lookalike
from embedprobe.datasets.seizeit1 import lookalike as seizeit1_lookalike
from embedprobe.datasets.siena import lookalike as siena_lookalike
from embedprobe.datasets.sleep_edf import lookalike as demo_data
from embedprobe.datasets.sleep_edf import reader as sleep_edf
from embedprobe.datasets.stages import lookalike as stages_lookalike
from embedprobe.datasets.szcore_bids import lookalike as szcore_bids_lookalike
from embedprobe.datasets.tuab import lookalike as tuab_lookalike
from embedprobe.datasets.ucddb import lookalike as ucddb_lookalike
from embedprobe.datasets.wsc import lookalike as wsc_lookalike
from embedprobe.reporting import summary as report
from embedprobe.tasks.registry import task_for

DATASET = "bad_edf"
# The catalogue shows each refusal: without strict a partial dataset runs on its complete
# recordings instead, each incomplete one named (tests/pipeline/test_incomplete_data.py).
STRICT = {"strict": True}
VENV_BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("pristine") / "bad"
    demo_data.generate(root, n_subjects=3, nights=2, hours=0.5, seed=3)
    return root


@pytest.fixture
def world(tmp_path, pristine):
    """A copy of the dataset under data/, a config file naming it, and earlier results and a
    cache whose bytes must survive every case."""
    data = tmp_path / "data" / "bad"
    shutil.copytree(pristine, data)
    config = tmp_path / "bad.yaml"
    config.write_text(yaml.safe_dump({
        "data_root": str(tmp_path / "data"), "results_root": str(tmp_path / "results"),
        "cache_root": str(tmp_path / "cache"), "weights_root": str(tmp_path / "weights"),
        "datasets": {DATASET: {"format": "sleep_edf", "path": "bad", "expected_recordings": 6,
                               "line_freq": 50, "channel_map": "sleep_edf_expanded"}},
        **STRICT}))
    earlier = [tmp_path / "results/index/earlier.tsv", tmp_path / "results/demo/x/results.tsv",
               tmp_path / "cache/embeddings/earlier/biot_random.h5"]
    for i, path in enumerate(earlier):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(os.urandom(256 + i))
    return tmp_path, data, config


def tree_hashes(*roots: Path) -> dict:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for root in roots
            for p in sorted(root.rglob("*")) if p.is_file()}


def run_cli(capsys, *argv) -> tuple[int, str]:
    capsys.readouterr()
    code = cli.main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out + out.err


def fix_line(text: str) -> str:
    return next(line.strip() for line in text.splitlines()
                if line.strip().startswith("fix: "))[5:]


def run_fix_command(fix: str, cwd: Path) -> subprocess.CompletedProcess:
    """A fix that is a command, run as printed (a `#` comment after it is the shell's)."""
    env = dict(os.environ, PATH=f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    return subprocess.run(["bash", "-c", fix], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=300)


# ------------------------------------------------------------------------ damage helpers


def psgs(data: Path) -> list[Path]:
    return sorted(data.rglob("*-PSG.edf"))


def hypnograms(data: Path) -> list[Path]:
    return sorted(data.rglob("*-Hypnogram.edf"))


def change_samples(psg: Path, label: str, change) -> None:
    """change(view) edits one channel's 16-bit samples in place, (records, samples/record)."""
    header = sleep_edf.read_edf_header(psg)
    sig = header.signals[header.labels.index(label)]
    data = np.memmap(psg, np.int16, "r+", offset=header.header_bytes,
                     shape=(header.n_records, sum(header.samples_per_record)))
    change(data[:, sig.offset: sig.offset + sig.samples_per_record])
    data.flush()
    del data


def constant(value):
    def change(view):
        view[:] = value
    return change


def set_signal_field(psg: Path, label: str, start: int, width: int, text: str) -> None:
    """Overwrite one per-signal header field (start = its offset per signal count)."""
    with open(psg, "r+b") as f:
        n = int(f.read(256)[252:256])
        f.seek(256)
        part = f.read(256 * n)
        labels = [part[16 * i: 16 * (i + 1)].decode().strip() for i in range(n)]
        i = labels.index(label)
        f.seek(256 + start * n + width * i)
        f.write(text.ljust(width)[:width].encode())


def rewrite_hypnogram(hyp: Path, extra=(), replace=None) -> None:
    """Rewrite a hypnogram with extra (onset, duration, text) entries, or texts replaced."""
    import mne

    ann = mne.read_annotations(hyp)
    start = sleep_edf.read_edf_header(hyp).start
    entries = [(float(o), float(d), (replace or {}).get(t, t))
               for o, d, t in zip(ann.onset, ann.duration, ann.description, strict=True)]
    demo_data.write_hypnogram(hyp, sorted(entries + list(extra)), start)


def second_night(data: Path) -> Path:
    return next(p for p in psgs(data) if p.name[5] == "2")


# ------------------------------------------------------------------------ the catalogue

INDEX = ("index", "--dataset", DATASET, "--out")


def index_args(tmp: Path, config: Path) -> list:
    return ["--configfile", config, *INDEX, tmp / "results/index/new.tsv"]


CASES = {
    # name: (damage(data), extra CLI args or None for index, exit code, message, fix)
    "truncated PSG": (lambda d: os.truncate(psgs(d)[1], psgs(d)[1].stat().st_size - 5000),
                      None, 2, "truncated: the header promises", "download the file again"),
    "missing hypnogram": (lambda d: hypnograms(d)[2].unlink(), None, 2,
                          "is partial (5/6 recordings)", "allow_partial=true"),
    "hypnogram without PSG": (lambda d: psgs(d)[3].unlink(), None, 2,
                              "is partial (5/6 recordings)", "allow_partial=true"),
    "unknown stage label": (lambda d: rewrite_hypnogram(
        hypnograms(d)[0], replace={"Sleep stage 2": "Sleep stage X"}), None, 2,
        "unknown sleep stage label 'Sleep stage X'", "correct or remove this annotation in"),
    "annotations past the end": (lambda d: rewrite_hypnogram(
        hypnograms(d)[0], extra=[(1e6, 90.0, "Sleep stage 2")]), None, 0,
        "scores up to 1,000,090 s: 3 scored epochs of 30 s past its end cut; the recording is "
        "indexed up to its end", None),
    "lights, arousals, comments": (lambda d: rewrite_hypnogram(hypnograms(d)[1], extra=[
        (10.0, 0.0, "Lights off"), (600.0, 5.0, "Arousal"), (700.0, 0.0, "tech: cable fixed"),
        (3000.0, 0.0, "Lights on")]), None, 0,
        "non-stage annotations ignored: 'Arousal' x1, 'Lights off' x1, 'Lights on' x1", None),
    "overlapping stages": (lambda d: rewrite_hypnogram(
        hypnograms(d)[0], extra=[(45.0, 30.0, "Sleep stage 1")]), None, 2,
        "stage annotations overlap", "correct the hypnogram"),
    "two hypnograms for one PSG": (lambda d: shutil.copy(
        hypnograms(d)[0], hypnograms(d)[0].with_name(hypnograms(d)[0].name[:6] + "ZZ"
                                                     "-Hypnogram.edf")), None, 2,
        "two hypnograms for recording", "keep one hypnogram per PSG file"),
    "foreign file name": (lambda d: psgs(d)[0].rename(psgs(d)[0].with_name("night1-PSG.edf")),
                          None, 2, "not a Sleep-EDF expanded file name",
                          "keep the PhysioNet names"),
    "corrupted header": (lambda d: set_signal_field(psgs(d)[0], "EEG Fpz-Cz", 216, 8, "x1!"),
                         None, 2, "not a readable EDF file", "download the file again"),
    "missing channel": (lambda d: set_signal_field(psgs(d)[4], "EEG Pz-Oz", 0, 16, "EEG Pz-Xx"),
                        None, 2, "no channel EEG Pz-Oz", "choose channels this file has"),
    "empty folder": (lambda d: [p.unlink() for p in d.rglob("*.edf")], None, 2,
                     "is missing (0/6 recordings)", "put the bad_edf files under"),
    "flat channel, second night": (lambda d: change_samples(second_night(d), "EEG Fpz-Cz",
                                                            constant(17)), None, 0,
                                   "channel EEG Fpz-Cz: flat (one constant value)",
                                   "exclude_bad_recordings=true"),
    "NaN-like saturation": (lambda d: change_samples(psgs(d)[2], "EEG Pz-Oz",
                                                     constant(-32768)), None, 0,
                            "channel EEG Pz-Oz: saturated: 100% of its samples",
                            "exclude_bad_recordings=true"),
    "clipping": (lambda d: _clip(psgs(d)[5]), None, 0, "channel EEG Fpz-Cz: saturated", None),
    "NaN/inf scaling": (lambda d: set_signal_field(psgs(d)[1], "EEG Pz-Oz", 104, 8, "nan"),
                        None, 0, "scales samples to NaN or infinity", None),
    "unit not a voltage": (lambda d: set_signal_field(psgs(d)[1], "EEG Fpz-Cz", 96, 8, "degC"),
                           None, 0, "unit 'degC' is not a voltage", None),
    "unit off by 1000": (lambda d: set_signal_field(psgs(d)[3], "EEG Fpz-Cz", 96, 8, "mV"),
                         None, 0, "far from EEG's tens of microvolts", None),
    "wrong sampling rate": (lambda d: _double_rate(psgs(d)[4]), None, 0,
                            "sampling rate 200 Hz where the other recordings have 100 Hz", None),
    "bad config value": (None, ["--config", "embed.batch_size=0", *INDEX, "x.tsv"], 2,
                         "config embed.batch_size: 0 is less than the minimum of 1",
                         "correct embed.batch_size"),
    "unknown config key": (None, ["--config", "allow_partail=true", *INDEX, "x.tsv"], 2,
                           "unknown config key 'allow_partail' (did you mean 'allow_partial'?)",
                           "valid keys here"),
    "unknown dataset": (None, ["index", "--dataset", "bad_eddf", "--out", "x.tsv"], 2,
                        "unknown dataset 'bad_eddf' (did you mean 'bad_edf'?)",
                        "use one of:"),
    "unknown model": (None, ["check", "--dataset", DATASET, "--model", "biot_randon"], 2,
                      "unknown model 'biot_randon' (did you mean 'biot_random'?)",
                      "use one of:"),
    "channel map missing": (None, ["--config", "datasets.bad_edf.channel_map=nomap", "check",
                                   "--dataset", DATASET, "--model", "biot_random"], 1,
                            "has no channel map", "name an existing map with channel_map:"),
    "configfile not YAML": (None, ["--configfile", "@BROKEN@", "index", "--dataset", DATASET,
                                   "--out", "x.tsv"], 2, "not valid YAML",
                            "correct the YAML in"),
    "--config without =": (None, ["--config", "index", "--dataset", DATASET], 2,
                           "--config needs KEY=VALUE", "write each setting as KEY=VALUE"),
}


def _clip(psg: Path, label: str = "EEG Fpz-Cz") -> None:
    """Clip the channel at a level 20% of its samples exceed, and make that the digital
    (and physical) range: what a recorder with too small a range writes."""
    header = sleep_edf.read_edf_header(psg)
    sig = header.signals[header.labels.index(label)]
    tops = []
    change_samples(psg, label, lambda v: tops.append(int(np.percentile(np.abs(v), 80))))
    top = tops[0]
    gain = (sig.physical_max - sig.physical_min) / (sig.digital_max - sig.digital_min)
    change_samples(psg, label, lambda v: np.clip(v, -top, top, out=v))
    set_signal_field(psg, label, 120, 8, str(-top))  # digital min
    set_signal_field(psg, label, 128, 8, str(top))  # digital max
    set_signal_field(psg, label, 104, 8, f"{-top * gain:.3f}")  # physical min
    set_signal_field(psg, label, 112, 8, f"{top * gain:.3f}")  # physical max


def _double_rate(psg: Path) -> None:
    """Record duration 30 s -> 15 s: every channel's rate doubles (same samples)."""
    with open(psg, "r+b") as f:
        f.seek(244)
        f.write(b"15      ")


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_is_caught_by_name(case, world, capsys, monkeypatch):
    tmp, data, config = world
    monkeypatch.chdir(tmp)  # relative outputs (x.tsv) and their failure records land here
    damage, args, code, message, fix = CASES[case]
    if damage:
        damage(data)
    broken = tmp / "broken.yaml"
    broken.write_text("datasets: [unclosed\n")
    argv = index_args(tmp, config) if args is None else [
        "--configfile", config, *[str(broken) if a == "@BROKEN@" else a for a in args]]
    assert_caught(capsys, tmp, argv, code, message, fix)


def assert_caught(capsys, tmp: Path, argv: list, code: int, message: str, fix: str | None):
    """The step exits with `code`, says `message`, prints `fix`; earlier files keep their bytes
    and a refused step writes no output."""
    before = tree_hashes(tmp / "cache", tmp / "results/demo", tmp / "results/index")
    got, out = run_cli(capsys, *argv)
    assert got == code, out
    assert message in out, out
    if fix:
        assert fix in fix_line(out), out
    after = tree_hashes(tmp / "cache", tmp / "results/demo", tmp / "results/index")
    assert {k: v for k, v in after.items() if k in before} == before, "earlier files changed"
    if code:  # a refused step writes no output
        assert not (tmp / "results/index/new.tsv").exists()


# ------------------------------------------------------------------ the other formats

CHB = {"patients": 2, "files_per_patient": 2, "minutes_per_file": 2, "seed": 0}
SIENA = {"patients": 2, "files_per_patient": 2, "minutes_per_file": 2, "seed": 0}
MI = {"subjects": 2, "runs": [4, 6], "trials_per_run": 4, "seed": 0}
BNCI = {"subjects": 2, "sessions": ["T", "E"], "runs_per_session": 1, "trials_per_run": 4,
        "eog_runs": 3, "eog_run_seconds": [2, 1, 1], "seed": 0}
TUAB = {"train_normal": 1, "train_abnormal": 1, "eval_normal": 1, "eval_abnormal": 1,
        "minutes": 2, "seed": 0}
ISRUC = {"subgroup_I": 2, "subgroup_II": 0, "subgroup_III": 2, "hours": 0.25, "seed": 0}
BONN = {"clips_per_set": 1, "sets": ["Z", "O", "N", "S"], "seed": 0}
DOD = {"healthy": 2, "osa": 2, "hours": 0.25, "seed": 0}
UCDDB = {"subjects": 4, "hours": 0.25, "seed": 0}
PSG2018 = {"subjects": 4, "hours": 0.25, "seed": 0}
SHHS = {"study": "shhs", "participants": 3, "second_visits": 1, "hours": 0.25, "seed": 0}
WSC = {"participants": 3, "second_visits": 1, "hours": 0.25, "seed": 0}
STAGES = {"sites": ["GSBB", "MSTH"], "subjects": 2, "repeats": 0, "hours": 0.25, "seed": 0}
HMC = {"subjects": 4, "hours": 0.25, "seed": 0}
DCSM = {"subjects": 4, "hours": 0.25, "seed": 0}
MASS = {"subsets": [1, 2], "subjects": 2, "hours": 0.25, "seed": 0}
HELSINKI = {"neonates": 4, "minutes": 2, "seed": 0}
HELSINKI_CUT_S = helsinki_lookalike.plan(HELSINKI)[0].seconds - 30  # _helsinki_cut's eeg1.edf
SZ1 = {"patients": 2, "files_per_patient": 2, "minutes_per_file": 2, "seed": 0}
EPILEPSIAE = {"patients": 2, "blocks_per_patient": 2, "minutes_per_block": 2, "seed": 0}
FORMATS = {  # dataset: (its config entry, look-alike writer, its settings)
    "chb": ({"format": "chbmit", "channel_map": "chbmit", "epoch_seconds": 10},
            chbmit_lookalike, CHB),
    "siena": ({"format": "siena", "channel_map": "siena", "epoch_seconds": 10},
              siena_lookalike, SIENA),
    "bids": ({"format": "szcore_bids", "channel_map": "chbmit_bids", "epoch_seconds": 10},
             szcore_bids_lookalike, {"source": "chbmit", **CHB}),
    "mi": ({"format": "physionet_mi", "channel_map": "physionet_mi", "runs": [4, 6],
            "epoch_seconds": 4, "trial_offset_seconds": 0.5}, physionet_mi_lookalike, MI),
    "bnci": ({"format": "bnci2014_001", "channel_map": "bnci2014_001", "sessions": ["T", "E"],
              "epoch_seconds": 4, "trial_offset_seconds": 0.5}, bnci2014_001_lookalike, BNCI),
    "tuab": ({"format": "tuab", "channel_map": "tuab", "epoch_seconds": 10, "split": "official"},
             tuab_lookalike, TUAB),
    "isruc": ({"format": "isruc", "channel_map": "isruc", "epoch_seconds": 30,
               "trim_wake_minutes": 1440}, isruc_lookalike, ISRUC),
    "bonn": ({"format": "bonn", "channel_map": "bonn", "epoch_seconds": 10}, bonn_lookalike,
             BONN),
    "dod": ({"format": "dod", "channel_map": "dod", "epoch_seconds": 30,
             "trim_wake_minutes": 1440}, dod_lookalike, DOD),
    "ucddb": ({"format": "ucddb", "channel_map": "ucddb", "epoch_seconds": 30,
               "trim_wake_minutes": 1440}, ucddb_lookalike, UCDDB),
    "psg2018": ({"format": "physionet2018", "channel_map": "physionet2018", "epoch_seconds": 30,
                 "trim_wake_minutes": 1440}, physionet2018_lookalike, PSG2018),
    "shhs": ({"format": "nsrr", "study": "shhs", "visits": ["shhs1", "shhs2"],
               "channel_map": "shhs", "epoch_seconds": 30,
              "trim_wake_minutes": 1440}, nsrr_lookalike, SHHS),
    "wsc": ({"format": "wsc", "channel_map": "wsc", "epoch_seconds": 30,
             "trim_wake_minutes": 1440}, wsc_lookalike, WSC),
    "stages": ({"format": "stages", "channel_map": "stages", "epoch_seconds": 30,
                "trim_wake_minutes": 1440}, stages_lookalike, STAGES),
    "hmc": ({"format": "hmc", "channel_map": "hmc", "epoch_seconds": 30,
             "trim_wake_minutes": 1440}, hmc_lookalike, HMC),
    "dcsm": ({"format": "dcsm", "channel_map": "isruc", "epoch_seconds": 30,
              "trim_wake_minutes": 1440, "fold_order": "text"}, dcsm_lookalike, DCSM),
    "mass": ({"format": "mass", "channel_map": "mass", "epoch_seconds": 30,
              "trim_wake_minutes": 1440, "fold_strata": r"^01-(\d\d)-"}, mass_lookalike, MASS),
    "helsinki": ({"format": "helsinki", "channel_map": "helsinki_neonatal", "epoch_seconds": 10},
                 helsinki_lookalike, HELSINKI),
    "sz1": ({"format": "seizeit1", "channel_map": "sz1", "epoch_seconds": 10},
            seizeit1_lookalike, SZ1),
    "epilepsiae": ({"format": "epilepsiae", "channel_map": "epilepsiae", "epoch_seconds": 10},
                   epilepsiae_lookalike, EPILEPSIAE),
}
# The recording-level datasets' classes are checked while the index is built when a benchmark
# of a recording-level task lists them (ISRUC's staging alone does not read its tables).
# The sleep-event tasks read every recording's event list then too.
TASK_BENCHMARKS = {name: {"task": task, "datasets": [dataset], "models": ["biot_random"]}
                   for name, task, dataset in [
                       ("isruc_diagnosis", "sleep_diagnosis", "isruc"),
                       ("ucddb_respiratory", "sleep_respiratory", "ucddb"),
                       ("psg2018_arousal", "sleep_arousal", "psg2018"),
                       ("mass_arousal", "sleep_arousal", "mass")]}


@pytest.fixture(scope="module")
def pristine_formats(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("formats")
    for dataset, (_, writer, settings) in FORMATS.items():
        writer.write_lookalike(root / dataset, settings)
    return root


@pytest.fixture
def formats_world(tmp_path, pristine_formats):
    """Like `world`, for the other formats: a config naming each look-alike (4 recordings
    each); the case's dataset is copied under data/ by `copy_dataset`."""
    config = tmp_path / "formats.yaml"
    config.write_text(yaml.safe_dump({
        "data_root": str(tmp_path / "data"), "results_root": str(tmp_path / "results"),
        "cache_root": str(tmp_path / "cache"), "weights_root": str(tmp_path / "weights"),
        "datasets": {d: {**entry, "path": d, "expected_recordings": 4}
                     for d, (entry, _, _) in FORMATS.items()},
        "benchmarks": TASK_BENCHMARKS, **STRICT}))
    for i, path in enumerate([tmp_path / "results/index/earlier.tsv",
                              tmp_path / "results/demo/x/results.tsv",
                              tmp_path / "cache/embeddings/earlier/biot_random.h5"]):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(os.urandom(256 + i))

    def copy_dataset(dataset: str) -> Path:
        data = tmp_path / "data" / dataset
        shutil.copytree(pristine_formats / dataset, data)
        return data

    return tmp_path, config, copy_dataset


def format_index_args(tmp: Path, config: Path, dataset: str) -> list:
    return ["--configfile", config, "index", "--dataset", dataset, "--out",
            tmp / "results/index/new.tsv"]


def _chb_seizure_past_the_end(data: Path) -> None:
    """The first seizure of a file ends 5 s after the file does."""
    p = next(p for p in chbmit_lookalike.plan(CHB) if p.seizures)
    summary = data / p.folder / f"{p.folder}-summary.txt"
    head, marker, tail = summary.read_text().partition(f"File Name: {p.name}\n")
    tail = re.sub(r"End Time: \d+ seconds", f"End Time: {p.seconds + 5} seconds", tail, count=1)
    summary.write_text(head + marker + tail)


BIDS_RUN = "sub-01/ses-01/eeg/sub-01_ses-01_task-szMonitoring_run-00"  # chb01_01: seizures


def _bids_events(data: Path, change) -> None:
    """Rewrite the events file of BIDS_RUN, its rows as a DataFrame."""
    path = data / f"{BIDS_RUN}_events.tsv"
    table = pd.read_csv(path, sep="\t", keep_default_na=False)
    change(table)
    table.to_csv(path, sep="\t", index=False)


def _bids_past_the_end(table: pd.DataFrame) -> None:
    table.loc[0, "duration"] = 125 - table.loc[0, "onset"]


def _mi_annotations(edf: Path, annotations) -> None:
    """Rewrite a PhysioNet MI run with other annotations (signals unchanged)."""
    import edfio

    run = edfio.read_edf(edf)
    run.set_annotations([edfio.EdfAnnotation(*a) for a in annotations])
    run.write(edf)


def _bnci_rewrite(mat: Path, change) -> None:
    """A session file rewritten with its runs changed by change(list of run dicts)."""
    import scipy.io

    runs = scipy.io.loadmat(mat, simplify_cells=True)["data"]
    change(runs)
    cell = np.empty((1, len(runs)), dtype=object)
    for k, run in enumerate(runs):
        cell[0, k] = run
    scipy.io.savemat(mat, {"data": cell})


def _bnci_column(name: str) -> int:
    return bnci2014_001.CHANNELS.index(name)


def _bnci_flat(runs) -> None:
    runs[3]["X"][:, _bnci_column("C3")] = 0.0  # run 4: the first with trials


def _bnci_nan(runs) -> None:
    """Ten NaN samples inside the first trial's window (0.5-4.5 s after its cue)."""
    first = int(runs[3]["trial"][0]) - 1 + int(2.5 * 250)
    runs[3]["X"] = np.asarray(runs[3]["X"], np.float64)
    runs[3]["X"][first: first + 10, _bnci_column("Cz")] = np.nan


def _bnci_unknown_code(runs) -> None:
    runs[3]["y"] = np.asarray(runs[3]["y"]).astype(np.int64)
    runs[3]["y"][2] = 7


def _tuab_no_class_folder(data: Path) -> None:
    edf = next((data / "edf/train/normal/01_tcp_ar").glob("*.edf"))
    unknown = data / "edf/train/unknown/01_tcp_ar"
    unknown.mkdir(parents=True)
    edf.rename(unknown / edf.name)


def _isruc_subject_missing(data: Path) -> None:
    """Subject 2 of subgroup I left out of its details table (its row deleted)."""
    import openpyxl

    path = data / "Details_subgroup_I_Submission.xlsx"
    book = openpyxl.load_workbook(path)
    sheet = book.active
    row = next(r[0].row for r in sheet.iter_rows() if r[0].value == 2)
    sheet.delete_rows(row)
    book.save(path)


def _dod_without_hypnogram(data: Path) -> None:
    import h5py

    night = next((data / "dodo").glob("*.h5"))
    with h5py.File(night, "a") as h5:
        del h5["hypnogram"]


def _hmc_unknown_stage(data: Path) -> None:
    """SN002's fourth stage annotation spelt as no HMC stage is."""
    night = hmc_lookalike.plan(HMC)[1]
    bad = [(o, d, "Sleep stage N4" if k == 4 else t)
           for k, (o, d, t) in enumerate(night.annotations())]
    demo_data.write_hypnogram(data / "recordings/SN002_sleepscoring.edf", bad,
                              hmc_lookalike.START)


def _dcsm_unknown_stage(data: Path) -> None:
    """The third run of the first subject's hypnogram.ids scored S4 (no DCSM stage)."""
    path = next(data.glob("*/hypnogram.ids"))
    lines = path.read_text().splitlines()
    lines[2] = lines[2].rsplit(",", 1)[0] + ",S4"
    path.write_text("\n".join(lines) + "\n")


def _mass_ss1_without_arousals(data: Path) -> None:
    night = mass_lookalike.plan(MASS)[0]
    quiet = [a for a in night.annotations() if "MicroArousal" not in a[2]]
    demo_data.write_hypnogram(data / "SS01/annotations/01-01-0001 Base.edf", quiet,
                              mass_lookalike.START)


def _nsrr_rewrite(data: Path, stem: str, change) -> None:
    visit = stem.split("-")[0]
    path = data / "polysomnography/annotations-events-nsrr" / visit / f"{stem}-nsrr.xml"
    path.write_text(change(path.read_text()))


def _nsrr_drop_row(data: Path) -> None:
    table = data / "datasets/shhs-harmonized-dataset-0.21.0.csv"
    rows = pd.read_csv(table)
    rows[rows["nsrrid"] != 200003].to_csv(table, index=False)


def _stages_drop_row(data: Path) -> None:
    table = data / "datasets/stages-harmonized-dataset-0.3.0.csv"
    rows = pd.read_csv(table)
    rows[rows["subject_code"] != "MSTH00002"].to_csv(table, index=False)


def _rewrite_text(path: Path, change) -> None:
    path.write_text(change(path.read_text()))


def _ucddb_rewrite_event(data: Path, change) -> None:
    """The first recording's event list with its first event row changed (fixed columns:
    clock time, type, PB/CS flag, duration, ...; DOS line ends, as PhysioNet ships it)."""
    path = data / ucddb_lookalike.plan(UCDDB)[0].names[2]
    lines = path.read_bytes().decode("ascii").split("\r\n")
    lines[3] = change(lines[3])
    path.write_bytes("\r\n".join(lines).encode("ascii"))


def _ucddb_short_stage_file(data: Path) -> None:
    path = data / ucddb_lookalike.plan(UCDDB)[1].names[1]
    path.write_bytes(b"".join(path.read_bytes().splitlines(True)[:-1]))


def _psg2018_notes(data: Path, change) -> None:
    """The first record's .arousal rewritten through wfdb with its notes changed."""
    import wfdb

    p = physionet2018_lookalike.plan(PSG2018)[0]
    samples, notes = zip(*change(p.notes), strict=True)
    wfdb.wrann(p.record, "arousal", np.array(samples, np.int64), symbol=['"'] * len(notes),
               aux_note=list(notes), write_dir=str(data / p.folder))


def _psg2018_unknown(notes: list) -> list:
    opening = next(k for k, (_, note) in enumerate(notes) if note.startswith("("))
    return [*notes[:opening], (notes[opening][0], "(resp_snoring"), *notes[opening + 1:]]


def _helsinki_three_columns(data: Path) -> None:
    """Expert C's file loses its last neonate's column."""
    path = data / "annotations_2017_C.csv"
    path.write_text("".join(line.rsplit(",", 1)[0] + "\n"
                            for line in path.read_text().splitlines()))


def _helsinki_cut(data: Path) -> None:
    """eeg1.edf loses its last 30 s; the experts' columns still annotate them."""
    import edfio

    edf = edfio.read_edf(data / "eeg1.edf")
    edf.slice_between_seconds(0, edf.duration - 30)
    edf.write(data / "eeg1.edf")


def _sz1_first_seizure(data: Path, change) -> None:
    """P_ID10_r1_a1.tsv's first seizure row (the first recording always has one), its cells
    changed by change(cells)."""
    path = data / "P_ID10/P_ID10_r1_a1.tsv"
    lines = path.read_text().splitlines()
    row = next(i for i, line in enumerate(lines) if not line.startswith("#"))
    cells = lines[row].split("\t")
    change(cells)
    lines[row] = "\t".join(cells)
    path.write_text("\n".join(lines) + "\n")


def _epilepsiae_first_seizure(data: Path, change) -> None:
    """Seizure_annotations.csv's first row (pat_1001's first block has one), its quoted cells
    changed by change(cells)."""
    path = data / "Annotation/Seizure_annotations.csv"
    lines = path.read_text().splitlines()
    cells = lines[1].split(",")
    change(cells)
    lines[1] = ",".join(cells)
    path.write_text("\n".join(lines) + "\n")


def _epilepsiae_in_1999(cells: list) -> None:
    cells[3:5] = ['"1999-01-01 00:00:00.000"'] * 2
    cells[7:9] = ['"1999-01-01 00:01:00.000"'] * 2


def _bonn_cut(data: Path) -> None:
    clip = data / "Z/Z001.txt"
    clip.write_text("".join(clip.read_text().splitlines(True)[:-10]))


FORMAT_CASES = {
    # name: (dataset, damage(data), exit code, message, fix)
    "CHB-MIT summary missing": ("chb", lambda d: (d / "chb01/chb01-summary.txt").unlink(), 2,
                                "is partial (2/4 recordings)", "allow_partial=true"),
    "CHB-MIT seizure past the end": ("chb", _chb_seizure_past_the_end, 2,
                                     "ends after the file (120 s long)",
                                     "correct the seizure's seconds in"),
    "CHB-MIT flat channel": ("chb", lambda d: change_samples(d / "chb01/chb01_02.edf", "FP1-F7",
                                                             constant(5)), 0,
                             "chb01_02 channel FP1-F7: flat (one constant value)",
                             "exclude_bad_recordings=true"),
    "Siena seizure list missing": ("siena", lambda d: (d / "PN00/Seizures-list-PN00.txt"
                                                       ).unlink(), 2,
                                   "is partial (2/4 recordings)", "allow_partial=true"),
    "Siena clipped channel": ("siena", lambda d: _clip(d / "PN01/PN01-2.edf", "EEG Fp1"), 0,
                              "PN01-2 channel EEG Fp1: saturated", "exclude_bad_recordings=true"),
    "BIDS recording without its events file": ("bids", lambda d: (
        d / f"{BIDS_RUN}_events.tsv").unlink(), 2,
        "no sub-01_ses-01_task-szMonitoring_run-00_events.tsv beside", "allow_partial=true"),
    "BIDS unknown event label": ("bids", lambda d: _bids_events(
        d, lambda t: t.replace({"eventType": {"sz": "spike"}}, inplace=True)), 2,
        "_events.tsv: unknown event label 'spike'", "sz_<type>"),
    "BIDS event outside its recording": ("bids", lambda d: _bids_events(d, _bids_past_the_end),
                                         2, "is not within sub-01_ses-01_task-szMonitoring_"
                                         "run-00_eeg.edf (120 s long)",
                                         "correct its onset and duration"),
    "PhysioNet MI run missing": ("mi", lambda d: (d / "S002/S002R06.edf").unlink(), 2,
                                 "S002R06.edf (run 6 of S002) is missing", "allow_partial=true"),
    "PhysioNet MI run without annotations": ("mi", lambda d: _mi_annotations(
        d / "S001/S001R04.edf", []), 2, "S001R04.edf: no annotations",
        "download the run again from PhysioNet"),
    "PhysioNet MI flat channel": ("mi", lambda d: change_samples(d / "S002/S002R04.edf", "C3..",
                                                                 constant(0)), 0,
                                  "S002R04 channel C3..: flat (one constant value)",
                                  "exclude_bad_recordings=true"),
    "BNCI .mat not a .mat": ("bnci", lambda d: (d / "A02E.mat").write_bytes(b"MATLAB? no" * 40),
                             2, "A02E.mat: not a readable .mat file", "download the file again"),
    "BNCI session file missing": ("bnci", lambda d: (d / "A01E.mat").unlink(), 2,
                                  "A01E.mat (session E of A01) is missing",
                                  "allow_partial=true"),
    "BNCI unknown event code": ("bnci", lambda d: _bnci_rewrite(d / "A01T.mat",
                                                                _bnci_unknown_code), 2,
                                "unknown event code y=7", "download the file again"),
    "BNCI flat channel (.mat)": ("bnci", lambda d: _bnci_rewrite(d / "A01T.mat", _bnci_flat),
                                 0, "A01T_run4 channel C3: flat (one constant value)",
                                 "exclude_bad_recordings=true"),
    "BNCI NaN samples (.mat)": ("bnci", lambda d: _bnci_rewrite(d / "A02T.mat", _bnci_nan), 0,
                                "A02T_run4 channel Cz: 10 of its samples in kept windows are "
                                "NaN or infinite", "exclude_bad_recordings=true"),
    "TUAB recording in no class folder": ("tuab", _tuab_no_class_folder, 2,
                                          "in unknown/, not a class folder",
                                          "keep TUAB v3.0.x's layout"),
    "ISRUC subject missing from its table": ("isruc", _isruc_subject_missing, 2,
                                             "Details_subgroup_I_Submission.xlsx: no row for "
                                             "subject 2", "use the Details_subgroup_I"),
    "DOD night without its hypnogram": ("dod", _dod_without_hypnogram, 2,
                                        "is partial (3/4 recordings)", "allow_partial=true"),
    "Bonn clip of the wrong length": ("bonn", _bonn_cut, 2, "Z001.txt: 4087 samples, a Bonn "
                                      "clip has 4097", "replace it with the file from the set"),
    "UCDDB event of an unknown type": ("ucddb", lambda d: _ucddb_rewrite_event(
        d, lambda row: row[:10] + "SNORE     " + row[20:]), 2,
        "line 4: unknown respiratory event type 'SNORE'", "APNEA-O"),
    "UCDDB event past the end": ("ucddb", lambda d: _ucddb_rewrite_event(
        d, lambda row: "05:59:00" + row[8:]), 2, "is not within ucddb002.rec",
        "cut or from another recording"),
    "UCDDB stage file shorter than the recording": ("ucddb", _ucddb_short_stage_file, 2,
                                                    "stage codes for the",
                                                    "one line per 30 s epoch"),
    "UCDDB event list missing": ("ucddb", lambda d: (d / ucddb_lookalike.plan(UCDDB)[2].names[2]
                                                     ).unlink(), 2,
                                 "is partial (3/4 recordings)", "allow_partial=true"),
    "NSRR XML scoring more epochs than its EDF": ("shhs", lambda d: _nsrr_rewrite(
        d, "shhs1-200001", lambda t: t.replace("</ScoredEvents>", (
            "<ScoredEvent><EventType>Stages|Stages</EventType><EventConcept>Wake|0"
            "</EventConcept><Start>900</Start><Duration>60</Duration></ScoredEvent>"
            "</ScoredEvents>"))), 2,
        "the XML disagrees with the EDF", "use the shhs1-200001-nsrr.xml of this EDF"),
    "NSRR unknown event concept": ("shhs", lambda d: _nsrr_rewrite(
        d, "shhs1-200002", lambda t: t.replace("Hypopnea|Hypopnea", "Snore|Snore")), 2,
        "unknown event concept 'Snore|Snore'", "annotations.py EVENTS"),
    "NSRR participant missing from the CSV": ("shhs", lambda d: _nsrr_drop_row(d), 2,
                                              "no row for nsrrid 200003", "allow_partial=true"),
    "NSRR visit folder without annotations": ("shhs", lambda d: shutil.rmtree(
        d / "polysomnography/annotations-events-nsrr/shhs2"), 2,
        "1 EDFs but no annotation folder", "annotations-events-nsrr/ folder from NSRR"),
    "WSC unknown stage code": ("wsc", lambda d: _rewrite_text(
        d / "polysomnography/wsc-visit1-10002-nsrr.stg.txt",
        lambda t: t.replace("\n3\t", "\n3\t9\t", 1)), 2,
        "unknown stage code 9", "download wsc-visit1-10002-nsrr.stg.txt again"),
    "STAGES CSV without its columns": ("stages", lambda d: _rewrite_text(
        d / "original/STAGES PSGs/MSTH/MSTH00002.csv",
        lambda t: t.replace("Duration (seconds)", "Duration", 1)), 2,
        "no Duration (seconds) column", "download MSTH00002.csv again"),
    "STAGES participant missing from the CSV": ("stages", _stages_drop_row, 2,
                                                "no row for subject_code MSTH00002",
                                                "allow_partial=true"),
    "HMC unknown stage label": ("hmc", _hmc_unknown_stage, 2,
                                "SN002_sleepscoring.edf: unknown sleep stage label 'Sleep stage "
                                "N4'", "'Sleep stage N1'"),
    "DCSM hypnogram line of no stage": ("dcsm", _dcsm_unknown_stage, 2, "line 3 reads",
                                        "download the subject's folder again"),
    "MASS SS1 night without arousals": ("mass", _mass_ss1_without_arousals, 2,
                                        "01-01-0001 Base.edf: no MicroArousal annotation",
                                        "leave the night out of the data folder"),
    "PhysioNet 2018 unknown note": ("psg2018", lambda d: _psg2018_notes(d, _psg2018_unknown), 2,
                                    "unknown annotation type 'resp_snoring'",
                                    "resp_obstructiveapnea"),
    "Helsinki annotation of another column count": (
        "helsinki", _helsinki_three_columns, 2, "annotations_2017_C.csv: 3 columns (neonates), "
        "but annotations_2017_A.csv has 4", "one column per recording"),
    "Helsinki recording shorter than its annotation": (
        "helsinki", _helsinki_cut, 2, f"eeg1.edf: {HELSINKI_CUT_S} s long, but "
        "annotations_2017_A.csv annotates", "download eeg1.edf again"),
    "SeizeIT1 seizure outside its recording": (
        "sz1", lambda d: _sz1_first_seizure(d, lambda c: c.__setitem__(slice(0, 2),
                                                                       ["110.00", "130.00"])),
        2, "is not within P_ID10_r1.edf (120 s long)", "correct its start and stop"),
    "SeizeIT1 unknown seizure type": (
        "sz1", lambda d: _sz1_first_seizure(d, lambda c: c.__setitem__(2, "absence")), 2,
        "P_ID10_r1_a1.tsv: line 6: unknown seizure type 'absence'", "FIA, FA, F-BTC"),
    "SeizeIT1 recording without its _a1.tsv": (
        "sz1", lambda d: (d / "P_ID10/P_ID10_r1_a1.tsv").unlink(), 2,
        "is partial (3/4 recordings)", "allow_partial=true"),
    "EPILEPSIAE unknown seizure classification": (
        "epilepsiae", lambda d: _epilepsiae_first_seizure(d, lambda c: c.__setitem__(10,
                                                                                     '"XX"')),
        2, "unknown seizure classification 'XX'", "CP, SP, SG, UC"),
    "EPILEPSIAE seizure outside its recording": (
        "epilepsiae", lambda d: _epilepsiae_first_seizure(d, _epilepsiae_in_1999), 2,
        "lies in none of its blocks", "correct its onset and offset"),
    "EPILEPSIAE block without its header": (
        "epilepsiae", lambda d: (d / "surf30/pat_1001/adm_100102/rec_10010102/"
                                 "10010102_0000.head").unlink(), 2,
        "is partial (3/4 recordings)", "allow_partial=true"),
    "PhysioNet 2018 annotations missing": ("psg2018", lambda d: (
        d / physionet2018_lookalike.plan(PSG2018)[1].folder
        / f"{physionet2018_lookalike.plan(PSG2018)[1].record}.arousal").unlink(), 2,
        "is partial (3/4 recordings)", "allow_partial=true"),
}


@pytest.mark.parametrize("case", list(FORMAT_CASES))
def test_bad_input_of_every_format_is_caught_by_name(case, formats_world, capsys, monkeypatch):
    tmp, config, copy_dataset = formats_world
    monkeypatch.chdir(tmp)
    dataset, damage, code, message, fix = FORMAT_CASES[case]
    damage(copy_dataset(dataset))
    assert_caught(capsys, tmp, format_index_args(tmp, config, dataset), code, message, fix)


@pytest.mark.parametrize("dataset", list(FORMATS))
def test_every_pristine_format_indexes_without_a_warning(dataset, formats_world, capsys):
    """Guard for the format cases: the undamaged look-alikes pass the data-quality scan."""
    tmp, config, copy_dataset = formats_world
    copy_dataset(dataset)
    code, out = run_cli(capsys, *format_index_args(tmp, config, dataset))
    assert code == 0, out
    assert "warning:" not in out, out
    table = pd.read_csv(tmp / "results/index/new.tsv", sep="\t")
    assert table["recording"].nunique() == 4
    assert pd.read_csv(tmp / "results/index/new.quality.tsv", sep="\t").empty


def test_bad_subjects_table_is_named(tmp_path):
    (tmp_path / "SC-subjects.xls").write_bytes(b"this is not a spreadsheet")
    with pytest.raises(DataError) as err:
        sleep_edf.subjects_table(tmp_path)
    assert "SC-subjects.xls: cannot read subject ages" in err.value.message
    assert "columns subject, night, age" in err.value.fix


@pytest.mark.parametrize("case, setting", [("missing hypnogram", "allow_partial=true"),
                                           ("flat channel, second night",
                                            "exclude_bad_recordings=true")])
def test_fix_commands_work_as_printed(case, setting, world, capsys):
    """The fix is this command again with the setting added; run in a shell, it succeeds."""
    tmp, data, config = world
    CASES[case][0](data)
    _, out = run_cli(capsys, *index_args(tmp, config))
    fix = fix_line(out)
    assert fix.startswith("embedprobe ") and setting in fix, fix
    done = run_fix_command(fix, tmp)
    assert done.returncode == 0, done.stderr[-2000:]
    table = pd.read_csv(tmp / "results/index/new.tsv", sep="\t")
    assert table["recording"].nunique() == 5  # the orphan, or the flat night, left out
    if setting.startswith("exclude"):
        flat_night = second_night(data).name[:8]
        quality_tsv = tmp / "results/index/new.quality.tsv"
        flagged = pd.read_csv(quality_tsv, sep="\t")
        assert flagged["recording"].tolist() == [flat_night]
        assert flagged["excluded"].tolist() == [True] and flagged["problem"].tolist() == ["flat"]
        assert flat_night not in set(table["recording"])
        assert "note: 1 recording(s) of bad_edf flagged, excluded" in done.stderr
        # the benchmark's summary lists the excluded recording (as `summary` writes it)
        summary = report.summary_markdown({}, task_for("sleep_staging"), "sleep_stage",
                                          report.read_quality([quality_tsv]))
        assert "## Recordings flagged by the data-quality scan" in summary
        assert f"| new | {flat_night} | EEG Fpz-Cz | flat | yes | flat (one constant value) " \
               f"in " in summary, summary


@pytest.mark.parametrize("case, setting, flagged", [
    ("PhysioNet MI run missing", "allow_partial=true", []),
    ("BNCI flat channel (.mat)", "exclude_bad_recordings=true", ["A01T_run4"]),
    ("CHB-MIT flat channel", "exclude_bad_recordings=true", ["chb01_02"]),
])
def test_fix_commands_of_the_other_formats_work_as_printed(case, setting, flagged,
                                                           formats_world, capsys):
    tmp, config, copy_dataset = formats_world
    dataset, damage, *_ = FORMAT_CASES[case]
    damage(copy_dataset(dataset))
    _, out = run_cli(capsys, *format_index_args(tmp, config, dataset))
    fix = fix_line(out)
    assert fix.startswith("embedprobe ") and setting in fix, fix
    done = run_fix_command(fix, tmp)
    assert done.returncode == 0, done.stderr[-2000:]
    table = pd.read_csv(tmp / "results/index/new.tsv", sep="\t", dtype={"recording": str})
    assert table["recording"].nunique() == 3  # the missing run, or the flagged one, left out
    quality_table = pd.read_csv(tmp / "results/index/new.quality.tsv", sep="\t")
    assert sorted(set(quality_table["recording"])) == flagged
    assert not set(flagged) & set(table["recording"])


def test_the_fetch_fix_of_a_skipped_pair_is_a_command(tmp_path, capsys, monkeypatch):
    """A hub checkpoint not fetched: the plan's and the table's fix runs as printed (its
    `# then run again` is the shell's); here the download itself is replaced."""
    from embedprobe.core.config import load_config
    from embedprobe.models import registry
    from embedprobe.smk.plan import known_skips

    config = load_config()
    config["weights_root"] = str(tmp_path / "weights")
    monkeypatch.setenv("EMBEDPROBE_WEIGHTS_ROOT", str(tmp_path / "weights"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)  # restored after (fetch pops it)
    fix = known_skips(config, "sleep_stage")["biot_pretrained"]["fix"]
    assert fix == "embedprobe fetch-weights biot_pretrained   # then run again"
    argv = shlex.split(fix, comments=True)
    fetched = []
    monkeypatch.setattr(registry, "fetch_models", lambda config, roots, models: fetched.append(
        models) or [])
    assert run_cli(capsys, *argv[1:])[0] == 0
    assert fetched == [["biot_pretrained"]]


def test_cli_config_and_configfile_like_snakemake(world, capsys, tmp_path):
    """--configfile merges over config/*.yaml, --config over that; YAML values, dotted keys;
    before or after the step."""
    tmp, data, config = world
    extra = tmp_path / "extra.yaml"
    extra.write_text("datasets: {bad_edf: {trim_wake_minutes: 10}}\n")
    code, _ = run_cli(capsys, "--configfile", config, *INDEX, tmp / "results/index/a.tsv",
                      "--configfile", extra)
    assert code == 0
    code, _ = run_cli(capsys, "--configfile", config, "--config",
                      "datasets.bad_edf.trim_wake_minutes=0", *INDEX,
                      tmp / "results/index/b.tsv")
    assert code == 0
    full = run_cli(capsys, "--configfile", config, *INDEX, tmp / "results/index/c.tsv")
    assert full[0] == 0
    sizes = [len(pd.read_csv(tmp / f"results/index/{n}.tsv", sep="\t")) for n in "bac"]
    assert sizes[0] < sizes[1] < sizes[2], sizes  # trimmed to 0, 10 and 30 min of wake
    assert overrides.parse_assignment("embed.batch_size=16") == {"embed": {"batch_size": 16}}
    assert overrides.parse_assignment("x=[1, 2]") == {"x": [1, 2]}
    assert overrides.with_config(["snakemake", "--config", "a=1", "-n", "demo"], "b=2") == [
        "snakemake", "--config", "b=2", "a=1", "-n", "demo"]


def test_success_removes_the_stale_failure_record(world, capsys):
    tmp, data, config = world
    out = tmp / "results/index/new.tsv"
    hyp = hypnograms(data)[2]
    moved = hyp.rename(tmp / hyp.name)
    code, _ = run_cli(capsys, *index_args(tmp, config))
    record = out.with_name(out.name + ".failure.json")
    assert code == 2 and record.is_file()
    moved.rename(hyp)
    code, _ = run_cli(capsys, *index_args(tmp, config))
    assert code == 0 and out.is_file() and not record.exists()
    # a pair's check (a workflow job with --out): failed, then passed
    check = tmp / "results/check/bad_edf/biot_random.json"
    record = check.with_name(check.name + ".failure.json")
    pair = ["check", "--dataset", DATASET, "--model", "biot_random", "--out", check]
    code, _ = run_cli(capsys, "--configfile", config, "--config",
                      "datasets.bad_edf.channel_map=nomap", *pair)
    assert code == 1 and json.loads(record.read_text())["step"] == "check"
    code, _ = run_cli(capsys, "--configfile", config, *pair)
    assert code == 0 and json.loads(check.read_text())["status"] == "ok"
    assert not record.exists()
    # the case: a preflight that failed (a memory limit no job fits), then passed
    estimate = tmp / "results/preflight/bad_edf/biot_random.json"
    record = estimate.with_name(estimate.name + ".failure.json")
    sized = ["preflight", "--dataset", DATASET, "--model", "biot_random", "--check", check,
             "--index", out, "--out", estimate]
    code, _ = run_cli(capsys, "--configfile", config, "--config", "memory.limit_mb=10", *sized)
    failed = json.loads(record.read_text())
    assert code != 0 and (failed["step"], failed["category"]) == ("preflight", "oom")
    assert not estimate.exists()
    code, _ = run_cli(capsys, "--configfile", config, *sized)
    assert code == 0 and "embed" in json.loads(estimate.read_text())["jobs"]
    assert not record.exists()


def test_annotation_kinds():
    kinds = {t: sleep_edf.annotation_kind(t) for t in (
        "Sleep stage W", "Sleep stage ?", "Movement time", "Lights off", "Lights on",
        "Arousal", "tech comment", "Sleep stage X", "Stage 5")}
    assert kinds == {"Sleep stage W": "stage", "Sleep stage ?": "unscored",
                     "Movement time": "unscored", "Lights off": "ignored",
                     "Lights on": "ignored", "Arousal": "ignored", "tech comment": "ignored",
                     "Sleep stage X": "unknown stage", "Stage 5": "unknown stage"}


def test_first_night_start_is_kept(pristine):
    """Guard for the damage helpers: the pristine copy indexes without a warning."""
    start = sleep_edf.read_edf_header(psgs(pristine)[0]).start
    assert start.date() >= dt.date(1989, 1, 1)
    problems = []
    for rec in sleep_edf.find_recordings(pristine):
        starts, _, sfreq = sleep_edf.read_labels(rec)
        problems += quality.scan_recording(rec.recording, rec.psg, sleep_edf.EEG_CHANNELS,
                                           starts, round(30 * sfreq))
    assert problems == []


def test_shlex_fix_quotes_paths_with_spaces():
    typed = ["embedprobe", "index", "--out", "my results/x.tsv"]
    fix = overrides.rerun_with(typed, "allow_partial=true", "or put the files there")
    assert shlex.split(fix.split("   #")[0]) == [
        "embedprobe", "index", "--out", "my results/x.tsv", "--config", "allow_partial=true"]


def test_a_fix_repeats_the_command_typed_and_no_other(world, capsys):
    """The command a `fix:` repeats is handed down from the one typed, not kept in the
    process: after `embedprobe index` printed itself again with allow_partial, `data status`
    repeats its own command, and the Python API (no command typed) says where to set it."""
    from embedprobe.api import tables

    tmp, data, config = world
    CASES["missing hypnogram"][0](data)
    code, out = run_cli(capsys, *index_args(tmp, config))
    typed = ["embedprobe", *map(str, index_args(tmp, config))]
    assert code == 2
    assert shlex.split(fix_line(out), comments=True) == [
        *typed, "--config", "allow_partial=true"]
    code, out = run_cli(capsys, "--configfile", config, "data", "status", DATASET)
    assert code == 1
    assert shlex.split(fix_line(out), comments=True) == [
        "embedprobe", "--configfile", str(config), "data", "status", DATASET, "--config",
        "allow_partial=true"]
    (fix,) = tables.data_status([DATASET], configfile=[config])["fix"]
    assert fix.startswith("set allow_partial: true in config/config.yaml, or add "
                          "allow_partial=true to the --config of your snakemake command"), fix
