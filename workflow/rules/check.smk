rule check:
    input:
        data=lambda w: index_inputs(config, ROOTS, w.dataset),
    output:
        out("check"),
    log:
        log_file("check"),
    benchmark:
        benchmark_file("check")
    conda:
        CONDA_ENV
    threads: 1
    resources:
        **small_job_resources(config, minutes=20, runs_model=True),
    params:
        job=lambda w: job_config(config, dataset=w.dataset, model=w.model),
    shell:
        "embedprobe --job-config {params.job:q} check --dataset {wildcards.dataset}"
        " --model {wildcards.model} --out {output} 2>&1 | tee {log}"


# The pair's embed estimate; no benchmark enters it (adding one re-embeds nothing).
rule preflight:
    input:
        check=out("check"),
        index=out("index"),
    output:
        out("preflight"),
    log:
        log_file("preflight"),
    benchmark:
        benchmark_file("preflight")
    conda:
        CONDA_ENV
    threads: 1
    resources:
        **small_job_resources(config, minutes=10),
    params:
        job=lambda w: preflight_job_config(config, w.dataset, w.model),
    shell:
        "embedprobe --job-config {params.job:q} preflight --dataset {wildcards.dataset}"
        " --model {wildcards.model} --check {input.check} --index {input.index}"
        " --out {output} 2>&1 | tee {log}"


# One benchmark's probe folds on the pair: adding a benchmark refits no other one's probes.
rule preflight_probe:
    input:
        check=out("check"),
        index=out("index"),
    output:
        out("preflight_probe"),
    log:
        log_file("preflight_probe"),
    benchmark:
        benchmark_file("preflight_probe")
    conda:
        CONDA_ENV
    threads: 1
    resources:
        **small_job_resources(config, minutes=10),
    params:
        job=lambda w: preflight_job_config(config, w.dataset, w.model, w.benchmark),
    shell:
        "embedprobe --job-config {params.job:q} preflight --benchmark {wildcards.benchmark}"
        " --dataset {wildcards.dataset} --model {wildcards.model} --check {input.check}"
        " --index {input.index} --out {output} 2>&1 | tee {log}"
