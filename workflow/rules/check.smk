rule check:
    input:
        data=lambda w: index_inputs(config, ROOTS, w.dataset),
    output:
        f"{RESULTS}/check/{{dataset}}/{{model}}.json",
    log:
        f"{RESULTS}/logs/check/{{dataset}}/{{model}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/check/{{dataset}}/{{model}}.tsv"
    conda:
        CONDA_ENV
    threads: 1
    resources:
        **gpu_resources(config),
        mem_mb=CHECK_MEMORY_MB,
        htcondor_request_mem_mb=CHECK_MEMORY_MB,
        runtime=20,
    params:
        job=lambda w: job_config(config, dataset=w.dataset, model=w.model),
    shell:
        "embedprobe --job-config {params.job:q} check --dataset {wildcards.dataset}"
        " --model {wildcards.model} --out {output} 2>&1 | tee {log}"


# The pair's embed estimate; no benchmark enters it (adding one re-embeds nothing).
rule preflight:
    input:
        check=f"{RESULTS}/check/{{dataset}}/{{model}}.json",
        index=f"{RESULTS}/index/{{dataset}}.tsv",
    output:
        f"{RESULTS}/preflight/{{dataset}}/{{model}}.json",
    log:
        f"{RESULTS}/logs/preflight/{{dataset}}/{{model}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/preflight/{{dataset}}/{{model}}.tsv"
    conda:
        CONDA_ENV
    threads: 1
    resources:
        mem_mb=config["memory_small_job_mb"],
        htcondor_request_mem_mb=config["memory_small_job_mb"],
        runtime=10,
    params:
        job=lambda w: preflight_job_config(config, w.dataset, w.model),
    shell:
        "embedprobe --job-config {params.job:q} preflight --dataset {wildcards.dataset}"
        " --model {wildcards.model} --check {input.check} --index {input.index}"
        " --out {output} 2>&1 | tee {log}"


# One benchmark's probe folds on the pair: adding a benchmark refits no other one's probes.
rule preflight_probe:
    input:
        check=f"{RESULTS}/check/{{dataset}}/{{model}}.json",
        index=f"{RESULTS}/index/{{dataset}}.tsv",
    output:
        f"{RESULTS}/preflight/{{dataset}}/{{model}}/{{benchmark}}.json",
    log:
        f"{RESULTS}/logs/preflight/{{dataset}}/{{model}}/{{benchmark}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/preflight/{{dataset}}/{{model}}/{{benchmark}}.tsv"
    conda:
        CONDA_ENV
    threads: 1
    resources:
        mem_mb=config["memory_small_job_mb"],
        htcondor_request_mem_mb=config["memory_small_job_mb"],
        runtime=10,
    params:
        job=lambda w: preflight_job_config(config, w.dataset, w.model, w.benchmark),
    shell:
        "embedprobe --job-config {params.job:q} preflight --benchmark {wildcards.benchmark}"
        " --dataset {wildcards.dataset} --model {wildcards.model} --check {input.check}"
        " --index {input.index} --out {output} 2>&1 | tee {log}"
