"""JSON nested too deep, in a request body, an upload or a config: a 400 that says so, never a 500.

The limit is ``MAX_JSON_DEPTH`` (64) levels of arrays and objects, the whole body counted.
"""

from __future__ import annotations

import io
import json

import pytest

from annotation.models import Example
from api.parsers import BoundedJSONParser, JSONBodyTooLarge
from core.bounded_json import MAX_JSON_DEPTH
from leaderboards.services.datasets import dataset_import
from models_hub.models import RegisteredModel
from tasks.models import Context
from tests.adversarial_json import ADVERSARIAL_NAMES, ADVERSARIAL_TIMEOUT, adversarial_json
from tests.api.conftest import assert_error
from tests.factories import ContextFactory, ModelFactory
from tests.leaderboards.evalkit import sentiment_rows

pytestmark = pytest.mark.django_db

DEEP = 100_000
MODERATE = 200


def arrays(depth: int) -> str:
    """Return the JSON text of ``depth`` nested arrays around 1."""
    return "[" * depth + "1" + "]" * depth


def post_json(client, method: str, path: str, text: str):
    return getattr(client, method)(path, data=text.encode(), content_type="application/json")


def register_body(depth: int) -> str:
    """A model registration whose options nest ``depth`` levels in all (body and options: 2)."""
    return '{"name": "deep", "protocol": "none", "options": {"note": ' + arrays(depth - 2) + "}}"


def example_body(depth: int, context_id: int) -> str:
    """An example whose input nests ``depth`` levels in all (body and input: 2)."""
    return (
        f'{{"context_id": {context_id}, "mode": "sync", "timeout": 0, '
        f'"input": {{"statement": {arrays(depth - 2)}, "label": "negative"}}}}'
    )


@pytest.fixture
def context(api_task):
    return ContextFactory(task=api_task, data={"context": "Describe your breakfast."})


@pytest.mark.parametrize("depth", [DEEP, MODERATE, MAX_JSON_DEPTH + 1])
def test_a_request_body_nested_too_deep_is_a_400_with_the_error_shape(clients, depth):
    response = post_json(
        clients["worker"], "post", "/api/v1/tasks/api-task/models/", register_body(depth)
    )
    error = assert_error(response, 400, "json_too_deep")
    assert f"nested deeper than {MAX_JSON_DEPTH} levels" in error["message"]
    assert error["details"] == {"max_depth": MAX_JSON_DEPTH}
    assert not RegisteredModel.objects.exists()


def test_a_body_at_the_limit_passes_the_parser(clients):
    response = post_json(
        clients["worker"], "post", "/api/v1/tasks/api-task/models/", register_body(MAX_JSON_DEPTH)
    )
    assert response.status_code == 201, response.content[:300]
    assert RegisteredModel.objects.get().options["note"] == json.loads(arrays(MAX_JSON_DEPTH - 2))


@pytest.mark.parametrize("depth", [DEEP, MODERATE])
def test_every_json_endpoint_uses_the_bounded_parser(clients, api_task, context, depth):
    owner = clients["owner"]
    model = ModelFactory(task=api_task, name="file-model")
    calls = [
        ("post", "/api/v1/tasks/api-task/examples/", example_body(depth, context.pk)),
        ("patch", "/api/v1/tasks/api-task/", '{"name": ' + arrays(depth - 1) + "}"),
        ("patch", f"/api/v1/models/{model.pk}/", '{"options": ' + arrays(depth - 1) + "}"),
        ("post", "/api/v1/tasks/api-task/leaderboard/forks/", '{"weights": ' + arrays(depth) + "}"),
    ]
    for method, path, text in calls:
        assert_error(post_json(owner, method, path, text), 400, "json_too_deep")
    assert not Example.objects.exists()


def test_an_example_at_the_limit_is_checked_against_the_config(clients, context):
    """64 levels pass the parser; the config then says what is wrong with the input."""
    response = post_json(
        clients["worker"],
        "post",
        "/api/v1/tasks/api-task/examples/",
        example_body(MAX_JSON_DEPTH, context.pk),
    )
    error = assert_error(response, 400)
    assert error["code"] != "json_too_deep"


# --- uploads ---------------------------------------------------------------------------------


def upload(lines: list[str], name: str = "rows.jsonl") -> io.BytesIO:
    stream = io.BytesIO("\n".join(lines).encode())
    stream.name = name
    return stream


def deep_line(depth: int, **fields) -> str:
    """A JSON line whose ``extra`` key nests ``depth`` levels in all (the line: 1)."""
    return json.dumps(fields)[:-1] + ', "extra": ' + arrays(depth - 1) + "}"


@pytest.mark.parametrize("depth", [DEEP, MODERATE])
def test_a_context_upload_names_the_line_nested_too_deep(clients, api_task, depth):
    lines = ['{"context": {"context": "fine"}}', deep_line(depth, context="too deep")]
    response = clients["owner"].post(
        "/api/v1/tasks/api-task/contexts/", {"file": upload(lines)}, format="multipart"
    )
    error = assert_error(response, 400, "upload.invalid")
    assert [(item["line"], item["code"]) for item in error["details"]["errors"]] == [
        (2, "upload.E009")
    ]
    assert "nested deeper than 64 levels" in error["details"]["errors"][0]["message"]
    assert not Context.objects.filter(task=api_task).exists()


@pytest.mark.parametrize("depth", [DEEP, MODERATE])
def test_a_dataset_upload_names_the_line_nested_too_deep(clients, depth):
    rows = sentiment_rows(2)
    lines = [json.dumps(rows[0]), deep_line(depth, **rows[1])]
    response = clients["owner"].post(
        "/api/v1/tasks/api-task/datasets/",
        {"file": upload(lines), "name": "Deep"},
        format="multipart",
    )
    error = assert_error(response, 400, "upload.invalid")
    assert [(item["line"], item["code"]) for item in error["details"]["errors"]] == [
        (2, "upload.E009")
    ]


@pytest.mark.parametrize("depth", [DEEP, MODERATE])
def test_a_predictions_upload_names_the_line_nested_too_deep(clients, api_task, depth):
    rows = sentiment_rows(2)
    dataset_import(
        api_task,
        upload([json.dumps(row) for row in rows]),
        filename="rows.jsonl",
        name="Public",
        slug="public",
        evaluate=False,
    )
    model = ModelFactory(task=api_task, name="file-model", owner=api_task.owners.get())
    prediction = {"uid": rows[0]["uid"], "label": "positive"}
    lines = [json.dumps(prediction), deep_line(depth, uid=rows[1]["uid"], label="negative")]
    response = clients["owner"].post(
        f"/api/v1/models/{model.pk}/predictions/",
        {"dataset": "public", "file": upload(lines)},
        format="multipart",
    )
    error = assert_error(response, 400, "upload.invalid")
    assert (2, "upload.E009") in [
        (item["line"], item["code"]) for item in error["details"]["errors"]
    ]


def test_a_csv_cell_nested_too_deep_stays_text(clients, api_task):
    """A CSV cell is JSON only when it reads as JSON within the limit; else it is text."""
    deep_cell = arrays(MODERATE).replace('"', "")
    text = f'context,metadata\nA passage.,"{deep_cell}"\n'
    response = clients["owner"].post(
        "/api/v1/tasks/api-task/contexts/",
        {"file": upload([text], name="contexts.csv")},
        format="multipart",
    )
    assert response.status_code == 201, response.content[:300]
    assert Context.objects.get(task=api_task).metadata == {"metadata": deep_cell}


# --- the task config -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("depth", "code"), [(DEEP, "config.E002"), (50_000, "config.E003"), (MODERATE, "config.E003")]
)
def test_a_task_config_nested_too_deep_is_a_config_error(clients, depth, code):
    yaml_text = "input: " + "[" * depth + "]" * depth + "\n"
    response = clients["owner"].patch(
        "/api/v1/tasks/api-task/", {"config_yaml": yaml_text}, format="json"
    )
    error = assert_error(response, 400, "config.invalid")
    assert [issue["code"] for issue in error["details"]["issues"]] == [code]


# --- the size of a JSON body, and adversarial bodies of the largest size --------------------


def test_a_body_over_the_size_limit_is_a_413_naming_the_limit(clients, settings):
    settings.API_MAX_JSON_BODY_BYTES = 1000
    body = '{"name": "big", "protocol": "none", "options": {"note": "' + "x" * 1000 + '"}}'
    response = post_json(clients["worker"], "post", "/api/v1/tasks/api-task/models/", body)
    error = assert_error(response, 413, "body_too_large")
    assert error["details"] == {"max_bytes": 1000}
    assert "over 1,000 bytes" in error["message"]
    assert "API_MAX_JSON_BODY_BYTES" in error["message"]
    assert not RegisteredModel.objects.exists()
    # At the limit the body is read.
    small = '{"name": "small", "protocol": "none"}'
    response = post_json(clients["worker"], "post", "/api/v1/tasks/api-task/models/", small)
    assert response.status_code == 201, response.content[:300]


def test_a_body_without_a_length_is_read_up_to_the_limit_only(settings):
    settings.API_MAX_JSON_BODY_BYTES = 10

    class Endless(io.RawIOBase):
        """A stream that never ends: only a capped read returns."""

        def readable(self):
            return True

        def readinto(self, buffer):
            buffer[: len(buffer)] = b" " * len(buffer)
            return len(buffer)

    with pytest.raises(JSONBodyTooLarge):
        BoundedJSONParser().parse(io.BufferedReader(Endless()), "application/json", {})


@pytest.mark.timeout(ADVERSARIAL_TIMEOUT)
@pytest.mark.parametrize("name", ADVERSARIAL_NAMES)
def test_an_adversarial_body_of_the_largest_size_is_a_quick_400(clients, settings, name):
    size = settings.API_MAX_JSON_BODY_BYTES
    text = adversarial_json(name, size)
    response = clients["worker"].post(
        "/api/v1/tasks/api-task/models/", data=text, content_type="application/json"
    )
    error = assert_error(response, 400)
    assert error["code"] in {"json_too_deep", "parse_error"}
    response = clients["worker"].post(
        "/api/v1/tasks/api-task/models/", data=text + b" ", content_type="application/json"
    )
    assert_error(response, 413, "body_too_large")
