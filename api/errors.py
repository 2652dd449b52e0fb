"""The REST API's error shape and the exception handler that gives every error that shape.

Every error the API returns has one shape, documented once as ``Error`` in the schema::

    {"error": {"code": "not_found", "message": "no task 'x'", "details": {}}}

``code`` is stable (tests and scripts match on it), ``message`` is for people and
``details`` holds structured extras (field errors, upload line errors, retry delays).

The rest of the API's plumbing sits beside this module: ``api.auth`` (tokens),
``api.parsers``, ``api.permissions``, ``api.throttles``, ``api.schema`` and ``api.urls``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404, JsonResponse
from rest_framework import exceptions, serializers, status
from rest_framework.response import Response

from api.fields import JSONObjectField
from api.parsers import JSONBodyTooLarge, JSONNestedTooDeep, max_json_body_bytes
from core import errors as service_errors
from core.bounded_json import MAX_JSON_DEPTH

# --- the error shape -----------------------------------------------------------------------


class ErrorBodySerializer(serializers.Serializer):
    code = serializers.CharField(help_text="Stable machine-readable code, e.g. `not_found`.")
    message = serializers.CharField(help_text="A message for people.")
    details = JSONObjectField(
        help_text="Structured extras: field errors, upload line errors, retry delay..."
    )


class ErrorSerializer(serializers.Serializer):
    """The one error shape of the API."""

    error = ErrorBodySerializer()


def json_safe(value: Any) -> Any:
    """Return ``value`` with dataclasses (config issues, upload errors) turned into dicts."""
    if isinstance(value, dict):
        return {str(key): json_safe(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(item) for item in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return json_safe(dataclasses.asdict(value))
    if hasattr(value, "as_dict"):
        return json_safe(value.as_dict())
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def error_body(code: str, message: str, details: Any = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "details": details or {}}}


def error_response(code: str, message: str, status_code: int, details: Any = None) -> Response:
    return Response(error_body(code, message, details), status=status_code)


_DRF_CODES = {
    JSONNestedTooDeep: "json_too_deep",
    JSONBodyTooLarge: "body_too_large",
    exceptions.NotAuthenticated: "not_authenticated",
    exceptions.AuthenticationFailed: "authentication_failed",
    exceptions.PermissionDenied: "permission_denied",
    exceptions.NotFound: "not_found",
    exceptions.MethodNotAllowed: "method_not_allowed",
    exceptions.NotAcceptable: "not_acceptable",
    exceptions.UnsupportedMediaType: "unsupported_media_type",
    exceptions.ParseError: "parse_error",
    exceptions.Throttled: "throttled",
    exceptions.ValidationError: "invalid",
}


def _drf_code(exc: exceptions.APIException) -> str:
    for klass in type(exc).__mro__:
        if klass in _DRF_CODES:
            return _DRF_CODES[klass]
    return exc.default_code or "error"


def exception_handler(exc: Exception, context: dict) -> Response | None:
    """Turn every error an API view raises into ``{"error": {...}}`` (DRF's EXCEPTION_HANDLER).

    Anything not handled here (a bug) propagates, so it is logged and reported as a 500.
    """
    headers: dict[str, str] = {}
    if isinstance(exc, service_errors.ServiceError):
        if isinstance(exc, service_errors.PermissionDenied) and not _is_authenticated(context):
            exc = exceptions.NotAuthenticated()
        else:
            response = error_response(exc.code, exc.message, exc.status, json_safe(exc.details))
            if isinstance(exc, service_errors.TooManyRequests):
                response["Retry-After"] = str(int(exc.details.get("wait_seconds") or 1))
            return response
    if isinstance(exc, Http404):
        exc = exceptions.NotFound(str(exc) or None)
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied(str(exc) or None)
    elif isinstance(exc, DjangoValidationError):
        if hasattr(exc, "error_dict"):
            details = exc.message_dict
        else:
            details = {"non_field_errors": exc.messages}
        return error_response("invalid", "the request is not valid", 400, details)
    if not isinstance(exc, exceptions.APIException):
        return None

    code = _drf_code(exc)
    if isinstance(exc, exceptions.ValidationError):
        details = exc.detail if isinstance(exc.detail, dict) else {"non_field_errors": exc.detail}
        message = "the request is not valid"
        first = _first_message(details)
        if first:
            message = f"the request is not valid: {first}"
    elif isinstance(exc, exceptions.Throttled):
        details = {"wait_seconds": exc.wait}
        message = str(exc.detail)
    elif isinstance(exc, JSONNestedTooDeep):
        details = {"max_depth": MAX_JSON_DEPTH}
        message = str(exc.detail)
    elif isinstance(exc, JSONBodyTooLarge):
        details = {"max_bytes": max_json_body_bytes()}
        message = str(exc.detail)
    else:
        details = {}
        message = str(exc.detail)
    if isinstance(exc, exceptions.NotAuthenticated | exceptions.AuthenticationFailed):
        authenticate_header = _authenticate_header(context)
        if authenticate_header:
            headers["WWW-Authenticate"] = authenticate_header
        else:
            exc.status_code = status.HTTP_403_FORBIDDEN
    if getattr(exc, "wait", None):
        headers["Retry-After"] = str(int(exc.wait))
    response = error_response(code, message, exc.status_code, details)
    for name, value in headers.items():
        response[name] = value
    return response


def _authenticate_header(context: dict) -> str | None:
    request = context.get("request")
    view = context.get("view")
    if request is None or view is None:
        return "Token"
    return view.get_authenticate_header(request)


def _is_authenticated(context: dict) -> bool:
    request = context.get("request")
    user = getattr(request, "user", None)
    return bool(user is not None and user.is_authenticated)


def _first_message(details: Any) -> str:
    """Return the first leaf message of DRF's nested error detail, prefixed by its field."""
    if isinstance(details, dict):
        for key, value in details.items():
            inner = _first_message(value)
            if inner:
                return inner if key == "non_field_errors" else f"{key}: {inner}"
    elif isinstance(details, list):
        for value in details:
            inner = _first_message(value)
            if inner:
                return inner
    elif details:
        return str(details)
    return ""


def json_not_found(request, *args, **kwargs) -> JsonResponse:
    """The JSON 404 of any unknown URL under /api/."""
    return JsonResponse(error_body("not_found", "no such API endpoint"), status=404)
