"""One file over HTTP: resumed where a cut left it, checked, and only then put in place.

The file is written to `<name>.part` beside its place. A retry (after a cut connection, up to
download.retries times in one run) or a later run asks the server for the rest with an HTTP
Range request (`bytes=<have>-`) and appends it; a server that answers the whole file instead
(200) is read again from the start. The whole file is then checked, its size against the
listing (else the server's Content-Length) and its checksum against the publisher's where there
is one, and renamed into place; a mismatch deletes the partial file, so a damaged download is
never where a reader looks. The resume is written here, on requests (pinned): pooch, the other
downloader installed, fetches whole files only, and requests and urllib3 leave Range to the
caller.

What was checked is recorded in the dataset's folder (`.embedprobe-download.json`: each file's
size, modification time and checksum; the archives unpacked), so a rerun skips a file that is
still as it was checked without reading it again.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from embedprobe.core.errors import DownloadError
from embedprobe.core.hashing import file_digest
from embedprobe.core.text import byte_size
from embedprobe.core.units import MIB
from embedprobe.datasets.sources import TIMEOUT, Remote

CHUNK = MIB
PART = ".part"
RECORD = ".embedprobe-download.json"
RETRY_PAUSE_S = 2.0  # doubled after each cut


def part_of(path: Path) -> Path:
    return path.with_name(path.name + PART)


def remote_size(session, url: str) -> int | None:
    """The size a server gives for a file (HEAD, redirects followed), or None."""
    import requests

    try:
        response = session.head(url, allow_redirects=True, timeout=TIMEOUT)
        response.raise_for_status()
        return int(response.headers["Content-Length"])
    except (requests.RequestException, KeyError, ValueError):
        return None


class PartFile:
    """A download's `.part` file and the digest of the bytes in it so far; `resumed_from`: the
    bytes an earlier run left in it that this download keeps (0 once it restarts)."""

    def __init__(self, path: Path, algorithm: str):
        self.path, self.algorithm = path, algorithm
        self.digest = (file_digest(path, algorithm) if path.exists()
                       else hashlib.new(algorithm))
        self.resumed_from = self.size

    @property
    def size(self) -> int:
        return self.path.stat().st_size if self.path.exists() else 0

    def restart(self) -> None:
        self.path.unlink(missing_ok=True)
        self.digest = hashlib.new(self.algorithm)
        self.resumed_from = 0

    def append(self, blocks) -> None:
        with self.path.open("ab") as out:
            for block in blocks:
                out.write(block)
                self.digest.update(block)


@dataclass(frozen=True)
class Fetched:
    size: int  # bytes of the finished file
    resumed_from: int  # bytes already in its .part that were kept (0: from the start)
    cuts: int  # connections cut and resumed within this run


def fetch(session, remote: Remote, dest: Path, retries: int, say=print) -> Fetched:
    """Download `remote` to `dest` through dest.part, resuming it; check it; rename it."""
    import requests
    import urllib3

    dest.parent.mkdir(parents=True, exist_ok=True)
    part = PartFile(part_of(dest), remote.checksum[0] if remote.checksum else "sha256")
    total, cuts = remote.size, 0
    while True:
        try:
            total = _request_rest(session, remote, part, total)
            if total is None or part.size >= total:
                break
            cut = "the response ended early"
        except (requests.ConnectionError, requests.Timeout, urllib3.exceptions.HTTPError) as exc:
            cut = type(exc).__name__
        except requests.HTTPError as exc:
            raise DownloadError(f"{remote.name}: {remote.url} answered "
                                f"{exc.response.status_code} {exc.response.reason}",
                                fix="check the host in download.hosts and the connection, "
                                    "then rerun") from exc
        if cuts >= retries:
            tries = f", after {cuts} resumed tries" if cuts else ""
            raise DownloadError(
                f"{remote.name}: the connection was cut at {byte_size(part.size)} "
                f"({cut}{tries}); what arrived is kept in {part.path.name}",
                fix="rerun the same command: it resumes from there")
        cuts += 1
        say(f"note: {remote.name}: the connection was cut at {byte_size(part.size)} ({cut}); "
            f"resuming (try {cuts} of {retries})")
        time.sleep(RETRY_PAUSE_S * 2 ** (cuts - 1))
    check(part, remote, total)
    os.replace(part.path, dest)
    return Fetched(dest.stat().st_size, part.resumed_from, cuts)


def _request_rest(session, remote: Remote, part: PartFile, total: int | None) -> int | None:
    """One request for what the part lacks, appended to it; the file's size as listed, else
    as the server gives it."""
    have = part.size
    # the file's own bytes (a compressed answer's offsets would not be the file's)
    headers = {"Accept-Encoding": "identity"} | ({"Range": f"bytes={have}-"} if have else {})
    with session.get(remote.url, headers=headers, stream=True, timeout=TIMEOUT) as response:
        if response.status_code == 416 and have:  # nothing after `have`: the part is whole
            return total if total is not None else have
        response.raise_for_status()
        if response.status_code == 206:
            first, size = _content_range(response.headers.get("Content-Range", ""))
            if first != have:
                raise DownloadError(f"{remote.name}: asked for the bytes from {have}, the "
                                    f"server sent them from {first}",
                                    fix=f"delete {part.path} and rerun")
        else:  # 200: the whole file, whatever was asked
            part.restart()
            size = _whole_number(response.headers.get("Content-Length"))
        # read1 hands over each block as it arrives, so a cut keeps all that came before it
        part.append(iter(lambda: response.raw.read1(CHUNK), b""))
    return total if total is not None else size


def _content_range(header: str) -> tuple[int | None, int | None]:
    """`bytes 100-199/1000` -> (100, 1000); a part it cannot read -> None."""
    unit, _, spec = header.partition(" ")
    span, _, size = spec.partition("/")
    first = span.partition("-")[0]
    return ((_whole_number(first) if unit == "bytes" else None),
            (_whole_number(size) if unit == "bytes" else None))


def _whole_number(text: str | None) -> int | None:
    return int(text) if text and text.strip().isdigit() else None


def check(part: PartFile, remote: Remote, total: int | None) -> None:
    """The finished part against the listing: its size (listed, else the server's), its
    checksum where the publisher lists one. A mismatch deletes it."""
    size = part.size
    problem = None
    if total is not None and size != total:
        problem = f"is {size} bytes, {total} expected"
    elif remote.checksum and part.digest.hexdigest() != remote.checksum[1]:
        problem = (f"has {remote.checksum[0]} {part.digest.hexdigest()}, the publisher lists "
                   f"{remote.checksum[1]}")
    if problem:
        part.path.unlink(missing_ok=True)
        raise DownloadError(f"{remote.name} {problem}: the download was deleted, nothing was "
                            "put in its place",
                            fix="rerun the same command to fetch it again; if it fails the "
                                "same way, the server's copy differs from the publisher's "
                                "listing (a mirror: try the publisher's own host)")


class Record:
    """What this command checked in a dataset's folder: per file its size, modification time
    and checksum (`files`), and the archives it unpacked (`unpacked`), in RECORD there."""

    def __init__(self, folder: Path):
        self.path = folder / RECORD
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            data = {}
        self.files: dict = data.get("files", {}) if isinstance(data, dict) else {}
        self.unpacked: dict = data.get("unpacked", {}) if isinstance(data, dict) else {}

    @staticmethod
    def _key(remote: Remote) -> str:
        return ":".join(remote.checksum) if remote.checksum else f"size:{remote.size}"

    def holds(self, remote: Remote, path: Path) -> bool:
        """Whether `path` is still the file checked as `remote` (size and time unchanged)."""
        entry = self.files.get(remote.name) or {}
        if entry.get("key") != self._key(remote) or not path.is_file():
            return False
        stat = path.stat()
        return (entry.get("size"), entry.get("mtime_ns")) == (stat.st_size, stat.st_mtime_ns)

    def add(self, remote: Remote, path: Path) -> None:
        self.add_all([(remote, path)])

    def add_all(self, checked) -> None:
        """Each (remote, path) checked, in one write of the record."""
        for remote, path in checked:
            stat = path.stat()
            self.files[remote.name] = {"key": self._key(remote), "size": stat.st_size,
                                       "mtime_ns": stat.st_mtime_ns}
        if checked:
            self._save()

    def was_unpacked(self, remote: Remote) -> bool:
        return self.unpacked.get(remote.name) == self._key(remote)

    def add_unpacked(self, remote: Remote) -> None:
        self.unpacked[remote.name] = self._key(remote)
        self.files.pop(remote.name, None)
        self._save()

    def _save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_name(self.path.name + PART)
        partial.write_text(json.dumps({"files": self.files, "unpacked": self.unpacked},
                                      indent=1, sort_keys=True))
        partial.replace(self.path)


def matches(path: Path, remote: Remote) -> bool:
    """Whether a file found in place (not recorded) is the listed one: its checksum where one
    is listed, else its size where known, else only that it is there."""
    if remote.checksum:
        return file_digest(path, remote.checksum[0]).hexdigest() == remote.checksum[1]
    return remote.size is None or path.stat().st_size == remote.size
