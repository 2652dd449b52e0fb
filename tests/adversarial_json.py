"""JSON texts made to slow a guard down, each exactly ``size`` bytes long.

Each one targets a way a pre-parse check could read the same bytes again and again: an
unclosed string full of escaped quotes after enough brackets to need the full check (a
quadratic string scan took hours on 2 MB of it), quotes alone, unclosed strings, nesting
far past the limit, long strings. A guard is linear when it reads every one of them at the
largest size it accepts within a few seconds (``ADVERSARIAL_TIMEOUT``, the tests' only time
bound: a linear pass needs milliseconds).
"""

from __future__ import annotations

ADVERSARIAL_TIMEOUT = 10  # seconds, per test (pytest-timeout)

_OPEN = b"[" * 65  # one more than MAX_JSON_DEPTH: the depth check cannot stop at its fast path


def _fill(head: bytes, unit: bytes, size: int, tail: bytes = b"") -> bytes:
    count = max(0, (size - len(head) - len(tail)) // len(unit))
    padding = size - len(head) - len(tail) - count * len(unit)
    return head + unit * count + b" " * padding + tail  # spaces: blanks wherever they land


ADVERSARIAL_NAMES = (
    "escaped-quotes-in-unclosed-string",
    "escaped-quotes-then-backslash",
    "backslashes-in-unclosed-string",
    "quotes",
    "brackets-and-quotes",
    "open-brackets",
    "open-braces",
    "nested-then-closed",
    "brackets-in-unclosed-string",
    "long-string",
    "many-short-strings",
)


def adversarial_json(name: str, size: int) -> bytes:
    """Return the adversarial text ``name`` (one of ``ADVERSARIAL_NAMES``), ``size`` bytes."""
    half = size // 2
    texts = {
        "escaped-quotes-in-unclosed-string": lambda: _fill(_OPEN + b'"', b'\\"', size),
        "escaped-quotes-then-backslash": lambda: _fill(_OPEN + b'"', b'\\"', size, b"\\"),
        "backslashes-in-unclosed-string": lambda: _fill(_OPEN + b'"', b"\\", size),
        "quotes": lambda: b'"' * size,
        "brackets-and-quotes": lambda: _fill(b"", b'["', size),
        "open-brackets": lambda: b"[" * size,
        "open-braces": lambda: _fill(b"", b'{"a":', size),
        "nested-then-closed": lambda: _fill(b"[" * (half // 2), b"]", size),
        "brackets-in-unclosed-string": lambda: _fill(_OPEN + b'"', b"[", size),
        "long-string": lambda: _fill(_OPEN + b'"', b"x", size, b'"' + b"]" * 65),
        "many-short-strings": lambda: _fill(_OPEN, b'"[",', size, b"1" + b"]" * 65),
    }
    text = texts[name]()
    assert len(text) == size, (name, len(text), size)
    return text
