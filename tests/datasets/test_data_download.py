"""`embedprobe data download`: the real command against a publisher's server on the loopback
(tests/helpers/http_mirror.py) serving look-alike files the project's generators write, in the
publisher's URL layout, with the publisher's kind of listing (PhysioNet's SHA256SUMS.txt,
Zenodo's record JSON, plain files). No test reaches the internet: each points the dataset's host
at the loopback server (`download.hosts.<host>=http://127.0.0.1:PORT`)."""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
import zipfile

import pytest

from embedprobe.core.config import check_names, load_config
from embedprobe.datasets import download as download_module
from embedprobe.datasets.download import JOB_MARKERS
from embedprobe.datasets.transfer import RECORD

from helpers.http_mirror import Mirror, sha256sums
from helpers.project import VENV_BIN
from helpers.realdata import realdata

SLEEP_EDF = "sleep_edf_expanded"  # the real entry: PhysioNet sleep-edfx/1.0.0
PREFIX = "sleep-edfx/1.0.0"
FOLDER = "sleep-edf-database-expanded-1.0.0"  # its path under data_root
BIG = "sleep-cassette/SC4001E0-PSG.edf"


def environment() -> dict:
    """This process's environment without a scheduler's job variables (a test run inside a
    job must not be refused for it)."""
    return {k: v for k, v in os.environ.items() if k not in dict(JOB_MARKERS)}


def embedprobe(*args: str, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "embedprobe.cli", *args], capture_output=True,
                          text=True, env=env or environment(), timeout=300)


def download(mirror: Mirror, data, *args: str, host="physionet") -> subprocess.CompletedProcess:
    """`data download ARGS` from the mirror into `data`; ARGS holding `=` are --config's."""
    settings = [a for a in args if "=" in a]
    return embedprobe("data", "download", *[a for a in args if "=" not in a], "--config",
                      f"data_root={data}", f"download.hosts.{host}={mirror.url}", *settings)


@pytest.fixture(scope="module")
def sleep_edf_files(tmp_path_factory) -> dict[str, bytes]:
    """A two-night Sleep-EDF look-alike as PhysioNet lays the files out (the generator's
    MANIFEST.tsv is the look-alike's own, not PhysioNet's: not served)."""
    from embedprobe.datasets.sleep_edf.lookalike import generate

    root = tmp_path_factory.mktemp("publisher") / "sleep-edf"
    generate(root, n_subjects=2, nights=1, hours=0.2, seed=0)
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file() and p.name != "MANIFEST.tsv"}


@pytest.fixture
def physionet(sleep_edf_files):
    """The loopback server serving the look-alike at PhysioNet's paths, with its
    SHA256SUMS.txt."""
    with Mirror() as mirror:
        for name, data in sleep_edf_files.items():
            mirror.serve(f"{PREFIX}/{name}", data)
        mirror.serve(f"{PREFIX}/SHA256SUMS.txt", sha256sums(sleep_edf_files))
        yield mirror


def test_a_physionet_dataset_lands_byte_identical_where_data_status_finds_it(
        physionet, sleep_edf_files, tmp_path):
    data = tmp_path / "data"
    run = download(physionet, data, SLEEP_EDF)
    assert run.returncode == 0, run.stderr
    folder = data / FOLDER
    for name, served in sleep_edf_files.items():
        assert (folder / name).read_bytes() == served, name
    assert (folder / "SHA256SUMS.txt").read_bytes() == physionet.routes[
        f"/{PREFIX}/SHA256SUMS.txt"]  # kept, as PhysioNet's own zip holds it
    assert not list(folder.rglob("*.part"))
    assert f"  [2/5] {BIG}  3.6 MB  sha256 ok" in run.stdout.splitlines()
    assert run.stdout.splitlines()[-1].startswith(f"{SLEEP_EDF}: 5 fetched (7.0 MB in ")
    assert run.stdout.splitlines()[-1].endswith(", 0 already here; every file checked")

    status = embedprobe("data", "status", SLEEP_EDF, "--config", f"data_root={data}",
                        f"datasets.{SLEEP_EDF}.expected_recordings=2")
    assert status.returncode == 0, status.stdout
    assert status.stdout.splitlines()[1].split()[:4] == [SLEEP_EDF, "sleep_edf", "found", "2/2"]

    # again: every file recorded as checked, none read from the server a second time
    served_before = len(physionet.requests)
    again = download(physionet, data, SLEEP_EDF)
    assert again.returncode == 0, again.stderr
    assert "  here and checked: 5; to fetch: 0 (0 B); free there: " in again.stdout
    assert again.stdout.splitlines()[-1] == f"{SLEEP_EDF}: every file is here and checked"
    assert [r[1] for r in physionet.requests[served_before:]] == [f"/{PREFIX}/SHA256SUMS.txt"]


def test_a_cut_connection_is_resumed_from_the_byte_it_stopped_at(physionet, sleep_edf_files,
                                                                 tmp_path):
    data = tmp_path / "data"
    cut = 1_000_000
    physionet.cut_after[f"/{PREFIX}/{BIG}"] = cut
    first = download(physionet, data, SLEEP_EDF, "download.retries=0")
    assert first.returncode == 1
    assert (f"error: {BIG}: the connection was cut at 1.0 MB (ProtocolError); what arrived "
            "is kept in SC4001E0-PSG.edf.part\nfix: rerun the same command: it resumes from "
            "there") in first.stderr
    part = data / FOLDER / (BIG + ".part")
    assert part.read_bytes() == sleep_edf_files[BIG][:cut]
    assert not (data / FOLDER / BIG).exists()  # nothing unchecked where a reader looks

    dry = download(physionet, data, SLEEP_EDF, "--dry-run")
    assert ["resume", BIG, "3.6", "MB", "1.0", "MB", "here"] in [
        line.split() for line in dry.stdout.splitlines()]

    second = download(physionet, data, SLEEP_EDF)
    assert second.returncode == 0, second.stderr
    assert physionet.gets(f"{PREFIX}/{BIG}") == [None, f"bytes={cut}-"]
    assert (data / FOLDER / BIG).read_bytes() == sleep_edf_files[BIG]
    assert not part.exists()
    assert f"  [1/1] {BIG}  3.6 MB  resumed at 1.0 MB  sha256 ok" in second.stdout.splitlines()


def test_a_cut_within_one_run_is_resumed_by_its_retries(physionet, sleep_edf_files, tmp_path):
    data = tmp_path / "data"
    physionet.cut_after[f"/{PREFIX}/{BIG}"] = 700_000
    run = download(physionet, data, SLEEP_EDF)  # download.retries: the schema's 3
    assert run.returncode == 0, run.stderr
    assert (f"note: {BIG}: the connection was cut at 700.0 kB (ProtocolError); resuming "
            "(try 1 of 3)") in run.stderr
    assert physionet.gets(f"{PREFIX}/{BIG}") == [None, "bytes=700000-"]
    assert (data / FOLDER / BIG).read_bytes() == sleep_edf_files[BIG]


def test_a_server_that_ignores_range_sends_the_file_again_whole(physionet, sleep_edf_files,
                                                                 tmp_path):
    data = tmp_path / "data"
    physionet.cut_after[f"/{PREFIX}/{BIG}"] = 500_000
    assert download(physionet, data, SLEEP_EDF, "download.retries=0").returncode == 1
    physionet.ignore_range = True
    run = download(physionet, data, SLEEP_EDF)
    assert run.returncode == 0, run.stderr
    assert physionet.gets(f"{PREFIX}/{BIG}") == [None, "bytes=500000-"]
    assert (data / FOLDER / BIG).read_bytes() == sleep_edf_files[BIG]
    # the whole file came again: no "resumed at", and all of its bytes count as fetched
    assert f"  [1/1] {BIG}  3.6 MB  sha256 ok" in run.stdout.splitlines()
    summary = run.stdout.splitlines()[-1]
    assert summary.startswith(f"{SLEEP_EDF}: 1 fetched (3.6 MB in "), summary
    assert summary.endswith(" s), 4 already here; every file checked"), summary


def test_a_corrupted_file_fails_its_checksum_and_nothing_takes_its_place(
        physionet, sleep_edf_files, tmp_path):
    data = tmp_path / "data"
    damaged = bytearray(sleep_edf_files[BIG])
    damaged[5000] ^= 0xFF
    physionet.serve(f"{PREFIX}/{BIG}", bytes(damaged))  # the listing keeps the true sha256
    run = download(physionet, data, SLEEP_EDF)
    assert run.returncode == 1
    listed = hashlib.sha256(sleep_edf_files[BIG]).hexdigest()
    got = hashlib.sha256(damaged).hexdigest()
    assert (f"error: {BIG} has sha256 {got}, the publisher lists {listed}: the download was "
            "deleted, nothing was put in its place") in run.stderr
    assert not (data / FOLDER / BIG).exists()
    assert not (data / FOLDER / (BIG + ".part")).exists()
    assert (data / FOLDER / "SC-subjects.xls").read_bytes() == sleep_edf_files["SC-subjects.xls"]
    assert run.stdout.splitlines()[-1] == (
        f"{SLEEP_EDF}: 4 fetched (3.4 MB in " + run.stdout.splitlines()[-1].split(" in ")[1])
    assert run.stdout.splitlines()[-1].endswith(
        ", 0 already here, 1 failed (named above): rerun to retry them")


def test_a_dry_run_lists_the_files_and_the_space_and_fetches_nothing(physionet, tmp_path):
    data = tmp_path / "data"
    run = download(physionet, data, SLEEP_EDF, "--dry-run")
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0] == f"{SLEEP_EDF}: PhysioNet {PREFIX} into {data / FOLDER}"
    assert lines[1] == (f"  listed: 5 files ({physionet.url}/{PREFIX}/SHA256SUMS.txt), each "
                        "checked by its sha256 there")
    assert lines[2].startswith("  here and checked: 0; to fetch: 5 (7.0 MB); free there: ")
    assert lines[3].split() == ["action", "file", "size"]
    assert lines[5].split() == ["fetch", BIG, "3.6", "MB"]
    assert lines[-1] == "dry run: nothing fetched"
    assert not data.exists()
    assert {m for m, _, _ in physionet.requests} == {"GET", "HEAD"}
    assert [p for m, p, _ in physionet.requests if m == "GET"] == [f"/{PREFIX}/SHA256SUMS.txt"]


def test_too_little_space_stops_before_any_transfer(physionet, tmp_path, monkeypatch, capsys):
    """The free space is the file system's: made short here in-process (no small disk needed)."""
    config = load_config()
    config.update(data_root=str(tmp_path / "data"))
    config["download"] = {"hosts": {"physionet": physionet.url}}
    check_names(config)
    monkeypatch.setattr(download_module, "free_bytes", lambda folder: 1_000_000)
    monkeypatch.setattr(download_module, "job_context", lambda: None)
    roots = {"data_root": str(tmp_path / "data")}
    for dry_run in (True, False):
        assert download_module.download(config, roots, [SLEEP_EDF], dry_run) == 1
        err = capsys.readouterr().err
        assert (f"error: {SLEEP_EDF} needs 7.0 MB in {tmp_path / 'data' / FOLDER}, 1.0 MB are "
                "free there\nfix: free space there, or point the data root at a larger disk "
                "(--config data_root=... or EMBEDPROBE_DATA_ROOT)") in err
    assert not (tmp_path / "data").exists()
    assert not [p for m, p, _ in physionet.requests if m == "GET" and "SHA256" not in p]


def test_a_credentialed_or_manual_dataset_gets_its_publishers_steps(tmp_path):
    data = tmp_path / "data"
    run = embedprobe("data", "download", "tuab", "isruc", "--config", f"data_root={data}")
    assert run.returncode == 2
    lines = run.stdout.splitlines()
    assert lines[0] == "tuab: credentialed: nothing fetched"
    assert "  1. Fill in the data sharing form linked at" in lines
    assert f"       {data}/tuh_eeg_abnormal/v3.0.1/" in lines  # {folder}: the reader's
    assert "isruc: manual: nothing fetched" in lines
    assert (f"     into {data}/ISRUC-Sleep/subgroupI/, then `unrar x N.rar` there (it holds "
            "the folder N/);") in lines
    assert ("error: tuab is not fetched by this command (credentialed): see the steps above\n"
            "fix: follow them, then `embedprobe data status tuab`") in run.stderr
    assert not data.exists()


def test_a_dataset_without_a_source_or_a_look_alike_says_so(tmp_path):
    mine = tmp_path / "mine.yaml"
    mine.write_text("datasets:\n  mine: {format: eegmat, path: my-eegmat}\n")
    run = embedprobe("data", "download", "mine", "eegmat_demo", "--configfile", str(mine),
                     "--config", f"data_root={tmp_path}")
    assert run.returncode == 2
    assert run.stdout.splitlines() == [
        "mine: no source: nothing fetched",
        "  no open source is recorded for mine (no `source:` in config/datasets.yaml): put its "
        f"files under {tmp_path}/my-eegmat in the layout of docs/usage.md's datasets table",
        "eegmat_demo: look-alike: nothing fetched",
        "  eegmat_demo is a generated look-alike, not a download: embedprobe demo-data "
        f"--dataset eegmat_demo writes it into {tmp_path}/demo/eegmat"]


def test_an_unknown_name_is_a_usage_error_with_the_closest():
    run = embedprobe("data", "download", "sleep_edf_expandd")
    assert run.returncode == 2
    assert run.stderr.splitlines() == [
        "error: 'sleep_edf_expandd' is no dataset, benchmark or target group (did you mean "
        "'sleep_edf_expanded'?)",
        "fix: name datasets of config/datasets.yaml (`embedprobe list datasets`), or "
        "benchmarks or target groups for theirs"]


def test_it_refuses_to_run_inside_a_scheduler_job(physionet, tmp_path):
    run = embedprobe("data", "download", SLEEP_EDF, "--config", f"data_root={tmp_path}",
                     f"download.hosts.physionet={physionet.url}",
                     env=environment() | {"SLURM_JOB_ID": "4242"})
    assert run.returncode == 2
    assert run.stderr.startswith("error: data download runs on a login node, never inside a "
                                 "job: this is a SLURM job (SLURM_JOB_ID=4242).")
    assert "\nfix: run `embedprobe data download ...` on the login node" in run.stderr
    assert physionet.requests == []


def test_it_refuses_to_run_inside_a_snakemake_job(physionet, tmp_path):
    """The real snakemake runs a rule whose shell calls the command."""
    (tmp_path / "Snakefile").write_text(
        "rule fetch:\n"
        "    output: 'rc.txt'\n"
        f"    shell: '{sys.executable} -m embedprobe.cli data download {SLEEP_EDF} --config "
        f"data_root={tmp_path}/data download.hosts.physionet={physionet.url} 2> err.txt "
        "|| echo $? > {output}'\n")
    done = subprocess.run([str(VENV_BIN / "snakemake"), "--cores", "1", "--quiet"],
                          cwd=tmp_path, capture_output=True, text=True, env=environment(),
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "rc.txt").read_text().strip() == "2"
    err = (tmp_path / "err.txt").read_text()
    assert "never inside a job: this is a Snakemake job (process " in err
    assert physionet.requests == []


def zipped(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buffer.getvalue()


def test_a_zenodo_record_is_md5_checked_and_its_zips_unpacked_as_moabb_does(tmp_path):
    """Brain Invaders 2013a: Zenodo's record JSON lists subjectNN_sessionMM.zip with md5s; each
    zip's one top folder goes into subject_NN/ (MOABB's BI2013a), the __MACOSX entries not."""
    from embedprobe.datasets.bi2013a.lookalike import write_lookalike

    root = tmp_path / "publisher"
    write_lookalike(root, {"subjects": 2, "sessions": 2, "training_repetitions": 2,
                           "online_repetitions": 1, "seed": 0})
    record, zips, unpacked = "api/records/2669187", {}, {}
    for subject in (1, 2):
        folder = root / f"subject_{subject:02d}"
        for session in (1, 2):
            top = f"subject{subject:02d}_session{session:02d}"
            members = {f"{top}/meta.yml": (folder / "meta.yml").read_bytes()}
            for path in sorted((folder / f"Session{session}").iterdir()):
                members[f"{top}/Session{session}/{path.name}"] = path.read_bytes()
                unpacked[f"subject_{subject:02d}/Session{session}/{path.name}"] = \
                    path.read_bytes()
            unpacked[f"subject_{subject:02d}/meta.yml"] = (folder / "meta.yml").read_bytes()
            members[f"__MACOSX/{top}/._meta.yml"] = b"\0\5\26\7"
            zips[f"{top}.zip"] = zipped(members)
    zips["README.pdf"] = b"%PDF not a zip, and not included"
    with Mirror() as zenodo:
        zenodo.serve(record, json.dumps({"files": [
            {"key": key, "size": len(data), "checksum": f"md5:{hashlib.md5(data).hexdigest()}"}
            for key, data in zips.items()]}).encode())
        for key, data in zips.items():
            zenodo.serve(f"{record}/files/{key}/content", data)
        data = tmp_path / "data"
        run = download(zenodo, data, "bi2013a", host="zenodo")
        assert run.returncode == 0, run.stderr
        assert "  listed: 4 files (" in run.stdout  # include: subject*.zip
        assert "  [1/4] subject01_session01.zip  " in run.stdout
        assert "  md5 ok\n" in run.stdout
        runs = len(list((root / "subject_02" / "Session2").iterdir()))
        assert (f"  unpacked subject02_session02.zip: {runs + 1} files into "
                f"{data}/bi2013a/subject_02") in run.stdout  # meta.yml and the runs
        files = {p.relative_to(data / "bi2013a").as_posix(): p.read_bytes()
                 for p in (data / "bi2013a").rglob("*") if p.is_file() and p.name != RECORD}
        assert files == unpacked  # the zips are gone once unpacked; no __MACOSX, no README
        status = embedprobe("data", "status", "bi2013a", "--config", f"data_root={data}",
                            "datasets.bi2013a.expected_recordings=4")
        assert status.stdout.splitlines()[1].split()[2:4] == ["found", "4/4"], status.stdout
        again = download(zenodo, data, "bi2013a", host="zenodo")
        assert again.stdout.splitlines()[-1] == "bi2013a: every file is here and checked"


def test_plain_files_are_checked_by_size_and_unpacked_into_their_set(tmp_path):
    """Bonn: the university's five zips, no checksum published, each into its set's folder."""
    from embedprobe.datasets.bonn.lookalike import write_lookalike

    root = tmp_path / "publisher"
    write_lookalike(root, {"clips_per_set": 2, "seed": 0})
    ids = {"z": 21874, "o": 21872, "n": 21871, "f": 21870, "s": 21875}
    with Mirror() as ukbonn:
        for letter, number in ids.items():
            clips = sorted((root / letter.upper()).iterdir())
            ukbonn.serve(f"site/assets/files/{number}/{letter}.zip",
                         zipped({p.name: p.read_bytes() for p in clips}))
        data = tmp_path / "data"
        run = download(ukbonn, data, "bonn", host="ukbonn")
        assert run.returncode == 0, run.stderr
        assert "no checksum published: each checked by its size" in run.stdout
        assert "  [1/5] z.zip  " in run.stdout and "  size ok\n" in run.stdout
        assert (data / "bonn" / "s" / "S001.txt").read_bytes() == \
            (root / "S" / "S001.txt").read_bytes()
        assert not list((data / "bonn").glob("*.zip"))
        status = embedprobe("data", "status", "bonn", "--config", f"data_root={data}",
                            "datasets.bonn.expected_recordings=10")
        assert status.stdout.splitlines()[1].split()[2:4] == ["found", "10/10"], status.stdout


def test_the_publishers_own_files_pass_against_their_own_checksums(tmp_path):
    """PhysioNet's real SHA256SUMS.txt of CHB-MIT, served with the real files of it that sit
    in ../shared/realdata (`include` picks those): the checksums are the publisher's."""
    folder = realdata("chb-mit-scalp-eeg-database-1.0.0")
    real = ["RECORDS", "SUBJECT-INFO", "chb01/chb01-summary.txt", "chb01/chb01_03.edf.seizures"]
    with Mirror() as physionet:
        physionet.serve("chbmit/1.0.0/SHA256SUMS.txt", (folder / "SHA256SUMS.txt").read_bytes())
        for name in real:
            physionet.serve(f"chbmit/1.0.0/{name}", (folder / name).read_bytes())
        data = tmp_path / "data"
        run = download(physionet, data, "chbmit",
                       f"datasets.chbmit.source.include=[{','.join(real)}]")
        assert run.returncode == 0, run.stderr
        for name in real:
            assert (data / "chb-mit-scalp-eeg-database-1.0.0" / name).read_bytes() == \
                (folder / name).read_bytes()


def test_where_a_dataset_is_downloaded_from_reruns_no_job():
    """A job's config slice leaves out `download:` and the dataset's `source:`: a mirror, or a
    corrected source, changes none of the files the jobs read."""
    from embedprobe.smk.job_configs import job_config_json

    config = load_config()
    check_names(config)
    before = job_config_json(config, "sleep_stage", SLEEP_EDF, "biot_random")
    config["download"]["hosts"]["physionet"] = "https://physionet-open.s3.amazonaws.com"
    config["datasets"][SLEEP_EDF]["source"] = {"physionet": "sleep-edfx/1.0.1"}
    assert job_config_json(config, "sleep_stage", SLEEP_EDF, "biot_random") == before
    assert "source" not in json.loads(before)["datasets"][SLEEP_EDF]


def test_an_archive_member_that_would_land_outside_its_folder_is_refused(tmp_path):
    from embedprobe.core.errors import DownloadError

    archive = tmp_path / "evil.zip"
    archive.write_bytes(zipped({"ok/a.txt": b"a", "ok/../../escape.txt": b"x"}))
    with pytest.raises(DownloadError, match="'ok/../../escape.txt', which would land outside"):
        download_module.unpack(archive, tmp_path / "data", "evil.zip", True)
    assert not (tmp_path / "escape.txt").exists()
    assert not (tmp_path / "data").exists()  # checked before a file is written
