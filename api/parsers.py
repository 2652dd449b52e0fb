"""Request-body parsers of the REST API.

``BoundedJSONParser`` (the default parser, see ``settings/api.py``) is DRF's JSON parser with
the nesting depth of the body checked first (``core.bounded_json``): a body nested deeper than
``MAX_JSON_DEPTH`` levels is ``JSONNestedTooDeep``, a 400 with the code ``json_too_deep``,
never a 500 from a parser that ran out of stack. A module of its own because DRF reads
``DEFAULT_PARSER_CLASSES`` when its views module is imported, which ``api.errors`` does.
"""

from __future__ import annotations

import io

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from core.bounded_json import JSONTooDeep, json_check_depth


class JSONNestedTooDeep(ParseError):
    """The request body nests arrays and objects deeper than ``MAX_JSON_DEPTH`` levels."""

    default_code = "json_too_deep"


class BoundedJSONParser(JSONParser):
    """DRF's JSON parser, refusing a body nested deeper than ``MAX_JSON_DEPTH`` levels."""

    def parse(self, stream, media_type=None, parser_context=None):
        raw = stream.read()
        encoding = (parser_context or {}).get("encoding") or "utf-8"
        try:
            text = raw.decode(encoding)
        except (UnicodeDecodeError, LookupError):
            text = None  # DRF's parser reports the undecodable body
        if text is not None:
            try:
                json_check_depth(text)
            except JSONTooDeep as error:
                raise JSONNestedTooDeep(f"JSON parse error - the body is {error}") from None
        return super().parse(io.BytesIO(raw), media_type, parser_context)
