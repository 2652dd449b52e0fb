"""The streamed upload readers."""

import io

from tasks.uploads import UploadLineError, detect_format, iter_csv, iter_jsonl, parse_json_cell


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
