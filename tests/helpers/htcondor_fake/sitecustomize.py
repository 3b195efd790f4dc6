"""A fake HTCondor schedd behind the real htcondor2 bindings, for tests/workflow/test_htcondor.py.

No HTCondor pool can run here (the wheel has no daemons), so a Python started with this folder
on PYTHONPATH gets `htcondor2.Schedd` and `htcondor2.JobEventLog` replaced at start-up; the
real `htcondor2.Submit` stays, so submit descriptions are still built and rendered by HTCondor's
own code. The fake schedd:
- appends every submit description, as the dict the plugin built, to $FAKE_HTCONDOR_RECORD
  (JSON lines, with the cluster id);
- runs the job at once on this machine the way an execute point would with `getenv = false`:
  in the submit directory, with only the description's `environment` and a bare PATH;
- writes SUBMIT, EXECUTE and JOB_TERMINATED events (JSON lines) to the description's `log`,
  which the fake JobEventLog hands to the plugin as job events.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shlex
import subprocess
import threading
from pathlib import Path

import htcondor2

BARE_PATH = "/usr/local/bin:/usr/bin:/bin"
_ENV_ITEM = re.compile(r'(\w+)="((?:[^"]|"")*)"')


def parse_environment(text: str) -> dict[str, str]:
    """HTCondor's new-style `environment`: KEY="value" pairs, "" escapes a quote."""
    return {key: value.replace('""', '"') for key, value in _ENV_ITEM.findall(text or "")}


def _append_json_line(path: Path, record: dict) -> None:
    with open(path, "a", encoding="utf-8") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        handle.write(json.dumps(record) + "\n")


class _SubmitResult:
    def __init__(self, cluster_id: int):
        self._cluster_id = cluster_id

    def cluster(self) -> int:
        return self._cluster_id


class FakeSchedd:
    """Records submissions and runs each job in a thread; nothing stays in a queue."""

    _lock = threading.Lock()
    _next_cluster = 1

    def __init__(self, *args, **kwargs):
        pass

    def submit(self, description, count: int = 1, **kwargs) -> _SubmitResult:
        values = {key: description[key] for key in description}
        with FakeSchedd._lock:
            cluster_id = FakeSchedd._next_cluster
            FakeSchedd._next_cluster += 1
        record = os.environ.get("FAKE_HTCONDOR_RECORD")
        if record:
            _append_json_line(Path(record), {"cluster": cluster_id, "submit": values})
        event_log = Path(values["log"])
        event_log.parent.mkdir(parents=True, exist_ok=True)
        _append_json_line(event_log, {"cluster": cluster_id, "type": "SUBMIT"})
        threading.Thread(target=self._run, args=(cluster_id, values), daemon=True).start()
        return _SubmitResult(cluster_id)

    @staticmethod
    def _run(cluster_id: int, values: dict) -> None:
        event_log = Path(values["log"])
        _append_json_line(event_log, {"cluster": cluster_id, "type": "EXECUTE"})
        env = {"PATH": BARE_PATH, **parse_environment(values.get("environment", ""))}
        argv = [values["executable"], *shlex.split(values.get("arguments", ""))]

        def expanded(name: str) -> str:
            return values[name].replace("$(ClusterId)", str(cluster_id))

        with open(expanded("output"), "wb") as out, open(expanded("error"), "wb") as err:
            returncode = subprocess.call(argv, env=env, stdout=out, stderr=err, cwd=os.getcwd())
        terminated = {"cluster": cluster_id, "type": "JOB_TERMINATED"}
        if returncode < 0:
            terminated.update(TerminatedNormally=False, TerminatedBySignal=-returncode)
        else:
            terminated.update(TerminatedNormally=True, ReturnValue=returncode)
        _append_json_line(event_log, terminated)

    def query(self, *args, **kwargs) -> list:
        return []

    def history(self, *args, **kwargs) -> list:
        return []

    def act(self, *args, **kwargs) -> None:
        return None


class _Event(dict):
    def __init__(self, record: dict):
        super().__init__(record)
        self.cluster = record["cluster"]
        self.proc = 0
        self.type = htcondor2.JobEventType[record["type"]]


class FakeJobEventLog:
    """Reads the fake schedd's JSON-lines event log, from where the last read stopped."""

    def __init__(self, path: str):
        self._path = Path(path)
        self._offset = 0

    def events(self, stop_after=None):
        with open(self._path, encoding="utf-8") as handle:
            handle.seek(self._offset)
            while True:
                line = handle.readline()
                if not line.endswith("\n"):  # none, or one still being written
                    break
                self._offset = handle.tell()
                yield _Event(json.loads(line))

    def close(self) -> None:
        pass


htcondor2.Schedd = FakeSchedd
htcondor2.JobEventLog = FakeJobEventLog
