"""Typed errors of a model call.

Contract: every failure of a call to a model endpoint is a ``ModelCallError`` subclass with a
stable ``code`` (what callers and tests match on), a ``retryable`` flag (the live page offers a
retry button, an evaluation shard retries with backoff) and a ``str()`` that is safe to show
and to log: the endpoint's auth token is scrubbed from the message and from ``excerpt``, the
truncated body of the offending response.

| class | code | retryable |
|---|---|---|
| ``ModelUnreachable`` | ``model.unreachable`` | yes (no for TLS errors) |
| ``ModelTimeout`` | ``model.timeout`` | yes |
| ``ModelServerError`` | ``model.server_error`` | yes (any 5xx, see ``transport``) |
| ``ModelBadResponse`` | ``model.bad_response`` | no |
| ``ModelRedirect`` (a ``ModelBadResponse``) | ``model.redirect`` | no |
| ``ModelResponseTooLarge`` (a ``ModelBadResponse``) | ``model.response_too_large`` | no |
| ``ModelResponseTooDeep`` (a ``ModelBadResponse``) | ``model.response_too_deep`` | no |
| ``ModelAddressRefused`` | ``model.address_refused`` | no |
| ``ModelConfigurationError`` | ``model.configuration`` | no |
| ``ModelTokenUnreadable`` (a ``ModelConfigurationError``) | ``model.token_unreadable`` | no |
"""

from __future__ import annotations

from collections.abc import Iterable

EXCERPT_MAX_CHARS = 300
SCRUBBED = "[REDACTED]"


def scrub(text: str, secrets: Iterable[str | None] = ()) -> str:
    """Return ``text`` with every non-empty secret replaced by ``[REDACTED]``."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, SCRUBBED)
    return text


def truncate(text: str, limit: int = EXCERPT_MAX_CHARS) -> str:
    """Return ``text`` cut to at most ``limit`` characters, marking the cut with an ellipsis."""
    if len(text) <= limit:
        return text
    return text[: max(limit - 1, 0)] + "…"


def safe_excerpt(
    body: bytes | str | None, secrets: Iterable[str | None] = (), limit: int = EXCERPT_MAX_CHARS
) -> str:
    """Decode, scrub and truncate a response body for showing it to people."""
    if body is None:
        return ""
    if isinstance(body, bytes):
        # Only the head is ever shown; decoding a multi-megabyte body would be wasted work.
        body = body[: limit * 4 + 1024].decode("utf-8", errors="replace")
    secrets = tuple(secrets)
    # Scrub before truncating so that a token cut in half by the limit cannot leak a prefix.
    return truncate(scrub(body, secrets), limit)


class ModelCallError(Exception):
    """A call to a model endpoint failed; ``str()`` is safe to show and to log."""

    code = "model.error"
    retryable = False

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        excerpt: str | bytes | None = None,
        secrets: Iterable[str | None] = (),
        retryable: bool | None = None,
    ):
        secrets = tuple(secrets)
        self.message = scrub(message, secrets)
        self.status = status
        self.excerpt = safe_excerpt(excerpt, secrets)
        if retryable is not None:
            self.retryable = retryable
        super().__init__(self.message)

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code!r}, message={self.message!r})"

    def as_dict(self) -> dict[str, object]:
        """Return a JSON-ready description, e.g. for storing with a failed prediction."""
        return {
            "code": self.code,
            "message": self.message,
            "retryable": self.retryable,
            "status": self.status,
            "excerpt": self.excerpt,
        }


class ModelUnreachable(ModelCallError):
    """The connection failed: refused, reset, DNS failure, or a TLS error."""

    code = "model.unreachable"
    retryable = True


class ModelTimeout(ModelCallError):
    """The model did not connect or answer within the timeouts or the total deadline."""

    code = "model.timeout"
    retryable = True


class ModelServerError(ModelCallError):
    """The model answered with a 5xx status (``status`` holds it)."""

    code = "model.server_error"
    retryable = True


class ModelBadResponse(ModelCallError):
    """The model answered, but not acceptably: 4xx, bad JSON, wrong length, fields or labels."""

    code = "model.bad_response"
    retryable = False


class ModelRedirect(ModelBadResponse):
    """The model answered with a 3xx; redirects are never followed (SSRF)."""

    code = "model.redirect"


class ModelResponseTooLarge(ModelBadResponse):
    """The response body was larger than the endpoint's cap."""

    code = "model.response_too_large"


class ModelResponseTooDeep(ModelBadResponse):
    """The response body nests arrays and objects deeper than ``MAX_JSON_DEPTH`` levels."""

    code = "model.response_too_deep"


class ModelAddressRefused(ModelCallError):
    """The URL or an address it resolves to is refused by the SSRF guard."""

    code = "model.address_refused"
    retryable = False


class ModelConfigurationError(ModelCallError):
    """The model registration cannot be used (unknown protocol, bad template, no label map)."""

    code = "model.configuration"
    retryable = False


class ModelTokenUnreadable(ModelConfigurationError):
    """The model's stored token cannot be decrypted with the site's keys: its owner enters
    it again (after a key was dropped from ``DYNATASK_SECRET_KEYS`` too early)."""

    code = "model.token_unreadable"
