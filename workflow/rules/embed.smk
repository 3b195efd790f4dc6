rule embed:
    input:
        index=f"{RESULTS}/index/{{dataset}}.tsv",
        estimate=f"{RESULTS}/preflight/{{dataset}}/{{model}}.json",
    output:
        f"{CACHE}/embeddings/{{dataset}}/{{model}}.h5",
    log:
        f"{RESULTS}/logs/embed/{{dataset}}/{{model}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/embed/{{dataset}}/{{model}}.tsv"
    conda:
        CONDA_ENV
    threads: config["embed"]["threads"]
    resources:
        **gpu_resources(config, "embed"),
        mem_mb=lambda w, input, attempt: memory_request_mb(
            config, input.estimate, "embed", attempt
        ),
        htcondor_request_mem_mb=lambda w, input, attempt: memory_request_mb(
            config, input.estimate, "embed", attempt
        ),
        runtime=lambda w, input, attempt: runtime_minutes(
            input.estimate, "embed", attempt
        ),
        attempt_number=lambda w, attempt: attempt,
    params:
        job=lambda w: job_config(config, dataset=w.dataset, model=w.model),
    shell:
        "embedprobe --job-config {params.job:q} embed --dataset {wildcards.dataset}"
        " --model {wildcards.model} --index {input.index} --out {output}"
        " --estimate {input.estimate} --attempt {resources.attempt_number}"
        " --request-mb {resources.mem_mb} --threads {threads} 2>&1 | tee {log}"
