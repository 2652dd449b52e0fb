"""Read JSON that comes from outside with a bounded nesting depth.

Contract: ``json_check_depth(data)`` raises ``JSONTooDeep`` when arrays and objects in the JSON
text ``data`` (``str`` or ``bytes``) nest deeper than ``limit`` levels (``MAX_JSON_DEPTH``,
64, by default); ``[]`` is one level, ``{"a": [1]}`` two, a scalar none. It reads the text
only (no parsing, no recursion), so it is safe on any input, and it never refuses valid JSON
within the limit. ``json_loads_bounded(data)`` checks, then parses with ``json.loads``.
``BoundedJSONDecoder`` is a ``json.JSONDecoder`` that checks first, for code that takes a
decoder class (Django's form ``JSONField``). Pure: no Django, no database, no network.

``JSONTooDeep`` is a ``json.JSONDecodeError`` (hence a ``ValueError``), so code that already
turns invalid JSON into an error message does the same for JSON nested too deep.

Why: Python's ``json`` parser recurses once per level, so a body of 100,000 ``[`` exhausts the
interpreter's stack (``RecursionError``, a crash instead of an answer); orjson stops at 1,024
levels. What the platform stores (inputs, outputs, contexts, metadata, model options) nests a
few levels, and 64 leaves room for any of it while staying far below both parsers' limits.

How: only the brackets and braces outside strings count (braces as brackets), found with
byte operations that run in C; each pass deletes every innermost ``[]`` pair, so the number
of passes that empties them is the depth. Text that is not balanced (invalid JSON) is
refused only when its open brackets could still nest deeper than the limit; otherwise the
parser reports it.
"""

from __future__ import annotations

import json
import re
from typing import Any

MAX_JSON_DEPTH = 64

# A JSON string: a quote, then characters other than a quote or backslash, or escapes.
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_BRACES_AS_BRACKETS = bytes.maketrans(b"{}", b"[]")
_NOT_BRACKETS = bytes(byte for byte in range(256) if byte not in b"[]{}")
_NOT_QUOTES_OR_BRACKETS = bytes(byte for byte in range(256) if byte not in b'"[]{}')


class JSONTooDeep(json.JSONDecodeError):
    """The JSON text nests arrays and objects deeper than ``limit`` levels."""

    def __init__(self, limit: int):
        self.limit = limit
        super().__init__(f"nested deeper than {limit} levels", "", 0)

    def __str__(self) -> str:
        return self.msg

    def __reduce__(self):
        return type(self), (self.limit,)


def _as_bytes(data: str | bytes | bytearray) -> bytes:
    if isinstance(data, str):
        return data.encode("utf-8", "surrogatepass")
    data = bytes(data)
    if data[:2] in (b"\xff\xfe", b"\xfe\xff") or (len(data) > 1 and 0 in data[:4]):
        # UTF-16 or UTF-32 (``json.loads`` reads them): bytes of other characters could look
        # like brackets, so read the characters.
        try:
            return data.decode(json.detect_encoding(data)).encode("utf-8", "surrogatepass")
        except (UnicodeDecodeError, LookupError):
            return data
    return data


def _structural_brackets(raw: bytes) -> bytes:
    """Return the brackets and braces of ``raw`` that lie outside strings, in order."""
    if b'\\"' in raw:
        # An escaped quote (or a string ending in a backslash): find the strings one by one.
        return _STRING.sub(b"", raw).translate(None, _NOT_BRACKETS)
    # Every quote opens or closes a string. Keeping quotes and brackets only, a string without
    # brackets becomes two adjacent quotes; when deleting those pairs leaves no quote, no
    # string held a bracket (the only way to pair every quote is string by string).
    reduced = raw.translate(None, _NOT_QUOTES_OR_BRACKETS).replace(b'""', b"")
    if b'"' not in reduced:
        return reduced
    return b"".join(raw.split(b'"')[::2]).translate(None, _NOT_BRACKETS)


def json_check_depth(data: str | bytes | bytearray, limit: int = MAX_JSON_DEPTH) -> None:
    """Raise ``JSONTooDeep`` if arrays and objects in ``data`` nest deeper than ``limit``."""
    raw = _as_bytes(data)
    if raw.count(b"[") + raw.count(b"{") <= limit:
        return
    brackets = _structural_brackets(raw).translate(_BRACES_AS_BRACKETS)
    passes = 0
    while b"[]" in brackets:
        if passes == limit:
            raise JSONTooDeep(limit)
        brackets = brackets.replace(b"[]", b"")
        passes += 1
    # What is left cannot pair up: closing brackets, then opening ones that never close.
    if passes + brackets.count(b"[") > limit:
        raise JSONTooDeep(limit)


def json_loads_bounded(
    data: str | bytes | bytearray, *, limit: int = MAX_JSON_DEPTH, **loads_options: Any
) -> Any:
    """Return the JSON document ``data``; raise ``JSONTooDeep`` or ``json.JSONDecodeError``."""
    json_check_depth(data, limit)
    return json.loads(data, **loads_options)


class BoundedJSONDecoder(json.JSONDecoder):
    """A ``json.JSONDecoder`` that refuses text nested deeper than ``MAX_JSON_DEPTH``."""

    def decode(self, s, *args, **kwargs):
        json_check_depth(s)
        return super().decode(s, *args, **kwargs)
