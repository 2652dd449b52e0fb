"""model_input, model_output and cast_output work alike for every protocol, over real HTTP.

Each test runs a small model server on loopback that speaks the model's own names (``text``,
``sentiment``, raw labels 0/1/2) and checks what it received and what the platform read back.
"""

from __future__ import annotations

import json

import pytest

from models_hub.client import ModelClient
from models_hub.errors import ModelBadResponse
from tasks.config import parse_task_config
from tests.models_hub.conftest import FAST_RETRY, endpoint
from tests.models_hub.servers import JSONHandler, RecordingServer, running

CONFIG = parse_task_config(
    """
goal:
  type: radio-button-options
  options: [negative, positive, neutral]
  field_name_for_the_model: label
context:
  type: plain-text
  field_names_for_the_model:
    context: passage
user_input:
  - type: text
    field_name_for_the_model: review
model_input:
  text: review
model_output:
  model_prediction_label: sentiment
cast_output:
  negative: 0
  positive: 1
  neutral: 2
output:
  - name: label
  - name: prob
    type: prob
    reference_name: label
perf_metric:
  type: accuracy
  reference_name: label
"""
)
INPUTS = [
    {"uid": "a", "review": "a good blender", "context": "Blenders", "label": "negative"},
    {"uid": "b", "review": "it broke", "context": "Blenders", "label": "positive"},
]


def raw_label(text: str) -> int:
    return 1 if "good" in text else 0


class DynataskModel(JSONHandler):
    """Reads ``text``; answers ``sentiment`` as a raw label and ``prob`` over raw labels."""

    def do_POST(self) -> None:
        body, _seen = self.begin()
        try:
            outputs = []
            for item in body["inputs"]:
                raw = raw_label(item["text"])
                prob = {"0": 0.1, "1": 0.1, "2": 0.1}
                prob[str(raw)] = 0.8
                outputs.append({"sentiment": raw, "prob": prob})
            self.reply(200, {"outputs": outputs})
        finally:
            self.server.leave()


class HFModel(JSONHandler):
    """Answers ``[{"sentiment": raw label, "score": ...}]`` per text."""

    def do_POST(self) -> None:
        body, _seen = self.begin()
        try:
            texts = body["inputs"] if isinstance(body["inputs"], list) else [body["inputs"]]
            answers = []
            for text in texts:
                raw = raw_label(text)
                answers.append([{"sentiment": raw, "score": 0.7}, {"sentiment": 2, "score": 0.3}])
            self.reply(200, answers)
        finally:
            self.server.leave()


class ChatModel(JSONHandler):
    """Answers a JSON object keyed ``sentiment`` with a raw label, or the bare raw label 2."""

    def do_POST(self) -> None:
        body, _seen = self.begin()
        try:
            prompt = body["messages"][-1]["content"]
            if "broke" in prompt:
                content = "2"
            else:
                content = "```json\n" + json.dumps({"sentiment": raw_label(prompt)}) + "\n```"
            message = {"role": "assistant", "content": content}
            self.reply(200, {"model": "m", "choices": [{"message": message}]})
        finally:
            self.server.leave()


def predict(server, protocol: str, **options):
    client = ModelClient(retry=FAST_RETRY)
    spec = endpoint(server.url, protocol=protocol, options=options, read_timeout=5.0)
    return client.predict(spec, CONFIG, "reviews", INPUTS)


def test_dynatask_receives_the_request_keys_and_is_read_through_the_maps():
    with running(RecordingServer(DynataskModel)) as server:
        result = predict(server, "dynatask")

    (request,) = server.requests
    assert request["body"]["inputs"] == [
        {"uid": "a", "text": "a good blender", "passage": "Blenders"},
        {"uid": "b", "text": "it broke", "passage": "Blenders"},
    ]
    assert [output["label"] for output in result.outputs] == ["positive", "negative"]
    assert result.outputs[0]["prob"] == {"negative": 0.1, "positive": 0.8, "neutral": 0.1}


def test_hf_text_classification_reads_the_label_under_model_output_and_casts_it():
    with running(RecordingServer(HFModel)) as server:
        result = predict(server, "hf_text_classification")

    (request,) = server.requests
    assert request["body"] == {"inputs": ["a good blender", "it broke"]}
    assert [output["label"] for output in result.outputs] == ["positive", "negative"]
    assert result.outputs[0]["prob"]["positive"] == pytest.approx(0.7)


def test_openai_chat_prompts_with_the_request_keys_and_reads_keyed_or_raw_replies():
    with running(RecordingServer(ChatModel)) as server:
        result = predict(
            server, "openai_chat", model="m", prompt_template="Review: {text}\nAbout: {passage}"
        )

    prompts = sorted(r["body"]["messages"][-1]["content"] for r in server.requests)
    assert prompts == [
        "Review: a good blender\nAbout: Blenders",
        "Review: it broke\nAbout: Blenders",
    ]
    assert [output["label"] for output in result.outputs] == ["positive", "neutral"]
    assert result.outputs[1]["prob"] == {"negative": 0.0, "positive": 0.0, "neutral": 1.0}


def test_a_raw_value_outside_cast_output_is_a_bad_response():
    class OffScale(DynataskModel):
        def do_POST(self) -> None:
            body, _seen = self.begin()
            try:
                prob = {"0": 0.5, "1": 0.5, "2": 0.0}
                self.reply(200, {"outputs": [{"sentiment": 7, "prob": prob}] * 2})
            finally:
                self.server.leave()

    with running(RecordingServer(OffScale)) as server, pytest.raises(ModelBadResponse) as error:
        predict(server, "dynatask")
    assert "'label'" in str(error.value) and "value.E103" in str(error.value)
