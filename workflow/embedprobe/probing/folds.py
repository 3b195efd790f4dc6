"""Fold plans: per fold, which units (subjects, or recordings) train, validate and test.

The reference suite's rules (kkontras/NeuroAtlas), re-implemented so that the same ids give the
same folds:

- chunks, its generic rule (Sleep-EDF's `adapters/sleep_edf_expanded._patient_splits`, MOABB's
  `dataio/bci.get_subject_split`): the subjects in ascending order; within each stratum (Sleep-EDF:
  cassette, telemetry; strata in name order, one generator for all) an index shuffled once by
  `numpy.random.RandomState(seed)`, cut into `folds` contiguous chunks by `numpy.array_split`.
  Fold k tests chunk k, validates on chunk k+1, trains on the rest.
- leave one subject out (`dataio/bci.loso_split`): fold k tests the k-th subject in ascending
  order; the validation subjects are `train_test_split(other positions, test_size=0.1,
  random_state=seed)`'s test part (one subject for up to ten others).
- stratified (the seizure adapters' `_patient_splits_generic`): `StratifiedKFold(folds,
  shuffle=True, random_state=seed)` over the sorted units, labelled by whether any of their
  windows is positive; the validation units are fold (k+1) of the same splitter run over fold k's
  training units. Plain `KFold` where the smallest class has fewer members than folds
  (`registry/splits.make_subject_kfold`); the paper's recording-level Siena split used
  `StratifiedKFold` regardless (`paper_stratified`).
- per stratum (ISRUC's `adapters/isruc._patient_splits`, a dataset's `fold_draw: per_stratum`):
  each stratum split on its own, `StratifiedKFold` on the subjects' class where every class has
  at least `folds` subjects, else chunks of a fresh `RandomState(seed)` per stratum.
- age-stratified (brain age: `adapters/precomputed_embeddings._stratified_subject_splits`):
  the aged subjects sorted, `StratifiedKFold` on their age bin picks the test fold, the same
  splitter over the rest picks validation fold k+1.
- balanced (WSC's `adapters/wsc._balanced_subject_chunks`, a dataset's `fold_draw: balanced`):
  the subjects sorted as strings, shuffled by `RandomState(seed)`, stably ordered by their
  recording count (most first), each given to the chunk holding the fewest recordings so far
  (the lowest-numbered among equals), so a participant's visits share a fold and the folds hold
  about as many recordings.
- a manifest (`registry/fold_manifest`): `explicit` (each fold's train/val/test lists) or
  `partition` (each fold's test list; validation the next fold's, train the rest), read from JSON.
"""

from __future__ import annotations

import json
import re
import warnings
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from embedprobe.core.errors import UsageError

PARTS = ("train", "val", "test")
VAL_FRACTION = 0.1  # leave one subject out: the share of the other subjects that validates
UNITS = ("subject", "recording")  # the window-table columns a plan can be keyed by
# a seizure dataset's `split`; the first is the default
SPLITS = ("patients", "paper_recordings", "official")
MANIFEST_DIR = Path(__file__).resolve().parents[3] / "config" / "folds"


@dataclass(frozen=True)
class FoldPlan:
    """Each fold's part (train, val, test) of every unit, and the rule that made them."""

    parts: tuple[dict[str, str], ...]  # per fold: unit id -> part
    unit: str = "subject"  # the window-table column the ids are values of
    rule: str = ""  # one line for messages and records

    @property
    def n_folds(self) -> int:
        return len(self.parts)

    def members(self, fold: int, part: str) -> list[str]:
        return sorted((u for u, p in self.parts[fold].items() if p == part), key=ascending)


def ascending(unit_id) -> tuple:
    """Sort key: digit runs compare as numbers ("A2" < "A10"), the reference's ascending ids."""
    pieces = re.split(r"(\d+)", str(unit_id))
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in pieces)


def fold_split(plan: FoldPlan, units, fold: int) -> dict[str, np.ndarray]:
    """Boolean masks over rows for the train, validation and test parts of one fold; `units` is
    a table with the plan's unit column (subject or recording) or the subject ids themselves."""
    if not 0 <= fold < plan.n_folds:
        raise UsageError(f"fold {fold} is outside the {plan.n_folds} folds of {plan.rule}",
                         fix=f"ask for folds 0..{plan.n_folds - 1}")
    if isinstance(units, pd.DataFrame):
        if plan.unit not in units.columns:
            raise UsageError(f"{plan.rule} assigns {plan.unit}s; these rows have no "
                             f"{plan.unit} column", fix="use a subject-level split here")
        ids = units[plan.unit]
    else:
        ids = pd.Series(np.asarray(units))
    part = ids.astype(str).map(plan.parts[fold])
    unplaced = sorted(set(ids[part.isna().to_numpy()].astype(str)), key=ascending)
    if unplaced:
        raise UsageError(f"{plan.rule}: fold {fold} puts {plan.unit} {', '.join(unplaced[:5])} "
                         f"in no part", fix="plan the folds over the same units as the rows")
    return {name: (part == name).to_numpy() for name in PARTS}


# --- the rules ---------------------------------------------------------------------------
def plan_from_groups(groups: dict[str, int], n_folds: int, rule: str,
                     unit: str = "subject") -> FoldPlan:
    """Fold k tests group k, validates on group k+1 and trains on the rest."""
    parts = []
    for k in range(n_folds):
        role = {k: "test", (k + 1) % n_folds: "val"}
        parts.append({u: role.get(g, "train") for u, g in groups.items()})
    return FoldPlan(tuple(parts), unit, rule)


def subject_groups(subjects, n_folds: int, seed: int,
                   strata: dict[str, str] | None = None, as_text: bool = False) -> dict[str, int]:
    """Subject -> chunk (the reference's generic rule): per stratum, the subjects in ascending
    order (`as_text`: sorted as text, DCSM's adapter), an index shuffled by one
    RandomState(seed) shared by the strata (taken in name order), cut into n_folds contiguous
    chunks."""
    unique = sorted({str(u) for u in subjects}) if as_text else distinct(subjects)
    require_units(len(unique), n_folds, "subjects")
    strata = strata or {}
    by_stratum: dict[str, list[str]] = {}
    for subject in unique:
        by_stratum.setdefault(strata.get(subject, ""), []).append(subject)
    rng = np.random.RandomState(seed)
    groups = {}
    for name in sorted(by_stratum):
        members = by_stratum[name]
        order = np.arange(len(members))
        rng.shuffle(order)
        for chunk, indices in enumerate(np.array_split(order, n_folds)):
            groups.update({members[i]: chunk for i in indices})
    return groups


def per_stratum_plan(subjects, n_folds: int, seed: int, strata_pattern: str,
                     classes: dict[str, str] | None = None) -> FoldPlan:
    """ISRUC's rule (`adapters/isruc._patient_splits`): each stratum (subgroup) is split on its
    own, its subjects in ascending order: `StratifiedKFold(n_folds, shuffle=True,
    random_state=seed)` on the subjects' class where the stratum holds two classes or more and
    each has at least n_folds subjects, else a fresh `RandomState(seed)` shuffle cut into
    n_folds chunks. Fold k tests split k and validates on split k+1 of every stratum. A subject
    missing from `classes` counts as class "unknown", as the reference's does."""
    from sklearn.model_selection import StratifiedKFold

    unique = distinct(subjects)
    require_units(len(unique), n_folds, "subjects")
    classes = classes or {}
    strata = subject_strata(unique, strata_pattern)
    groups: dict[str, int] = {}
    for name in sorted(set(strata.values())):
        # ascending ids: the reference's zero-padded ids ("I_002" < "I_010") sort as strings
        # in the order ours ("I-2" < "I-10") sort by number
        members = [s for s in unique if strata[s] == name]
        labels = [classes.get(s, "unknown") for s in members]
        counts = Counter(labels)
        if len(counts) > 1 and min(counts.values()) >= n_folds:
            splitter = StratifiedKFold(n_splits=n_folds, shuffle=True, random_state=seed)
            tests = [test for _, test in splitter.split(np.zeros(len(members)), labels)]
        else:
            order = np.arange(len(members))
            np.random.RandomState(seed).shuffle(order)  # a fresh generator per stratum
            tests = np.array_split(order, n_folds)
        groups.update({members[i]: chunk for chunk, test in enumerate(tests) for i in test})
    rule = (f"{n_folds} subject folds per stratum of {strata_pattern!r} (StratifiedKFold on "
            f"the class where it can, else RandomState({seed}) chunks)")
    return plan_from_groups(groups, n_folds, rule)


def age_stratified_plan(ages: dict[str, float], n_folds: int, seed: int,
                        age_bins) -> FoldPlan:
    """Brain age's own folds (the reference's `_stratified_subject_splits`, which its
    `cohort_protocols` apply to Sleep-EDF's cassette subjects): the subjects with an age, sorted
    as strings, labelled by age bin (`np.digitize(age, age_bins) - 1`); fold k tests split
    k % n of an outer splitter and validates on split (k+1) % m of the same splitter run over
    fold k's other subjects. Each splitter is `StratifiedKFold(shuffle=True,
    random_state=seed)` where every bin present holds at least its n splits, else `KFold`
    (`registry/splits.make_subject_kfold`); n (and m) is n_folds, capped at the subjects."""
    ids = sorted(str(s) for s in ages)
    # The reference cuts fewer folds where subjects are short; ours refuses, as every plan
    # here does (docs/methods.md), so that a benchmark's fold count means what it says.
    require_units(len(ids), n_folds, "subjects with an age")
    bins = np.digitize([float(ages[s]) for s in ids], np.asarray(age_bins, float)) - 1
    outer = max(2, min(n_folds, len(ids)))
    parts = []
    for k in range(n_folds):
        kept, test = nth_split(len(ids), bins, outer, k % outer, seed, always_stratify=False)
        inner = max(2, min(n_folds, len(kept)))
        _, val = nth_split(len(kept), bins[kept], inner, (k + 1) % inner, seed,
                           always_stratify=False)
        role = {ids[i]: "test" for i in test} | {ids[kept[i]]: "val" for i in val}
        parts.append({s: role.get(s, "train") for s in ids})
    rule = (f"{n_folds} subject folds stratified on age bins {list(age_bins)} "
            f"(StratifiedKFold, seed {seed})")
    return FoldPlan(tuple(parts), "subject", rule)


def chunk_plan(subjects, n_folds: int, seed: int, strata_pattern: str | None = None,
               as_text: bool = False) -> FoldPlan:
    """The generic plan; `strata_pattern` (a dataset's `fold_strata`) names each subject's
    stratum: its first group, or its whole match, on the subject id; `as_text` (a dataset's
    `fold_order: text`) orders the subjects as text before the draw."""
    strata = subject_strata(distinct(subjects), strata_pattern) if strata_pattern else None
    rule = f"{n_folds} subject folds (seed {seed}" + (
        f", strata {strata_pattern!r}" if strata_pattern else "") + (
        ", ids in text order)" if as_text else ")")
    return plan_from_groups(subject_groups(subjects, n_folds, seed, strata, as_text), n_folds,
                            rule)


def balanced_plan(table: pd.DataFrame, n_folds: int, seed: int) -> FoldPlan:
    """The balanced plan over a window table's subjects and recordings (module docstring)."""
    recordings = table["recording"] if "recording" in table else table["subject"]
    visits = recordings.groupby(table["subject"].astype(str)).nunique().to_dict()
    subjects = sorted(visits)  # the reference sorts the ids as strings
    require_units(len(subjects), n_folds, "subjects")
    np.random.RandomState(seed).shuffle(subjects)
    subjects.sort(key=lambda s: -visits[s])
    loads, groups = [0] * n_folds, {}
    for subject in subjects:
        chunk = min(range(n_folds), key=lambda j: (loads[j], j))
        groups[subject] = chunk
        loads[chunk] += visits[subject]
    return plan_from_groups(groups, n_folds, f"{n_folds} subject folds balanced by recordings "
                                             f"(seed {seed})")


def subject_strata(subjects: list[str], pattern: str) -> dict[str, str]:
    regex = re.compile(pattern)
    strata = {}
    for subject in subjects:
        match = regex.search(subject)
        if match is None:
            raise UsageError(f"fold_strata {pattern!r} does not match subject {subject}",
                             fix="write a pattern every subject id matches, e.g. '^(SC|ST)'")
        strata[subject] = match.group(1) if regex.groups else match.group(0)
    return strata


def loso_plan(subjects, seed: int, val_fraction: float = VAL_FRACTION) -> FoldPlan:
    """Leave one subject out: fold k tests the k-th subject in ascending order; validation is
    train_test_split's test part of the other subjects' positions (the reference's draw)."""
    from sklearn.model_selection import train_test_split

    ordered = distinct(subjects)
    require_units(len(ordered), 3, "subjects")  # one tests, one validates, one trains
    parts = []
    for k, tested in enumerate(ordered):
        others = [i for i in range(len(ordered)) if i != k]
        _, val = train_test_split(others, test_size=val_fraction, random_state=seed)
        validating = {ordered[i] for i in val}
        parts.append({s: "test" if s == tested else "val" if s in validating else "train"
                      for s in ordered})
    rule = f"leave one subject out over {len(ordered)} subjects (validation seed {seed})"
    return FoldPlan(tuple(parts), "subject", rule)


def stratified_plan(positive: dict[str, bool], n_folds: int, seed: int, unit: str = "subject",
                    always_stratify: bool = False) -> FoldPlan:
    """StratifiedKFold over the sorted units labelled by `positive`; validation: fold (k+1) of
    the same splitter over fold k's training units. `always_stratify`: StratifiedKFold even
    where a class is smaller than the folds (the paper's Siena recording split did)."""
    ids = distinct(positive)
    require_units(len(ids), n_folds, f"{unit}s")
    labels = np.array([int(bool(positive[u])) for u in ids])
    parts = []
    for k in range(n_folds):
        kept, test = nth_split(len(ids), labels, n_folds, k, seed, always_stratify)
        inner_folds = max(2, min(n_folds, len(kept)))
        _, val = nth_split(len(kept), labels[kept], inner_folds, (k + 1) % inner_folds, seed,
                           always_stratify)
        role = {ids[i]: "test" for i in test} | {ids[kept[i]]: "val" for i in val}
        parts.append({u: role.get(u, "train") for u in ids})
    rule = (f"{n_folds} {unit} folds stratified on any positive window "
            f"(StratifiedKFold, seed {seed})")
    return FoldPlan(tuple(parts), unit, rule)


def seizure_plan(table: pd.DataFrame, bench: dict, entry: dict) -> FoldPlan:
    """A seizure dataset's folds by its `split`: `patients` (default; the reference's patient
    folds), `paper_recordings` (the recording-level folds the reference paper's Siena numbers
    were drawn on: recordings, not patients, split, so a test patient can also train) or
    `official` (the corpus's train/dev/eval partition: seizure_official_plan)."""
    split = entry.get("split", SPLITS[0])
    if split not in SPLITS:
        raise UsageError(f"split: {split} is not a seizure split",
                         fix=f"write split: {', '.join(SPLITS)} in the dataset's entry")
    if split == "official":
        return seizure_official_plan(table, bench["folds"])
    unit = "subject" if split == "patients" else "recording"
    missing = [c for c in (unit, "label") if c not in table.columns]
    if missing:
        raise UsageError(f"seizure folds need the windows' {' and '.join(missing)}: given "
                         f"{', '.join(table.columns)}",
                         fix="plan the folds over the window table, not its subjects alone")
    positive = (table.groupby(table[unit].astype(str))["label"].max() > 0).to_dict()
    return stratified_plan(positive, bench["folds"], bench["fold_seed"], unit,
                           always_stratify=split == "paper_recordings")


# The corpus's seizure partition (TUSZ): the session's first part -> the fold part
SEIZURE_OFFICIAL_PARTS = {"train": "train", "dev": "val", "eval": "test"}


def official_parts(table: pd.DataFrame, parts: dict[str, str], other_split: str
                   ) -> dict[str, str]:
    """Each subject's fold part under `split: official`, read from the first part of its
    recordings' sessions through `parts` ({"train": "train", "eval": "test"}, ...); a session
    of no part, or a subject in two parts, is refused (`other_split`: the dataset's other
    split, named in the fix)."""
    if "session" not in table.columns:
        raise UsageError("split: official reads each recording's part from its session; these "
                         "rows have none", fix="plan the folds over the dataset's window index")
    part_of = table["session"].astype(str).str.split("/").str[0].map(parts)
    if part_of.isna().any():
        bad = table["session"][part_of.isna()].iloc[0]
        raise UsageError(f"split: official needs sessions named "
                         f"{', '.join(f'{p}/...' for p in parts)}; recording "
                         f"{table['recording'][part_of.isna()].iloc[0]} has session {bad!r}",
                         fix=f"use split: {other_split} for this dataset")
    found = part_of.groupby(table["subject"].astype(str)).agg(set)
    both = sorted((s for s, p in found.items() if len(p) > 1), key=ascending)
    if both:
        names = list(parts)
        which = (f"both the {names[0]} and the {names[1]} part" if len(names) == 2 else
                 f"more than one of {', '.join(names[:-1])} and {names[-1]}")
        raise UsageError(f"split: official: subject {both[0]} is in {which}",
                         fix=f"use split: {other_split}, or keep each subject in one part")
    return {s: next(iter(p)) for s, p in found.items()}


def seizure_official_plan(table: pd.DataFrame, n_folds: int) -> FoldPlan:
    """TUSZ's official split as the reference's `split_mode: official` uses it
    (`adapters/tusz.TUSZDataModule._init_official`): train trains, dev validates, eval tests,
    the same in every fold (that mode reads no fold number), read from each recording's
    session ("train/...", "dev/...", "eval/...")."""
    role = official_parts(table, SEIZURE_OFFICIAL_PARTS, "patients")
    missing = sorted(set(SEIZURE_OFFICIAL_PARTS.values()) - set(role.values()))
    if missing:
        raise UsageError(f"split: official: no subject in the {' or '.join(missing)} part",
                         fix="index the whole corpus (edf/train, dev and eval), or use split: "
                             "patients")
    counts = Counter(role.values())
    rule = (f"the official split: {counts['train']} train, {counts['val']} dev (validation), "
            f"{counts['test']} eval (test) subjects, the same in each of the {n_folds} folds")
    return FoldPlan(tuple(dict(role) for _ in range(n_folds)), "subject", rule)


# A recording-level dataset's `split`: its own classes stratify the folds (default), or the
# corpus's official train/eval partition fixes the test set (TUAB).
RECORDING_SPLITS = ("stratified", "official")
OFFICIAL_PARTS = {"train": "train", "eval": "test"}  # the session's first part -> the fold part


def recording_level_plan(table: pd.DataFrame, bench: dict, entry: dict) -> FoldPlan:
    """Folds over subjects stratified on their class (any window labelled > 0: a subject with
    an abnormal recording counts as abnormal), the epilepsy benchmark's rule; `split:
    official`: the corpus's own partition, named by each recording's session ("train/...",
    "eval/..."), tests the eval subjects in every fold, and fold k validates on the k-th part
    of a StratifiedKFold over the train subjects (the reference's TUAB split)."""
    split = entry.get("split", RECORDING_SPLITS[0])
    if split not in RECORDING_SPLITS:
        raise UsageError(f"split: {split} is not a recording-level split",
                         fix=f"write split: {' or '.join(RECORDING_SPLITS)} in the dataset's "
                             "entry")
    positive = (table.groupby(table["subject"].astype(str))["label"].max() > 0).to_dict()
    if split == "stratified":
        return stratified_plan(positive, bench["folds"], bench["fold_seed"])
    return official_plan(table, positive, bench["folds"], bench["fold_seed"])


def official_plan(table: pd.DataFrame, positive: dict[str, bool], n_folds: int,
                  seed: int) -> FoldPlan:
    part = official_parts(table, OFFICIAL_PARTS, "stratified")
    train = [s for s in distinct(part) if part[s] == "train"]
    tested = [s for s in distinct(part) if part[s] == "test"]
    require_units(len(train), n_folds, "train subjects")
    labels = np.array([int(bool(positive[s])) for s in train])
    folds = []
    for k in range(n_folds):
        _, val = nth_split(len(train), labels, n_folds, k, seed, always_stratify=False)
        role = {train[i]: "val" for i in val} | {s: "test" for s in tested}
        folds.append({s: role.get(s, "train") for s in train + tested})
    rule = (f"the official split: {len(tested)} eval subjects test every fold, validation fold "
            f"k of {n_folds} StratifiedKFold over {len(train)} train subjects (seed {seed})")
    return FoldPlan(tuple(folds), "subject", rule)


def refuse_split(entry: dict, task: str) -> None:
    """`split` chooses between seizure or abnormal-EEG folds; elsewhere the folds are per
    subject."""
    if "split" in entry:
        raise UsageError(f"split: {entry['split']} is a seizure-detection or abnormal-EEG "
                         f"setting; {task} folds "
                         "are per subject", fix="remove `split` from the dataset's entry")


def nth_split(n: int, labels: np.ndarray, n_splits: int, k: int, seed: int,
              always_stratify: bool) -> tuple[np.ndarray, np.ndarray]:
    """(train, test) positions of split k of n items: StratifiedKFold where every class has at
    least n_splits members (or always), else KFold; both shuffled by `seed`."""
    from sklearn.model_selection import KFold, StratifiedKFold

    if always_stratify or min(Counter(labels.tolist()).values()) >= n_splits:
        splitter = StratifiedKFold(n_splits=n_splits, shuffle=True, random_state=seed)
    else:
        splitter = KFold(n_splits=n_splits, shuffle=True, random_state=seed)
    with warnings.catch_warnings():  # "the least populated class has only 1 member"
        warnings.simplefilter("ignore", UserWarning)
        return list(splitter.split(np.zeros(n), labels))[k]


def distinct(units) -> list[str]:
    return sorted({str(u) for u in units}, key=ascending)


def require_units(n_units: int, n_folds: int, what: str) -> None:
    if n_units < n_folds:
        raise UsageError(f"{n_units} {what} cannot fill {n_folds} folds",
                         fix="use a dataset with more subjects or set the benchmark's `folds`")


# --- manifests ---------------------------------------------------------------------------
def manifest_path(value: str) -> Path:
    """A dataset's `fold_manifest`: absolute, or relative to the project's config/folds/."""
    path = Path(value).expanduser()
    return path if path.is_absolute() else MANIFEST_DIR / path


def read_manifest(path: Path, unit: str | None = None) -> FoldPlan:
    """A fold manifest (the reference's format): `folds` (or `subject_folds`) as a list or as a
    mapping "0", "1", ...; each entry {train, val, test} lists (explicit) or one list, the
    fold's test units (partition); `unit` subject (default) or recording: the file's own, else
    `unit` (a dataset's fold_manifest_unit)."""
    fix = f"correct {path} (format: docs/methods.md, fold manifests)"
    if not path.is_file():
        raise UsageError(f"fold manifest {path} does not exist",
                         fix=f"put the manifest at {path} (the reference suite ships its "
                             f"manifests in configs/folds/ under the same name), or remove "
                             f"fold_manifest from the dataset's entry (config/datasets.yaml)")
    payload = json.loads(path.read_text())
    entries = manifest_entries(payload, path, fix)
    unit = payload.get("unit", unit or "subject")
    if unit not in UNITS:
        raise UsageError(f"{path}: unit {unit!r} is neither subject nor recording", fix=fix)
    if all(isinstance(e, dict) for e in entries):
        folds = [explicit_fold(e, k, path, fix) for k, e in enumerate(entries)]
        shape = "explicit"
    elif all(isinstance(e, list) for e in entries):
        folds = folds_from_partition(entries, path, fix)
        check_materialised(folds, payload.get("splits"), path, fix)
        shape = "partition"
    else:
        raise UsageError(f"{path}: its folds mix lists and train/val/test mappings", fix=fix)
    check_manifest_folds(folds, path, fix)
    parts = tuple({u: name for name in PARTS for u in fold[name]} for fold in folds)
    return FoldPlan(parts, unit, f"fold manifest {path.name} ({shape}, {len(folds)} folds)")


def manifest_entries(payload: dict, path: Path, fix: str) -> list:
    key = next((k for k in ("subject_folds", "folds") if payload.get(k)), None)
    if key is None:
        raise UsageError(f"{path} has no `folds`", fix=fix)
    raw = payload[key]
    if isinstance(raw, dict):
        try:
            entries = [raw[k] for k in sorted(raw, key=int)]
        except ValueError:
            raise UsageError(f"{path}: `{key}` is keyed by {sorted(raw)[:3]}, not fold numbers",
                             fix=fix) from None
    elif isinstance(raw, list):
        entries = raw
    else:
        raise UsageError(f"{path}: `{key}` is neither a list nor a mapping", fix=fix)
    n_folds = int(payload.get("n_folds", len(entries)))
    if n_folds != len(entries):
        raise UsageError(f"{path}: n_folds {n_folds} but {len(entries)} folds", fix=fix)
    return entries


def explicit_fold(entry: dict, k: int, path: Path, fix: str) -> dict[str, list[str]]:
    missing = [name for name in PARTS if name not in entry]
    if missing:
        raise UsageError(f"{path}: fold {k} has no {', '.join(missing)} list", fix=fix)
    return {name: [str(u) for u in entry[name]] for name in PARTS}


def folds_from_partition(groups: list[list], path: Path, fix: str) -> list[dict[str, list[str]]]:
    """Fold k tests partition k, validates on partition k+1, trains on the rest."""
    n = len(groups)
    if n < 3:
        raise UsageError(f"{path}: a partition manifest needs 3 folds or more, it has {n}",
                         fix=fix)
    groups = [[str(u) for u in g] for g in groups]
    return [{"train": [u for j in range(n) if j not in (k, (k + 1) % n) for u in groups[j]],
             "val": groups[(k + 1) % n], "test": groups[k]} for k in range(n)]


def check_materialised(folds: list[dict], splits, path: Path, fix: str) -> None:
    """A partition manifest's own `splits` block, where it has one, must equal the derived
    folds (the reference cross-checks it the same way)."""
    if not isinstance(splits, dict):
        return
    for k, fold in enumerate(folds):
        stored = splits.get(str(k)) or {}
        for name in PARTS:
            if name in stored and {str(u) for u in stored[name]} != set(fold[name]):
                raise UsageError(f"{path}: fold {k}'s {name} in `splits` differs from the one "
                                 f"its partitions give (test k, validation k+1)", fix=fix)


def check_manifest_folds(folds: list[dict], path: Path, fix: str) -> None:
    """No unit in two parts of a fold; no unit tested twice."""
    tested: set[str] = set()
    for k, fold in enumerate(folds):
        seen = Counter(u for name in PARTS for u in set(fold[name]))
        twice = sorted((u for u, n in seen.items() if n > 1), key=ascending)
        if twice:
            raise UsageError(f"{path}: fold {k} puts {', '.join(twice[:5])} in two parts",
                             fix=fix)
        again = sorted(tested & set(fold["test"]), key=ascending)
        if again:
            raise UsageError(f"{path}: fold {k} tests {', '.join(again[:5])} again", fix=fix)
        tested |= set(fold["test"])


def manifest_plan(value: str, units: pd.DataFrame, n_folds: int,
                  unit: str | None = None) -> FoldPlan:
    """The plan a dataset's `fold_manifest` names (its ids `unit`s where the file does not
    say), checked against the units of its rows: every unit in exactly one part of every fold,
    no unit the data lacks, the benchmark's fold count."""
    path = manifest_path(value)
    plan = read_manifest(path, unit)
    fix = (f"edit {path} so that each fold lists every {plan.unit} of the dataset once, or "
           f"remove fold_manifest from the dataset's entry (config/datasets.yaml)")
    if plan.n_folds != n_folds:
        raise UsageError(f"{path} has {plan.n_folds} folds, the benchmark {n_folds}",
                         fix=f"set `folds: {plan.n_folds}` on the benchmark, or {fix}")
    if plan.unit not in units.columns:
        raise UsageError(f"{path} assigns {plan.unit}s; these rows have no {plan.unit} column",
                         fix=fix)
    present = set(distinct(units[plan.unit]))
    for k, parts in enumerate(plan.parts):
        unknown = sorted(set(parts) - present, key=ascending)
        if unknown:
            raise UsageError(f"{path}: fold {k} names {plan.unit}s the data does not have: "
                             f"{', '.join(unknown[:8])}", fix=fix)
        unplaced = sorted(present - set(parts), key=ascending)
        if unplaced:
            raise UsageError(f"{path}: fold {k} puts {plan.unit}s {', '.join(unplaced[:8])} "
                             f"in none of train, val and test", fix=fix)
    return plan


def unit_table(units) -> pd.DataFrame:
    """The rows folds are planned over: a window table as it is, or subject ids alone."""
    if isinstance(units, pd.DataFrame):
        return units
    return pd.DataFrame({"subject": np.asarray(units).astype(str)})
