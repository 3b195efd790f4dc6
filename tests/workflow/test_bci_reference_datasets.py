"""`snakemake -n bci` plans the reference's BCI datasets (REFERENCE.md: motor imagery 7, ERP 5,
SSVEP 2, cognitive 4: EEGMAT, DREAMER valence and arousal, ArithmeticTask) and, where MOABB's
folder does not hold one, skips it with the command that fetches it (format moabb: MOABB's own
class, its licence accepted where it asks); DREAMER, absent, with where to ask for it. The
reference's ArithmeticTask has no reader yet (its publisher's layout is not known here)."""

from __future__ import annotations

from helpers.project import snakemake

REFERENCE = {
    "bci_motor_imagery": ["bnci2014_001", "bnci2014_004", "bnci2015_001", "dreyer2023",
                          "liu2024", "shin2017a", "weibo2014"],
    "bci_erp": ["bi2013a", "bi2014a", "bnci2014_008", "epflp300", "erpcore2021_n170"],
    "bci_ssvep": ["nakanishi2015", "kim2025betarange"],
    "bci_cognitive": ["eegmat", "dreamer_valence", "dreamer_arousal"],
}
# the entries read through MOABB: entry -> how the fetch command makes its class
THROUGH_MOABB = {
    "bnci2014_004": "BNCI2014_004()", "bnci2015_001": "BNCI2015_001()",
    "dreyer2023": "Dreyer2023()", "liu2024": "Liu2024()", "shin2017a": "Shin2017A(accept=True)",
    "weibo2014": "Weibo2014()", "bi2014a": "BI2014a()", "epflp300": "EPFLP300()",
    "erpcore2021_n170": "ErpCore2021_N170()", "kim2025betarange": "Kim2025BetaRange()",
}


def test_the_bci_plan_lists_the_references_datasets_and_skips_absent_ones_with_the_fix(
        tmp_path):
    mne_data = tmp_path / "mne_data"
    mne_data.mkdir()
    # MOABB's folder and MNE's config file in tmp_path: nothing of the machine's is read
    run = snakemake(tmp_path, "-n", "bci", timeout=300,
                    env_extra={"MNE_DATA": str(mne_data), "HOME": str(tmp_path / "home")})
    assert run.returncode == 0, run.stderr[-3000:]
    lines = run.stderr.splitlines()
    planned = {}
    for line in lines:
        if line.startswith("plan: ") and ": datasets " in line:
            benchmark, rest = line[len("plan: "):].split(": datasets ", 1)
            planned[benchmark] = rest.split(" (")[0].split(", ")
    for benchmark, names in REFERENCE.items():
        assert [n for n in planned[benchmark] if n in names] == names, planned[benchmark]
    # the reference's 17 sets, DREAMER one set of two entries: all but ArithmeticTask
    assert sum(len(names) for names in REFERENCE.values()) == 17
    for name, made in THROUGH_MOABB.items():
        warning = f"warning: {name} will be skipped: data not found in {mne_data} "
        at = next(i for i, line in enumerate(lines) if line.startswith(warning))
        cls = made.split("(")[0]
        assert lines[at + 1].startswith(
            f'fix: on a login node: python -c "from moabb.datasets import {cls}; '
            f'{made}.download()"'), lines[at + 1]
    for name in ("dreamer_valence", "dreamer_arousal"):
        at = next(i for i, line in enumerate(lines)
                  if line.startswith(f"warning: {name} will be skipped: "))
        assert lines[at + 1].startswith("fix: ask for access to DREAMER at "
                                        "https://zenodo.org/records/546113"), lines[at + 1]
    # MOABB wrote nothing into MNE's config file while the plan was built
    assert not (tmp_path / "home" / ".mne").exists()


def test_a_misspelt_moabb_class_stops_the_plan_with_exit_2_and_the_closest_name(tmp_path):
    """A user's entry names a class MOABB does not have: refused before any job, whether MOABB's
    folder exists or not (here it does not: the fix would have named the class)."""
    extra = tmp_path / "mine.yaml"
    extra.write_text("datasets:\n  weibo2014:\n    moabb_dataset: Weibo2041\n")
    run = snakemake(tmp_path, "-n", "bci_motor_imagery", "--configfile", str(extra),
                    timeout=300, env_extra={"MNE_DATA": str(tmp_path / "absent"),
                                            "HOME": str(tmp_path / "home")})
    assert run.returncode == 2, run.stderr[-3000:]
    lines = run.stderr.splitlines()
    at = lines.index("error: moabb_dataset: 'Weibo2041' is not a dataset class of MOABB 1.5.0 "
                     "(did you mean 'Weibo2014'?)")
    assert lines[at + 1].startswith("fix: name a class of moabb.datasets as MOABB spells it")
    assert "rule probe:" not in run.stdout
