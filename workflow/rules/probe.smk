rule probe:
    input:
        # a variant's store is that of the model it embeds as (core/variants.py)
        embeddings=lambda w: out(
            "embeddings",
            dataset=w.dataset,
            model=embedding_id(config["models"], w.model),
        ),
        estimate=out("preflight_probe"),
        # a benchmark that reads another's folds (sleep_hypnogram: the staging predictions)
        source=lambda w: source_fold_predictions(
            config, ROOTS, w.benchmark, w.dataset, w.model, w.fold
        ),
    output:
        result=out("fold_result"),
        predictions=out("fold_predictions"),
    log:
        log_file("probe"),
    benchmark:
        benchmark_file("probe")
    conda:
        CONDA_ENV
    threads: config["probe"]["threads"]
    resources:
        **estimated_resources(config, "probe"),
    params:
        job=lambda w: job_config(config, w.benchmark, w.dataset, w.model),
    shell:
        "embedprobe --job-config {params.job:q} probe --benchmark {wildcards.benchmark:q}"
        " --dataset {wildcards.dataset:q} --model {wildcards.model:q}"
        " --embeddings {input.embeddings:q} --fold {wildcards.fold:q}"
        " --out {output.result:q} --predictions {output.predictions:q}"
        " --estimate {input.estimate:q} --attempt {resources.attempt_number}"
        " --request-mb {resources.mem_mb} 2>&1 | tee {log:q}"


rule aggregate:
    input:
        lambda w: fold_results(config, ROOTS, w.benchmark, w.dataset),
    output:
        out("results"),
    log:
        log_file("aggregate"),
    benchmark:
        benchmark_file("aggregate")
    conda:
        CONDA_ENV
    threads: 1
    resources:
        **small_job_resources(config, minutes=10),
    params:
        job=lambda w: job_config(config, w.benchmark, w.dataset),
        # pairs skipped before running (weights absent): listed in the table as skipped
        not_run=lambda w: not_run_file(config, w.benchmark, w.dataset),
    shell:
        "embedprobe --job-config {params.job:q} aggregate --benchmark {wildcards.benchmark:q}"
        " --not-run {params.not_run:q} --out {output:q} {input:q} 2>&1 | tee {log:q}"
