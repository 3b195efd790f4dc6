rule probe:
    input:
        embeddings=f"{CACHE}/embeddings/{{dataset}}/{{model}}.h5",
        estimate=f"{RESULTS}/preflight/{{dataset}}/{{model}}/{{benchmark}}.json",
    output:
        result=f"{RESULTS}/{{benchmark}}/{{dataset}}/{{model}}/fold{{fold}}.json",
        predictions=f"{RESULTS}/{{benchmark}}/{{dataset}}/{{model}}/fold{{fold}}.npz",
    log:
        f"{RESULTS}/logs/probe/{{benchmark}}/{{dataset}}/{{model}}/fold{{fold}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/probe/{{benchmark}}/{{dataset}}/{{model}}/fold{{fold}}.tsv"
    conda:
        CONDA_ENV
    threads: config["probe"]["threads"]
    resources:
        mem_mb=lambda w, input, attempt: memory_request_mb(
            config, input.estimate, probe_key(w), attempt
        ),
        htcondor_request_mem_mb=lambda w, input, attempt: memory_request_mb(
            config, input.estimate, probe_key(w), attempt
        ),
        runtime=lambda w, input, attempt: runtime_minutes(
            input.estimate, probe_key(w), attempt
        ),
        attempt_number=lambda w, attempt: attempt,
    params:
        job=lambda w: job_config(config, w.benchmark, w.dataset, w.model),
    shell:
        "embedprobe --job-config {params.job:q} probe --benchmark {wildcards.benchmark}"
        " --dataset {wildcards.dataset} --model {wildcards.model}"
        " --embeddings {input.embeddings} --fold {wildcards.fold}"
        " --out {output.result} --predictions {output.predictions}"
        " --estimate {input.estimate} --attempt {resources.attempt_number}"
        " --request-mb {resources.mem_mb} 2>&1 | tee {log}"


rule aggregate:
    input:
        lambda w: fold_results(config, ROOTS, w.benchmark, w.dataset),
    output:
        f"{RESULTS}/{{benchmark}}/{{dataset}}/results.tsv",
    log:
        f"{RESULTS}/logs/aggregate/{{benchmark}}/{{dataset}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/aggregate/{{benchmark}}/{{dataset}}.tsv"
    conda:
        CONDA_ENV
    threads: 1
    resources:
        mem_mb=config["memory_small_job_mb"],
        htcondor_request_mem_mb=config["memory_small_job_mb"],
        runtime=10,
    params:
        job=lambda w: job_config(config, w.benchmark, w.dataset),
        # pairs skipped before running (weights absent): listed in the table as skipped
        not_run=lambda w: not_run_file(config, w.benchmark, w.dataset),
    shell:
        "embedprobe --job-config {params.job:q} aggregate --benchmark {wildcards.benchmark}"
        " --not-run {params.not_run:q} --out {output} {input} 2>&1 | tee {log}"
