# embedprobe: embed every window once, cache it in HDF5, fit a linear probe per fold.
# Thin on purpose: the steps live in workflow/rules/, the logic in workflow/embedprobe/.
from snakemake.utils import min_version

min_version("9.0")


configfile: f"{workflow.basedir}/config/config.yaml"
configfile: f"{workflow.basedir}/config/benchmarks.yaml"
configfile: f"{workflow.basedir}/config/datasets.yaml"
configfile: f"{workflow.basedir}/config/models.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/check.smk"
include: "workflow/rules/embed.smk"
include: "workflow/rules/probe.smk"
include: "workflow/rules/report.smk"


# One target per benchmark in the config (`snakemake sleep_stage`), per target group
# (`snakemake demo`: config target_groups) and `all`: a benchmark added in YAML is a target.
for target in target_groups(config):

    rule:
        name:
            target
        input:
            # evaluated for the targets a run asks for (a selection may leave one nothing)
            target_inputs(config, ROOTS, target),


# The hub checkpoints (`weights: hf:org/name`) into weights_root/hub: run once where there is
# internet (it runs on the node Snakemake runs on); every other job loads them offline.
localrules:
    weights,


rule weights:
    output:
        out("weights_fetched"),
    log:
        log_file("weights"),
    benchmark:
        benchmark_file("weights")
    conda:
        "envs/embedprobe.yaml"
    threads: 1
    resources:
        **small_job_resources(config, minutes=60),
    params:
        job=weights_job_config(config),
    shell:
        "embedprobe --job-config {params.job:q} fetch-weights --out {output:q} 2> {log:q}"


onsuccess:
    print_fresh_summaries(config, ROOTS)


# With --keep-going (profiles/default), the pairs that finished still get their results.tsv
# and summary.md, the others a row with their status and reason; the exit status stays 1.
onerror:
    write_partial_results(config, ROOTS)
