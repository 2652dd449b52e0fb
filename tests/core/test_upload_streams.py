"""Streams of big uploads (no database): the progress reader and the row cap."""

from __future__ import annotations

import io

from core.upload_streams import TOO_MANY_ROWS, ProgressReader, capped_records
from core.uploads import UploadLineError, iter_records


def test_the_reader_reports_the_bytes_read_and_its_end():
    reports: list[int] = []
    data = b"".join(b'{"context": "line %d"}\n' % index for index in range(1000))
    reader = ProgressReader(io.BytesIO(data), reports.append, every_seconds=0)
    records = list(iter_records(reader, "jsonl"))
    assert len(records) == 1000
    assert reports and reports == sorted(reports)
    assert reports[-1] == len(data) == reader.bytes_read


def test_records_beyond_the_cap_end_the_file_with_an_error_naming_the_line():
    data = io.BytesIO(b"".join(b'{"n": %d}\n' % index for index in range(5)))
    records = list(capped_records(iter_records(data, "jsonl"), 3))
    assert [line for line, _ in records] == [1, 2, 3, 4]
    error = records[-1][1]
    assert isinstance(error, UploadLineError)
    assert (error.line, error.code) == (4, TOO_MANY_ROWS) and "3 rows" in error.message
    assert len(list(capped_records(iter_records(io.BytesIO(data.getvalue()), "jsonl"), 0))) == 5
