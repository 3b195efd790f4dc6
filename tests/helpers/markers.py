"""Snakemake's records of a started job, written as Snakemake writes them."""

from __future__ import annotations

import base64
import json


def mark_incomplete(workdir, output, external_jobid=None) -> None:
    """Snakemake's marker of a started job (persistence/file.py: the output's urlsafe base64)."""
    folder = workdir / ".snakemake" / "incomplete"
    folder.mkdir(parents=True, exist_ok=True)
    name = base64.urlsafe_b64encode(str(output).encode()).decode()
    (folder / name).write_text(json.dumps({"external_jobid": external_jobid}))
