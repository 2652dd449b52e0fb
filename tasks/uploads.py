"""Streamed readers for uploaded JSON Lines and CSV files, with line numbers.

Pure: takes a binary or text stream and yields ``(line_number, record)`` one at a time, so a
100k-line upload never sits in memory. A line that cannot be decoded yields an
``UploadLineError`` instead of a record; callers collect those and keep going, so that every
bad line is reported at once. A JSON line nested deeper than ``MAX_JSON_DEPTH`` (64) levels
is ``upload.E009``, refused before it is parsed.
"""

from __future__ import annotations

import codecs
import csv
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

from tasks.bounded_json import JSONTooDeep, json_loads_bounded

MAX_LINE_BYTES = 1_000_000
MAX_REPORTED_ERRORS = 100


@dataclass(frozen=True)
class UploadLineError:
    line: int
    code: str
    message: str
    path: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"line": self.line, "path": self.path, "code": self.code, "message": self.message}


def detect_format(filename: str, declared: str | None = None) -> str:
    """Return "jsonl" or "csv" from an explicit choice or the file name."""
    if declared in {"jsonl", "csv"}:
        return declared
    lowered = (filename or "").lower()
    if lowered.endswith(".csv"):
        return "csv"
    return "jsonl"


def _text_stream(stream: IO) -> IO[str]:
    if isinstance(stream, io.TextIOBase):
        return stream
    # Uploaded files are bytes; decode incrementally so memory stays flat.
    return codecs.getreader("utf-8-sig")(stream, errors="strict")


def iter_jsonl(stream: IO) -> Iterator[tuple[int, dict | UploadLineError]]:
    """Yield each non-blank line's JSON object, or an error naming the line."""
    text = _text_stream(stream)
    line_number = 0
    while True:
        try:
            line = text.readline(MAX_LINE_BYTES + 1)
        except UnicodeDecodeError as error:
            yield (
                line_number + 1,
                UploadLineError(
                    line_number + 1, "upload.E001", f"not valid UTF-8 ({error.reason})"
                ),
            )
            return
        if not line:
            return
        line_number += 1
        if len(line) > MAX_LINE_BYTES and not line.endswith("\n"):
            yield (
                line_number,
                UploadLineError(
                    line_number, "upload.E002", f"line longer than {MAX_LINE_BYTES} characters"
                ),
            )
            # Skip the rest of the oversized line.
            while line and not line.endswith("\n"):
                line = text.readline(MAX_LINE_BYTES)
            continue
        if not line.strip():
            continue
        try:
            record = json_loads_bounded(line)
        except JSONTooDeep as error:
            yield (
                line_number,
                UploadLineError(line_number, "upload.E009", f"the JSON is {error}"),
            )
            continue
        except json.JSONDecodeError as error:
            yield (
                line_number,
                UploadLineError(
                    line_number, "upload.E003", f"invalid JSON: {error.msg} at column {error.colno}"
                ),
            )
            continue
        if not isinstance(record, dict):
            yield (
                line_number,
                UploadLineError(line_number, "upload.E004", "each line must be a JSON object"),
            )
            continue
        yield line_number, record


def iter_csv(stream: IO) -> Iterator[tuple[int, dict | UploadLineError]]:
    """Yield each CSV row as a dict keyed by the header (line = the row's first line)."""
    text = _text_stream(stream)
    reader = csv.DictReader(text)
    try:
        header = reader.fieldnames
    except (csv.Error, UnicodeDecodeError) as error:
        yield 1, UploadLineError(1, "upload.E005", f"unreadable CSV header: {error}")
        return
    if not header:
        yield 1, UploadLineError(1, "upload.E006", "the CSV file has no header row")
        return
    while True:
        start_line = reader.line_num + 1
        try:
            row = next(reader)
        except StopIteration:
            return
        except (csv.Error, UnicodeDecodeError) as error:
            yield start_line, UploadLineError(start_line, "upload.E005", f"unreadable CSV: {error}")
            return
        if None in row:
            yield (
                start_line,
                UploadLineError(
                    start_line, "upload.E007", "the row has more cells than the header"
                ),
            )
            continue
        yield start_line, {key: value for key, value in row.items() if key}


def iter_records(stream: IO, fmt: str) -> Iterator[tuple[int, dict | UploadLineError]]:
    if fmt == "csv":
        return iter_csv(stream)
    return iter_jsonl(stream)


def parse_json_cell(value: Any) -> Any:
    """Decode a CSV cell that holds JSON (lists, objects); leave plain strings alone.

    A cell that is not JSON, or is nested deeper than ``MAX_JSON_DEPTH``, stays a string.
    """
    if isinstance(value, str) and value[:1] in "[{":
        try:
            return json_loads_bounded(value)
        except json.JSONDecodeError:
            return value
    return value
