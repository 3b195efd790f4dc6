rule demo_data:
    output:
        manifest=out("data_manifest"),
    log:
        log_file("demo_data"),
    benchmark:
        benchmark_file("demo_data")
    wildcard_constraints:
        dataset_path=names_pattern(GENERATED) or "^$",
    conda:
        CONDA_ENV
    threads: 1
    resources:
        **small_job_resources(config, minutes=20),
    params:
        job=lambda w: generator_job_config(config, GENERATED[w.dataset_path]),
        dataset=lambda w: GENERATED[w.dataset_path],
    shell:
        "embedprobe --job-config {params.job:q} demo-data --dataset {params.dataset:q} 2> {log:q}"


rule index:
    input:
        lambda w: index_inputs(config, ROOTS, w.dataset),
    output:
        index=out("index"),
        quality=out("quality"),
    log:
        log_file("index"),
    benchmark:
        benchmark_file("index")
    conda:
        CONDA_ENV
    threads: 1
    resources:
        **small_job_resources(config, minutes=30),
    params:
        job=lambda w: job_config(config, dataset=w.dataset),
    shell:
        "embedprobe --job-config {params.job:q} index --dataset {wildcards.dataset:q}"
        " --out {output.index:q} --quality {output.quality:q} 2>&1 | tee {log:q}"
