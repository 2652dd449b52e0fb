"""The CSV writer of every download: no cell is a formula, numbers stay numbers."""

from __future__ import annotations

import csv
import io
from decimal import Decimal

import numpy as np
import pytest

from core.csv_export import FORMULA_PREFIXES, csv_cell, csv_lines, csv_write
from tests.factories import HOSTILE_CSV_CELLS as HOSTILE
from tests.factories import HOSTILE_SEPARATED_CSV_CELLS as SEPARATED
from tests.factories import cells_split_on

# A tab or carriage return followed by "=" is also a line break or separator elsewhere: the
# "=" gets its own quote (see test_the_quote_goes_right_after_the_separator).
NEUTRALISED = {"\t=1+1": "'\t'=1+1", "\r=1+1": "'\r'=1+1"}


def neutralised(text: str) -> str:
    return NEUTRALISED.get(text, "'" + text)


@pytest.mark.parametrize("text", HOSTILE)
def test_text_that_starts_like_a_formula_gets_a_quote(text):
    assert csv_cell(text) == neutralised(text)


@pytest.mark.parametrize("text", ["ok", "a=b", "x-1", "", "'already quoted", " =1"])
def test_other_text_is_left_alone(text):
    assert csv_cell(text) == text


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (-0.5, -0.5),
        (0.25, 0.25),
        (-3, -3),
        (7, 7),
        (Decimal("-1.5"), Decimal("-1.5")),
        (np.float64(-0.5), -0.5),
        (np.int64(-2), -2),
    ],
)
def test_numbers_stay_numbers(value, expected):
    cell = csv_cell(value)
    assert cell == expected
    assert not isinstance(cell, str)


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, ""), (True, "True"), (False, "False"), (float("nan"), "nan"), (float("inf"), "inf")],
)
def test_none_bools_and_non_finite_floats_are_text(value, expected):
    assert csv_cell(value) == expected


def test_negative_infinity_is_neutralised_text():
    assert csv_cell(float("-inf")) == "'-inf"


def parse(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def test_lines_and_write_give_the_same_file_that_parses_back():
    rows = [["name", "score"], *[[text, -0.5] for text in HOSTILE], ["plain", 3]]
    streamed = "".join(csv_lines(rows))
    buffer = io.StringIO()
    csv_write(buffer, rows)
    assert streamed == buffer.getvalue()
    parsed = parse(streamed)
    assert parsed[0] == ["name", "score"]
    for (name, score), text in zip(parsed[1:-1], HOSTILE, strict=True):
        assert name == neutralised(text)
        assert float(score) == -0.5
    assert parsed[-1] == ["plain", "3"]
    for row in parsed:
        for cell in row:
            assert not cell.startswith(FORMULA_PREFIXES) or float(cell) == -0.5


def test_the_header_row_is_neutralised_too():
    assert parse("".join(csv_lines([["=evil", "ok"]]))) == [["'=evil", "ok"]]


def test_lines_are_lazy():
    def rows():
        yield ["a"]
        raise AssertionError("read too far")

    lines = csv_lines(rows())
    assert next(lines) == "a\r\n"


@pytest.mark.parametrize("text", SEPARATED)
def test_a_formula_hidden_behind_a_separator_is_neutralised(text):
    rows = [["rank", "name", "score"], [1, text, -0.5]]
    written = "".join(csv_lines(rows))
    assert parse(written)[1][0] == "1" and parse(written)[1][2] == "-0.5"
    for separator in (",", ";", "\t"):
        for cell in cells_split_on(written, separator):
            assert not cell.startswith(FORMULA_PREFIXES) or _is_number_led(cell), (separator, cell)


def _is_number_led(cell: str) -> bool:
    try:
        float(cell.split(",")[0])
    except ValueError:
        return False
    return True


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("x;=1+1;", "x;'=1+1;"),
        ("x\t=1+1", "x\t'=1+1"),
        ('x;"=1', "x;'\"=1"),
        ("\r=1+1", "'\r'=1+1"),
        ("x;\t+1", "x;'\t'+1"),
        ("x; +1", "x; +1"),
        ("a-b;c", "a-b;c"),
        ("x,=1", "x,=1"),  # the file's own separator: the csv module quotes the cell
    ],
)
def test_the_quote_goes_right_after_the_separator(text, expected):
    assert csv_cell(text) == expected
