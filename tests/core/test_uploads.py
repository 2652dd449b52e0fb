"""The streamed upload readers."""

import csv
import io

import pytest

from core.uploads import (
    MAX_LINE_BYTES,
    UploadLineError,
    UploadProblems,
    detect_format,
    iter_csv,
    iter_jsonl,
    parse_json_cell,
)
from tests.adversarial_json import ADVERSARIAL_NAMES, ADVERSARIAL_TIMEOUT, adversarial_json


def test_jsonl_yields_records_with_line_numbers_and_skips_blank_lines():
    stream = io.BytesIO(b'{"a": 1}\n\n{"a": 2}\n')
    assert list(iter_jsonl(stream)) == [(1, {"a": 1}), (3, {"a": 2})]


def test_jsonl_reports_bad_json_and_non_objects_and_goes_on():
    stream = io.BytesIO(b'{"a": 1}\n[1, 2]\n{oops\n{"a": 3}\n')
    results = list(iter_jsonl(stream))
    assert [line for line, _ in results] == [1, 2, 3, 4]
    assert isinstance(results[1][1], UploadLineError) and results[1][1].code == "upload.E004"
    assert isinstance(results[2][1], UploadLineError) and results[2][1].code == "upload.E003"
    assert results[3][1] == {"a": 3}


@pytest.mark.parametrize(
    ("bad_line", "column", "reason"),
    [
        ('{"uid": "u2" "label": "a"}', 14, "Expecting ',' delimiter"),
        ('{"uid": "u2", "label": }', 24, "Expecting value"),
        ('{"uid": "u2", "label": "a"', 27, "Expecting ',' delimiter"),  # at the end of the line
        ('{"uid": "u2", "label": "a"} x', 29, "Extra data"),
        ('{"uid": "é2" "label": "a"}', 14, "Expecting ',' delimiter"),  # characters, not bytes
        ('{"uid": "u2", "label": "ab', 24, "Unterminated string starting"),
        ('{"uid": "u2", "label": "a\tb"}', 26, "Invalid control character"),
    ],
)
@pytest.mark.parametrize("ending", ["\n", "\r\n"])
def test_jsonl_names_the_line_and_column_of_invalid_json(bad_line, column, reason, ending):
    text = ending.join(['{"uid": "u1", "label": "a"}', bad_line, '{"uid": "u3", "label": "a"}'])
    results = list(iter_jsonl(io.BytesIO(text.encode())))
    assert [line for line, _ in results] == [1, 2, 3]
    error = results[1][1]
    assert (error.code, error.line, error.column) == ("upload.E003", 2, column)
    assert error.message == f"invalid JSON: {reason} at column {column}"
    assert error.as_dict()["column"] == column


def test_jsonl_column_counts_from_the_text_after_a_byte_order_mark():
    results = list(iter_jsonl(io.BytesIO('\ufeff{"a" 1}\n'.encode())))
    assert (results[0][1].line, results[0][1].column) == (1, 6)


def test_jsonl_lines_end_at_newlines_only():
    """U+2028, U+2029 and U+0085 are characters a JSON string may hold, not line ends."""
    text = '{"a": "x\u2028y"}\n{"a": "x\x85y\u2029z"}\n{"a" 3}\n'
    results = list(iter_jsonl(io.BytesIO(text.encode())))
    assert results[:2] == [(1, {"a": "x\u2028y"}), (2, {"a": "x\x85y\u2029z"})]
    assert (results[2][0], results[2][1].column) == (3, 6)


def test_jsonl_from_a_text_stream_names_the_column_too():
    results = list(iter_jsonl(io.StringIO('{"a": 1}\n{"a": 1,, "b": 2}\n')))
    assert (results[1][1].line, results[1][1].column) == (2, 9)


def test_jsonl_reports_lines_nested_too_deep_and_goes_on():
    lines = [
        '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}",
        '{"a": ' + "[" * 200 + "]" * 200 + "}",
        '{"a": ' + "[" * 63 + "]" * 63 + "}",  # 64 levels with the line's object: read
    ]
    results = list(iter_jsonl(io.BytesIO("\n".join(lines).encode())))
    assert [(line, getattr(item, "code", None)) for line, item in results] == [
        (1, "upload.E009"),
        (2, "upload.E009"),
        (3, None),
    ]
    assert results[0][1].message == "the JSON is nested deeper than 64 levels"


def test_jsonl_reports_invalid_utf8():
    results = list(iter_jsonl(io.BytesIO(b'{"a": "\xff"}\n')))
    assert results[0][1].code == "upload.E001"


def test_jsonl_from_a_text_stream_that_cannot_decode_is_an_error_not_a_crash():
    stream = io.TextIOWrapper(io.BytesIO(b'{"a": "\xff"}\n'), encoding="utf-8")
    ((line, error),) = list(iter_jsonl(stream))
    assert (line, error.line, error.code) == (1, 1, "upload.E001")


def test_jsonl_skips_an_oversized_line_and_goes_on(monkeypatch):
    monkeypatch.setattr("core.uploads.MAX_LINE_BYTES", 20)
    text = '{"a": 1}\n{"a": "' + "x" * 50 + '"}\n{"a" 3}\n'
    results = list(iter_jsonl(io.BytesIO(text.encode())))
    assert [(line, getattr(item, "code", None)) for line, item in results] == [
        (1, None),
        (2, "upload.E002"),
        (3, "upload.E003"),
    ]
    assert results[1][1].message == "line longer than 20 bytes"
    assert results[2][1].column == 6


def test_jsonl_names_the_column_of_the_first_byte_that_is_not_utf8():
    results = list(iter_jsonl(io.BytesIO('{"a": 1}\n{"é": "x'.encode() + b'\xff"}\n')))
    assert results[0] == (1, {"a": 1})
    error = results[1][1]
    assert (error.code, error.line, error.column) == ("upload.E001", 2, 9)
    assert error.message == "not valid UTF-8 (invalid start byte) at column 9"


def test_csv_rows_carry_their_first_line_number_even_with_quoted_newlines():
    stream = io.BytesIO(b'text,label\n"two\nlines",a\nplain,b\n')
    results = list(iter_csv(stream))
    assert results == [
        (2, {"text": "two\nlines", "label": "a"}),
        (4, {"text": "plain", "label": "b"}),
    ]


def test_csv_with_too_many_cells_is_reported():
    results = list(iter_csv(io.BytesIO(b"a\n1,2\n")))
    assert results[0][1].code == "upload.E007"


def test_csv_without_header():
    results = list(iter_csv(io.BytesIO(b"")))
    assert results[0][1].code == "upload.E006"


def test_detect_format_and_json_cells():
    assert detect_format("x.CSV") == "csv"
    assert detect_format("x.jsonl") == "jsonl"
    assert detect_format("x.txt", "csv") == "csv"
    assert parse_json_cell('["a", "b"]') == ["a", "b"]
    assert parse_json_cell("[not json") == "[not json"
    deep = "[" * 200 + "]" * 200
    assert parse_json_cell(deep) == deep  # deeper than 64 levels: kept as text


def test_upload_problems_count_every_problem_and_keep_the_first():
    problems = UploadProblems(keep=2)
    assert not problems
    problems.append(UploadLineError(1, "upload.E003", "bad"))
    assert problems.summary("upload") == "1 problem in the upload; nothing was imported"
    problems.extend(UploadLineError(line, "upload.E003", "bad") for line in range(2, 6))
    assert problems and problems.total == 5
    assert [error.line for error in problems.kept] == [1, 2]
    assert problems.summary("file") == "the first 2 of 5 problems in the file; nothing was imported"
    assert problems.details()["error_count"] == 5
    assert len(problems.details()["errors"]) == 2
    exact = UploadProblems(keep=3)
    exact.extend(UploadLineError(line, "upload.E003", "bad") for line in (1, 2, 3))
    assert exact.summary("file") == "3 problems in the file; nothing was imported"


@pytest.mark.timeout(ADVERSARIAL_TIMEOUT)
@pytest.mark.parametrize("name", ADVERSARIAL_NAMES)
def test_jsonl_reads_adversarial_lines_of_the_largest_size_quickly(name):
    line = adversarial_json(name, MAX_LINE_BYTES)
    records = list(iter_jsonl(io.BytesIO((line + b"\n") * 3)))
    assert [number for number, _record in records] == [1, 2, 3]
    assert all(isinstance(record, UploadLineError) for _number, record in records)
    assert {record.code for _number, record in records} <= {"upload.E003", "upload.E009"}


@pytest.mark.timeout(ADVERSARIAL_TIMEOUT)
@pytest.mark.parametrize("name", ADVERSARIAL_NAMES)
def test_a_csv_cell_of_adversarial_json_of_the_largest_size_stays_text_quickly(name):
    size = csv.field_size_limit()  # the csv module refuses a longer cell
    cell = "[" + adversarial_json(name, size - 1).decode()
    assert parse_json_cell(cell) == cell
