"""Where each dataset's publisher serves it, and the files that make it up, as listed there.

A dataset entry's `source:` (config/datasets.yaml, checked by the schema) is one of:

  physionet: PROJECT/VERSION   PhysioNet serves a project's files under
                               <hosts.physionet>/PROJECT/VERSION/ and lists every one with its
                               sha256 in SHA256SUMS.txt there (kept beside the files, as
                               PhysioNet's own zip holds it)
  zenodo: RECORD               <hosts.zenodo>/api/records/RECORD (Zenodo's REST API) lists the
                               record's files with their sizes and md5 checksums; each is
                               served at .../api/records/RECORD/files/<name>/content
  host, files                  <hosts[host]>/<file> for each file, saved under its last part;
                               these publishers list no checksum: the size is checked against
                               the server's Content-Length
  access, instructions         nothing to fetch (credentialed, or no download the runtime can
                               unpack): the publisher's steps, {folder} the dataset's folder

`include` keeps the listed files whose path matches one of its patterns. The hosts' URLs are
config (download.hosts): a mirror, or a test's server on the loopback, replaces one.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, replace
from pathlib import PurePosixPath

from embedprobe.core.config import lookup
from embedprobe.core.errors import DownloadError, UsageError
from embedprobe.core.names import closest

SHA256SUMS = "SHA256SUMS.txt"
TIMEOUT = (30, 120)  # seconds to connect, and between two reads of a response
_SHA256 = re.compile(r"[0-9a-f]{64}")
_MD5 = re.compile(r"md5:([0-9a-f]{32})")


@dataclass(frozen=True)
class Remote:
    """One file as the publisher lists it: where it goes under the dataset's folder ('/'-
    separated), its URL, and the size and (hashlib algorithm, hex digest) where listed."""

    name: str
    url: str
    size: int | None = None
    checksum: tuple[str, str] | None = None


@dataclass(frozen=True)
class Listing:
    """A dataset's files as its publisher lists them, and how the list was had."""

    where: str  # "PhysioNet sleep-edfx/1.0.0"
    url: str  # what was read to list them (for `files`: the host's URL)
    checks: str  # what each file is checked against
    files: tuple[Remote, ...]
    keep: dict[str, bytes]  # listing files saved beside the data (SHA256SUMS.txt)


def can_fetch(source: dict | None) -> bool:
    return bool(source) and "access" not in source


def host_url(config: dict, dataset: str, host: str) -> str:
    hosts = config["download"]["hosts"]
    if host not in hosts:
        raise UsageError(f"dataset '{dataset}': its source names the host '{host}', which "
                         f"download.hosts does not define{closest(host, hosts)}",
                         fix=f"add it: --config download.hosts.{host}=https://..., or correct "
                             "the source in config/datasets.yaml")
    return hosts[host]


def instructions(config: dict, dataset: str, folder: str) -> tuple[str, str] | None:
    """(kind, text) for a dataset this command cannot fetch: its publisher's steps
    (`credentialed`, `manual`), a look-alike's command, or that no open source is recorded;
    None where there is a source to fetch from."""
    entry = lookup(config, "datasets", dataset)
    source = entry.get("source")
    if can_fetch(source):
        return None
    if source:
        return source["access"], source["instructions"].replace("{folder}", folder)
    if "generator" in entry:
        return "look-alike", (f"{dataset} is a generated look-alike, not a download: "
                              f"embedprobe demo-data --dataset {dataset} writes it into {folder}")
    return "no source", (f"no open source is recorded for {dataset} (no `source:` in "
                         f"config/datasets.yaml): put its files under {folder} in the layout "
                         "of docs/usage.md's datasets table")


def list_files(config: dict, dataset: str, source: dict, session) -> Listing:
    """The files of the dataset's source, as its publisher lists them (`include` applied)."""
    if "physionet" in source:
        listing = _physionet(host_url(config, dataset, "physionet"), source["physionet"],
                             session)
    elif "zenodo" in source:
        listing = _zenodo(host_url(config, dataset, "zenodo"), source["zenodo"], session)
    else:
        base = host_url(config, dataset, source["host"])
        files = tuple(Remote(safe_name(PurePosixPath(f).name, base), f"{base}/{f}")
                      for f in source["files"])
        listing = Listing(f"host {source['host']}", base,
                          "no checksum published: each checked by its size", files, {})
    patterns = source.get("include")
    if patterns:
        kept = tuple(r for r in listing.files
                     if any(fnmatch.fnmatchcase(r.name, p) for p in patterns))
        listing = replace(listing, files=kept)
    if not listing.files:
        raise DownloadError(f"{listing.url} lists no file for {dataset}"
                            + (f" matching include {patterns}" if patterns else ""),
                            fix="check the dataset's source (and include) in "
                                "config/datasets.yaml, or the host in download.hosts")
    return listing


def stays_inside(name: str, parts: tuple[str, ...]) -> bool:
    """Whether the '/'-separated path `name`, as `parts` (its PurePosixPath parts, which hold
    no empty or `.` part; an archive's maybe without its top folder), stays under the dataset's
    folder: relative, no `..`, not empty."""
    return bool(parts) and not name.startswith("/") and ".." not in parts


def safe_name(name: str, where: str) -> str:
    """A listed path that stays under the dataset's folder: relative, no `..`, no empty part."""
    parts = PurePosixPath(name).parts
    if not stays_inside(name, parts):
        raise DownloadError(f"{where} lists the file {name!r}, which would land outside the "
                            "dataset's folder",
                            fix="check the host in download.hosts: a mirror must serve the "
                                "publisher's listing unchanged")
    return "/".join(parts)


def get(session, url: str, what: str):
    """GET a listing; a refusal or a dead server is a DownloadError naming the URL."""
    import requests

    try:
        response = session.get(url, timeout=TIMEOUT)
        response.raise_for_status()
    except requests.RequestException as exc:
        raise DownloadError(f"cannot read {what} at {url}: {exc}",
                            fix="check the connection (run it on a node with internet), "
                                "or the host's URL in download.hosts") from exc
    return response


def _physionet(base: str, project: str, session) -> Listing:
    url = f"{base}/{project}/{SHA256SUMS}"
    text = get(session, url, "PhysioNet's checksum list").content
    files = []
    for number, line in enumerate(text.decode("utf-8", "replace").splitlines(), 1):
        if not line.strip():
            continue
        digest, _, name = line.strip().partition(" ")
        name = name.strip().lstrip("*")  # sha256sum's two spaces, or its binary marker
        if not _SHA256.fullmatch(digest) or not name:
            raise DownloadError(f"{url}: line {number} is not '<sha256> <file>': {line!r}",
                                fix="check the host in download.hosts (it must serve "
                                    "PhysioNet's files and SHA256SUMS.txt unchanged)")
        name = safe_name(name, url)
        files.append(Remote(name, f"{base}/{project}/{name}", checksum=("sha256", digest)))
    return Listing(f"PhysioNet {project}", url, "each checked by its sha256 there", tuple(files),
                   {SHA256SUMS: text})


def _zenodo(base: str, record: int, session) -> Listing:
    url = f"{base}/api/records/{record}"
    try:
        entries = get(session, url, "Zenodo's record").json()["files"]
        files = []
        for entry in entries:
            name = safe_name(entry["key"], url)
            md5 = _MD5.fullmatch(entry.get("checksum") or "")
            files.append(Remote(name, f"{url}/files/{name}/content", int(entry["size"]),
                                ("md5", md5.group(1)) if md5 else None))
    except (ValueError, KeyError, TypeError) as exc:
        raise DownloadError(f"{url}: not a Zenodo record's JSON (a `files` list of key, size "
                            f"and checksum): {exc!r}",
                            fix="check the record number in config/datasets.yaml and "
                                "download.hosts.zenodo") from exc
    return Listing(f"Zenodo record {record}", url, "each checked by its md5 there",
                   tuple(files), {})
