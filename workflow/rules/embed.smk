rule embed:
    input:
        index=out("index"),
        estimate=out("preflight"),
    output:
        out("embeddings"),
    log:
        log_file("embed"),
    benchmark:
        benchmark_file("embed")
    conda:
        CONDA_ENV
    threads: config["embed"]["threads"]
    resources:
        **estimated_resources(config, "embed"),
    params:
        job=lambda w: job_config(config, dataset=w.dataset, model=w.model),
    shell:
        "embedprobe --job-config {params.job:q} embed --dataset {wildcards.dataset:q}"
        " --model {wildcards.model:q} --index {input.index:q} --out {output:q}"
        " --estimate {input.estimate:q} --attempt {resources.attempt_number}"
        " --request-mb {resources.mem_mb} --threads {threads} 2>&1 | tee {log:q}"
