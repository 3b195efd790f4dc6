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
    "motor_imagery": "embedprobe.tasks.bci.motor_imagery",
    "bci_erp": "embedprobe.tasks.bci.erp",
    "bci_ssvep": "embedprobe.tasks.bci.ssvep",
    "bci_cognitive": "embedprobe.tasks.bci.cognitive",
    "sleep_diagnosis": "embedprobe.tasks.recording_level.sleep_diagnosis",
    "abnormal_eeg": "embedprobe.tasks.recording_level.abnormal_eeg",
    "sleep_arousal": "embedprobe.tasks.sleep_events.arousal",
    "sleep_respiratory": "embedprobe.tasks.sleep_events.respiratory",
    "sleep_limb": "embedprobe.tasks.sleep_events.limb",
    "sleep_hypnogram": "embedprobe.tasks.hypnogram.task",
}


def task_for(name: str) -> Task:
    if name not in TASKS:
        raise UsageError(f"unknown task '{name}'",
                         fix=f"use one of: {', '.join(TASKS)} (config/benchmarks.yaml `task:`)")
    return importlib.import_module(TASKS[name]).TASK


def benchmark_task(config: dict, benchmark: str) -> Task:
    return task_for(lookup(config, "benchmarks", benchmark)["task"])


def labelling_task(config: dict, dataset: str) -> Task:
    """The task that cuts the dataset's recordings into labelled units for its index."""
    return entry_labelling_task(dataset, lookup(config, "datasets", dataset))


def entry_labelling_task(dataset: str, entry: dict) -> Task:
    """labelling_task of a dataset's config entry."""
    # Imported here: the dataset readers stay out of a probe job (its measured baseline).
    from embedprobe.datasets.registry import labelling_task_name

    name = labelling_task_name(entry)
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
        task.check_benchmark(config, benchmark, bench)
        for dataset in bench["datasets"]:
            labels = labelling_task(config, dataset)
            if task.defines_units and labels.name != task.name:
                raise UsageError(
                    f"benchmark '{benchmark}' ({task.name}) cannot use dataset '{dataset}': "
                    f"its index holds {labels.name} units",
                    fix=f"use a {task.name} dataset in benchmarks.{benchmark}.datasets, or set "
                        f"`labels: {task.name}` on datasets.{dataset} if its files carry them")
