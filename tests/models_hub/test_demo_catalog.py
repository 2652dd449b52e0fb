"""The demo catalog: every demo task has at least three models, each built from an offline
handler whose outputs fit the task's config; the baselines answer as documented."""

from __future__ import annotations

from collections import Counter

import pytest

from models_hub.demo.baselines import FirstSpanQAHandler, MajorityClassHandler
from models_hub.demo.catalog import (
    DEMO_MODELS,
    PREDICTIONS_FILE,
    RANKED_DEMO_TASKS,
    SERVED,
    demo_model,
    predictions_file_models,
    served_models,
)
from models_hub.server import load_handler
from tasks.config import parse_task_config
from tasks.config.values import check_model_output
from tests.factories import demo_config

INPUTS = {
    "sentiment": [{"statement": "I love it."}, {"statement": "Terrible, I hate it."}],
    "hs": [{"statement": "Those people are vermin."}, {"statement": "I like my neighbours."}],
    "nli": [
        {"context": "The shop opens at six.", "hypothesis": "The shop does not open at six."},
        {"context": "The shop opens at six.", "hypothesis": "The shop opens."},
    ],
    "qa": [
        {"context": "The tower was built in 1872 by Elias Brandt.", "question": "When?"},
        {"context": "The tower was built in 1872 by Elias Brandt.", "question": "Who built it?"},
    ],
    "chat": [{"message": "How strong is black tea?"}, {"message": "hello"}],
}
# The chat task has no leaderboard: its models answer conversations, not datasets.
RANKED_TASKS = RANKED_DEMO_TASKS


@pytest.mark.parametrize("task", RANKED_TASKS)
def test_each_demo_task_has_three_ranked_models_and_a_predictions_file(task):
    served = served_models(task)
    assert len(served) >= 3
    assert sum(model.in_loop for model in served) == 1
    assert len(predictions_file_models(task)) >= 1
    names = [model.name for model in DEMO_MODELS if model.task == task]
    assert len(names) == len(set(names))


def test_the_chat_task_has_two_chat_models_in_the_loop():
    served = served_models("chat")
    assert len(served) == 2 and all(model.in_loop for model in served)
    assert {model.protocol for model in served} == {"openai_chat"}
    assert all(model.options.get("model") for model in served)
    for model in served:
        handler = load_handler(model.handler, **model.kwargs)
        pieces = list(handler.chat([{"role": "user", "content": "What is matcha?"}], {}))
        assert len(pieces) > 3 and "".join(pieces).strip()


def test_keys_and_ports_are_unique_and_fixed():
    keys = Counter(model.key for model in DEMO_MODELS)
    assert max(keys.values()) == 1
    ports = [model.port for model in DEMO_MODELS if model.kind == SERVED]
    assert all(isinstance(port, int) and 1024 < port < 65536 for port in ports)
    assert len(ports) == len(set(ports))
    assert all(model.port is None for model in DEMO_MODELS if model.kind == PREDICTIONS_FILE)
    assert demo_model("sentiment").in_loop and demo_model("nope") is None


@pytest.mark.parametrize("model", DEMO_MODELS, ids=lambda model: model.key)
def test_every_catalog_model_answers_what_its_config_expects(model):
    config = parse_task_config(demo_config(model.task))
    handler = load_handler(model.handler, **model.kwargs)
    outputs = handler.predict(INPUTS[model.task])
    assert len(outputs) == len(INPUTS[model.task])
    for output in outputs:
        assert check_model_output(config, output) == []
    fields = model.card_fields()
    assert fields["name"] == model.name and fields["description"]


def test_the_majority_baseline_always_gives_its_label():
    handler = MajorityClassHandler(labels=["a", "b", "c"], answer="b")
    outputs = handler.predict([{}, {"statement": "anything"}])
    assert outputs == [{"label": "b", "prob": {"a": 0.0, "b": 1.0, "c": 0.0}}] * 2
    with pytest.raises(ValueError):
        MajorityClassHandler(labels=["a"], answer="z")


@pytest.mark.parametrize(
    ("question", "answer", "conf"),
    [
        ("When was it built?", "1872", 0.5),
        ("How many keepers were there?", "1872", 0.5),
        ("Who lit the lamp?", "Elias Brandt", 0.5),
        ("What is it made of?", "The lighthouse was", 0.1),
    ],
)
def test_the_first_span_baseline_reads_only_the_question_word(question, answer, conf):
    context = "The lighthouse was built in 1872 and Elias Brandt lit its lamp."
    [output] = FirstSpanQAHandler().predict([{"context": context, "question": question}])
    assert output == {"answer": answer, "conf": conf}
    assert FirstSpanQAHandler().predict([{"context": "", "question": "Who?"}]) == [
        {"answer": "", "conf": 0.0}
    ]
