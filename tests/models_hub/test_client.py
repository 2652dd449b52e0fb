"""Happy paths of the three protocols, batching, the concurrency cap and health probes."""

from __future__ import annotations

import http.client

import pytest

from models_hub.client import EndpointSpec, ModelClient
from models_hub.demo import SentimentHandler
from models_hub.errors import ModelBadResponse, ModelConfigurationError
from models_hub.server import make_server
from tests.models_hub.conftest import endpoint, sentiment_inputs
from tests.models_hub.servers import running


@pytest.fixture
def sentiment_server():
    with running(make_server(SentimentHandler())) as server:
        yield server


def test_dynatask_happy_path_with_the_model_server(
    model_client, sentiment_config, sentiment_server
):
    inputs = [
        {"uid": "a", "statement": "I love this, it is wonderful!", "context": "c"},
        {"uid": "b", "statement": "This is awful and I hate it.", "context": "c"},
    ]
    result = model_client.predict(
        endpoint(sentiment_server.url), sentiment_config, "sentiment", inputs
    )
    assert [output["label"] for output in result.outputs] == ["positive", "negative"]
    assert result.model_version == SentimentHandler.model_version
    assert result.latency_ms > 0
    assert result.raw_excerpt.startswith('{"outputs"')


def test_batches_split_by_batch_size_and_targets_are_never_sent(
    model_client, sentiment_config, misbehaving_server
):
    result = model_client.predict(
        endpoint(misbehaving_server.url + "ok", batch_size=2),
        sentiment_config,
        "sentiment",
        sentiment_inputs(5),
    )
    assert len(result.outputs) == 5
    assert result.requests_sent == 3
    bodies = [record["body"] for record in misbehaving_server.requests]
    assert sorted(len(body["inputs"]) for body in bodies) == [1, 2, 2]
    for body in bodies:
        assert body["task"] == "sentiment"
        for item in body["inputs"]:
            assert set(item) == {"uid", "statement", "context"}
    sent_uids = sorted(item["uid"] for body in bodies for item in body["inputs"])
    assert sent_uids == [f"u{index}" for index in range(5)]


def test_connections_are_reused(model_client, sentiment_config, misbehaving_server):
    target = endpoint(misbehaving_server.url + "ok")
    for _ in range(3):
        model_client.predict(target, sentiment_config, "sentiment", sentiment_inputs(1))
    ports = {record["headers"].get("X-Client-Port") for record in misbehaving_server.requests}
    assert len(misbehaving_server.requests) == 3
    assert len(ports) == 1


def openai_endpoint(server, **overrides) -> EndpointSpec:
    options = {
        "model": "tiny-llm",
        "prompt_template": "Sentiment of: {statement}\nAnswer positive, negative or neutral.",
        "temperature": 0,
        "max_tokens": 5,
    }
    return endpoint(
        server.url, protocol="openai_chat", options=options, read_timeout=2.0, **overrides
    )


def test_openai_chat_happy_path(model_client, sentiment_config, openai_server):
    result = model_client.predict(
        openai_endpoint(openai_server), sentiment_config, "sentiment", sentiment_inputs(2)
    )
    assert [output["label"] for output in result.outputs] == ["negative", "positive"]
    assert result.outputs[1]["prob"] == {"negative": 0.0, "positive": 1.0, "neutral": 0.0}
    assert result.model_version == "tiny-llm"
    request = openai_server.requests[0]
    assert request["path"] == "/v1/chat/completions"
    assert request["body"]["model"] == "tiny-llm"
    assert request["body"]["temperature"] == 0 and request["body"]["max_tokens"] == 5
    assert "Sentiment of: statement" in request["body"]["messages"][-1]["content"]


def test_openai_chat_concurrency_cap_is_honoured(model_client, sentiment_config, openai_server):
    result = model_client.predict(
        openai_endpoint(openai_server, max_concurrency=2, batch_size=3),
        sentiment_config,
        "sentiment",
        sentiment_inputs(8),
    )
    assert len(result.outputs) == 8
    assert openai_server.max_in_flight == 2


def test_openai_chat_unparseable_reply_is_a_bad_response(
    model_client, sentiment_config, openai_server
):
    inputs = sentiment_inputs(3)
    inputs[2]["statement"] = "garbage"
    with pytest.raises(ModelBadResponse) as caught:
        model_client.predict(openai_endpoint(openai_server), sentiment_config, "sentiment", inputs)
    assert "output 2" in str(caught.value) and "'label'" in str(caught.value)
    assert "bananas" in caught.value.excerpt


def test_openai_chat_template_cannot_reach_attributes(
    model_client, sentiment_config, openai_server
):
    target = openai_endpoint(openai_server)
    target = EndpointSpec(
        **{**target.__dict__, "options": {"model": "m", "prompt_template": "{statement.__class__}"}}
    )
    with pytest.raises(ModelConfigurationError):
        model_client.predict(target, sentiment_config, "sentiment", sentiment_inputs(1))
    assert openai_server.requests == []


def hf_endpoint(server, **overrides) -> EndpointSpec:
    label_map = {"LABEL_0": "negative", "LABEL_1": "neutral", "LABEL_2": "positive"}
    return endpoint(
        server.url, protocol="hf_text_classification", options={"label_map": label_map}, **overrides
    )


@pytest.mark.parametrize("size", [1, 4])
def test_hf_text_classification_happy_path(model_client, sentiment_config, hf_server, size):
    inputs = [
        {"uid": str(index), "statement": "good" if index % 2 else "bad", "context": "c"}
        for index in range(size)
    ]
    result = model_client.predict(hf_endpoint(hf_server), sentiment_config, "sentiment", inputs)
    labels = [output["label"] for output in result.outputs]
    assert labels == ["negative" if index % 2 == 0 else "positive" for index in range(size)]
    assert result.outputs[0]["prob"] == pytest.approx(
        {"negative": 0.6, "neutral": 0.3, "positive": 0.1}
    )
    body = hf_server.requests[0]["body"]
    assert body == (
        {"inputs": "bad"} if size == 1 else {"inputs": [item["statement"] for item in inputs]}
    )


def test_hf_label_map_to_unknown_task_label_is_a_configuration_error(
    model_client, sentiment_config, hf_server
):
    target = endpoint(
        hf_server.url,
        protocol="hf_text_classification",
        options={"label_map": {"LABEL_0": "angry"}},
    )
    with pytest.raises(ModelConfigurationError):
        model_client.predict(target, sentiment_config, "sentiment", sentiment_inputs(1))


def test_health_of_the_model_server(model_client, sentiment_server):
    health = model_client.health(endpoint(sentiment_server.url))
    assert health.ok and health.error is None
    assert health.model_version == SentimentHandler.model_version
    assert health.memory_gb is not None and health.memory_gb > 0
    assert health.latency_ms is not None


def test_health_reports_failures_without_raising(model_client, misbehaving_server, closed_port):
    down = model_client.health(endpoint(misbehaving_server.url + "down"))
    assert not down.ok and down.error_code == "model.server_error"
    refused = model_client.health(endpoint(f"http://127.0.0.1:{closed_port}/"))
    assert not refused.ok and refused.error_code == "model.unreachable"
    metadata = model_client.health(endpoint("http://169.254.169.254/"))
    assert not metadata.ok and metadata.error_code == "model.address_refused"


def test_health_of_other_protocols_gets_the_base_url(model_client, hf_server):
    health = model_client.health(hf_endpoint(hf_server))
    # The HF test server has no GET handler: its 501 answer is reported, not raised.
    assert health.ok is False and health.error_code == "model.server_error"


def test_endpoint_spec_hides_the_token_and_refuses_unverified_tls():
    spec = EndpointSpec(url="https://models.example/", token="tok-123")
    assert "tok-123" not in repr(spec)
    with pytest.raises(ValueError):
        EndpointSpec(url="https://models.example/", verify=False)


def test_empty_input_sends_nothing(sentiment_config):
    result = ModelClient().predict(endpoint("http://127.0.0.1:9/"), sentiment_config, "s", [])
    assert result.outputs == []


def test_keep_alive_of_the_model_server(sentiment_server):
    connection = http.client.HTTPConnection(*sentiment_server.server_address[:2], timeout=5)
    for _ in range(2):
        connection.request("GET", "/health")
        response = connection.getresponse()
        response.read()
        assert response.status == 200
    connection.close()
