rule demo_data:
    output:
        manifest=f"{DATA}/{{dataset_path}}/MANIFEST.tsv",
    log:
        f"{RESULTS}/logs/demo_data/{{dataset_path}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/demo_data/{{dataset_path}}.tsv"
    wildcard_constraints:
        dataset_path=names_pattern(GENERATED) or "^$",
    conda:
        CONDA_ENV
    threads: 1
    resources:
        mem_mb=config["memory_small_job_mb"],
        htcondor_request_mem_mb=config["memory_small_job_mb"],
        runtime=20,
    params:
        job=lambda w: generator_job_config(config, GENERATED[w.dataset_path]),
        dataset=lambda w: GENERATED[w.dataset_path],
    shell:
        "embedprobe --job-config {params.job:q} demo-data --dataset {params.dataset} 2> {log}"


rule index:
    input:
        lambda w: index_inputs(config, ROOTS, w.dataset),
    output:
        index=f"{RESULTS}/index/{{dataset}}.tsv",
        quality=f"{RESULTS}/index/{{dataset}}.quality.tsv",
    log:
        f"{RESULTS}/logs/index/{{dataset}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/index/{{dataset}}.tsv"
    conda:
        CONDA_ENV
    threads: 1
    resources:
        mem_mb=config["memory_small_job_mb"],
        htcondor_request_mem_mb=config["memory_small_job_mb"],
        runtime=30,
    params:
        job=lambda w: job_config(config, dataset=w.dataset),
    shell:
        "embedprobe --job-config {params.job:q} index --dataset {wildcards.dataset}"
        " --out {output.index} --quality {output.quality} 2>&1 | tee {log}"
