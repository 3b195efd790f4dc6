import sys

sys.path.insert(0, str(Path(workflow.basedir) / "workflow"))
CONDA_ENV = "../../envs/embedprobe.yaml"

from embedprobe.smk.rules_support import (
    benchmark_fold_results,
    benchmark_tables,
    benchmark_targets,
    expose_cli,
    checked_roots,
    check_memory_mb,
    fold_predictions,
    fold_results,
    generated_datasets,
    generator_job_config,
    gpu_resources,
    index_inputs,
    job_config,
    memory_request_mb,
    names_pattern,
    not_run_file,
    preflight_job_config,
    print_fresh_summaries,
    write_partial_results,
    probe_key,
    quality_tables,
    runtime_minutes,
    pair_figure_names,
    leaderboard_tables,
    leaderboard_job_config,
    target_groups,
    weights_job_config,
)

expose_cli(workflow.basedir)
ROOTS = checked_roots(config)
DATA = ROOTS["data_root"]
CACHE = ROOTS["cache_root"]
RESULTS = ROOTS["results_root"]
GENERATED = generated_datasets(config)
CHECK_MEMORY_MB = check_memory_mb(config)


wildcard_constraints:
    benchmark=names_pattern(config["benchmarks"]),
    dataset=names_pattern(config["datasets"]),
    model=names_pattern(config["models"]),
    fold=r"\d+",
