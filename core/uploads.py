"""Streamed readers for uploaded JSON Lines and CSV files, with line numbers.

Pure: takes a binary or text stream and yields ``(line_number, record)`` one at a time, so a
100k-line upload never sits in memory. A line that cannot be decoded yields an
``UploadLineError`` instead of a record; callers collect those and keep going, so that every
bad line is reported at once. A JSON line nested deeper than ``MAX_JSON_DEPTH`` (64) levels
is ``upload.E009``, refused before it is parsed. JSON Lines end at line feeds only; an error
that sits at one place of a line (invalid JSON, a byte that is not UTF-8) also names its
column, counted in characters from 1.
"""

from __future__ import annotations

import codecs
import csv
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import IO, Any

from core.bounded_json import JSONTooDeep, json_loads_bounded

MAX_LINE_BYTES = 1_000_000
MAX_REPORTED_ERRORS = 100


@dataclass(frozen=True)
class UploadLineError:
    """A bad line: its 1-based number, and the 1-based column (characters) when known."""

    line: int
    code: str
    message: str
    path: str = ""
    column: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "line": self.line,
            "column": self.column,
            "path": self.path,
            "code": self.code,
            "message": self.message,
        }


class UploadProblems:
    """The problems of one upload: every one counted, the first ``keep`` of them kept.

    An importer reads the whole file once it has a problem (writing nothing more), so the
    refusal can say how many there are: "the first 100 of 400 problems". Lines count from 1;
    a problem of the whole file (it has no records) names line 1.
    """

    def __init__(self, keep: int = MAX_REPORTED_ERRORS):
        self.keep = keep
        self.kept: list[UploadLineError] = []
        self.total = 0

    def append(self, error: UploadLineError) -> None:
        self.total += 1
        if len(self.kept) < self.keep:
            self.kept.append(error)

    def extend(self, errors) -> None:
        for error in errors:
            self.append(error)

    def __bool__(self) -> bool:
        return self.total > 0

    def summary(self, what: str) -> str:
        """Say how many problems ``what`` has, and that nothing was imported."""
        if self.total > len(self.kept):
            counted = f"the first {len(self.kept)} of {self.total} problems"
        else:
            counted = f"{self.total} problem" + ("" if self.total == 1 else "s")
        return f"{counted} in the {what}; nothing was imported"

    def details(self) -> dict[str, Any]:
        """The refusal's details: the kept problems, and how many there are in all."""
        return {"errors": [error.as_dict() for error in self.kept], "error_count": self.total}


def no_records_error() -> UploadLineError:
    """The problem of a file without a single record (it names the file's first line)."""
    return UploadLineError(1, "upload.E008", "the file has no records")


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


def _raw_lines(stream: IO) -> Iterator[str | bytes | UploadLineError]:
    """Yield the lines of ``stream`` with their ending, split at line feeds (LF) only.

    JSON Lines ends a line at LF; a string may hold U+2028, U+0085 and the like, which a
    codecs reader takes for line breaks (shifting every later line number). A binary stream
    gives bytes, a text stream text; a read takes at most ``MAX_LINE_BYTES + 1`` of them,
    and the rest of a longer line comes in the next reads. A text stream that cannot decode
    its bytes gives an ``upload.E001`` error (without its line number) and ends.
    """
    while True:
        try:
            line = stream.readline(MAX_LINE_BYTES + 1)
        except UnicodeDecodeError as error:
            yield UploadLineError(0, "upload.E001", f"not valid UTF-8 ({error.reason})")
            return
        if not line:
            return
        yield line


def _ends_line(chunk: str | bytes) -> bool:
    return chunk.endswith(b"\n" if isinstance(chunk, bytes) else "\n")


def _decode_line(raw: bytes, line_number: int) -> str | UploadLineError:
    """Return the text of a line of bytes, or the error naming its first bad byte's column."""
    encoding = "utf-8-sig" if line_number == 1 else "utf-8"  # a byte order mark opens a file
    try:
        return raw.decode(encoding)
    except UnicodeDecodeError as error:
        column = len(raw[: error.start].decode(encoding)) + 1
        return UploadLineError(
            line_number,
            "upload.E001",
            f"not valid UTF-8 ({error.reason}) at column {column}",
            column=column,
        )


def _json_error(line_number: int, error: json.JSONDecodeError) -> UploadLineError:
    """Describe invalid JSON on one line (parsed without its ending) with its column."""
    column = error.pos + 1  # the text is one line: its position is the column
    reason = error.msg.removesuffix(" at")  # "Unterminated string starting at"
    return UploadLineError(
        line_number, "upload.E003", f"invalid JSON: {reason} at column {column}", column=column
    )


def iter_jsonl(stream: IO) -> Iterator[tuple[int, dict | UploadLineError]]:
    """Yield each non-blank line's JSON object, or an error naming the line (and column).

    Columns count characters from 1. A line that is not UTF-8 ends the reading (what follows
    is likely not text either).
    """
    lines = _raw_lines(stream)
    line_number = 0
    for raw in lines:
        line_number += 1
        if isinstance(raw, UploadLineError):
            yield line_number, replace(raw, line=line_number)
            return
        if len(raw) > MAX_LINE_BYTES and not _ends_line(raw):
            unit = "bytes" if isinstance(raw, bytes) else "characters"
            yield (
                line_number,
                UploadLineError(
                    line_number, "upload.E002", f"line longer than {MAX_LINE_BYTES} {unit}"
                ),
            )
            for rest in lines:  # skip the rest of the oversized line
                if isinstance(rest, UploadLineError) or _ends_line(rest):
                    break
            continue
        line = _decode_line(raw, line_number) if isinstance(raw, bytes) else raw
        if isinstance(line, UploadLineError):
            yield line_number, line
            return
        line = line.rstrip("\r\n")
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
            yield line_number, _json_error(line_number, error)
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
