"""The hardened HTTP transport of the model client (no DB; settings come in as arguments).

Contract of ``request_json``:

- one ``requests.Session`` per SSRF policy and process (in practice one: the policy comes from
  ``MODELS_HUB_ALLOWED_HOSTS``), shared by threads. The session keeps no cookies and ignores
  proxy environment variables (a proxy would connect to an address that was never checked);
- every connection is opened by ``PinnedHTTPConnection``: it resolves the hostname, checks
  every address with ``ssrf.AddressPolicy`` and connects the socket to those checked addresses,
  while the Host header, TLS SNI and certificate verification keep using the hostname. Nothing
  can rebind the name between the check and the connection;
- explicit ``(connect, read)`` timeouts always, plus a total deadline over all attempts
  (bounded by ``RetryPolicy.deadline_at`` when the caller has a deadline of its own);
- redirects are never followed: a 3xx is ``ModelRedirect`` and its body is not read;
- the body is streamed and at most ``max_response_bytes`` (after content decoding, so a
  compressed bomb is stopped too) are read, else ``ModelResponseTooLarge``;
- TLS verification cannot be disabled (``verify`` is True or a CA bundle path);
- retries only for connection errors, timeouts and the statuses in
  ``RetryPolicy.retry_statuses`` (502, 503, 504 by default), with exponential backoff and
  jitter. A 500 is a ``ModelServerError`` with ``retryable=True`` for the caller (the live
  retry button, the evaluation shard retry) but is not retried inside one call: it is usually
  a deterministic crash of the model on this batch, and three quick repeats only triple the
  wait;
- ``Authorization: Bearer <token>`` only when a token is set; the token is scrubbed from every
  error text and excerpt, and bodies are never logged;
- streamed bodies (the chat client's ``stream: true`` replies) use the same pieces, all
  public here: ``session_for(policy)`` (the pinned session), ``read_some(response)`` (what the
  socket has, with requests' error types) and ``transport_error(error, timeout, secrets)``
  (a requests exception as a typed, scrubbed ``ModelCallError``);
- the body is read as strict JSON (``parse_json_body``): ``NaN`` and the infinities, which
  Python's ``json`` writes, are a ``ModelBadResponse`` that names them, not a value that
  fails later when it is stored; arrays and objects nested deeper than ``MAX_JSON_DEPTH``
  (64) levels are ``ModelResponseTooDeep`` (a ``ModelBadResponse``), never a crash.
"""

from __future__ import annotations

import json
import logging
import math
import random
import socket
import sys
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.cookiejar import DefaultCookiePolicy
from typing import Any
from urllib.parse import urlsplit

import orjson
import requests
import urllib3
from requests.adapters import HTTPAdapter
from urllib3 import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.exceptions import (
    ConnectTimeoutError,
    NameResolutionError,
    NewConnectionError,
    ReadTimeoutError,
)
from urllib3.util import connection as urllib3_connection

from core.bounded_json import JSONTooDeep, json_check_depth
from models_hub.errors import (
    ModelAddressRefused,
    ModelBadResponse,
    ModelCallError,
    ModelConfigurationError,
    ModelRedirect,
    ModelResponseTooDeep,
    ModelResponseTooLarge,
    ModelServerError,
    ModelTimeout,
    ModelUnreachable,
    safe_excerpt,
    scrub,
)
from models_hub.ssrf import AddressPolicy

logger = logging.getLogger(__name__)

USER_AGENT = "dynatask-models-hub/1"
DEFAULT_MAX_RESPONSE_BYTES = 5_000_000
READ_CHUNK_BYTES = 64 * 1024
POOL_MAXSIZE = 32


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long one request may be tried."""

    max_attempts: int = 3
    backoff_seconds: float = 0.2
    backoff_max_seconds: float = 2.0
    # None: the sum of every attempt's timeouts and backoffs.
    total_deadline_seconds: float | None = None
    # A ``time.monotonic()`` value past which no attempt runs and no body is read, whatever
    # the budget above (an evaluation turn's end: ``leaderboards.services.shards``).
    deadline_at: float | None = None
    retry_statuses: frozenset[int] = field(default_factory=lambda: frozenset({502, 503, 504}))

    def backoff(self, attempt: int) -> float:
        """Return the sleep before attempt ``attempt + 1``, with jitter against stampedes."""
        base = min(self.backoff_seconds * 2 ** (attempt - 1), self.backoff_max_seconds)
        return base * (0.5 + random.random() / 2)

    def should_retry(self, error: ModelCallError) -> bool:
        """Return True when ``error`` may be retried within the same call."""
        if isinstance(error, ModelServerError):
            return error.status in self.retry_statuses
        return isinstance(error, ModelUnreachable | ModelTimeout) and error.retryable


DEFAULT_RETRY = RetryPolicy()
NO_RETRY = RetryPolicy(max_attempts=1)
# Live predictions: a person is waiting, so one quick retry at most.
LIVE_RETRY = RetryPolicy(max_attempts=2, backoff_seconds=0.1, backoff_max_seconds=0.3)


@dataclass(frozen=True)
class HttpResult:
    """A successful exchange: the parsed JSON body (or None), status and timings."""

    status: int
    body: Any
    raw_excerpt: str
    latency_ms: float
    elapsed_ms: float
    attempts: int


# -- connections pinned to checked addresses ------------------------------------------------
class PinnedConnectionMixin:
    """Open the socket only to addresses that ``address_policy`` checked just now."""

    address_policy: AddressPolicy

    def _new_conn(self) -> socket.socket:
        hostname = self._dns_host  # type: ignore[attr-defined]
        try:
            addresses = self.address_policy.resolve(hostname, self.port)  # type: ignore[attr-defined]
        except ModelAddressRefused:
            raise
        except (OSError, UnicodeError) as error:
            raise NameResolutionError(self.host, self, error) from error  # type: ignore[attr-defined, arg-type]
        last_error: Exception | None = None
        for address in addresses:
            try:
                sock = urllib3_connection.create_connection(
                    (str(address), self.port),  # type: ignore[attr-defined]
                    self.timeout,  # type: ignore[attr-defined]
                    source_address=self.source_address,  # type: ignore[attr-defined]
                    socket_options=self.socket_options,  # type: ignore[attr-defined]
                )
            except TimeoutError as error:
                last_error = ConnectTimeoutError(
                    self,
                    f"Connection to {self.host} timed out. "  # type: ignore[attr-defined]
                    f"(connect timeout={self.timeout})",  # type: ignore[attr-defined]
                )
                last_error.__cause__ = error
            except OSError as error:
                last_error = NewConnectionError(
                    self,  # type: ignore[arg-type]
                    f"Failed to establish a new connection: {error}",
                )
                last_error.__cause__ = error
            else:
                sys.audit("http.client.connect", self, self.host, self.port)  # type: ignore[attr-defined]
                return sock
        assert last_error is not None
        raise last_error


class PinnedAdapter(HTTPAdapter):
    """An ``HTTPAdapter`` whose connections are pinned to addresses checked by a policy."""

    def __init__(self, address_policy: AddressPolicy, **kwargs: Any):
        self.address_policy = address_policy
        super().__init__(**kwargs)

    def init_poolmanager(self, connections: int, maxsize: int, block: bool = False, **pool_kwargs):
        """Create the pool manager with connection classes bound to this adapter's policy."""
        super().init_poolmanager(connections, maxsize, block, **pool_kwargs)
        attributes = {"address_policy": self.address_policy}
        http_connection = type(
            "PinnedHTTPConnection", (PinnedConnectionMixin, HTTPConnection), attributes
        )
        https_connection = type(
            "PinnedHTTPSConnection", (PinnedConnectionMixin, HTTPSConnection), attributes
        )
        self.poolmanager.pool_classes_by_scheme = {
            "http": type(
                "PinnedHTTPPool", (HTTPConnectionPool,), {"ConnectionCls": http_connection}
            ),
            "https": type(
                "PinnedHTTPSPool", (HTTPSConnectionPool,), {"ConnectionCls": https_connection}
            ),
        }

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any):
        """Refuse proxies: the proxy, not this process, would pick the address."""
        raise ModelConfigurationError("proxies are not supported for model calls")


_sessions: dict[AddressPolicy, requests.Session] = {}
_sessions_lock = threading.Lock()


def session_for(policy: AddressPolicy) -> requests.Session:
    """Return the process-wide session for ``policy`` (created once, then shared)."""
    with _sessions_lock:
        session = _sessions.get(policy)
        if session is None:
            session = requests.Session()
            session.trust_env = False
            session.proxies = {}
            # Endpoints must not be able to plant cookies that are sent to other endpoints.
            session.cookies.set_policy(DefaultCookiePolicy(allowed_domains=[]))
            session.headers["User-Agent"] = USER_AGENT
            adapter = PinnedAdapter(policy, pool_connections=16, pool_maxsize=POOL_MAXSIZE)
            session.mount("http://", adapter)
            session.mount("https://", adapter)
            _sessions[policy] = session
        return session


def close_sessions() -> None:
    """Close every shared session (tests and worker shutdown)."""
    with _sessions_lock:
        for session in _sessions.values():
            session.close()
        _sessions.clear()


# -- one request ----------------------------------------------------------------------------
def loggable_url(url: str) -> str:
    """Return ``scheme://host:port/path`` without query, fragment or credentials."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}"


def _root_reason(error: BaseException) -> str:
    """Return the most specific message in a requests/urllib3 exception chain."""
    reason: BaseException = error
    for _ in range(5):
        inner = getattr(reason.args[0], "reason", None) if reason.args else None
        if isinstance(inner, BaseException):
            reason = inner
            continue
        if reason.args and isinstance(reason.args[0], BaseException):
            reason = reason.args[0]
            continue
        break
    return str(reason)


def _find_in_chain(error: BaseException, kind: type[BaseException]) -> BaseException | None:
    seen = 0
    current: BaseException | None = error
    while current is not None and seen < 10:
        if isinstance(current, kind):
            return current
        for candidate in (*current.args, getattr(current, "reason", None)):
            if isinstance(candidate, kind):
                return candidate
        current = current.__cause__ or current.__context__
        seen += 1
    return None


def transport_error(
    error: requests.RequestException, timeout: tuple[float, float], secrets: tuple[str, ...]
) -> ModelCallError:
    """Translate a requests exception into a typed, scrubbed model error."""
    if isinstance(error, requests.exceptions.ConnectTimeout):
        return ModelTimeout(f"the model did not accept a connection within {timeout[0]:g}s")
    if isinstance(error, requests.exceptions.ReadTimeout) or _find_in_chain(
        error, ReadTimeoutError
    ):
        return ModelTimeout(f"the model did not answer within {timeout[1]:g}s")
    if isinstance(error, requests.exceptions.SSLError):
        return ModelUnreachable(
            f"TLS error talking to the model: {_root_reason(error)}",
            secrets=secrets,
            retryable=False,
        )
    broken = requests.exceptions.ChunkedEncodingError | requests.exceptions.ContentDecodingError
    if isinstance(error, broken):
        return ModelUnreachable(
            f"the connection broke while reading the answer: {_root_reason(error)}",
            secrets=secrets,
        )
    if _find_in_chain(error, NameResolutionError):
        return ModelUnreachable("the model's host name does not resolve", secrets=secrets)
    return ModelUnreachable(
        f"could not connect to the model: {_root_reason(error)}", secrets=secrets
    )


def read_some(response: requests.Response) -> bytes:
    """Read what is available of the body (b"" at its end), with requests' error types."""
    try:
        return response.raw.read1(READ_CHUNK_BYTES, decode_content=True)
    except urllib3.exceptions.ProtocolError as error:
        raise requests.exceptions.ChunkedEncodingError(error) from error
    except urllib3.exceptions.DecodeError as error:
        raise requests.exceptions.ContentDecodingError(error) from error
    except urllib3.exceptions.ReadTimeoutError as error:
        raise requests.exceptions.ConnectionError(error) from error
    except urllib3.exceptions.SSLError as error:
        raise requests.exceptions.SSLError(error) from error


def _read_capped(
    response: requests.Response, max_bytes: int, deadline: float, secrets: tuple[str, ...]
) -> bytes:
    declared = response.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        raise ModelResponseTooLarge(
            f"response over {max_bytes} bytes (Content-Length {declared})",
            status=response.status_code,
        )
    chunks: list[bytes] = []
    total = 0
    while True:
        # ``read1`` returns whatever the socket has (at most READ_CHUNK_BYTES) instead of
        # waiting for a full chunk, so the deadline is checked after every read and a body
        # trickled byte by byte ends at the deadline, not at RQ's job timeout.
        chunk = read_some(response)
        if not chunk:
            break
        total += len(chunk)
        if total > max_bytes:
            raise ModelResponseTooLarge(
                f"response over {max_bytes} bytes",
                status=response.status_code,
                excerpt=b"".join(chunks)[:2048],
                secrets=secrets,
            )
        chunks.append(chunk)
        if time.monotonic() > deadline:
            # The read timeout bounds each socket read; a trickling body needs this bound too.
            raise ModelTimeout("the model's answer did not finish within the total deadline")
    return b"".join(chunks)


def _attempt(
    session: requests.Session,
    prepared: requests.PreparedRequest,
    *,
    timeout: tuple[float, float],
    verify: bool | str,
    max_bytes: int,
    deadline: float,
    expect_json: bool,
    secrets: tuple[str, ...],
) -> tuple[int, Any, bytes, float]:
    started = time.perf_counter()
    try:
        # The adapter, not ``Session.send``: with redirects off, ``Session.send`` still reads
        # a 3xx body whole (to offer ``Response.next``), without any size cap.
        adapter = session.get_adapter(prepared.url or "")
        response = adapter.send(prepared, stream=True, timeout=timeout, verify=verify, proxies={})
        with response:
            status = response.status_code
            if 300 <= status < 400:
                location = response.headers.get("Location", "")
                raise ModelRedirect(
                    f"the model answered HTTP {status} (redirect to {location[:200]!r}); "
                    "redirects are refused",
                    status=status,
                    secrets=secrets,
                )
            raw = _read_capped(response, max_bytes, deadline, secrets)
    except requests.RequestException as error:
        raise transport_error(error, timeout, secrets) from error
    latency_ms = (time.perf_counter() - started) * 1000
    if status >= 500:
        raise ModelServerError(
            f"the model answered HTTP {status}", status=status, excerpt=raw, secrets=secrets
        )
    if not 200 <= status < 300:
        raise ModelBadResponse(
            f"the model answered HTTP {status}", status=status, excerpt=raw, secrets=secrets
        )
    if not expect_json:
        return status, None, raw, latency_ms
    try:
        body = parse_json_body(raw)
    except JSONTooDeep as error:
        raise ModelResponseTooDeep(
            f"the model answered JSON {error}", status=status, excerpt=raw, secrets=secrets
        )
    except (ValueError, UnicodeDecodeError) as error:
        reason = str(error) if isinstance(error, NotJSONConstant) else type(error).__name__
        raise ModelBadResponse(
            f"the model answered invalid JSON ({reason})",
            status=status,
            excerpt=raw,
            secrets=secrets,
        )
    return status, body, raw, latency_ms


class NotJSONConstant(ValueError):
    """``NaN``, ``Infinity`` or ``-Infinity`` in a body: Python writes them, JSON has none."""


def _refuse_constant(name: str) -> Any:
    raise NotJSONConstant(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    # ``json`` reads 1e400 as infinity, which no JSON column stores and no figure means.
    value = float(text)
    if not math.isfinite(value):
        raise NotJSONConstant(f"the number {text[:40]} is beyond the range of a 64-bit float")
    return value


def parse_json_body(raw: bytes) -> Any:
    """Return the JSON document ``raw``; raise ``ValueError`` if it is not one.

    Strict JSON (RFC 8259): ``NaN`` and the infinities, which Python's ``json`` reads and
    writes, are refused, as no JSON column can store them, and so is a number beyond the
    range of a 64-bit float (``1e400``, which ``json`` would read as infinity). Arrays and
    objects nested deeper than ``MAX_JSON_DEPTH`` levels are ``JSONTooDeep`` (a
    ``ValueError``), checked before either parser runs: ``json`` would exhaust the stack on
    a deep enough body. orjson reads UTF-8 bodies; what it refuses is read again by
    ``json`` (other Unicode encodings, integers beyond 64 bits), with the same refusals.
    """
    json_check_depth(raw)
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return json.loads(raw, parse_constant=_refuse_constant, parse_float=_finite_float)


def request_json(
    method: str,
    url: str,
    *,
    policy: AddressPolicy,
    json_body: Any = None,
    token: str | None = None,
    connect_timeout: float,
    read_timeout: float,
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    retry: RetryPolicy = DEFAULT_RETRY,
    verify: bool | str = True,
    expect_json: bool = True,
    extra_secrets: Iterable[str] = (),
) -> HttpResult:
    """Send one request to a model endpoint and return its parsed JSON body.

    Raises a ``ModelCallError`` subclass for every failure (see the module docstring).
    """
    _check_call_settings(verify, connect_timeout, read_timeout)
    secrets = tuple(secret for secret in (token, *extra_secrets) if secret)
    policy.check_url_static(url)
    session = session_for(policy)
    prepared = _prepared_request(session, method, url, json_body, token)
    started = time.monotonic()
    deadline = _total_deadline(retry, connect_timeout, read_timeout, started)
    for attempt in range(1, retry.max_attempts + 1):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise ModelTimeout("the model did not answer within the total deadline")
        timeout = (min(connect_timeout, remaining), min(read_timeout, remaining))
        try:
            status, body, raw, latency_ms = _attempt(
                session,
                prepared,
                timeout=timeout,
                verify=verify,
                max_bytes=max_response_bytes,
                deadline=deadline,
                expect_json=expect_json,
                secrets=secrets,
            )
        except ModelCallError as error:
            error.attempts = attempt  # type: ignore[attr-defined]
            delay = retry.backoff(attempt)
            if _is_last_attempt(retry, error, attempt, delay, deadline):
                raise
            _log_retry(method, url, secrets, error, attempt, retry)
            time.sleep(delay)
            continue
        return HttpResult(
            status=status,
            body=body,
            raw_excerpt=safe_excerpt(raw, secrets, limit=2000),
            latency_ms=latency_ms,
            elapsed_ms=(time.monotonic() - started) * 1000,
            attempts=attempt,
        )
    raise AssertionError("unreachable: the loop returns or raises")


def _is_last_attempt(
    retry: RetryPolicy, error: ModelCallError, attempt: int, delay: float, deadline: float
) -> bool:
    """Return whether ``error`` ends the call: no attempt left, not retryable, or no time
    left for the backoff ``delay``."""
    return (
        attempt >= retry.max_attempts
        or not retry.should_retry(error)
        or time.monotonic() + delay >= deadline
    )


def _log_retry(
    method: str,
    url: str,
    secrets: tuple[str, ...],
    error: ModelCallError,
    attempt: int,
    retry: RetryPolicy,
) -> None:
    logger.info(
        "retrying model call %s %s after %s (attempt %d of %d)",
        method,
        scrub(loggable_url(url), secrets),
        error.code,
        attempt,
        retry.max_attempts,
    )


def _check_call_settings(verify: bool | str, connect_timeout: float, read_timeout: float) -> None:
    """Refuse a call without TLS verification or without positive timeouts (a programming
    error, not a model's failure)."""
    if verify is False or verify is None or verify == "":
        raise ValueError("TLS verification of model endpoints cannot be disabled")
    if connect_timeout <= 0 or read_timeout <= 0:
        raise ValueError("model calls need positive connect and read timeouts")


def _prepared_request(
    session: requests.Session, method: str, url: str, json_body: Any, token: str | None
) -> requests.PreparedRequest:
    """Return the request to send: JSON accepted, ``json_body`` as JSON, the bearer token."""
    headers = {"Accept": "application/json"}
    data: bytes | None = None
    if json_body is not None:
        data = json.dumps(json_body, ensure_ascii=False, allow_nan=False).encode()
        headers["Content-Type"] = "application/json"
    if token:
        headers["Authorization"] = f"Bearer {token}"
    try:
        return session.prepare_request(requests.Request(method, url, headers=headers, data=data))
    except (requests.RequestException, ValueError):
        # requests' message quotes the header value, which holds the token: say less.
        raise ModelConfigurationError("the model URL or token cannot be used in a request")


def _total_deadline(
    retry: RetryPolicy, connect_timeout: float, read_timeout: float, started: float
) -> float:
    """Return the monotonic time by which every attempt must be over.

    The policy's total deadline, else every attempt's full timeouts and the longest
    backoffs between them; never later than the policy's ``deadline_at``.
    """
    if retry.total_deadline_seconds is not None:
        budget = retry.total_deadline_seconds
    else:
        budget = retry.max_attempts * (connect_timeout + read_timeout) + sum(
            retry.backoff_max_seconds for _ in range(retry.max_attempts - 1)
        )
    deadline = started + budget
    if retry.deadline_at is not None:
        deadline = min(deadline, retry.deadline_at)
    return deadline
