"""Write the CSV files the platform serves, every cell safe to open in a spreadsheet.

Contract: every CSV download (the leaderboard, a campaign's bonus sheet, the admin's
download actions) is written by ``csv_lines`` (streamed) or ``csv_write`` (into a file-like
object such as an ``HttpResponse``); no other code hands a response to ``csv.writer``. Each
cell goes through ``csv_cell``. Pure: no database, no network.

Why: a spreadsheet program reads a cell whose text begins with ``=``, ``+``, ``-`` or ``@``
as a formula, and some also act on a cell that begins with a tab or a carriage return. Such a
cell, typed into a model name or a crowd worker id, could make the person who opens the
download fetch a URL that carries the sheet's data (``HYPERLINK``, ``WEBSERVICE``) or run a
command (DDE). OWASP's guidance on CSV injection names those leading characters; its defence,
used here, is to put a single quote ``'`` in front of such a cell, which spreadsheets show as
plain text. A script that reads the file sees the quote and can drop it.

Numbers stay numbers: an integer, a finite float (NumPy's scalars too) or a finite
``Decimal`` is written as a number, so ``-0.5`` stays ``-0.5`` and parses back as one; a
``bool`` is the text ``True`` or ``False``. A number held in a string is text like any other,
so ``"-0.5"`` is written ``'-0.5``. A float's ``nan`` and infinities, which no spreadsheet
reads as numbers, are text too (``nan``, ``inf``, ``'-inf``). ``None`` is an empty cell.
Separators, quotes and line breaks inside a cell are quoted by the ``csv`` module (minimal
quoting, ``\\r\\n`` line ends).

A spreadsheet set to another separator splits the lines at that separator, and honours a
double quote only at the start of one of its own cells: most of continental Europe splits
on ``;``, some programs on tabs, and a line break inside a quoted cell ends the line for
them. There the model name ``x;=1+1;`` is three cells, the middle one a formula, whatever
quotes the file puts around it. So inside a text cell, a ``;``, a tab or a line break that
is followed by one of the characters above (or by a double quote, which such a program may
read as the start of a quoted formula) gets a single quote after it: ``x;'=1+1;``. Every cell any
separator cuts out of the text then starts as plain text. (A ``,`` needs nothing: where it
separates, the ``csv`` module's quotes are honoured.)
"""

from __future__ import annotations

import csv
import math
import numbers
import re
from collections.abc import Iterable, Iterator
from decimal import Decimal
from typing import IO, Any

# The characters that make a spreadsheet read a cell as a formula (OWASP: CSV injection).
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
NEUTRALISING_PREFIX = "'"
# A separator of other spreadsheets (";", tab) or a line break, then what would start a
# formula there: the single quote goes between them. One pass, a character of lookahead.
HIDDEN_FORMULA = re.compile(r"([;\t\r\n])(?=[=+\-@\t\r\"])")

Cell = str | int | float | Decimal


def csv_cell(value: Any) -> Cell:
    """Return ``value`` as a cell no spreadsheet runs: numbers as they are, text neutralised."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real) and math.isfinite(value):
        # float() also turns a NumPy scalar into the plain float that csv writes as a number.
        return float(value)
    if isinstance(value, Decimal) and value.is_finite():
        return value
    text = value if isinstance(value, str) else str(value)
    text = HIDDEN_FORMULA.sub(r"\1" + NEUTRALISING_PREFIX, text)
    if text.startswith(FORMULA_PREFIXES):
        return NEUTRALISING_PREFIX + text
    return text


def csv_row(values: Iterable[Any]) -> list[Cell]:
    """Return one row with every value passed through ``csv_cell``."""
    return [csv_cell(value) for value in values]


class _LineBuffer:
    """A file-like object whose ``write`` returns what it was given (for streaming)."""

    def write(self, text: str) -> str:
        return text


def csv_lines(rows: Iterable[Iterable[Any]]) -> Iterator[str]:
    """Yield the CSV text of ``rows`` (the header is the first row), one line per row.

    Lazy, so a ``StreamingHttpResponse`` sends a long file in constant memory.
    """
    writer = csv.writer(_LineBuffer())
    for row in rows:
        yield writer.writerow(csv_row(row))


def csv_write(stream: IO[str], rows: Iterable[Iterable[Any]]) -> None:
    """Write the CSV text of ``rows`` (the header is the first row) to ``stream``."""
    writer = csv.writer(stream)
    for row in rows:
        writer.writerow(csv_row(row))
