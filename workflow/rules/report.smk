rule pair_figure:
    input:
        lambda w: fold_predictions(config, ROOTS, w.benchmark, w.dataset, w.model),
    output:
        report(
            f"{RESULTS}/{{benchmark}}/{{dataset}}/{{model}}/{{figure}}.png",
            caption="../report/pair_figure.rst",
            category="{benchmark}",
            subcategory="{figure}",
        ),
    log:
        f"{RESULTS}/logs/pair_figure/{{benchmark}}/{{dataset}}/{{model}}/{{figure}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/pair_figure/{{benchmark}}/{{dataset}}/{{model}}/{{figure}}.tsv"
    wildcard_constraints:
        figure=names_pattern(pair_figure_names(config)) or "^$",
    conda:
        CONDA_ENV
    threads: 1
    resources:
        mem_mb=config["memory_small_job_mb"],
        htcondor_request_mem_mb=config["memory_small_job_mb"],
        runtime=10,
    params:
        job=lambda w: job_config(config, w.benchmark),
    shell:
        "embedprobe --job-config {params.job:q} pair-figure --benchmark {wildcards.benchmark}"
        " --figure {wildcards.figure} --title '{wildcards.dataset} {wildcards.model}'"
        " --out {output} {input} 2> {log}"


rule summary:
    input:
        tables=lambda w: benchmark_tables(config, ROOTS, w.benchmark),
        quality=lambda w: quality_tables(config, ROOTS, w.benchmark),
        memory=f"{RESULTS}/memory/{{benchmark}}/summary.md",
    output:
        summary=report(
            f"{RESULTS}/{{benchmark}}/summary.md",
            caption="../report/summary.rst",
            category="{benchmark}",
        ),
        scores=report(
            f"{RESULTS}/{{benchmark}}/figures/scores.png",
            caption="../report/scores.rst",
            category="{benchmark}",
        ),
    log:
        f"{RESULTS}/logs/summary/{{benchmark}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/summary/{{benchmark}}.tsv"
    conda:
        CONDA_ENV
    threads: 1
    resources:
        mem_mb=config["memory_small_job_mb"],
        htcondor_request_mem_mb=config["memory_small_job_mb"],
        runtime=10,
    params:
        job=lambda w: job_config(config, w.benchmark),
    shell:
        "embedprobe --job-config {params.job:q} summary --benchmark {wildcards.benchmark}"
        " --quality {input.quality}"
        " --out {output.summary} --figure {output.scores} --memory {input.memory}"
        " {input.tables} 2>&1 | tee {log}"


rule memory_panel:
    input:
        # every probe fold of the benchmark: the panel is drawn once they all have run
        lambda w: benchmark_fold_results(config, ROOTS, w.benchmark),
    output:
        figure=report(
            f"{RESULTS}/memory/{{benchmark}}/memory.png",
            caption="../report/memory.rst",
            category="memory",
            subcategory="{benchmark}",
        ),
        summary=report(
            f"{RESULTS}/memory/{{benchmark}}/summary.md",
            caption="../report/memory_summary.rst",
            category="memory",
            subcategory="{benchmark}",
        ),
    log:
        f"{RESULTS}/logs/memory_panel/{{benchmark}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/memory_panel/{{benchmark}}.tsv"
    conda:
        CONDA_ENV
    threads: 1
    resources:
        mem_mb=config["memory_small_job_mb"],
        htcondor_request_mem_mb=config["memory_small_job_mb"],
        runtime=10,
    params:
        job=lambda w: job_config(config, w.benchmark),
    shell:
        "embedprobe --job-config {params.job:q} memory --benchmark {wildcards.benchmark}"
        " --figure {output.figure} --markdown {output.summary} 2>&1 | tee {log}"


rule leaderboard:
    input:
        lambda w: leaderboard_tables(config, ROOTS, w.target),
    output:
        report(
            f"{RESULTS}/leaderboard/{{target}}.md",
            caption="../report/leaderboard.rst",
            category="leaderboard",
        ),
    log:
        f"{RESULTS}/logs/leaderboard/{{target}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/leaderboard/{{target}}.tsv"
    wildcard_constraints:
        target=names_pattern(target_groups(config)),
    conda:
        CONDA_ENV
    threads: 1
    resources:
        mem_mb=config["memory_small_job_mb"],
        htcondor_request_mem_mb=config["memory_small_job_mb"],
        runtime=10,
    params:
        job=lambda w: leaderboard_job_config(config, w.target),
    shell:
        "embedprobe --job-config {params.job:q} leaderboard --target {wildcards.target}"
        " --out {output} {input} 2>&1 | tee {log}"
