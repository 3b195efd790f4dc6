rule check:
    input:
        data=lambda w: index_inputs(config, ROOTS, w.dataset),
    output:
        out("check"),
    log:
        log_file("check"),
    benchmark:
        benchmark_file("check")
    # never retried: its request does not grow, so a retry would fail the same way
    retries: 0
    conda:
        CONDA_ENV
    threads: 1
    resources:
        **small_job_resources(config, minutes=20, runs_model=True),
    params:
        job=lambda w: job_config(config, dataset=w.dataset, model=w.model),
    shell:
        "embedprobe --job-config {params.job:q} check --dataset {wildcards.dataset:q}"
        " --model {wildcards.model:q} --out {output:q} 2>&1 | tee {log:q}"


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
    retries: 0  # as check
    conda:
        CONDA_ENV
    threads: 1
    resources:
        **small_job_resources(config, minutes=10),
    params:
        job=lambda w: preflight_job_config(config, w.dataset, w.model),
    shell:
        "embedprobe --job-config {params.job:q} preflight --dataset {wildcards.dataset:q}"
        " --model {wildcards.model:q} --check {input.check:q} --index {input.index:q}"
        " --out {output:q} 2>&1 | tee {log:q}"


# One benchmark's probe folds on the pair: adding a benchmark refits no other one's probes.
rule preflight_probe:
    input:
        check=lambda w: out(
            "check", dataset=w.dataset, model=embedding_id(config["models"], w.model)
        ),
        index=out("index"),
    output:
        out("preflight_probe"),
    log:
        log_file("preflight_probe"),
    benchmark:
        benchmark_file("preflight_probe")
    retries: 0  # as check
    conda:
        CONDA_ENV
    threads: 1
    resources:
        **small_job_resources(config, minutes=10),
    params:
        job=lambda w: preflight_job_config(config, w.dataset, w.model, w.benchmark),
    shell:
        "embedprobe --job-config {params.job:q} preflight --benchmark {wildcards.benchmark:q}"
        " --dataset {wildcards.dataset:q} --model {wildcards.model:q} --check {input.check:q}"
        " --index {input.index:q} --out {output:q} 2>&1 | tee {log:q}"
