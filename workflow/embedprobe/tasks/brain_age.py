"""Brain age: one mean embedding per subject (or per recording), ridge regression on age,
alpha by inner CV.

It has no windows of its own: it averages whatever windows the dataset's labelling task cut
(sleep epochs on Sleep-EDF), and reads ages from the reader's subjects table. Its unit is the
subject, or the recording where the dataset's entry says `brain_age_unit: recording` (the
reference pools SHHS's windows by recording): each recording then carries its own
night's age (the reader's `recording_ages` where it has one, e.g. NSRR's visits years apart;
else its subject's). Its folds are its own, not the staging folds: the units with an age (on
Sleep-EDF the cassette subjects: its subjects table holds theirs alone) in 5 folds stratified
on age bins (probing/folds.age_stratified_plan, the reference's brain-age split); a dataset's
`fold_manifest` replaces them.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from embedprobe.core.errors import DataError
from embedprobe.datasets.registry import dataset_root, reader_for
from embedprobe.probing.folds import age_stratified_plan, fold_split, require_units
from embedprobe.probing.metrics import regression_scores
from embedprobe.probing.ridge import AGE_BINS, ALPHA_GRID, age_scores, fit_age_fold
from embedprobe.probing.split import Split
from embedprobe.tasks.base import FoldJob, Task, job_folds


class BrainAge(Task):
    name = "brain_age"
    metrics = ("mae",)
    headline_label = "MAE(years)"
    pooled = ("pearson_r", "r2")  # a fold holds too few subjects for r or R2
    chosen_name = "alpha"
    lower_is_better = True
    defines_units = False
    sd_ddof = 0  # population SD over folds, as the reference's brain_age

    def split(self, job: FoldJob) -> Split:
        """One mean embedding per unit (subject, or recording: `brain_age_unit`) with an age,
        y the age, cut by the age folds (or the dataset's fold_manifest). The table's rows, as
        the reference orders them: the training units sorted, then the validation ones sorted
        (the order fixes the inner CV's draw: the pooled part keeps it), then the test units;
        `ids` the units, the table's one column named by the unit."""
        config, dataset = job.config, job.dataset
        entry = config.get("datasets", {}).get(dataset, {})
        unit = unit_of(entry)
        ages_by_unit = unit_ages(reader_for(config, dataset),
                                 dataset_root(config, job.roots, dataset), job.store.windows,
                                 unit)
        subjects, means = job.store.mean_by(unit)
        known = np.array([s in ages_by_unit for s in subjects])
        if not known.any():
            raise DataError(f"no {unit} of {dataset} has an age in its subjects table",
                            fix="brain_age needs the dataset's ages (Sleep-EDF: the cassette "
                                "subjects table SC-subjects.xls; NSRR: the study's CSV)")
        subjects, means = subjects[known], means[known]
        ages = np.array([ages_by_unit[s] for s in subjects], dtype=float)
        plan = (job_folds(self, job) if entry.get("fold_manifest") else
                unit_plan(age_stratified_plan(dict(zip(subjects, ages, strict=True)),
                                              job.bench["folds"], job.bench["fold_seed"],
                                              AGE_BINS), unit))
        masks = fold_split(plan, pd.DataFrame({unit: subjects}), job.fold)
        order = np.concatenate([sorted_positions(subjects, masks[p]) for p in ("train", "val")]
                               + [np.flatnonzero(masks["test"])])
        return Split.cut(means[order], ages[order], {p: m[order] for p, m in masks.items()},
                         pd.DataFrame({unit: subjects[order]}), plan.rule, subjects[order])

    def fit_fold(self, job: FoldJob, split: Split) -> tuple[dict, dict]:
        probe = job.bench.get("probe", {})
        result = fit_age_fold(split, alpha_grid=tuple(probe.get("alpha_grid", ALPHA_GRID)),
                              age_bins=AGE_BINS, progress=job.progress)
        tested = split.ids[split.test.rows]
        ages = split.test.y
        record = {
            "n_train": len(split.train) + len(split.val), "n_test": len(split.test),
            "fold_rule": split.rule, "unit": split.table.columns[0],
            "test_subjects": tested.tolist(),
            **result.record(),
            "method": "StandardScaler + Ridge, alpha by inner 4-fold CV stratified on age bins "
                      "(seed 43)",
            # Per unit, so the aggregate can pool r and R2 over folds.
            "predictions": [{"subject": str(s), "age": float(a), "predicted": float(p)}
                            for s, a, p in zip(tested, ages, result.test_pred, strict=True)],
        }
        saved = {"subjects": tested, "y_true": ages, "y_pred": result.test_pred}
        return record, saved

    rescore_needs = ""

    def rescore(self, record: dict, saved) -> dict[str, float]:
        return age_scores(np.asarray(saved["y_true"], float), np.asarray(saved["y_pred"], float))

    def pooled_scores(self, folds: list[dict]) -> dict[str, float]:
        pairs = [(p["age"], p["predicted"]) for f in folds for p in f["predictions"]]
        truth, predicted = np.array(pairs).T
        pooled = regression_scores(truth, predicted)
        return {f"{m}_pooled": round(float(pooled[m]), 4) for m in self.pooled} | {
            "baseline_mae_mean": round(float(np.mean([f["baseline_mae"] for f in folds])), 4)}

    def fold_rule(self, table: pd.DataFrame, bench: dict, entry: dict):
        """None: the folds need each subject's age, which fit_fold reads (a dataset's
        fold_manifest, which fold_groups reads first, needs none)."""
        return None

    def probe_memory(self, config: dict, bench: dict, table: pd.DataFrame, fold: int,
                     dim: int, entry: dict | None = None) -> tuple[str, dict, int]:
        """Streams unit means, then fits ridge on the fold's training and validation
        units (one formula, probe_brain_age): at most all units but the smallest test
        fold (the age folds need the ages, which preflight does not read)."""
        unit = unit_of(entry or {})
        subjects = table[unit].astype(str).tolist()
        unique = sorted(set(subjects))
        plan = self.fold_groups(table, bench, entry)
        if plan is None:  # the age folds: at least a unit a fold, as fit_fold will ask
            require_units(len(unique), bench["folds"], f"{unit}s")
        test = (len(plan.members(fold, "test")) if plan is not None
                else len(unique) // bench["folds"])
        inputs = {"n": len(unique) - test, "p": dim,
                  "n_fits": len(bench.get("probe", {}).get("alpha_grid", ALPHA_GRID)) * 4,
                  } | subject_mean_inputs(subjects, dim)
        return "probe_brain_age", inputs, 15

    def summary_notes(self, tables: dict[str, pd.DataFrame]) -> list[str]:
        from embedprobe.reporting.aggregate import pair_status

        return ["", "Baseline (predicting each fold's training mean age), MAE: "
                + ", ".join(f"{d}/{r.model} {r.baseline_mae_mean:.2f}"
                            for d, t in tables.items() for r in t.itertuples()
                            if pair_status(r) == "ok")]


def unit_of(entry: dict) -> str:
    """The window-table column brain age pools by: subject, or recording where the dataset's
    entry says `brain_age_unit: recording`."""
    return "recording" if entry.get("brain_age_unit") == "recording" else "subject"


def unit_ages(reader, root, windows: pd.DataFrame, unit: str) -> dict[str, float]:
    """Unit -> age: the reader's subjects table; per recording, the reader's `recording_ages`
    (each night's age) where it has one, else each recording's subject's age."""
    if unit == "subject":
        return reader.subjects_table(root)
    if hasattr(reader, "recording_ages"):
        return reader.recording_ages(root)
    by_subject = reader.subjects_table(root)
    pairs = windows[["recording", "subject"]].drop_duplicates().astype(str)
    return {r: by_subject[s] for r, s in zip(pairs["recording"], pairs["subject"], strict=True)
            if s in by_subject}


def unit_plan(plan, unit: str):
    """The age folds over recordings where the units are recordings."""
    if unit == plan.unit:
        return plan
    return replace(plan, unit=unit, rule=plan.rule.replace("subject folds", f"{unit} folds"))


def sorted_positions(subjects: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Positions of the masked subjects, their ids in string order."""
    positions = np.flatnonzero(mask)
    return positions[np.argsort(subjects[positions].astype(str), kind="stable")]


def subject_mean_inputs(subjects, dim: int) -> dict:
    """The subject-means stream's inputs (the store read in 64 MiB chunks)."""
    return {"dim": dim, "chunk_rows": max(1, (64 << 20) // (dim * 4)),
            "n_subjects": len(set(subjects)), "n_rows": len(subjects)}


TASK = BrainAge()
