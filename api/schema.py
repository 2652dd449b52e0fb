"""The OpenAPI schema: the shared error responses on every operation.

``error_responses_hook`` is a drf-spectacular ``POSTPROCESSING_HOOKS`` entry
(``settings/api.py``).
"""

from __future__ import annotations

from drf_spectacular.settings import spectacular_settings

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


def error_responses_hook(result, generator, request, public):
    """A drf-spectacular ``POSTPROCESSING_HOOKS`` entry: every operation gets the shared
    error responses (``ERROR_STATUSES``) it does not declare, as ``ErrorSerializer``.

    The serializer's components are resolved through the schema of one of the API's own
    views, then the components are built again from the generator's registry; list this
    hook before ``postprocess_schema_enums``, which works on the built components.
    """
    if not generator.endpoints:
        return result
    _path, _regex, method, callback = generator.endpoints[0]
    schema = generator.create_view(callback, method).schema
    schema.registry = generator.registry
    error = schema.resolve_serializer(ErrorSerializer, "response").ref
    result["components"] = generator.registry.build(spectacular_settings.APPEND_COMPONENTS)
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            responses = operation.setdefault("responses", {})
            # The error in every media type the operation answers in, JSON first.
            answered = (t for response in responses.values() for t in response.get("content", {}))
            media_types = dict.fromkeys(["application/json", *answered])
            content = {media_type: {"schema": error} for media_type in media_types}
            for code, description in ERROR_STATUSES.items():
                responses.setdefault(code, {"content": content, "description": description})
    return result
