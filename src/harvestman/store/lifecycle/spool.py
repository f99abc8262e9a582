"""Export files that are safe to delete behind: gzip files written one complete member at a time.

Retention deletes rows only after they are on disk. Each batch is written as its own gzip member
(RFC 1952 allows a file of several; ``gzip``, ``zcat`` and Python read them as one stream) and
fsynced before the caller deletes the batch, so a crash at any point leaves a valid file that
holds every deleted row::

    >>> import gzip, pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "rows.csv.gz"
    >>> with GzipSpool(path, header=b"a\\n") as spool:
    ...     spool.write(b"1\\n")
    ...     spool.write(b"2\\n")
    >>> gzip.decompress(path.read_bytes())
    b'a\\n1\\n2\\n'
"""

from __future__ import annotations

import gzip
import os
from pathlib import Path
from types import TracebackType
from typing import IO


class GzipSpool:
    """A gzip file created on the first write (never before, never over an existing file).

    ``header`` goes at the start of the first member (a CSV header line). ``write`` returns once
    the member is durable. Use as a context manager; ``path`` stays unset until a write happened.
    """

    def __init__(self, path: Path, *, header: bytes = b"", level: int = 6) -> None:
        self.target = path
        self.header = header
        self.level = level
        self.bytes_written = 0
        self._file: IO[bytes] | None = None

    @property
    def path(self) -> Path | None:
        """The file, once something was written to it."""
        return self.target if self._file is not None else None

    def write(self, data: bytes) -> None:
        """Append ``data`` as one gzip member and fsync it."""
        if self._file is None:
            self.target.parent.mkdir(parents=True, exist_ok=True)
            self._file = open(self.target, "xb")  # noqa: SIM115 -- closed in close()
            data = self.header + data
            _fsync_directory(self.target.parent)  # the new name survives a crash too
        member = gzip.compress(data, compresslevel=self.level, mtime=0)
        self._file.write(member)
        self._file.flush()
        os.fsync(self._file.fileno())
        self.bytes_written += len(member)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()

    def __enter__(self) -> GzipSpool:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _fsync_directory(directory: Path) -> None:
    if os.name != "posix":
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
