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


rule sleep_stage:
    input:
        benchmark_targets(config, ROOTS, "sleep_stage"),


rule brain_age:
    input:
        benchmark_targets(config, ROOTS, "brain_age"),


rule demo:
    input:
        benchmark_targets(config, ROOTS, "demo", "demo_brain_age"),


onsuccess:
    print_fresh_summaries(config, ROOTS)


# With --keep-going (profiles/default), the pairs that finished still get their results.tsv
# and summary.md, the others a row with their status and reason; the exit status stays 1.
onerror:
    write_partial_results(config, ROOTS)
