"""Dataset formats by name, where each dataset's files live, and whether they are all there."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

from embedprobe.core.config import lookup
from embedprobe.core.errors import DataError
from embedprobe.core.overrides import rerun_with
from embedprobe.core.units import CONFOUND_CONTROL_SECONDS, UNIT_SECONDS
from embedprobe.core.variants import NO_FILTERING
from embedprobe.datasets.bi2013a import reader as bi2013a
from embedprobe.datasets.bnci2014_001 import reader as bnci2014_001
from embedprobe.datasets.bnci2014_008 import reader as bnci2014_008
from embedprobe.datasets.bonn import reader as bonn
from embedprobe.datasets.chbmit import reader as chbmit
from embedprobe.datasets.dcsm import reader as dcsm
from embedprobe.datasets.dod import reader as dod
from embedprobe.datasets.dreamer import reader as dreamer
from embedprobe.datasets.eegmat import reader as eegmat
from embedprobe.datasets.epilepsiae import reader as epilepsiae
from embedprobe.datasets.helsinki import reader as helsinki
from embedprobe.datasets.hmc import reader as hmc
from embedprobe.datasets.isruc import reader as isruc
from embedprobe.datasets.mass import reader as mass
from embedprobe.datasets.moabb import reader as moabb
from embedprobe.datasets.nakanishi2015 import reader as nakanishi2015
from embedprobe.datasets.nmt import reader as nmt
from embedprobe.datasets.nsrr import reader as nsrr
from embedprobe.datasets.physionet2018 import reader as physionet2018
from embedprobe.datasets.physionet_mi import reader as physionet_mi
from embedprobe.datasets.seizeit1 import reader as seizeit1
from embedprobe.datasets.siena import reader as siena
from embedprobe.datasets.sleep_edf import reader as sleep_edf
from embedprobe.datasets.sources import can_fetch
from embedprobe.datasets.stages import reader as stages
from embedprobe.datasets.szcore_bids import reader as szcore_bids
from embedprobe.datasets.tuab import reader as tuab
from embedprobe.datasets.tusz import reader as tusz
from embedprobe.datasets.ucddb import reader as ucddb
from embedprobe.datasets.wsc import reader as wsc


@dataclass(frozen=True)
class Format:
    """A dataset format: the module that reads it, the module whose write_lookalike(root,
    generator settings) writes a look-alike (imported when asked for), and the task whose
    units its index holds when a dataset names no `labels:`; `reader_kind` "threads" keeps
    its reading in the embed process's threads whatever the device (None: the device decides)."""

    reader: ModuleType
    lookalike: str
    task: str
    reader_kind: str | None = None


# The one table of formats: the config schema's `format` enum is checked against it (a test).
FORMATS = {
    "sleep_edf": Format(sleep_edf, "embedprobe.datasets.sleep_edf.lookalike", "sleep_staging"),
    "chbmit": Format(chbmit, "embedprobe.datasets.chbmit.lookalike", "seizure_detection"),
    "siena": Format(siena, "embedprobe.datasets.siena.lookalike", "seizure_detection"),
    "szcore_bids": Format(szcore_bids, "embedprobe.datasets.szcore_bids.lookalike",
                          "seizure_detection"),
    "helsinki": Format(helsinki, "embedprobe.datasets.helsinki.lookalike", "seizure_detection"),
    "physionet_mi": Format(physionet_mi, "embedprobe.datasets.physionet_mi.lookalike",
                           "motor_imagery"),
    "bnci2014_001": Format(bnci2014_001, "embedprobe.datasets.bnci2014_001.lookalike",
                           "motor_imagery"),
    "bnci2014_008": Format(bnci2014_008, "embedprobe.datasets.bnci2014_008.lookalike",
                           "bci_erp"),
    "bi2013a": Format(bi2013a, "embedprobe.datasets.bi2013a.lookalike", "bci_erp"),
    "tuab": Format(tuab, "embedprobe.datasets.tuab.lookalike", "abnormal_eeg"),
    "isruc": Format(isruc, "embedprobe.datasets.isruc.lookalike", "sleep_staging"),
    "bonn": Format(bonn, "embedprobe.datasets.bonn.lookalike", "abnormal_eeg"),
    "dod": Format(dod, "embedprobe.datasets.dod.lookalike", "sleep_staging"),
    "ucddb": Format(ucddb, "embedprobe.datasets.ucddb.lookalike", "sleep_staging"),
    "physionet2018": Format(physionet2018, "embedprobe.datasets.physionet2018.lookalike",
                            "sleep_staging"),
    "nakanishi2015": Format(nakanishi2015, "embedprobe.datasets.nakanishi2015.lookalike",
                            "bci_ssvep"),
    "eegmat": Format(eegmat, "embedprobe.datasets.eegmat.lookalike", "bci_cognitive"),
    "nsrr": Format(nsrr, "embedprobe.datasets.nsrr.lookalike", "sleep_staging"),
    "wsc": Format(wsc, "embedprobe.datasets.wsc.lookalike", "sleep_staging"),
    "stages": Format(stages, "embedprobe.datasets.stages.lookalike", "sleep_staging"),
    "hmc": Format(hmc, "embedprobe.datasets.hmc.lookalike", "sleep_staging"),
    "dcsm": Format(dcsm, "embedprobe.datasets.dcsm.lookalike", "sleep_staging"),
    "mass": Format(mass, "embedprobe.datasets.mass.lookalike", "sleep_staging"),
    "tusz": Format(tusz, "embedprobe.datasets.tusz.lookalike", "seizure_detection"),
    "nmt": Format(nmt, "embedprobe.datasets.nmt.lookalike", "abnormal_eeg"),
    "seizeit1": Format(seizeit1, "embedprobe.datasets.seizeit1.lookalike", "seizure_detection"),
    "epilepsiae": Format(epilepsiae, "embedprobe.datasets.epilepsiae.lookalike",
                         "seizure_detection"),
    # any MOABB dataset by class name; an entry of another paradigm names its `labels:`
    # read in threads: `import moabb` imports its benchmark, pyriemann and so torch into every
    # reader process (docs/measurements/2026-12-07-moabb-format.md)
    "moabb": Format(moabb, "embedprobe.datasets.moabb.lookalike", "motor_imagery",
                    reader_kind="threads"),
    # DREAMER's one DREAMER.mat: valence or arousal by the entry's dreamer_scale; read in
    # threads: each reader process would parse and keep its own copy of the whole file
    "dreamer": Format(dreamer, "embedprobe.datasets.dreamer.lookalike", "bci_cognitive",
                      reader_kind="threads"),
}


@dataclass
class DataStatus:
    dataset: str
    root: Path
    found: int
    expected: int | None  # None: unknown (expected_recordings)
    problems: list[str] = field(default_factory=list)
    # the recordings found in `root` (none where it is missing), kept for require_entry_data
    recordings: list = field(default_factory=list, repr=False, compare=False)

    @property
    def state(self) -> str:
        if self.found == 0:
            return "missing"
        short = self.expected is not None and self.found < self.expected
        return "partial" if short or self.problems else "found"

    @property
    def counted(self) -> str:
        """found/expected ("?" for an unknown count)."""
        return f"{self.found}/{'?' if self.expected is None else self.expected}"

    def describe(self) -> str:
        return f"{self.state} ({self.counted} recordings)"


def dataset_root(config: dict, roots: dict, dataset: str) -> Path:
    return entry_root(roots, lookup(config, "datasets", dataset))


def entry_root(roots: dict, entry: dict) -> Path:
    """dataset_root of a dataset's config entry (a format with its own rule for `path`,
    MOABB's `MNE_DATA`, says where it is)."""
    own = getattr(entry_reader(entry), "entry_root", None)
    if own is not None:
        return own(Path(roots["data_root"]), entry["path"])
    return Path(roots["data_root"]) / entry["path"]


def reader_for(config: dict, dataset: str):
    return entry_reader(lookup(config, "datasets", dataset))


def entry_reader(entry: dict) -> ModuleType:
    """reader_for of a dataset's config entry: its format's reader module."""
    return FORMATS[entry["format"]].reader


def entry_reader_kind(entry: dict) -> str | None:
    """Where a dataset's format must be read ("threads"), or None where the device decides."""
    return FORMATS[entry["format"]].reader_kind


def labelling_task_name(entry: dict) -> str:
    """The task whose units a dataset's index holds: its entry's `labels`, else its format's."""
    return entry.get("labels") or FORMATS[entry["format"]].task


def unit_seconds(config: dict, dataset: str) -> float:
    """How long each unit (window or trial) of the dataset is: its `epoch_seconds`, else its
    labelling task's default."""
    return entry_unit_seconds(lookup(config, "datasets", dataset))


def entry_unit_seconds(entry: dict, task: str | None = None) -> float:
    """unit_seconds of a dataset's config entry; `task` names its labelling task (a task's
    own `units` passes its name), else the entry's `labels` or its format's."""
    if "epoch_seconds" in entry:
        return float(entry["epoch_seconds"])
    return UNIT_SECONDS[task or labelling_task_name(entry)]


def entry_window(entry: dict, bci_filtering: str) -> tuple[float, float]:
    """(start, length) in seconds of what a model embeds from each unit of a dataset's entry,
    the start relative to the unit's indexed start: the unit itself, except a motor-imagery
    trial in the no_filtering variants (`bci_filtering: none`), which the reference takes
    whole from the cue (its moabb_generic.resolve_confound_control drops the first second
    only under confound filtering): moved back by the confound control's seconds, never past
    the entry's cue (`trial_offset_seconds`), and lengthened as much."""
    seconds = entry_unit_seconds(entry)
    drop = CONFOUND_CONTROL_SECONDS.get(labelling_task_name(entry), 0.0)
    if bci_filtering != NO_FILTERING or not drop:
        return 0.0, seconds
    drop = min(drop, float(entry.get("trial_offset_seconds", drop)))
    return -drop, seconds + drop


def find_dataset_recordings(config: dict, roots: dict, dataset: str,
                            root: Path | None = None) -> list:
    """The dataset's recordings, found by its reader with the reader's settings from the
    dataset's entry (a reader's READER_SETTINGS, e.g. PhysioNet MMI's `runs`)."""
    entry = lookup(config, "datasets", dataset)
    return entry_recordings(entry, root or entry_root(roots, entry))


def entry_recordings(entry: dict, root: Path) -> list:
    """find_dataset_recordings of a dataset's config entry, its files under `root`."""
    reader = entry_reader(entry)
    settings = {k: entry[k] for k in getattr(reader, "READER_SETTINGS", ()) if k in entry}
    return reader.find_recordings(root, **settings)


def generator_for(config: dict, dataset: str):
    """The look-alike writer module of the dataset's format (imported when asked for)."""
    import importlib

    return importlib.import_module(FORMATS[lookup(config, "datasets", dataset)["format"]].lookalike)


def expected_recordings(entry: dict) -> int | None:
    """How many recordings a dataset's entry expects (`expected_recordings`, else 1); None
    where the entry says `expected_recordings: null` (a count no source confirms: any number
    of complete recordings is the whole dataset)."""
    if "expected_recordings" in entry and entry["expected_recordings"] is None:
        return None
    return int(entry.get("expected_recordings", 1))


def data_status(config: dict, roots: dict, dataset: str) -> DataStatus:
    """Count complete recordings (every file a recording needs) against the expected number."""
    entry = lookup(config, "datasets", dataset)
    return entry_status(dataset, entry, entry_root(roots, entry))


def entry_status(dataset: str, entry: dict, root: Path,
                 recordings: list | None = None) -> DataStatus:
    """data_status of a dataset's config entry, its files under `root`; `recordings`: those
    entry_recordings already found there (else they are listed here)."""
    expected = expected_recordings(entry)
    if not root.is_dir():
        return DataStatus(dataset, root, 0, expected, [f"folder {root} does not exist"])
    if recordings is None:
        recordings = entry_recordings(entry, root)
    if not recordings:  # the folder is there, empty or holding none of the format's files
        return DataStatus(dataset, root, 0, expected,
                          [f"folder {root} holds no {entry['format']} recording (the layout: "
                           "docs/usage.md, the datasets table)"])
    problems = [r.problem for r in recordings if r.problem]
    complete = len(recordings) - len(problems)
    # not even named (an incomplete one names itself); an unknown count misses none
    absent = 0 if expected is None else expected - len(recordings)
    if complete and absent > 0:
        problems.append(f"{absent} of {expected} recordings are not in {root}")
    return DataStatus(dataset, root, complete, expected, problems, recordings)


def partial_allowed(config: dict) -> bool:
    """Whether a dataset some of whose recordings are incomplete (a file missing) runs on the
    complete ones, each incomplete one named in a `warning:`: yes, unless the run is strict
    (`strict: true` refuses it, as it refuses a missing dataset), where `allow_partial: true`
    still lets it run. A job's config slice holds no `strict` (a selection key): the plan has
    refused a strict run's partial dataset before any job starts."""
    return bool(config.get("allow_partial")) or not config.get("strict")


def fix_for(config: dict, dataset: str, status: DataStatus,
            invocation: list[str] | None = None) -> str:
    """What to do about a dataset that is not all there; for a partial one a strict run
    refuses, `invocation` (the command the user typed, if any) again with allow_partial."""
    return entry_fix(config, dataset, lookup(config, "datasets", dataset), status, invocation)


def entry_fix(config: dict, dataset: str, entry: dict, status: DataStatus,
              invocation: list[str] | None = None) -> str:
    """fix_for of a dataset's config entry."""
    if "generator" in entry:
        if status.state == "missing":  # a look-alike is written when a benchmark needs it
            return (f"embedprobe demo-data --dataset {dataset}   # or run a benchmark that "
                    "lists it: its demo_data rule writes it")
        return f"delete {status.root} and rerun: the demo_data rule regenerates it"
    put = (f"put the {dataset} files under {status.root} (or point --config data_root=... "
           "or EMBEDPROBE_DATA_ROOT at the folder that holds them)")
    own = getattr(entry_reader(entry), "fetch_fix", None)  # a format that fetches its own
    if own is not None:
        put = own(entry, status.root)
    fetch = can_fetch(entry.get("source"))  # its publisher serves it openly: a command fetches it
    if status.state == "partial" and not partial_allowed(config):
        # the command that runs on the recordings that are there
        rest = (f"fetch the rest: embedprobe data download {dataset} (on a login node)" if fetch
                else put)
        return rerun_with(invocation, "allow_partial=true",
                          f"runs on the {status.found} complete recordings; or {rest}")
    return f"embedprobe data download {dataset}   # on a login node; or {put}" if fetch else put


def require_data(config: dict, roots: dict, dataset: str,
                 invocation: list[str] | None = None) -> list[Path]:
    """The dataset's files (those of its complete recordings); a missing dataset is refused,
    and a partial one where partial_allowed says so (a strict run), the fix for `invocation`
    (fix_for)."""
    entry = lookup(config, "datasets", dataset)
    return require_entry_data(config, dataset, entry, entry_root(roots, entry), invocation)


def require_entry_data(config: dict, dataset: str, entry: dict, root: Path,
                       invocation: list[str] | None = None,
                       recordings: list | None = None) -> list[Path]:
    """require_data of a dataset's config entry, its files under `root`; `recordings`: those
    entry_recordings already found there (entry_status)."""
    status = entry_status(dataset, entry, root, recordings)
    if status.state == "missing" or (status.state == "partial" and not partial_allowed(config)):
        details = "; ".join(status.problems[:5])
        raise DataError(
            f"dataset '{dataset}' is {status.describe()} in {status.root}: {details}",
            fix=entry_fix(config, dataset, entry, status, invocation),
        )
    return [p for r in status.recordings if not r.problem for p in r.files]
