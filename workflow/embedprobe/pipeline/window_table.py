"""The window table: one row per window of a store, in row order (its recording, subject,
start and label, and whatever extra columns the task adds), as every store keeps it.

REQUIRED_COLUMNS and the dtypes an extra column may take are its schema; its checksum is the
`windows_sha256` of a cache's identity (pipeline/store_identity.py); its HDF5 form is a group
of one dataset a column, written by pipeline/store_writer.py and read by pipeline/store.py.
"""

from __future__ import annotations

import hashlib
import json

import h5py
import numpy as np
import pandas as pd

REQUIRED_COLUMNS = {"recording": "str", "subject": "str", "start": "int64", "label": "int8"}


def normalize_window_table(table) -> pd.DataFrame:
    """The table as stored: required columns in their dtypes, extra int/float/bool/str columns."""
    frame = pd.DataFrame(table).reset_index(drop=True)
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"window table lacks columns {missing} (has {list(frame.columns)})")
    out = {}
    for name in frame.columns:
        column = frame[name]
        kind = REQUIRED_COLUMNS.get(name) or _column_kind(name, column)
        if kind == "str":
            out[name] = column.astype(str).to_numpy(dtype=object)
        else:
            values = column.to_numpy()
            if kind in ("int64", "int8") and not np.array_equal(values, values.astype(kind)):
                raise ValueError(f"window table column {name!r} does not fit {kind}")
            out[name] = values.astype(kind)
    return pd.DataFrame(out)


def _column_kind(name: str, column: pd.Series) -> str:
    kind = column.dtype.kind
    if kind in "iu":
        return "int64"
    if kind == "b":
        return "bool"
    if kind == "f":
        return "float64"
    if kind in "OSUT" or isinstance(column.dtype, pd.StringDtype):
        return "str"
    raise ValueError(f"window table column {name!r} has unsupported dtype {column.dtype}")


def window_table_sha256(table) -> str:
    """Checksum of the window table's content: column order and integer widths do not count."""
    frame = normalize_window_table(table)
    digest = hashlib.sha256(f"rows={len(frame)}".encode())
    for name in sorted(frame.columns):
        values = frame[name].to_numpy()
        digest.update(f"\0column={name}\0".encode())
        if values.dtype == object:
            digest.update(_utf8_lengths_and_bytes(values))
        elif values.dtype.kind == "f":
            digest.update(b"f" + values.astype("<f8").tobytes())
        else:
            digest.update(b"i" + values.astype("<i8").tobytes())
    return digest.hexdigest()


def _utf8_lengths_and_bytes(values: np.ndarray) -> bytes:
    """Each string's UTF-8 length (<i8), then all of them in UTF-8, as one bytes object. ASCII
    strings (every index's ids) in one encode: their lengths are their characters' (the
    checksum of 17,135 rows: 10-13 -> 5-6 ms; an embed run takes it three times)."""
    joined = "".join(values)
    data = joined.encode()
    if len(data) == len(joined):
        lengths = np.fromiter(map(len, values), "<i8", len(values))
    else:
        encoded = [v.encode() for v in values]
        lengths, data = np.array([len(e) for e in encoded], "<i8"), b"".join(encoded)
    return lengths.tobytes() + data


def write_window_table(group: h5py.Group, frame: pd.DataFrame) -> None:
    group.attrs["columns"] = json.dumps(list(frame.columns))
    for name in frame.columns:
        values = frame[name].to_numpy()
        if values.dtype == object:
            group.create_dataset(name, data=values, dtype=h5py.string_dtype("utf-8"))
        else:
            group.create_dataset(name, data=values)


def read_window_table(group: h5py.Group) -> pd.DataFrame:
    columns = {}
    for name in json.loads(group.attrs["columns"]):
        dataset = group[name]
        is_text = h5py.check_string_dtype(dataset.dtype) is not None
        columns[name] = dataset.asstr()[:].astype(object) if is_text else dataset[:]
    return pd.DataFrame(columns)
