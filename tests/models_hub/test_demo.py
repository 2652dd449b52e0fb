"""The offline demo models answer config-valid outputs for the demo and Dynabench configs."""

from __future__ import annotations

import pytest

from models_hub.client import ModelClient
from models_hub.demo import HateSpeechHandler, NLIHandler, QAHandler, SentimentHandler
from models_hub.server import make_server
from tasks.config.values import check_model_output
from tests.models_hub.conftest import endpoint
from tests.models_hub.servers import running

CONTEXT = (
    "Super Bowl 50 was an American football game. The Denver Broncos defeated the Carolina "
    "Panthers 24 to 10 on February 7, 2016, at Levi's Stadium in Santa Clara, California."
)
CASES = {
    "sentiment": (
        SentimentHandler,
        [
            {"uid": "1", "statement": "I absolutely love this!", "context": ""},
            {"uid": "2", "statement": "Worst day ever, I hate it.", "context": ""},
            {"uid": "3", "statement": "The meeting is at 3pm.", "context": ""},
        ],
    ),
    "hs": (
        HateSpeechHandler,
        [
            {"uid": "1", "statement": "I hate immigrants, they are vermin.", "context": ""},
            {"uid": "2", "statement": "I love my neighbours.", "context": ""},
            {"uid": "3", "statement": "", "context": ""},
        ],
    ),
    "nli": (
        NLIHandler,
        [
            {
                "uid": "1",
                "context": CONTEXT,
                "hypothesis": "The Denver Broncos defeated the Panthers.",
            },
            {"uid": "2", "context": CONTEXT, "hypothesis": "The Broncos did not play in 2016."},
            {"uid": "3", "context": CONTEXT, "hypothesis": "It rained in Ohio."},
        ],
    ),
    "qa": (
        QAHandler,
        [
            {"uid": "1", "context": CONTEXT, "question": "Who defeated the Carolina Panthers?"},
            {"uid": "2", "context": CONTEXT, "question": "When was Super Bowl 50 played?"},
            {"uid": "3", "context": "", "question": "Anything?"},
        ],
    ),
}


@pytest.mark.parametrize("task", sorted(CASES))
def test_demo_outputs_are_valid_for_the_config(configs, task):
    handler_class, inputs = CASES[task]
    outputs = handler_class().predict(inputs)
    assert len(outputs) == len(inputs)
    for output in outputs:
        assert check_model_output(configs[task], output) == []


def test_demo_answers_are_sensible():
    sentiment = SentimentHandler().predict(CASES["sentiment"][1])
    assert [output["label"] for output in sentiment] == ["positive", "negative", "neutral"]
    hate = HateSpeechHandler().predict(CASES["hs"][1][:2])
    assert [output["label"] for output in hate] == ["hateful", "not-hateful"]
    nli = NLIHandler().predict(CASES["nli"][1])
    assert nli[1]["label"] == "contradictory"
    qa = QAHandler().predict(CASES["qa"][1])
    for output, item in zip(qa, CASES["qa"][1], strict=True):
        assert output["answer"] in item["context"]
        assert 0.0 <= output["conf"] <= 1.0
    assert "Broncos" in qa[0]["answer"]


@pytest.mark.parametrize("task", sorted(CASES))
def test_demo_models_over_http(configs, task):
    handler_class, inputs = CASES[task]
    with running(make_server(handler_class())) as server:
        result = ModelClient().predict(
            endpoint(server.url, read_timeout=5.0), configs[task], task, inputs
        )
    assert len(result.outputs) == len(inputs)
    assert result.model_version == handler_class.model_version
