"""The protocol adapters as pure functions: request building and response parsing."""

from __future__ import annotations

import pytest

from models_hub.errors import ModelBadResponse, ModelConfigurationError
from models_hub.protocols import (
    EndpointSettings,
    get_protocol,
    model_inputs,
    validate_prompt_template,
)
from models_hub.protocols.openai_chat import chat_completions_url, find_labels, render_prompt


def settings(**options):
    return EndpointSettings("http://models.example/predict", "sentiment", options)


def chat_body(text):
    return {"model": "m", "choices": [{"message": {"role": "assistant", "content": text}}]}


def test_registry():
    assert {
        get_protocol(name).name for name in ("dynatask", "openai_chat", "hf_text_classification")
    } == {
        "dynatask",
        "openai_chat",
        "hf_text_classification",
    }
    with pytest.raises(ModelConfigurationError):
        get_protocol("grpc")


def test_model_inputs_send_only_model_input_fields(sentiment_config):
    projected = model_inputs(
        sentiment_config, [{"statement": "s", "context": "c", "label": "positive", "x": 1}]
    )
    assert projected == [{"uid": "0", "statement": "s", "context": "c"}]


def test_dynatask_request_and_parse(sentiment_config):
    protocol = get_protocol("dynatask")
    inputs = [{"uid": "1", "statement": "s", "context": "c"}]
    (request,) = protocol.build_requests(inputs, settings())
    assert request.json_body == {"task": "sentiment", "inputs": inputs}
    assert request.example_indexes == (0,)
    output = {"label": "neutral", "prob": {"negative": 0.2, "positive": 0.2, "neutral": 0.6}}
    assert protocol.parse_response({"outputs": [output]}, inputs, sentiment_config) == [output]
    assert protocol.model_version({"outputs": [], "model_version": "v9"}) == "v9"
    for body in ({"outputs": "x"}, [], {"outputs": [output, output]}, {"outputs": [3]}):
        with pytest.raises(ModelBadResponse):
            protocol.parse_response(body, inputs, sentiment_config)


def test_find_labels_prefers_earliest_and_longest():
    labels = ("not-hateful", "hateful")
    assert find_labels("This is NOT-HATEFUL.", labels)[0] == "not-hateful"
    assert find_labels("Hateful, clearly", labels)[0] == "hateful"
    assert find_labels("unhatefulness", labels) == []
    assert find_labels("neutral, maybe positive", ("negative", "positive", "neutral")) == [
        "neutral",
        "positive",
    ]


def test_prompt_templates():
    assert validate_prompt_template("Say {statement} {{literally}}", ["uid", "statement"]) == []
    assert validate_prompt_template("{statement.__class__}", ["statement"])
    assert validate_prompt_template("{0}", ["statement"])
    assert validate_prompt_template("{missing}", ["statement"])
    assert validate_prompt_template("{unclosed", ["statement"])
    assert render_prompt("S: {statement}", {"uid": "1", "statement": "hi"}) == "S: hi"
    assert (
        render_prompt(None, {"uid": "1", "statement": "hi", "context": "c"})
        == "statement: hi\ncontext: c"
    )


def test_chat_completions_url():
    assert chat_completions_url("http://h:8000") == "http://h:8000/v1/chat/completions"
    assert chat_completions_url("http://h:8000/v1/") == "http://h:8000/v1/chat/completions"


def test_openai_chat_requests_one_per_example():
    protocol = get_protocol("openai_chat")
    inputs = [{"uid": "1", "statement": "a"}, {"uid": "2", "statement": "b"}]
    requests = protocol.build_requests(
        inputs, settings(model="m", prompt_template="{statement}", system_prompt="Be brief.")
    )
    assert [request.example_indexes for request in requests] == [(0,), (1,)]
    assert requests[0].json_body["messages"][0] == {"role": "system", "content": "Be brief."}
    assert "temperature" not in requests[0].json_body
    with pytest.raises(ModelConfigurationError):
        protocol.build_requests(inputs, settings())


def test_openai_chat_parse(configs):
    protocol = get_protocol("openai_chat")
    example = [{"uid": "1", "statement": "s"}]
    outputs = protocol.parse_response(chat_body("I'd say: not-hateful."), example, configs["hs"])
    assert outputs == [{"label": "not-hateful", "prob": {"not-hateful": 1.0, "hateful": 0.0}}]
    qa_outputs = protocol.parse_response(chat_body("  Denver Broncos \n"), example, configs["qa"])
    assert qa_outputs == [{"answer": "Denver Broncos", "conf": 1.0}]
    for bad in (chat_body("no idea"), {"choices": []}, chat_body(None)):
        with pytest.raises(ModelBadResponse):
            protocol.parse_response(bad, example, configs["hs"])
    with pytest.raises(ModelBadResponse):
        protocol.parse_response(chat_body("   "), example, configs["qa"])


def test_hf_requests():
    protocol = get_protocol("hf_text_classification")
    inputs = [
        {"uid": "1", "statement": "a", "context": "c"},
        {"uid": "2", "statement": "b", "context": "c"},
    ]
    assert protocol.build_requests(inputs[:1], settings())[0].json_body == {"inputs": "a"}
    assert protocol.build_requests(inputs, settings())[0].json_body == {"inputs": ["a", "b"]}
    assert len(protocol.build_requests(inputs, settings(batch=False))) == 2
    assert protocol.build_requests(inputs[:1], settings(text_field="context"))[0].json_body == {
        "inputs": "c"
    }


def test_hf_parse_maps_and_renormalises(sentiment_config):
    protocol = get_protocol("hf_text_classification")
    one = [{"uid": "1", "statement": "a"}]
    label_map = {"NEG": "negative", "POS": "positive", "NEU": "neutral"}
    # Only the top two labels come back: the rest is renormalised away.
    body = [{"label": "POS", "score": 0.6}, {"label": "NEU", "score": 0.2}]
    (output,) = protocol.parse_response(body, one, sentiment_config, settings(label_map=label_map))
    assert output["label"] == "positive"
    assert output["prob"] == pytest.approx({"negative": 0.0, "positive": 0.75, "neutral": 0.25})
    # Without a label map, labels equal to the task's (case-insensitively) are used as is.
    (plain,) = protocol.parse_response(
        [[{"label": "Negative", "score": 0.9}]], one, sentiment_config, settings()
    )
    assert plain["label"] == "negative"
    with pytest.raises(ModelBadResponse):
        protocol.parse_response(
            [{"label": "OTHER", "score": 1.0}], one, sentiment_config, settings(label_map=label_map)
        )
    with pytest.raises(ModelBadResponse):
        protocol.parse_response([[], []], one, sentiment_config, settings())
    with pytest.raises(ModelBadResponse):
        protocol.parse_response(
            [{"label": "POS", "score": -1}], one, sentiment_config, settings(label_map=label_map)
        )
    with pytest.raises(ModelConfigurationError):
        protocol.parse_response(body, one, sentiment_config, settings(label_map={"POS": "happy"}))
