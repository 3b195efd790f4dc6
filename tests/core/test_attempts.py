"""The retry guard: an attempt after the first runs only when its predecessor was killed (no
failure record) or ran out of memory; otherwise it stops with the recorded error and fix."""

import pytest

from embedprobe.core.attempts import begin_attempt, worth_retrying
from embedprobe.core.errors import (
    CacheError,
    DataError,
    DeviceError,
    ModelError,
    OutOfMemory,
    UsageError,
    WeightsError,
    write_failure_record,
)

STOPPING = [DataError, UsageError, WeightsError, ModelError, DeviceError, CacheError]


@pytest.mark.parametrize("error", STOPPING)
def test_a_failure_more_memory_cannot_fix_stops_the_retry(error, tmp_path):
    out = tmp_path / "store.h5"
    record = write_failure_record(out, error("bad thing in x.edf", fix="do y"), "embed")
    before = record.read_bytes()
    text = begin_attempt(out, 2)
    assert text.splitlines()[:2] == ["error: bad thing in x.edf", "fix: do y"]
    assert f"attempt 2 stopped without running: the failure before it ({error.category}," in text
    assert str(record) in text
    assert record.read_bytes() == before  # left as it was


@pytest.mark.parametrize("exception", [KeyError("stage"), OSError("disk gone"), ValueError()])
def test_a_plain_exception_other_than_memory_stops_the_retry(exception, tmp_path):
    out = tmp_path / "fold0.json"
    write_failure_record(out, exception, "probe")
    text = begin_attempt(out, 3)
    assert "attempt 3 stopped without running: the failure before it (exception," in text


@pytest.mark.parametrize("exception", [OutOfMemory("even at batch 1", fix="a bigger GPU"),
                                       MemoryError()])
def test_out_of_memory_is_retried_and_its_record_goes(exception, tmp_path):
    out = tmp_path / "store.h5"
    record = write_failure_record(out, exception, "embed")
    assert begin_attempt(out, 2) is None
    assert not record.exists()  # the next attempt reads only what this one leaves


def test_torch_out_of_memory_escaping_as_an_exception_is_retried(tmp_path):
    class OutOfMemoryError(RuntimeError):  # torch.OutOfMemoryError's name, no torch import
        pass

    out = tmp_path / "fold1.json"
    write_failure_record(out, OutOfMemoryError("CUDA out of memory"), "probe")
    assert begin_attempt(out, 2) is None


def test_a_killed_attempt_leaves_no_record_and_is_retried(tmp_path):
    assert begin_attempt(tmp_path / "store.h5", 2) is None
    assert worth_retrying(None)


def test_an_unreadable_record_counts_as_a_kill(tmp_path):
    out = tmp_path / "store.h5"
    record = tmp_path / "store.h5.failure.json"
    record.write_text('{"category": "da')  # killed while writing it
    assert begin_attempt(out, 2) is None and not record.exists()


def test_the_first_attempt_drops_an_earlier_runs_record(tmp_path):
    """A record of yesterday's run must not stop today's retry after a kill."""
    out = tmp_path / "store.h5"
    record = write_failure_record(out, DataError("truncated"), "embed")
    assert begin_attempt(out, 1) is None and not record.exists()
    assert begin_attempt(out, 2) is None  # attempt 1 killed: nothing recorded, retried


def test_the_categories_that_allow_a_retry():
    assert worth_retrying({"category": "oom"})
    assert worth_retrying({"category": "exception", "exception": "MemoryError"})
    for category in ("data", "usage", "weights", "model", "device", "cache", "error",
                     "exception"):
        assert not worth_retrying({"category": category, "exception": "X"}), category
