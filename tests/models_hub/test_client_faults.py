"""The fault matrix: every failure of a model endpoint ends in the right typed error.

Each case runs as a live call (one input) and as a batch call (five inputs) against real
loopback servers.
"""

from __future__ import annotations

import logging
import time

import pytest

from models_hub.client import ModelClient
from models_hub.errors import (
    EXCERPT_MAX_CHARS,
    ModelAddressRefused,
    ModelBadResponse,
    ModelCallError,
    ModelRedirect,
    ModelResponseTooLarge,
    ModelServerError,
    ModelTimeout,
    ModelUnreachable,
)
from models_hub.transport import RetryPolicy
from tests.models_hub.conftest import FAST_RETRY, endpoint, sentiment_inputs

SIZES = pytest.mark.parametrize("size", [1, 5], ids=["live", "batch"])
TOKEN = "sk-test-7Hq2ZxSECRET9"


@SIZES
@pytest.mark.parametrize(
    ("path", "error_class", "code"),
    [
        ("500", ModelServerError, "model.server_error"),
        ("503", ModelServerError, "model.server_error"),
        ("400", ModelBadResponse, "model.bad_response"),
        ("invalid-json", ModelBadResponse, "model.bad_response"),
        ("nan", ModelBadResponse, "model.bad_response"),
        ("wrong-length", ModelBadResponse, "model.bad_response"),
        ("unknown-label", ModelBadResponse, "model.bad_response"),
        ("bad-prob", ModelBadResponse, "model.bad_response"),
        ("huge", ModelResponseTooLarge, "model.response_too_large"),
        ("huge-unsized", ModelResponseTooLarge, "model.response_too_large"),
        ("redirect", ModelRedirect, "model.redirect"),
        ("slow", ModelTimeout, "model.timeout"),
    ],
)
def test_server_faults(
    model_client, sentiment_config, misbehaving_server, path, error_class, code, size
):
    target = endpoint(misbehaving_server.url + path, max_response_bytes=100_000)
    with pytest.raises(error_class) as caught:
        model_client.predict(target, sentiment_config, "sentiment", sentiment_inputs(size))
    assert caught.value.code == code
    assert len(caught.value.excerpt) <= EXCERPT_MAX_CHARS


@SIZES
def test_connection_refused(model_client, sentiment_config, closed_port, size):
    target = endpoint(f"http://127.0.0.1:{closed_port}/")
    with pytest.raises(ModelUnreachable) as caught:
        model_client.predict(target, sentiment_config, "sentiment", sentiment_inputs(size))
    assert caught.value.retryable
    assert caught.value.attempts == FAST_RETRY.max_attempts


@SIZES
def test_metadata_ip_literal_is_refused(model_client, sentiment_config, size):
    target = endpoint("http://169.254.169.254/latest/meta-data/", allowed_hosts=("169.254.0.0/16",))
    with pytest.raises(ModelAddressRefused):
        model_client.predict(target, sentiment_config, "sentiment", sentiment_inputs(size))


@SIZES
def test_hostname_resolving_to_metadata_is_refused_and_nothing_is_sent(
    sentiment_config, misbehaving_server, size
):
    port = misbehaving_server.server_address[1]
    asked = []

    def resolver(hostname, port_number):
        asked.append(hostname)
        # The loopback server is allowed; the metadata address next to it is not.
        return ["127.0.0.1", "169.254.169.254"]

    model_client = ModelClient(resolver=resolver, retry=FAST_RETRY)
    target = endpoint(
        f"http://model.example:{port}/ok", allowed_hosts=("model.example", "127.0.0.1")
    )
    with pytest.raises(ModelAddressRefused, match="169.254.169.254"):
        model_client.predict(target, sentiment_config, "sentiment", sentiment_inputs(size))
    assert asked == ["model.example"]
    assert misbehaving_server.requests == []


@pytest.mark.parametrize(
    "second_answer",
    # The metadata address itself and as 6to4, NAT64, Teredo client and IPv4-compatible forms.
    [
        "169.254.169.254",
        "2002:a9fe:a9fe::",
        "64:ff9b::a9fe:a9fe",
        "2001:0:808:808::5601:5601",
        "::a9fe:a9fe",
    ],
)
def test_rebinding_after_a_good_answer_is_caught_at_connect_time(
    sentiment_config, misbehaving_server, second_answer
):
    port = misbehaving_server.server_address[1]
    answers = iter([["127.0.0.1"], [second_answer]])
    model_client = ModelClient(
        resolver=lambda hostname, port_number: next(answers), retry=FAST_RETRY
    )
    target = endpoint(f"http://rebind.example:{port}/ok", allowed_hosts=("rebind.example",))
    result = model_client.predict(target, sentiment_config, "sentiment", sentiment_inputs(1))
    assert result.outputs[0]["label"] == "positive"
    # A fresh connection (as after a keep-alive timeout) resolves again and is refused.
    from models_hub.transport import close_sessions

    close_sessions()
    with pytest.raises(ModelAddressRefused, match="169.254.169.254"):
        model_client.predict(target, sentiment_config, "sentiment", sentiment_inputs(1))
    assert len(misbehaving_server.requests) == 1


@pytest.mark.parametrize("host", ["127.1", "2130706433", "0x7f.0.0.1", "0177.0.0.1"])
def test_legacy_ipv4_spellings_connect_to_the_address_they_were_judged_as(
    sentiment_config, misbehaving_server, host
):
    """Allowed as 127.0.0.1, the call reaches the loopback server at 127.0.0.1, no other."""
    port = misbehaving_server.server_address[1]
    model_client = ModelClient(resolver=_no_dns, retry=FAST_RETRY)
    target = endpoint(f"http://{host}:{port}/ok", allowed_hosts=("127.0.0.1",))
    result = model_client.predict(target, sentiment_config, "sentiment", sentiment_inputs(1))
    assert result.outputs[0]["label"] == "positive"
    with pytest.raises(ModelAddressRefused, match="127.0.0.1"):
        model_client.predict(
            endpoint(f"http://{host}:{port}/ok", allowed_hosts=()),
            sentiment_config,
            "sentiment",
            sentiment_inputs(1),
        )
    assert len(misbehaving_server.requests) == 1


def _no_dns(hostname, port_number):
    raise AssertionError(f"{hostname} was sent to the resolver")


@SIZES
@pytest.mark.parametrize(
    "path", ["echo-token-400", "echo-token-500", "echo-token-invalid-json", "echo-token-label"]
)
def test_token_never_appears_in_errors_or_logs(
    model_client, sentiment_config, misbehaving_server, caplog, path, size
):
    caplog.set_level(logging.DEBUG)
    target = endpoint(misbehaving_server.url + path, token=TOKEN)
    with pytest.raises(ModelCallError) as caught:
        model_client.predict(target, sentiment_config, "sentiment", sentiment_inputs(size))
    error = caught.value
    # The server did receive it (so the echo was real)...
    assert misbehaving_server.requests[0]["headers"]["Authorization"] == f"Bearer {TOKEN}"
    # ...but no text we produce contains it.
    for text in (str(error), repr(error), error.excerpt, str(error.as_dict()), caplog.text):
        assert TOKEN not in text
    assert "[REDACTED]" in error.excerpt or "[REDACTED]" in str(error)
    assert TOKEN not in repr(target)


def test_token_echoed_in_a_good_answer_is_scrubbed(
    model_client, sentiment_config, misbehaving_server
):
    target = endpoint(misbehaving_server.url + "echo-token-ok", token=TOKEN)
    result = model_client.predict(target, sentiment_config, "sentiment", sentiment_inputs(2))
    assert TOKEN not in result.raw_excerpt
    assert TOKEN not in str(result.model_version)


def test_no_authorization_header_without_token(model_client, sentiment_config, misbehaving_server):
    model_client.predict(
        endpoint(misbehaving_server.url + "ok"), sentiment_config, "s", sentiment_inputs(1)
    )
    assert "Authorization" not in misbehaving_server.requests[0]["headers"]


@pytest.mark.parametrize(
    ("path", "expected_hits", "error_class"),
    [
        ("503", 3, ModelServerError),
        ("500", 1, ModelServerError),
        ("400", 1, ModelBadResponse),
        ("invalid-json", 1, ModelBadResponse),
        ("unknown-label", 1, ModelBadResponse),
        ("redirect", 1, ModelRedirect),
        ("slow", 3, ModelTimeout),
    ],
)
def test_only_retryable_errors_are_retried(
    model_client, sentiment_config, misbehaving_server, path, expected_hits, error_class
):
    with pytest.raises(error_class):
        model_client.predict(
            endpoint(misbehaving_server.url + path), sentiment_config, "s", sentiment_inputs(1)
        )
    assert misbehaving_server.hits["/" + path] == expected_hits


def test_flaky_endpoint_succeeds_after_retries(model_client, sentiment_config, misbehaving_server):
    result = model_client.predict(
        endpoint(misbehaving_server.url + "flaky"), sentiment_config, "s", sentiment_inputs(1)
    )
    assert result.outputs[0]["label"] == "positive"
    assert misbehaving_server.hits["/flaky"] == 3


def test_total_deadline_stops_retries(sentiment_config, misbehaving_server):
    model_client = ModelClient(
        retry=RetryPolicy(max_attempts=10, backoff_seconds=0.01, total_deadline_seconds=0.5)
    )
    with pytest.raises(ModelTimeout):
        model_client.predict(
            endpoint(misbehaving_server.url + "slow"), sentiment_config, "s", sentiment_inputs(1)
        )
    assert misbehaving_server.hits["/slow"] <= 2


def test_a_callers_deadline_ends_a_trickled_body(sentiment_config, misbehaving_server):
    """A body trickled byte by byte never trips the read timeout; the caller's deadline
    (an evaluation turn's end) stops it, far inside the request's own budget (one attempt of
    30 s, longer than the server trickles: without the deadline the body broke off)."""
    model_client = ModelClient(
        retry=RetryPolicy(max_attempts=1, deadline_at=time.monotonic() + 0.5)
    )
    target = endpoint(misbehaving_server.url + "trickle", read_timeout=30.0)
    with pytest.raises(ModelTimeout) as caught:
        model_client.predict(target, sentiment_config, "s", sentiment_inputs(1))
    assert "total deadline" in str(caught.value)
    assert misbehaving_server.hits["/trickle"] == 1


def test_bad_output_error_names_example_and_field(
    model_client, sentiment_config, misbehaving_server
):
    with pytest.raises(ModelBadResponse) as caught:
        model_client.predict(
            endpoint(misbehaving_server.url + "bad-prob", batch_size=2),
            sentiment_config,
            "s",
            sentiment_inputs(5),
        )
    message = str(caught.value)
    # Every request's last output is bad; the first in input order is reported.
    assert "output 1" in message and "'prob'" in message and "value.E111" in message
    assert "'u1'" in message


def test_json_bodies_are_read_strictly_whatever_their_encoding():
    from models_hub.transport import NotJSONConstant, parse_json_body

    document = {"outputs": [{"label": "négatif", "n": 2**70, "p": 0.5}]}
    text = '{"outputs": [{"label": "négatif", "n": 1180591620717411303424, "p": 0.5}]}'
    for raw in (text.encode(), text.encode("utf-16"), b"\xef\xbb\xbf" + text.encode()):
        assert parse_json_body(raw) == document
    for constant in ("NaN", "Infinity", "-Infinity"):
        with pytest.raises(NotJSONConstant, match=f"{constant} is not a JSON number"):
            parse_json_body(f'{{"p": {constant}}}'.encode())
        with pytest.raises(NotJSONConstant):
            parse_json_body(f'{{"p": {constant}}}'.encode("utf-16"))
    with pytest.raises(ValueError):
        parse_json_body(b'{"outputs": [oops')


def test_a_nan_answer_names_what_is_wrong(model_client, sentiment_config, misbehaving_server):
    target = endpoint(misbehaving_server.url + "nan")
    with pytest.raises(ModelBadResponse) as caught:
        model_client.predict(target, sentiment_config, "sentiment", sentiment_inputs(1))
    assert "NaN is not a JSON number" in str(caught.value)
