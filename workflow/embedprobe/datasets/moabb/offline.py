"""MOABB's own loading, offline: its dataset classes by name, the data folder it reads, and no
network while it reads.

A MOABB dataset class fetches any file it does not find in its MNE data folder. A job runs
offline, so every call into MOABB here runs with socket connects and name lookups refused:
a file MOABB would download raises `Offline` instead, which the reader reports as a missing
subject with the command that fetches it on a login node. The calls run one at a time (MOABB
and the refusal are process-wide).

The folder: an entry's `path: MNE_DATA` is the folder MOABB itself resolves (MNE_DATA from the
environment or MNE's config, else ~/mne_data); any other `path` (under data_root, or absolute)
is pinned for MOABB: MNE_DATA and, for each `MNE-<sign>-data` folder in it and each sign
MOABB asks MNE's config for while it reads (a folder not there yet), MNE's
MNE_DATASETS_<SIGN>_PATH point there while MOABB reads, so a user's own settings cannot send
it elsewhere. With `path: MNE_DATA` a sign MNE's config does not name reads MOABB's folder
the same way, so that MOABB writes nothing into MNE's config file, neither here nor in a dry
run.

Some classes refuse to look for their files unless their licence is accepted (Shin2017A's
`accept`): they are made with accept=True here, which downloads nothing (jobs never do), and
the fetch command a user runs to download says accept=True itself.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import socket
import threading
import warnings
from pathlib import Path

from embedprobe.core.errors import UsageError
from embedprobe.core.names import closest

MNE_DATA = "MNE_DATA"  # an entry's `path` meaning the folder MOABB resolves itself
_LOCK = threading.RLock()
_SIGN_FOLDER = re.compile(r"^MNE-(?P<sign>.+)-data$")
_SIGN_KEY = re.compile(r"^MNE_DATASETS_.+_PATH$")


class Offline(OSError):
    """MOABB reached for the network: a file it needs is not in its data folder."""


class _Refusal:
    """Refuses every connect and name lookup, remembering that it did (the HTTP client wraps
    the error in its own)."""

    def __init__(self):
        self.refused = False

    def __call__(self, *args, **kwargs):
        self.refused = True
        raise Offline("a MOABB dataset tried to download a file (jobs run offline)")


@functools.lru_cache(maxsize=1)
def dataset_names() -> tuple[str, ...]:
    """The dataset classes moabb.datasets exports (FakeDataset and the like included)."""
    import moabb.datasets as module
    from moabb.datasets.base import BaseDataset

    return tuple(sorted(name for name, value in vars(module).items()
                        if isinstance(value, type) and issubclass(value, BaseDataset)
                        and value is not BaseDataset and not name.startswith("_")))


def dataset_class(name: str) -> type:
    """The MOABB dataset class `name`; an unknown name is refused with the closest one."""
    import moabb
    import moabb.datasets as module

    names = dataset_names()
    if name not in names:
        raise UsageError(f"moabb_dataset: {name!r} is not a dataset class of MOABB "
                         f"{moabb.__version__}{closest(name, names)}",
                         fix="name a class of moabb.datasets as MOABB spells it (python -c "
                             "'import moabb.datasets as d; print(d.__all__)')")
    return getattr(module, name)


@functools.lru_cache(maxsize=8)
def dataset(name: str):
    """An instance of the MOABB dataset class `name` (all its subjects)."""
    cls = dataset_class(name)
    return cls(accept=True) if _takes_accept(cls) else cls()


def _takes_accept(cls) -> bool:
    """Whether the class asks for its licence to be accepted (Shin2017A(accept=True))."""
    import inspect

    return "accept" in inspect.signature(cls).parameters


def default_folder() -> Path:
    """MOABB's folder when no entry pins one: MNE_DATA (environment, then MNE's config), else
    ~/mne_data, as moabb.datasets.download.get_dataset_path falls back."""
    from mne import get_config

    value = get_config(MNE_DATA)
    return Path(value).expanduser() if value else Path.home() / "mne_data"


def _pinned_environment(folder: Path) -> dict[str, str]:
    settings = {MNE_DATA: str(folder)}
    if folder.is_dir():
        for child in folder.iterdir():
            match = _SIGN_FOLDER.match(child.name)
            if match and child.is_dir():
                settings[f"MNE_DATASETS_{match['sign'].upper()}_PATH"] = str(folder)
    return settings


@contextlib.contextmanager
def reading(folder: Path, pinned: bool):
    """MOABB reads `folder` (pinned: see the module's docstring), offline, one caller at a
    time; an attempt to download raises Offline."""
    with _LOCK:
        from moabb.datasets import download

        settings = _pinned_environment(Path(folder)) if pinned else {}
        saved = {key: os.environ.get(key) for key in settings}
        connect, lookup = socket.socket.connect, socket.getaddrinfo
        ask = download.get_config
        refuse = _Refusal()
        os.environ.update(settings)
        socket.socket.connect, socket.getaddrinfo = refuse, refuse

        def pinned_config(key=None, *args, **kwargs):
            """A sign whose folder is not there yet (pinned), or that MNE's config does not
            name (MOABB's own folder): set for this read, before MOABB would write it into
            MNE's config file."""
            if (key is not None and _SIGN_KEY.match(key) and key not in saved
                    and (pinned or ask(key) is None)):
                saved[key] = os.environ.get(key)
                os.environ[key] = str(folder)
            return ask(key, *args, **kwargs)

        download.get_config = pinned_config
        try:
            with warnings.catch_warnings():
                # MOABB's loaders ask MNE for montages it has renamed: not the user's to fix
                warnings.simplefilter("ignore", FutureWarning)
                yield
        except Exception as error:
            if refuse.refused:
                raise Offline(str(error)) from error
            raise
        finally:
            socket.socket.connect, socket.getaddrinfo = connect, lookup
            download.get_config = ask
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


def fetch_command(name: str, subjects: list[int] | None, folder: Path | None) -> str:
    """The command that downloads `subjects` (None: all) of the dataset on a machine with
    network, into `folder` (None: MOABB's own)."""
    arguments = [] if subjects is None else [f"subject_list={subjects}"]
    arguments += [] if folder is None else [f"path='{folder}'"]
    # accept=True: whoever runs it accepts the dataset's licence (MOABB asks for it)
    made = "accept=True" if _takes_accept(dataset_class(name)) else ""
    return (f"python -c \"from moabb.datasets import {name}; "
            f"{name}({made}).download({', '.join(arguments)})\"")
