"""`embedprobe data download NAME...`: datasets fetched from their publishers, checked, into the
folders their readers look in; `--dry-run` lists what would be fetched and checks the space.

Per dataset (its entry's `source:`, datasets/sources.py): list the publisher's files; keep
those already here and checked (transfer.Record; a file found in place that this command did
not record is checked once against the listing); fetch the others one at a time through
transfer.fetch (resumed, checked, renamed into place); then unpack the archives the source marks
(`unpack`) and delete them. A dataset this command cannot fetch (credentialed, manual, a
look-alike, no source recorded) gets its instructions instead, and nothing is fetched.

Run it once, where the internet is: a login node. It refuses inside a scheduler job (one of
JOB_MARKERS in its environment) and inside a Snakemake job (a snakemake process among its
ancestors): compute nodes usually have no internet, and each job would fetch its own copy.

Exit codes: 0 every named dataset is here and checked (a dry run: and the space suffices);
1 a file failed (server, connection, checksum) or the disk lacks the space; 2 a name that is no
dataset, a refusal (inside a job, another download into the same folder), or a dataset with no
open download (its instructions printed).
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath

from embedprobe.core.errors import DownloadError, EmbedprobeError, UsageError
from embedprobe.core.locks import CannotLock, hold_lock, release_lock
from embedprobe.core.text import aligned_rows, byte_size
from embedprobe.core.units import MIB
from embedprobe.datasets.availability import datasets_named
from embedprobe.datasets.registry import dataset_root
from embedprobe.datasets.sources import Listing, Remote, instructions, list_files, stays_inside
from embedprobe.datasets.transfer import Record, fetch, matches, part_of, remote_size

# Environment variables a scheduler sets in its jobs, and what they mean.
JOB_MARKERS = (("SLURM_JOB_ID", "a SLURM job"), ("_CONDOR_JOB_AD", "an HTCondor job"),
               ("PBS_JOBID", "a PBS job"), ("LSB_JOBID", "an LSF job"))
HEAD_THREADS = 8  # sizes asked for at once (HEAD requests: no data)
LOCK = ".embedprobe-download.lock"
ARCHIVE_SUFFIX = ".zip"
MAC_METADATA = "__MACOSX/"  # macOS's resource forks in some zips (DOD's): not unpacked


def job_context(environ=os.environ) -> str | None:
    """What job this process runs in (a scheduler's, or Snakemake's), or None."""
    for variable, what in JOB_MARKERS:
        if environ.get(variable):
            return f"{what} ({variable}={environ[variable]})"
    import psutil

    for process in psutil.Process().parents():
        try:
            command = process.cmdline()
        except psutil.Error:
            continue
        names = [PurePosixPath(arg).name for arg in command[:2]]
        if "snakemake" in names or command[1:3] == ["-m", "snakemake"]:
            return f"a Snakemake job (process {process.pid}: {' '.join(command[:3])} ...)"
    return None


def refuse_inside_a_job() -> None:
    where = job_context()
    if where:
        raise UsageError(f"data download runs on a login node, never inside a job: this is "
                         f"{where}. Compute nodes usually have no internet, and each job would "
                         "fetch its own copy",
                         fix="run `embedprobe data download ...` on the login node, once, "
                             "before the run (the jobs then read the files it wrote)")


@dataclass(frozen=True)
class Item:
    """One listed file and what this run does with it: `here` (checked already; an archive:
    unpacked), `fetch`, `resume` (its .part holds `have` bytes), `replace` (a file in its place
    differs) or `unpack` (an archive here and checked, not unpacked yet)."""

    remote: Remote
    action: str
    have: int = 0
    archive: bool = False


@dataclass
class Plan:
    dataset: str
    folder: Path
    source: dict  # the dataset's `source:` entry
    listing: Listing
    items: list[Item]
    verified_now: list[Item]  # found in place unrecorded and checked: recorded by a real run

    @property
    def to_fetch(self) -> list[Item]:
        return [i for i in self.items if i.action in ("fetch", "resume", "replace")]

    @property
    def to_unpack(self) -> list[Item]:
        return [i for i in self.items if i.archive and i.action != "here"]

    @property
    def needed(self) -> int:
        """Bytes the fetch will write (each archive twice: it and what it unpacks to)."""
        return sum((i.remote.size - i.have) * (2 if i.archive else 1)
                   for i in self.to_fetch if i.remote.size is not None)

    @property
    def unknown_sizes(self) -> int:
        return sum(i.remote.size is None for i in self.to_fetch)


def session():
    import requests

    from embedprobe import __version__

    s = requests.Session()
    s.headers["User-Agent"] = f"embedprobe/{__version__} (embedprobe data download)"
    return s


def sizes_of(remotes: list[Remote]) -> list[Remote]:
    """The remotes with the sizes their servers give (HEAD) where the listing gave none."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    local = threading.local()

    def sized(remote: Remote) -> Remote:
        if remote.size is not None:
            return remote
        if not hasattr(local, "session"):
            local.session = session()
        return replace(remote, size=remote_size(local.session, remote.url))

    with ThreadPoolExecutor(HEAD_THREADS) as pool:
        return list(pool.map(sized, remotes))


def is_archive(source: dict, remote: Remote) -> bool:
    return bool(source.get("unpack")) and remote.name.lower().endswith(ARCHIVE_SUFFIX)


def plan_dataset(config: dict, dataset: str, folder: Path, source: dict, http) -> Plan:
    """What a download of the dataset (its source, into its folder) would do: the listing, each
    file's action, its size."""
    listing = list_files(config, dataset, source, http)
    record = Record(folder)
    items, open_ones, archive_of = [], [], {}
    for remote in listing.files:
        archive = archive_of[remote.name] = is_archive(source, remote)
        if archive and record.was_unpacked(remote):
            items.append(Item(remote, "here", archive=True))
        elif record.holds(remote, folder / remote.name):
            items.append(Item(remote, "unpack" if archive else "here", archive=archive))
        else:
            open_ones.append(remote)
    verified = []
    for remote in sizes_of(open_ones):
        dest, archive = folder / remote.name, archive_of[remote.name]
        if dest.is_file() and matches(dest, remote):
            verified.append(Item(remote, "unpack" if archive else "here", archive=archive))
        elif dest.is_file():
            items.append(Item(remote, "replace", archive=archive))
        elif part_of(dest).is_file():
            items.append(Item(remote, "resume", part_of(dest).stat().st_size, archive))
        else:
            items.append(Item(remote, "fetch", archive=archive))
    order = {r.name: n for n, r in enumerate(listing.files)}
    items = sorted([*items, *verified], key=lambda i: order[i.remote.name])
    return Plan(dataset, folder, source, listing, items, verified)


def free_bytes(folder: Path) -> int:
    """Free bytes on the file system the folder is (or will be) on."""
    existing = folder.absolute()
    while not existing.exists():
        existing = existing.parent
    return shutil.disk_usage(existing).free


def space_error(plan: Plan, free: int) -> DownloadError | None:
    if plan.needed <= free:
        return None
    return DownloadError(f"{plan.dataset} needs {byte_size(plan.needed)} in {plan.folder}, "
                         f"{byte_size(free)} are free there",
                         fix="free space there, or point the data root at a larger disk "
                             "(--config data_root=... or EMBEDPROBE_DATA_ROOT)")


def describe_plan(plan: Plan, free: int, each_file: bool) -> list[str]:
    """The dataset's header lines, and with `each_file` (a dry run) each file to fetch or
    unpack."""
    unknown = f" and {plan.unknown_sizes} of unknown size" if plan.unknown_sizes else ""
    lines = [f"{plan.dataset}: {plan.listing.where} into {plan.folder}",
             f"  listed: {len(plan.items)} files ({plan.listing.url}), {plan.listing.checks}",
             f"  here and checked: {len(plan.items) - len(plan.to_fetch)}; to fetch: "
             f"{len(plan.to_fetch)} ({byte_size(plan.needed)}{unknown}); free there: "
             f"{byte_size(free)}"]
    todo = [i for i in plan.items if i.action != "here"]
    if each_file and todo:
        rows = [[i.action, i.remote.name, byte_size(i.remote.size),
                 f"{byte_size(i.have)} here" if i.action == "resume" else
                 ("then unpacked" if i.archive and i.action != "unpack" else "")]
                for i in todo]
        lines += ["  " + line for line in aligned_rows(("action", "file", "size", ""), rows)]
    return lines


def check_label(remote: Remote) -> str:
    return f"{remote.checksum[0]} ok" if remote.checksum else "size ok"


class FolderLock:
    """One download at a time into a dataset's folder (an flock, released at exit)."""

    def __init__(self, folder: Path):
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / LOCK
        held = UsageError(f"another `embedprobe data download` is writing into {folder}",
                          fix="wait for it to finish (or stop it), then rerun")
        try:
            self.fd = hold_lock(self.path, held)
        except CannotLock:  # no flock there: refused too, never two downloads unlocked
            raise held from None

    def release(self) -> None:
        release_lock(self.path, self.fd)


def fetch_dataset(config: dict, plan: Plan, http) -> list[DownloadError]:
    """Every file of the plan to fetch, one at a time, then the archives unpacked; the failures
    (each already printed)."""
    record, failed = Record(plan.folder), []
    record.add_all([(i.remote, plan.folder / i.remote.name) for i in plan.verified_now])
    for name, data in plan.listing.keep.items():  # the listing, as the publisher's zip holds it
        partial = part_of(plan.folder / name)
        partial.write_bytes(data)
        partial.replace(plan.folder / name)
    todo, began, fetched, done = plan.to_fetch, time.monotonic(), 0, 0
    for number, item in enumerate(todo, 1):
        remote, dest = item.remote, plan.folder / item.remote.name
        try:
            got = fetch(http, remote, dest, config["download"]["retries"], say=warn)
        except DownloadError as error:
            failed.append(error)
            print(error.render(), file=sys.stderr)
            continue
        record.add(remote, dest)
        fetched, done = fetched + got.size - got.resumed_from, done + 1
        resumed = (f"  resumed at {byte_size(got.resumed_from)}" if got.resumed_from else "") \
            + (f"  resumed after {got.cuts} cut{'s' if got.cuts > 1 else ''}" if got.cuts
               else "")
        print(f"  [{number}/{len(todo)}] {remote.name}  {byte_size(got.size)}{resumed}  "
              f"{check_label(remote)}", flush=True)
    for item in plan.to_unpack:
        dest = plan.folder / item.remote.name
        if dest.is_file():  # fetched and checked (a failed one is named above)
            try:
                count, target = unpack(dest, plan.folder, item.remote.name,
                                       plan.source["unpack"])
            except DownloadError as error:
                failed.append(error)
                print(error.render(), file=sys.stderr)
                continue
            record.add_unpacked(item.remote)
            dest.unlink()
            print(f"  unpacked {item.remote.name}: {count} files into {target}", flush=True)
    seconds = time.monotonic() - began
    print(f"{plan.dataset}: {done} fetched ({byte_size(fetched)} in {seconds:.1f} s), "
          f"{len(plan.items) - len(todo)} already here"
          + (f", {len(failed)} failed (named above): rerun to retry them" if failed else
             "; every file checked"))
    return failed


def warn(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def unpack(archive: Path, folder: Path, name: str, rule) -> tuple[int, Path]:
    """Unpack a checked zip into the folder (or the one its rule names), each file written
    aside and renamed, macOS metadata skipped; (files written, where)."""
    import zipfile

    target, strip = folder, False
    if isinstance(rule, dict):
        match = re.match(rule["match"], PurePosixPath(name).name)
        if match:
            target, strip = folder / match.expand(rule["into"]), bool(rule.get("strip_top"))
    try:
        with zipfile.ZipFile(archive) as z:
            members = [m for m in z.infolist()
                       if not m.is_dir() and not m.filename.startswith(MAC_METADATA)]
            names = [_member_path(m.filename, strip, archive) for m in members]
            needed = sum(m.file_size for m in members)
            free = free_bytes(target)
            if needed > free:
                raise DownloadError(f"{archive} unpacks to {byte_size(needed)}, "
                                    f"{byte_size(free)} are free in {target}",
                                    fix="free space there and rerun: the checked archive is "
                                        "kept and unpacked then")
            for member, relative in zip(members, names, strict=True):
                dest = target / relative
                dest.parent.mkdir(parents=True, exist_ok=True)
                partial = part_of(dest)
                with z.open(member) as src, partial.open("wb") as out:
                    shutil.copyfileobj(src, out, MIB)
                partial.replace(dest)
    except zipfile.BadZipFile as exc:
        raise DownloadError(f"{archive}: not a readable zip ({exc}), though its checksum "
                            "matched the listing",
                            fix=f"delete {archive} and rerun; if it fails again, unpack it by "
                                "hand to see why") from exc
    return len(members), target


def _member_path(filename: str, strip: bool, archive: Path) -> str:
    parts = PurePosixPath(filename).parts
    if strip:
        parts = parts[1:]
    if not stays_inside(filename, parts):
        raise DownloadError(f"{archive} holds {filename!r}, which would land outside the "
                            "dataset's folder",
                            fix="unpack it by hand after checking where its files belong")
    return "/".join(parts)


def download(config: dict, roots: dict, names, dry_run: bool) -> int:
    """The command: each named dataset fetched (or, in a dry run, planned); the exit code."""
    refuse_inside_a_job()
    try:
        datasets = datasets_named(config, names)
    except UsageError as error:
        raise UsageError(error.message, fix="name datasets of config/datasets.yaml (`embedprobe "
                                            "list datasets`), or benchmarks or target groups "
                                            "for theirs") from None
    http = session()
    failed = refused = False
    for dataset in datasets:
        folder = dataset_root(config, roots, dataset)
        steps = instructions(config, dataset, str(folder))
        if steps:
            kind, text = steps
            print(f"{dataset}: {kind}: nothing fetched")
            print("\n".join("  " + line for line in text.splitlines()))
            warn(f"error: {dataset} is not fetched by this command ({kind}): see the steps "
                 f"above\nfix: follow them, then `embedprobe data status {dataset}`")
            refused = True
            continue
        try:
            plan = plan_dataset(config, dataset, folder, config["datasets"][dataset]["source"],
                                http)
            free = free_bytes(folder)
            print("\n".join(describe_plan(plan, free, dry_run)), flush=True)
            short = space_error(plan, free)
            if short:
                raise short
            if not plan.to_fetch and not plan.to_unpack:
                print(f"{dataset}: every file is here and checked")
                continue
            if dry_run:
                continue
            lock = FolderLock(plan.folder)
            try:
                failed |= bool(fetch_dataset(config, plan, http))
            finally:
                lock.release()
        except UsageError:
            raise
        except EmbedprobeError as error:
            warn(error.render())
            failed = True
    if dry_run:
        print("dry run: nothing fetched")
    return 1 if failed else 2 if refused else 0
