rule pair_figure:
    input:
        lambda w: fold_predictions(config, ROOTS, w.benchmark, w.dataset, w.model),
    output:
        report(
            out("pair_figure"),
            caption="../report/pair_figure.rst",
            category="{benchmark}",
            subcategory="{figure}",
        ),
    log:
        log_file("pair_figure"),
    benchmark:
        benchmark_file("pair_figure")
    wildcard_constraints:
        figure=names_pattern(pair_figure_names(config)) or "^$",
    conda:
        CONDA_ENV
    threads: 1
    resources:
        **small_job_resources(config, minutes=10),
    params:
        job=lambda w: job_config(config, w.benchmark),
        title=lambda w: f"{w.dataset} {w.model}",
    shell:
        "embedprobe --job-config {params.job:q} pair-figure --benchmark {wildcards.benchmark:q}"
        " --figure {wildcards.figure:q} --title {params.title:q}"
        " --out {output:q} {input:q} 2> {log:q}"


rule summary:
    input:
        tables=lambda w: benchmark_tables(config, ROOTS, w.benchmark),
        quality=lambda w: quality_tables(config, ROOTS, w.benchmark),
        memory=out("memory_summary"),
    output:
        summary=report(
            out("summary"),
            caption="../report/summary.rst",
            category="{benchmark}",
        ),
        scores=report(
            out("scores_figure"),
            caption="../report/scores.rst",
            category="{benchmark}",
        ),
    log:
        log_file("summary"),
    benchmark:
        benchmark_file("summary")
    conda:
        CONDA_ENV
    threads: 1
    resources:
        **small_job_resources(config, minutes=10),
    params:
        job=lambda w: job_config(config, w.benchmark),
    shell:
        "embedprobe --job-config {params.job:q} summary --benchmark {wildcards.benchmark:q}"
        " --quality {input.quality:q}"
        " --out {output.summary:q} --figure {output.scores:q} --memory {input.memory:q}"
        " {input.tables:q} 2>&1 | tee {log:q}"


rule memory_panel:
    input:
        # every probe fold of the benchmark: the panel is drawn once they all have run
        lambda w: benchmark_fold_results(config, ROOTS, w.benchmark),
    output:
        figure=report(
            out("memory_figure"),
            caption="../report/memory.rst",
            category="memory",
            subcategory="{benchmark}",
        ),
        summary=report(
            out("memory_summary"),
            caption="../report/memory_summary.rst",
            category="memory",
            subcategory="{benchmark}",
        ),
    log:
        log_file("memory_panel"),
    benchmark:
        benchmark_file("memory_panel")
    conda:
        CONDA_ENV
    threads: 1
    resources:
        **small_job_resources(config, minutes=10),
    params:
        job=lambda w: job_config(config, w.benchmark),
    shell:
        "embedprobe --job-config {params.job:q} memory --benchmark {wildcards.benchmark:q}"
        " --figure {output.figure:q} --markdown {output.summary:q} 2>&1 | tee {log:q}"


rule leaderboard:
    input:
        lambda w: leaderboard_tables(config, ROOTS, w.target),
    output:
        report(
            out("leaderboard"),
            caption="../report/leaderboard.rst",
            category="leaderboard",
        ),
    log:
        log_file("leaderboard"),
    benchmark:
        benchmark_file("leaderboard")
    wildcard_constraints:
        target=names_pattern(target_groups(config)),
    conda:
        CONDA_ENV
    threads: 1
    resources:
        **small_job_resources(config, minutes=10),
    params:
        job=lambda w: leaderboard_job_config(config, w.target),
    shell:
        "embedprobe --job-config {params.job:q} leaderboard --target {wildcards.target:q}"
        " --out {output:q} {input:q} 2>&1 | tee {log:q}"
