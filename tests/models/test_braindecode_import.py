"""braindecode's models are built without importing MOABB, which stays importable
(models/braindecode_import.py: MOABB's import was ~1 CPU-s of every check and embed job)."""

import json
import subprocess
import sys

BUILD_BIOT = """
import json, sys
from embedprobe.core.config import load_config
from embedprobe.models.registry import build_model, model_spec
config = load_config()
model, digest = build_model(model_spec(config, "biot_random"), 2, {})
during = "moabb" in sys.modules
import moabb.datasets
print(json.dumps({"class": type(model).__name__, "digest": digest, "moabb_during": during,
                  "moabb_after": moabb.datasets.BNCI2014_001.__name__}))
"""

MOABB_FIRST = """
import json, sys
import moabb
first = sys.modules["moabb"]
from embedprobe.models.braindecode_import import braindecode_models
braindecode_models()
print(json.dumps({"same": sys.modules["moabb"] is first,
                  "docstring_from_moabb": "BNCI" in (
                      sys.modules["braindecode.datasets.moabb"].BNCI2014_001.__doc__ or "")}))
"""


def run(code: str) -> dict:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_model_is_built_without_moabb_and_moabb_imports_after():
    seen = run(BUILD_BIOT)
    assert seen["class"] == "BIOT"
    assert seen["digest"] == "random:0"
    assert seen["moabb_during"] is False
    assert seen["moabb_after"] == "BNCI2014_001"


def test_a_job_that_read_moabb_first_keeps_its_module():
    seen = run(MOABB_FIRST)
    assert seen == {"same": True, "docstring_from_moabb": True}
