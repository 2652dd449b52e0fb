"""The OpenAPI schema: drf-spectacular's AutoSchema with the shared error responses.

Named by ``REST_FRAMEWORK["DEFAULT_SCHEMA_CLASS"]`` (``settings/api.py``).
"""

from __future__ import annotations

from drf_spectacular.openapi import AutoSchema

from api.errors import ErrorSerializer

ERROR_STATUSES = {
    "400": "The request is not valid (see `details`).",
    "401": "No valid API token or session.",
    "403": "Signed in, but this is not allowed.",
    "404": "Not found, or not visible to you.",
    "409": "Conflicts with the current state.",
    "413": "The JSON body is over `details.max_bytes` (API_MAX_JSON_BODY_BYTES).",
    "429": "Too many requests: wait `details.wait_seconds`.",
}


class DynataskAutoSchema(AutoSchema):
    """drf-spectacular's AutoSchema, with the shared error responses on every operation."""

    def _get_response_bodies(self, direction="response"):
        responses = super()._get_response_bodies(direction)
        for code, description in ERROR_STATUSES.items():
            if code not in responses:
                response = self._get_response_for_code(ErrorSerializer, code, direction=direction)
                response["description"] = description
                responses[code] = response
        return responses
