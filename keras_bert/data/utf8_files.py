"""Labelled data files read as UTF-8 text: a file that is not names itself and the line where
its first undecodable byte is, where Python's decoder names neither."""

from __future__ import annotations

import os
from pathlib import Path

from keras_bert.errors import DataError


def read_utf8(path: str | os.PathLike) -> str:
    """The text of a UTF-8 file, a byte-order mark kept (a CSV reader strips it).

    Raises:
        DataError: the file is not UTF-8: its path, the line and the byte.

    Example:
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "train.tsv"
    >>> _ = path.write_bytes("café\\tpos\\n".encode("latin-1"))
    >>> read_utf8(path)
    Traceback (most recent call last):
    ...
    keras_bert.errors.DataError: .../train.tsv:1: not UTF-8 (byte 3 is b'\\xe9'): save it as UTF-8.
    """
    data = Path(path).read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        byte = data[error.start : error.start + 1]
        raise DataError(
            f"{path}:{line}: not UTF-8 (byte {error.start} is {byte!r}): save it as UTF-8."
        ) from None
