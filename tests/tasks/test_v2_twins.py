"""A v2 config and its v1 twin make the same task: forms, model requests, verdicts, evaluation.

Two pairs of our own (``tests/tasks/twins``: an inference task and a span task) always run;
Dynabench's nli and qa pairs (../shared: ``mlcommons`` v2, ``dynabench`` v1) run where
../shared is present. Placeholders and page texts may differ between twins; the fields, their
labels, choices, required flags and conditions may not. A v2 ``model_input`` that renames a
field changes its key in the request, and only that.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from annotation.forms import CreateForm, MetadataForm, ValidateForm
from annotation.services.answers import model_inputs as example_model_inputs
from annotation.services.answers import verdict_for
from leaderboards.models import RunStatus, Score
from leaderboards.services.client import use_client
from leaderboards.services.datasets import dataset_import
from leaderboards.services.runs import evaluation_run_create
from models_hub.client import ModelClient
from models_hub.models import RegisteredModel
from models_hub.protocols import get_protocol, model_inputs
from models_hub.protocols.base import EndpointSettings
from models_hub.transport import RetryPolicy
from tasks.config import Verdict, parse_task_config
from tests.factories import TaskFactory, UserFactory
from tests.leaderboards.evalkit import run_worker, serving
from tests.shared_files import (
    dynabench_text,
    mlcommons_config_path,
    needs_dynabench,
    needs_mlcommons,
)

TWIN_DIR = Path(__file__).resolve().parent / "twins"
LABELS = ("entailed", "neutral", "contradictory")
SHARED = [needs_dynabench, needs_mlcommons]
TWINS = [
    pytest.param("own", "nli", id="own-nli"),
    pytest.param("own", "qa", id="own-qa"),
    pytest.param("dynabench", "nli", id="dynabench-nli", marks=SHARED),
    pytest.param("dynabench", "qa", id="dynabench-qa", marks=SHARED),
]
CONTEXT = "The old bridge over the river was closed for repairs in May."
EXAMPLES = [
    {"hypothesis": "The bridge was open.", "label": "contradictory", "question": "When?"},
    {"hypothesis": "A bridge exists.", "label": "entailed", "question": "Which bridge?"},
    {"hypothesis": "It rained in May.", "label": "neutral", "question": "Why closed?"},
]
ANSWERS = ["in May", "The old bridge", "for repairs"]


def twin_texts(source: str, task: str) -> tuple[str, str]:
    """The (v1, v2) texts of a twin pair."""
    if source == "own":
        return tuple(
            (TWIN_DIR / f"{task}_{version}.yaml").read_text(encoding="utf-8")
            for version in ("v1", "v2")
        )
    return dynabench_text(task), mlcommons_config_path(task).read_text(encoding="utf-8")


def twins(source: str, task: str):
    v1, v2 = (parse_task_config(text) for text in twin_texts(source, task))
    assert (v1.source_format, v2.source_format) == ("v1", "v2")
    return v1, v2


def shape(form) -> list[tuple]:
    """What a worker meets in a form, field by field (placeholders left out)."""
    return [
        (
            name,
            type(field).__name__,
            type(field.widget).__name__,
            field.required,
            field.label,
            [tuple(choice) for choice in getattr(field, "choices", ())],
            field.initial,
        )
        for name, field in form.fields.items()
    ]


def worker_entry(config, index: int) -> dict:
    """The worker's entry for example ``index``, in the config's own inputs."""
    example = EXAMPLES[index]
    entry = {}
    for spec in config.input:
        if spec.type == "context_string_selection":
            entry[spec.name] = {"text": ANSWERS[index], "start": CONTEXT.index(ANSWERS[index])}
        else:
            entry[spec.name] = example[spec.name]
    return entry


@pytest.mark.parametrize(("source", "task"), TWINS)
def test_the_create_and_validate_forms_are_the_same(source, task):
    v1, v2 = twins(source, task)
    goal = "neutral" if v1.goal_field else ""

    assert shape(CreateForm(config=v1, goal_label=goal)) == shape(
        CreateForm(config=v2, goal_label=goal)
    )
    for model_wrong in (True, False, None):
        forms = [MetadataForm(specs=c.create_metadata_fields(model_wrong)) for c in (v1, v2)]
        assert shape(forms[0]) == shape(forms[1])
    assert shape(ValidateForm(config=v1)) == shape(ValidateForm(config=v2))
    for verdict in (*Verdict, None):
        fields = [
            [(s.name, s.type, s.labels, s.optional) for s in c.validate_metadata_fields(verdict)]
            for c in (v1, v2)
        ]
        assert fields[0] == fields[1]
    assert [s.name for s in v1.target_fields] == [s.name for s in v2.target_fields]
    assert v1.output == v2.output


@pytest.mark.parametrize(("source", "task"), TWINS)
def test_the_model_gets_the_same_request_but_for_declared_renames(source, task):
    v1, v2 = twins(source, task)
    renames = dict(v2.model_maps.request_keys)
    dynatask = get_protocol("dynatask")
    for index in range(len(EXAMPLES)):
        sent = []
        for config in (v1, v2):
            entry = worker_entry(config, index)
            example = example_model_inputs(config, entry, {"context": CONTEXT}, f"e{index}")
            (request,) = dynatask.build_requests(
                model_inputs(config, [example]), EndpointSettings("http://m/", "t")
            )
            sent.append(request.json_body["inputs"][0])
        assert sent[1] == {renames.get(key, key): value for key, value in sent[0].items()}
    if source == "dynabench" and task == "nli":
        # Dynabench's nli v2 config says `model_input: {statement: hypothesis}`.
        assert renames == {"hypothesis": "statement"}
    if task == "qa":
        assert renames == {}


@pytest.mark.parametrize(("source", "task"), TWINS)
def test_the_verdicts_are_the_same(source, task):
    v1, v2 = twins(source, task)
    dynatask = get_protocol("dynatask")
    for index in range(len(EXAMPLES)):
        for answer_index, label in enumerate(LABELS):
            answer = {
                "label": label,
                "prob": {name: 0.8 if name == label else 0.1 for name in LABELS},
                "answer": ANSWERS[answer_index],
                "conf": 0.5,
            }
            verdicts = []
            for config in (v1, v2):
                body = {"outputs": [answer]}
                (output,) = dynatask.parse_response(body, [{"uid": "x"}], config)
                verdicts.append(verdict_for(config, worker_entry(config, index), output))
            assert verdicts[0] == verdicts[1]
            assert verdicts[0] in (True, False)


class TwinModel:
    """Answers from the worker's text under whatever key it came; records what it got."""

    def __init__(self):
        self.received: list[dict] = []

    def predict(self, batch: list[dict]) -> list[dict]:
        self.received.extend(batch)
        outputs = []
        for item in batch:
            text = " ".join(str(v) for k, v in sorted(item.items()) if k not in ("uid", "context"))
            label = LABELS[len(text) % 3]
            outputs.append(
                {
                    "label": label,
                    "prob": {name: 0.8 if name == label else 0.1 for name in LABELS},
                    "answer": " ".join(str(item.get("context", "")).split()[1:3]),
                    "conf": 0.5,
                }
            )
        return outputs


def dataset_rows(config) -> list[dict]:
    rows = []
    for index, example in enumerate(EXAMPLES * 3):
        row = {"uid": f"u{index}", "context": CONTEXT}
        for spec in config.model_input_fields + config.gold_fields:
            if spec.name in example:
                row[spec.name] = example[spec.name]
        if any(spec.name == "answer" for spec in config.gold_fields):
            row["answer"] = ANSWERS[index % 3]
        rows.append(row)
    return rows


@pytest.fixture
def fast_client():
    retry = RetryPolicy(max_attempts=2, backoff_seconds=0.01, backoff_max_seconds=0.02)
    use_client(ModelClient(retry=retry), retry)
    yield
    use_client(None)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("source", "task"), TWINS)
def test_the_evaluation_and_the_leaderboard_are_the_same(
    source, task, redis_connection, fast_client
):
    texts = twin_texts(source, task)
    owner = UserFactory(username="twin-owner", is_staff=True)
    handler = TwinModel()
    scores, received = [], []
    with serving(handler) as server:
        for version, text in zip(("v1", "v2"), texts, strict=True):
            board = TaskFactory(code=f"{task}-{version}", yaml_text=text, owners=[owner])
            model = RegisteredModel.objects.create(
                task=board,
                owner=owner,
                name="twin",
                protocol="dynatask",
                endpoint_url=server.url,
                batch_size=4,
                read_timeout=5.0,
                is_published=True,
            )
            rows = dataset_rows(board.config)
            stream = io.BytesIO("".join(json.dumps(row) + "\n" for row in rows).encode())
            dataset = dataset_import(
                board, stream, name="Twins", slug="twins", filename="t.jsonl", evaluate=False
            )
            handler.received.clear()
            run = evaluation_run_create(model, dataset)
            run_worker()
            run.refresh_from_db()
            assert run.status == RunStatus.DONE, (run.error_code, run.error_message)
            received.append(sorted(handler.received, key=lambda item: item["uid"]))
            scores.append((board.config, Score.objects.get(model=model, dataset=dataset)))

    (v1, first), (v2, second) = scores
    renames = dict(v2.model_maps.request_keys)
    assert received[1] == [{renames.get(k, k): v for k, v in item.items()} for item in received[0]]
    perf_names = [metric.name for metric in v1.perf_metrics]
    assert perf_names == [metric.name for metric in v2.perf_metrics]
    assert {name: first.metrics[name] for name in perf_names} == {
        name: second.metrics[name] for name in perf_names
    }
    assert (first.main_metric, first.main_value) == (second.main_metric, second.main_value)
    # The leaderboard's columns, directions and default Dynascore weights.
    assert v1.metrics() == v2.metrics()
