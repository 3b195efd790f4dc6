rule embed:
    input:
        index=f"{RESULTS}/index/{{dataset}}.tsv",
    output:
        f"{CACHE}/embeddings/{{dataset}}/{{model}}.h5",
    params:
        job=lambda w: job_config_json(config, dataset=w.dataset, model=w.model),
    threads: config["embed"]["threads"]
    log:
        f"{RESULTS}/logs/embed/{{dataset}}/{{model}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/embed/{{dataset}}/{{model}}.tsv"
    shell:
        "embedprobe --job-config {params.job:q} embed --dataset {wildcards.dataset}"
        " --model {wildcards.model} --index {input.index} --out {output}"
        " --threads {threads} 2>&1 | tee {log}"
