"""Errors raised by services across the platform: a stable code, a message, details.

Views, the API and commands turn them into plain messages (the API's error shape is
``{"error": {"code", "message", "details"}}``). A stack trace is never the answer.
"""

from __future__ import annotations

from typing import Any


class ServiceError(Exception):
    """A business rule refused the request; ``code`` is stable, ``message`` is for people."""

    code = "service.error"
    status = 400

    def __init__(self, message: str, *, code: str | None = None, details: Any = None):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.details = details if details is not None else {}


class NotFound(ServiceError):
    code = "not_found"
    status = 404


class PermissionDenied(ServiceError):
    code = "permission_denied"
    status = 403


class Conflict(ServiceError):
    code = "conflict"
    status = 409


class TooManyRequests(ServiceError):
    """A rate limit refused the request; ``details["wait_seconds"]`` says when to try again."""

    code = "throttled"
    status = 429


class UploadTooLarge(ServiceError):
    """An uploaded file is over the size cap; ``details["max_bytes"]`` names the cap."""

    code = "upload.too_large"
    status = 413


class InvalidUpload(ServiceError):
    """An upload failed validation; ``details["errors"]`` lists ``{line, path, code, message}``."""

    code = "upload.invalid"


class InvalidConfig(ServiceError):
    """A task config failed to parse; ``details["issues"]`` lists every problem."""

    code = "config.invalid"
