# A dataset's store is one embed job's (embed.shards 1, the default), or joined from several
# (embed_shard, embed_join; docs/usage.md, "Sharded embedding"): each dataset is one or the other.
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
    wildcard_constraints:
        dataset=datasets_pattern(config, sharded=False),
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


# One shard: a contiguous range of the index's recordings, with its own resume and GPU.
rule embed_shard:
    input:
        index=out("index"),
        estimate=out("preflight"),
    output:
        out("embedding_shard"),
    log:
        log_file("embed_shard"),
    benchmark:
        benchmark_file("embed_shard")
    wildcard_constraints:
        dataset=datasets_pattern(config, sharded=True),
        shard=r"\d+",
        shards=r"\d+",
    conda:
        CONDA_ENV
    threads: config["embed"]["threads"]
    resources:
        **estimated_resources(config, "embed_shard"),
    params:
        job=lambda w: job_config(config, dataset=w.dataset, model=w.model),
    shell:
        "embedprobe --job-config {params.job:q} embed --dataset {wildcards.dataset:q}"
        " --model {wildcards.model:q} --index {input.index:q} --out {output:q}"
        " --shard {wildcards.shard} --shards {wildcards.shards}"
        " --estimate {input.estimate:q} --attempt {resources.attempt_number}"
        " --request-mb {resources.mem_mb} --threads {threads} 2>&1 | tee {log:q}"


# The store the probes read: the shards' rows through an HDF5 virtual dataset (no copy).
rule embed_join:
    input:
        lambda w: shard_files(config, ROOTS, w.dataset, w.model),
    output:
        out("embeddings"),
    log:
        log_file("embed_join"),
    benchmark:
        benchmark_file("embed_join")
    wildcard_constraints:
        dataset=datasets_pattern(config, sharded=True),
    conda:
        CONDA_ENV
    threads: 1
    resources:
        **small_job_resources(config, minutes=10),
    params:
        job=lambda w: job_config(config, dataset=w.dataset, model=w.model),
    shell:
        "embedprobe --job-config {params.job:q} embed-join --out {output:q} {input:q}"
        " 2>&1 | tee {log:q}"
