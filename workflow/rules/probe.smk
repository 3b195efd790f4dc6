rule probe:
    input:
        embeddings=f"{CACHE}/embeddings/{{dataset}}/{{model}}.h5",
    output:
        result=f"{RESULTS}/{{benchmark}}/{{dataset}}/{{model}}/fold{{fold}}.json",
        predictions=f"{RESULTS}/{{benchmark}}/{{dataset}}/{{model}}/fold{{fold}}.npz",
    params:
        job=lambda w: job_config_json(config, w.benchmark, w.dataset, w.model),
    threads: config["probe"]["threads"]
    log:
        f"{RESULTS}/logs/probe/{{benchmark}}/{{dataset}}/{{model}}/fold{{fold}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/probe/{{benchmark}}/{{dataset}}/{{model}}/fold{{fold}}.tsv"
    shell:
        "embedprobe --job-config {params.job:q} probe --benchmark {wildcards.benchmark}"
        " --dataset {wildcards.dataset} --model {wildcards.model}"
        " --embeddings {input.embeddings} --fold {wildcards.fold}"
        " --out {output.result} --predictions {output.predictions} 2>&1 | tee {log}"


rule aggregate:
    input:
        lambda w: fold_results(config, ROOTS, w.benchmark, w.dataset),
    output:
        f"{RESULTS}/{{benchmark}}/{{dataset}}/results.tsv",
    params:
        job=lambda w: job_config_json(config, w.benchmark, w.dataset),
    log:
        f"{RESULTS}/logs/aggregate/{{benchmark}}/{{dataset}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/aggregate/{{benchmark}}/{{dataset}}.tsv"
    shell:
        "embedprobe --job-config {params.job:q} aggregate --benchmark {wildcards.benchmark}"
        " --out {output} {input} 2>&1 | tee {log}"
