"""Task families by name (the `task:` of a benchmark), each one module (see base.Task).

A task module is imported when first asked for, so the plan (Snakefile parse) loads only the
tasks its benchmarks use.
"""

from __future__ import annotations

import importlib

from embedprobe.core.config import lookup
from embedprobe.core.errors import UsageError
from embedprobe.tasks.base import Task

TASKS = {
    "sleep_staging": "embedprobe.tasks.sleep_staging",
    "brain_age": "embedprobe.tasks.brain_age",
    "seizure_detection": "embedprobe.tasks.seizure.task",
    "motor_imagery": "embedprobe.tasks.motor_imagery",
}
# The task whose units a dataset's index holds, when its config entry names none (`labels:`).
LABELS_BY_FORMAT = {
    "sleep_edf": "sleep_staging",
    "chbmit": "seizure_detection",
    "siena": "seizure_detection",
    "physionet_mi": "motor_imagery",
    "bnci2014_001": "motor_imagery",
}
# A unit's length in seconds when the dataset's entry sets no `epoch_seconds`: the one owner of
# that default (the index, the window reader and the model's window all read it here). Kept
# by name so that parse-time code need not import the task modules.
UNIT_SECONDS = {"sleep_staging": 30.0, "seizure_detection": 10.0, "motor_imagery": 4.0}


def task_for(name: str) -> Task:
    if name not in TASKS:
        raise UsageError(f"unknown task '{name}'",
                         fix=f"use one of: {', '.join(TASKS)} (config/benchmarks.yaml `task:`)")
    return importlib.import_module(TASKS[name]).TASK


def benchmark_task(config: dict, benchmark: str) -> Task:
    return task_for(lookup(config, "benchmarks", benchmark)["task"])


def unit_seconds(config: dict, dataset: str) -> float:
    """How long each unit (window or trial) of the dataset is: its `epoch_seconds`, else its
    labelling task's default."""
    return entry_unit_seconds(lookup(config, "datasets", dataset))


def entry_unit_seconds(entry: dict, task: str | None = None) -> float:
    """unit_seconds of a dataset's config entry; `task` names its labelling task (a task's
    own `units` passes its name), else the entry's `labels` or its format's."""
    if "epoch_seconds" in entry:
        return float(entry["epoch_seconds"])
    return UNIT_SECONDS[task or entry.get("labels") or LABELS_BY_FORMAT[entry["format"]]]


def labelling_task(config: dict, dataset: str) -> Task:
    """The task that cuts the dataset's recordings into labelled units for its index."""
    entry = lookup(config, "datasets", dataset)
    name = entry.get("labels") or LABELS_BY_FORMAT.get(entry["format"])
    if name is None:
        raise UsageError(f"dataset '{dataset}' names no `labels:` task",
                         fix=f"add `labels: <task>` to its entry in config/datasets.yaml "
                             f"(one of: {', '.join(TASKS)})")
    task = task_for(name)
    if not task.defines_units:
        raise UsageError(f"dataset '{dataset}': task '{name}' defines no units of its own",
                         fix="set `labels:` to a task that cuts windows or trials")
    return task


def check_benchmark_tasks(config: dict) -> None:
    """Each benchmark's task exists and can use its datasets' units (a sleep-staging benchmark
    on a seizure dataset is refused before any job)."""
    for benchmark, bench in config["benchmarks"].items():
        task = task_for(bench["task"])
        for dataset in bench["datasets"]:
            labels = labelling_task(config, dataset)
            if task.defines_units and labels.name != task.name:
                raise UsageError(
                    f"benchmark '{benchmark}' ({task.name}) cannot use dataset '{dataset}': "
                    f"its index holds {labels.name} units",
                    fix=f"use a {task.name} dataset in benchmarks.{benchmark}.datasets, or set "
                        f"`labels: {task.name}` on datasets.{dataset} if its files carry them")
