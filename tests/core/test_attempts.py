"""The retry guard: an attempt after the first runs only when its predecessor was killed (no
failure record), ran out of memory, or crashed at start-up for the first time in a row;
otherwise it stops with the recorded error and fix."""

import json
import sys

import pytest

from embedprobe import cli
from embedprobe.core.attempts import begin_attempt, worth_retrying
from embedprobe.core.errors import (
    STARTUP,
    CacheError,
    DataError,
    DeviceError,
    ModelError,
    OutOfMemory,
    UsageError,
    WeightsError,
    crashed_import,
    write_failure_record,
)
from embedprobe.core.paths import failure_record

STOPPING = [DataError, UsageError, WeightsError, ModelError, DeviceError, CacheError]


@pytest.mark.parametrize("error", STOPPING)
def test_a_failure_more_memory_cannot_fix_stops_the_retry(error, tmp_path):
    out = tmp_path / "store.h5"
    record = write_failure_record(out, error("bad thing in x.edf", fix="do y"), "embed")
    before = record.read_bytes()
    text = begin_attempt(out, 2).refusal
    assert text.splitlines()[:2] == ["error: bad thing in x.edf", "fix: do y"]
    assert f"attempt 2 stopped without running: the failure before it ({error.category}," in text
    assert str(record) in text
    assert record.read_bytes() == before  # left as it was


@pytest.mark.parametrize("exception", [KeyError("stage"), OSError("disk gone"), ValueError()])
def test_a_plain_exception_other_than_memory_stops_the_retry(exception, tmp_path):
    out = tmp_path / "fold0.json"
    write_failure_record(out, exception, "probe")
    text = begin_attempt(out, 3).refusal
    assert "attempt 3 stopped without running: the failure before it (exception," in text


@pytest.mark.parametrize("exception", [OutOfMemory("even at batch 1", fix="a bigger GPU"),
                                       MemoryError()])
def test_out_of_memory_is_retried_and_its_record_goes(exception, tmp_path):
    out = tmp_path / "store.h5"
    record = write_failure_record(out, exception, "embed")
    assert begin_attempt(out, 2).refusal is None
    assert not record.exists()  # the next attempt reads only what this one leaves


def test_torch_out_of_memory_escaping_as_an_exception_is_retried(tmp_path):
    class OutOfMemoryError(RuntimeError):  # torch.OutOfMemoryError's name, no torch import
        pass

    out = tmp_path / "fold1.json"
    write_failure_record(out, OutOfMemoryError("CUDA out of memory"), "probe")
    assert begin_attempt(out, 2).refusal is None


def test_a_killed_attempt_leaves_no_record_and_is_retried(tmp_path):
    assert begin_attempt(tmp_path / "store.h5", 2).refusal is None
    assert worth_retrying(None)


def test_an_unreadable_record_counts_as_a_kill(tmp_path):
    out = tmp_path / "store.h5"
    record = tmp_path / "store.h5.failure.json"
    record.write_text('{"category": "da')  # killed while writing it
    assert begin_attempt(out, 2).refusal is None and not record.exists()


def test_the_first_attempt_drops_an_earlier_runs_record(tmp_path):
    """A record of yesterday's run must not stop today's retry after a kill."""
    out = tmp_path / "store.h5"
    record = write_failure_record(out, DataError("truncated"), "embed")
    assert begin_attempt(out, 1).refusal is None and not record.exists()
    assert begin_attempt(out, 2).refusal is None  # attempt 1 killed: nothing recorded, retried


def test_the_categories_that_allow_a_retry():
    assert worth_retrying({"category": "oom"})
    assert worth_retrying({"category": "exception", "exception": "MemoryError"})
    for category in ("data", "usage", "weights", "model", "device", "cache", "error",
                     "exception"):
        assert not worth_retrying({"category": category, "exception": "X"}), category


# ------------------------------------------------------------------ start-up crashes

# A package whose import fails the way MNE's did when two threads imported it at once: a
# module body calls a helper whose table is half built.
CRASHING_PACKAGE = {
    "__init__.py": "from . import path\n",
    "path.py": "from .docs import fill_doc\n\n@fill_doc\ndef rm():\n    '''%(verbose)s'''\n",
    "docs.py": ("docdict = {}\n\ndef fill_doc(f):\n    try:\n        f.__doc__ % docdict\n"
                "    except KeyError as exc:\n"
                "        raise RuntimeError(f'Error documenting {f.__name__}') from exc\n"
                "    return f\n"),
}


def import_error(tmp_path, monkeypatch, package: str, files: dict) -> BaseException:
    folder = tmp_path / "site" / package
    folder.mkdir(parents=True)
    for name, text in files.items():
        (folder / name).write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    with pytest.raises(Exception) as raised:
        __import__(package)
    return raised.value


def test_a_crash_inside_an_import_is_a_startup_crash_retried_once(tmp_path, monkeypatch):
    error = import_error(tmp_path, monkeypatch, "halfbuilt", CRASHING_PACKAGE)
    out = tmp_path / "store.h5"
    write_failure_record(out, error, "embed")
    record = json.loads(failure_record(out).read_text())
    assert record["category"] == STARTUP and record["startup_crashes"] == 1
    assert record["module"] == "halfbuilt"
    assert record["message"].startswith(
        "the job crashed at start-up while importing halfbuilt (in halfbuilt.path): "
        "RuntimeError: Error documenting rm. No input of the job explains it")
    start = begin_attempt(out, 2)
    assert start.refusal is None and start.startup_crashes == 1  # the retry runs
    write_failure_record(out, error, "embed", start.startup_crashes)  # and crashes again
    assert json.loads(failure_record(out).read_text())["startup_crashes"] == 2
    refused = begin_attempt(out, 3).refusal
    assert "attempt 3 stopped without running: the failure before it (startup," in refused
    assert "crashed the same way twice in a row" in refused


def test_a_missing_package_is_no_startup_crash(tmp_path, monkeypatch):
    error = import_error(tmp_path, monkeypatch, "needsmore",
                         {"__init__.py": "import embedprobe_no_such_package\n"})
    assert isinstance(error, ModuleNotFoundError) and crashed_import(error) is None
    out = tmp_path / "fold0.json"
    write_failure_record(out, error, "probe")
    assert "(exception," in begin_attempt(out, 2).refusal


def test_an_error_outside_any_import_is_no_startup_crash():
    def read():
        return {}["stage"]

    with pytest.raises(KeyError) as raised:
        read()
    assert crashed_import(raised.value) is None


def test_the_job_prints_the_startup_crash_in_words_and_its_retry_runs(tmp_path, monkeypatch,
                                                                     capsys):
    """Through the command line: attempt 1 crashes while importing, attempt 2 runs (and
    crashes the same way), attempt 3 stops with the record's words."""
    import_error(tmp_path, monkeypatch, "halfbuilt", CRASHING_PACKAGE)  # on sys.path now
    for name in [m for m in sys.modules if m.startswith("halfbuilt")]:
        del sys.modules[name]

    def crashing_job_config(args):
        import halfbuilt  # noqa: F401

    monkeypatch.setattr(cli, "job_config", crashing_job_config)
    out = tmp_path / "cache" / "biot_random.h5"
    args = ["embed", "--dataset", "d", "--model", "m", "--index", str(tmp_path / "i.tsv"),
            "--out", str(out), "--attempt"]
    for attempt in (1, 2):
        with pytest.raises(RuntimeError, match="Error documenting rm"):
            cli.main([*args, str(attempt)])
        for name in [m for m in sys.modules if m.startswith("halfbuilt")]:
            del sys.modules[name]
        err = capsys.readouterr().err
        assert "error: the job crashed at start-up while importing halfbuilt" in err
    assert cli.main([*args, "3"]) == 1
    assert "(startup," in capsys.readouterr().err
