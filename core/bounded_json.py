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

How: linear in the text whatever it holds: a few sweeps from left to right, each reading
every byte once in C (``bytes.replace``, ``translate``, ``split``), none going back.

1. Escapes: runs of backslashes pair up from the left (``\\\\`` is deleted), so a backslash
   left before a quote escapes it (``\\"`` is deleted too). Every quote left opens or closes
   a string.
2. Only quotes and brackets are kept (braces as brackets); two adjacent quotes are an empty
   string, or the end of one string and the start of the next: deleting them changes nothing.
3. Splitting at the quotes, every other piece is outside strings; a quote that never closes
   takes the rest of the text with it, as it does for the parser.
4. The brackets become steps of +1 and -1, and the depth is the highest running sum
   (``itertools.accumulate``, by blocks of 64 KB: the check stops at the first block that
   passes the limit).

Text that is not balanced (invalid JSON) is refused only when that running sum passes the
limit: up to its first error (a closing bracket too many, a backslash outside a string), a
parser reading from the left recurses exactly that deep; otherwise the parser reports it.
``bench/json_guard.py`` times it on adversarial texts of 64 KB, 2 MB and 8 MB.
"""

from __future__ import annotations

import json
from itertools import accumulate
from typing import Any

MAX_JSON_DEPTH = 64

# Opening brackets and braces become the step +1 (0x01), closing ones -1 (0xff as a signed
# byte).
_BRACKET_STEPS = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")
_NOT_QUOTES_OR_BRACKETS = bytes(byte for byte in range(256) if byte not in b'"[]{}')
_BLOCK = 64 * 1024


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


def json_depth(data: str | bytes | bytearray) -> int:
    """Return the highest nesting of arrays and objects in the JSON text ``data``.

    For invalid text: at least the depth a parser reading from the left reaches before its
    first error (exactly that depth up to that error).
    """
    return _deepest(_bracket_steps(_as_bytes(data)))


def _bracket_steps(raw: bytes) -> bytes:
    """Return the brackets outside strings of ``raw``, in order, as steps (+1: 1, -1: 255)."""
    if b"\\" in raw:
        raw = raw.replace(b"\\\\", b"").replace(b'\\"', b"")
    kept = raw.translate(None, _NOT_QUOTES_OR_BRACKETS).replace(b'""', b"")
    if b'"' in kept:
        kept = b"".join(kept.split(b'"')[::2])
    return kept.translate(_BRACKET_STEPS)


def _deepest(steps: bytes, stop_above: int | None = None) -> int:
    """Return the highest running sum of ``steps``; stop at the block that passes
    ``stop_above``."""
    level = deepest = 0
    for start in range(0, len(steps), _BLOCK):
        block = steps[start : start + _BLOCK]
        deepest = max(deepest, max(accumulate(memoryview(block).cast("b"), initial=level)))
        if stop_above is not None and deepest > stop_above:
            break
        level += block.count(1) - block.count(255)
    return deepest


def json_check_depth(data: str | bytes | bytearray, limit: int = MAX_JSON_DEPTH) -> None:
    """Raise ``JSONTooDeep`` if arrays and objects in ``data`` nest deeper than ``limit``."""
    raw = _as_bytes(data)
    if raw.count(b"[") + raw.count(b"{") <= limit:
        return
    if _deepest(_bracket_steps(raw), stop_above=limit) > limit:
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
