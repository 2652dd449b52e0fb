"""JSON nested too deep, from a model or to the model server: a typed refusal, never a crash."""

from __future__ import annotations

import json
from http import HTTPStatus

import pytest

from core.bounded_json import MAX_JSON_DEPTH, JSONTooDeep
from models_hub.errors import ModelBadResponse, ModelResponseTooDeep
from models_hub.server import DEFAULT_MAX_BODY_BYTES, RequestError, parse_inputs
from models_hub.transport import parse_json_body
from tests.adversarial_json import ADVERSARIAL_NAMES, ADVERSARIAL_TIMEOUT, adversarial_json
from tests.models_hub.conftest import endpoint, sentiment_inputs

SIZES = pytest.mark.parametrize("size", [1, 5], ids=["live", "batch"])
# The server's body is {"outputs": [{..., "trace": <arrays nested N levels>}]}: N + 3 deep.
WRAPPING_LEVELS = 3


@SIZES
@pytest.mark.parametrize("trace_depth", [100_000, 200])
def test_a_model_answer_nested_too_deep_is_a_typed_bad_response(
    model_client, sentiment_config, misbehaving_server, trace_depth, size
):
    target = endpoint(misbehaving_server.url + f"deep-{trace_depth}", max_response_bytes=5_000_000)
    with pytest.raises(ModelBadResponse) as caught:
        model_client.predict(target, sentiment_config, "sentiment", sentiment_inputs(size))
    error = caught.value
    assert isinstance(error, ModelResponseTooDeep)
    assert error.code == "model.response_too_deep" and not error.retryable
    assert f"nested deeper than {MAX_JSON_DEPTH} levels" in error.message
    assert error.as_dict()["code"] == "model.response_too_deep"


@SIZES
def test_a_model_answer_at_the_limit_is_read(
    model_client, sentiment_config, misbehaving_server, size
):
    trace_depth = MAX_JSON_DEPTH - WRAPPING_LEVELS
    target = endpoint(misbehaving_server.url + f"deep-{trace_depth}")
    result = model_client.predict(target, sentiment_config, "sentiment", sentiment_inputs(size))
    assert [output["label"] for output in result.outputs] == ["positive"] * size


def test_parse_json_body_checks_the_depth_before_either_parser():
    deep = b"[" * 100_000 + b"]" * 100_000
    with pytest.raises(JSONTooDeep):
        parse_json_body(deep)
    # The json fallback (a UTF-16 body orjson refuses) is guarded as well.
    with pytest.raises(JSONTooDeep):
        parse_json_body(deep.decode().encode("utf-16"))
    assert parse_json_body(json.dumps({"a": [[1]]}).encode("utf-16")) == {"a": [[1]]}


@pytest.mark.parametrize("depth", [100_000, 200])
def test_the_model_server_answers_400_to_a_request_nested_too_deep(depth):
    raw = b'{"inputs": [{"text": ' + b"[" * depth + b"]" * depth + b"}]}"
    with pytest.raises(RequestError) as caught:
        parse_inputs(raw, max_inputs=10)
    assert caught.value.status == HTTPStatus.BAD_REQUEST
    assert f"nested deeper than {MAX_JSON_DEPTH} levels" in caught.value.message


def test_the_model_server_reads_a_request_within_the_limit():
    raw = json.dumps({"inputs": [{"text": [[["deep enough"]]]}]}).encode()
    assert parse_inputs(raw, max_inputs=10) == [{"text": [[["deep enough"]]]}]


# --- linear time: the guards of model answers at the largest size they read ----------------

MODEL_ANSWER_BYTES = 2_000_000  # MODELS_HUB_MAX_RESPONSE_BYTES by default
HEALTH_BYTES = 100_000  # ModelClient.health reads at most this much


@pytest.mark.timeout(ADVERSARIAL_TIMEOUT)
@pytest.mark.parametrize("name", ADVERSARIAL_NAMES)
def test_parse_json_body_is_linear_on_adversarial_answers(name):
    with pytest.raises(ValueError):  # too deep, or not JSON at all
        parse_json_body(adversarial_json(name, MODEL_ANSWER_BYTES))


@pytest.mark.timeout(ADVERSARIAL_TIMEOUT)
@pytest.mark.parametrize("name", ["escaped-quotes-in-unclosed-string", "many-short-strings"])
def test_an_adversarial_answer_of_the_largest_size_is_refused_quickly(
    model_client, sentiment_config, misbehaving_server, name
):
    target = endpoint(
        misbehaving_server.url + f"adversarial-{name}-{MODEL_ANSWER_BYTES}",
        max_response_bytes=MODEL_ANSWER_BYTES,
        read_timeout=5.0,
    )
    with pytest.raises(ModelBadResponse) as caught:
        model_client.predict(target, sentiment_config, "sentiment", sentiment_inputs(1))
    assert caught.value.code == "model.response_too_deep"


@pytest.mark.timeout(ADVERSARIAL_TIMEOUT)
@pytest.mark.parametrize("name", ADVERSARIAL_NAMES)
def test_an_adversarial_health_body_is_a_quick_health_error(model_client, misbehaving_server, name):
    target = endpoint(misbehaving_server.url + f"adversarial-{name}-{HEALTH_BYTES}")
    health = model_client.health(target)
    assert not health.ok
    assert health.error_code in {"model.response_too_deep", "model.bad_response"}


@pytest.mark.timeout(ADVERSARIAL_TIMEOUT)
@pytest.mark.parametrize("name", ADVERSARIAL_NAMES)
def test_the_model_server_reads_adversarial_requests_of_its_largest_size_quickly(name):
    with pytest.raises(RequestError) as caught:
        parse_inputs(adversarial_json(name, DEFAULT_MAX_BODY_BYTES), max_inputs=10)
    assert caught.value.status == HTTPStatus.BAD_REQUEST
