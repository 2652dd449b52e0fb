"""Streams of big uploads: a reader that reports how far it has read, and the row cap.

Pure: no database, no network. ``ProgressReader`` wraps the binary stream an importer reads
(``core.uploads.iter_records`` reads it through a decoder) and calls ``report(bytes read)``
now and then; ``capped_records`` stops the records of a file after ``max_rows`` with an
error naming the line, so that an importer refuses the file as it refuses a bad line.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import IO, Any

from core.uploads import UploadLineError

TOO_MANY_ROWS = "upload.E030"


class ProgressReader:
    """A binary stream that calls ``report(bytes read so far)`` at most every
    ``every_seconds`` while it is read, and once more at its end."""

    def __init__(self, stream: IO[bytes], report: Callable[[int], Any], every_seconds=0.5):
        self.stream = stream
        self.report = report
        self.every_seconds = every_seconds
        self.bytes_read = 0
        self._reported_at = 0.0

    def _count(self, data: bytes) -> bytes:
        self.bytes_read += len(data)
        now = time.monotonic()
        if not data or now - self._reported_at >= self.every_seconds:
            self._reported_at = now
            self.report(self.bytes_read)
        return data

    def read(self, size: int = -1) -> bytes:
        return self._count(self.stream.read(size))

    def readline(self, size: int = -1) -> bytes:
        return self._count(self.stream.readline(size))

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        self.stream.close()


def capped_records(records: Iterator[tuple[int, Any]], max_rows: int) -> Iterator[tuple[int, Any]]:
    """Yield ``records`` (``(line, record)`` pairs) up to ``max_rows`` of them; at the next one
    yield an ``upload.E030`` error for its line and stop. ``max_rows`` 0: no cap."""
    for count, (line, record) in enumerate(records, 1):
        if max_rows and count > max_rows:
            yield (
                line,
                UploadLineError(
                    line,
                    TOO_MANY_ROWS,
                    f"the file has more than {max_rows} rows, the most an upload may have "
                    "(UPLOAD_MAX_ROWS)",
                ),
            )
            return
        yield line, record
