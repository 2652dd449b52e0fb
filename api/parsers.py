"""Request-body parsers of the REST API.

``BoundedJSONParser`` (the default parser, see ``settings/api.py``) is DRF's JSON parser with
two guards first, each linear in the body:

- size: a body over ``API_MAX_JSON_BODY_BYTES`` (2 MiB by default) is ``JSONBodyTooLarge``, a
  413 with the code ``body_too_large`` that names the limit. A Content-Length over it is
  refused before anything is read; without one, at most the limit plus one byte is read;
- depth (``core.bounded_json``): a body nested deeper than ``MAX_JSON_DEPTH`` levels is
  ``JSONNestedTooDeep``, a 400 with the code ``json_too_deep``, never a 500 from a parser
  that ran out of stack.

A module of its own because DRF reads ``DEFAULT_PARSER_CLASSES`` when its views module is
imported, which ``api.errors`` does.
"""

from __future__ import annotations

import io

from django.conf import settings
from rest_framework import status
from rest_framework.exceptions import APIException, ParseError
from rest_framework.parsers import JSONParser

from core.bounded_json import JSONTooDeep, json_check_depth


class JSONNestedTooDeep(ParseError):
    """The request body nests arrays and objects deeper than ``MAX_JSON_DEPTH`` levels."""

    default_code = "json_too_deep"


class JSONBodyTooLarge(APIException):
    """The request body is over ``API_MAX_JSON_BODY_BYTES``."""

    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_code = "body_too_large"


def max_json_body_bytes() -> int:
    """Return the largest JSON body the API reads (``API_MAX_JSON_BODY_BYTES``)."""
    return int(settings.API_MAX_JSON_BODY_BYTES)


def _too_large(limit: int) -> JSONBodyTooLarge:
    return JSONBodyTooLarge(
        f"the JSON body is over {limit:,} bytes, the most the API reads (API_MAX_JSON_BODY_BYTES)"
    )


def _declared_length(parser_context: dict | None) -> int | None:
    request = (parser_context or {}).get("request")
    declared = request.META.get("CONTENT_LENGTH") if request is not None else None
    try:
        return int(declared) if declared else None
    except ValueError:
        return None  # not a number: the capped read below still bounds the body


def read_capped(stream, parser_context: dict | None, limit: int) -> bytes:
    """Return the body of ``stream``, or raise ``JSONBodyTooLarge`` when it is over ``limit``.

    A declared Content-Length over the limit is refused before anything is read; otherwise
    at most ``limit + 1`` bytes are read, whatever the stream holds.
    """
    declared = _declared_length(parser_context)
    if declared is not None and declared > limit:
        raise _too_large(limit)
    chunks: list[bytes] = []
    size = 0
    while size <= limit:
        chunk = stream.read(limit + 1 - size)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    if size > limit:
        raise _too_large(limit)
    return b"".join(chunks)


class BoundedJSONParser(JSONParser):
    """DRF's JSON parser, refusing a body over ``API_MAX_JSON_BODY_BYTES`` or nested deeper
    than ``MAX_JSON_DEPTH`` levels."""

    def parse(self, stream, media_type=None, parser_context=None):
        raw = read_capped(stream, parser_context, max_json_body_bytes())
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
