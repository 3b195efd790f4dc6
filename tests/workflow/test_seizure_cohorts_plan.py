"""`seizure_cohorts_demo` in the real snakemake's dry run: the group writes every look-alike of
issue 50's seizure and abnormal-EEG readers and probes each on its folds. Dry run only: each
member benchmark's own plan test and reader tests cover the rest."""

from __future__ import annotations

from collections import Counter

import pytest

from embedprobe.smk.status import plan_rows

from helpers.project import snakemake

pytestmark = pytest.mark.workflow

LOOKALIKES = ("siena_bids_demo", "chbmit_bids_demo", "tusz_demo", "helsinki_neonatal_demo",
              "nmt_demo")


def test_the_group_plans_every_lookalike_and_five_folds_each(tmp_path):
    run = snakemake(tmp_path, "-n", "seizure_cohorts_demo", timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    rows = plan_rows(run.stdout)
    probes = Counter((r["dataset"], r["model"]) for r in rows if r["rule"] == "probe")
    # SeizeIT2's two behind-the-ear channels: BIOT's pair is ruled out, CBraMod reads them
    assert probes == {**{(dataset, "biot_random"): 5 for dataset in LOOKALIKES},
                      ("sz2_demo", "cbramod_random"): 5}
    embeds = sorted((r["dataset"], r["model"]) for r in rows if r["rule"] == "embed")
    assert embeds == sorted([(d, "biot_random") for d in LOOKALIKES]
                            + [("sz2_demo", "cbramod_random")])
    assert any(r["rule"] == "leaderboard" for r in rows)
