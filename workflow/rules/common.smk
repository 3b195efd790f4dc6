import sys

sys.path.insert(0, str(Path(workflow.basedir) / "workflow"))
CONDA_ENV = "../../envs/embedprobe.yaml"

from embedprobe.core.paths import job_pattern, pattern
from embedprobe.core.variants import embedding_id
from embedprobe.smk.hooks import print_fresh_summaries, write_partial_results
from embedprobe.smk.job_configs import (
    generator_job_config,
    job_config,
    leaderboard_job_config,
    not_run_file,
    preflight_job_config,
    weights_job_config,
)
from embedprobe.smk.plan import (
    benchmark_fold_results,
    benchmark_tables,
    checked_roots,
    expose_cli,
    fold_predictions,
    fold_results,
    generated_datasets,
    index_inputs,
    leaderboard_tables,
    names_pattern,
    pair_figure_names,
    quality_tables,
    source_fold_predictions,
    target_groups,
    target_inputs,
)
from embedprobe.smk.resources import estimated_resources, small_job_resources
from embedprobe.smk.shards import datasets_pattern, shard_files

expose_cli(workflow.basedir)
ROOTS = checked_roots(config)
GENERATED = generated_datasets(config)


def out(name, **values):
    """The output pattern `name` of core/paths.PATTERNS under this run's roots."""
    return pattern(name, ROOTS, **values)


def log_file(rule):
    return job_pattern("job_log", rule, ROOTS)


def benchmark_file(rule):
    return job_pattern("job_benchmark", rule, ROOTS)


wildcard_constraints:
    benchmark=names_pattern(config["benchmarks"]),
    dataset=names_pattern(config["datasets"]),
    model=names_pattern(config["models"]),
    fold=r"\d+",
