"""What a worker reads when no model answers: an empty loop and a loop whose models are all
down are told apart on the create page, in the sandbox and on the example's status."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.urls import reverse

from annotation.models import Example, ExampleStatus
from annotation.views.create import SANDBOX_MODEL_SILENT, SANDBOX_NO_MODEL
from models_hub import services as hub_services
from models_hub.models import ModelStatus, RegisteredModel
from tests.annotation.conftest import POSITIVE, open_form, submit

pytestmark = pytest.mark.django_db(transaction=True)

SILENT = "The model in the loop is not answering right now"


@pytest.fixture(autouse=True)
def no_sync_wait(settings):
    settings.ANNOTATION_SYNC_WAIT_SECONDS = 0
    settings.ANNOTATION_POLL_WAIT_SECONDS = 0


def put_down_model_in_loop(task, owner) -> RegisteredModel:
    """Put a model whose last health check failed in the loop of round 1."""
    model = RegisteredModel.objects.create(
        task=task,
        owner=owner,
        name="down",
        endpoint_url="http://127.0.0.1:9/",
        status=ModelStatus.UNHEALTHY,
    )
    hub_services.model_set_in_loop(task.rounds.get(), [model], owner)
    return model


@pytest.fixture
def down_model(sentiment_task, owner):
    return put_down_model_in_loop(sentiment_task, owner)


def test_the_create_page_warns_before_writing_when_the_loop_is_silent(
    client, worker, sentiment_task, down_model
):
    client.force_login(worker)
    html = open_form(client, "sentiment")["html"]
    assert 'id="loop-silent"' in html and SILENT in html


def test_no_warning_with_an_empty_loop_or_an_answering_model(client, worker, sentiment_task):
    client.force_login(worker)
    assert 'id="loop-silent"' not in open_form(client, "sentiment")["html"]
    RegisteredModel.objects.create(
        task=sentiment_task,
        owner=worker,
        name="unchecked",
        endpoint_url="http://127.0.0.1:9/",
        status=ModelStatus.UNKNOWN,
    ).round_models.create(round=sentiment_task.rounds.get())
    assert 'id="loop-silent"' not in open_form(client, "sentiment")["html"]


def test_an_example_sent_to_a_silent_loop_says_so(
    client, worker, sentiment_task, down_model, live_queue
):
    client.force_login(worker)
    html = submit(client, "sentiment", statement=POSITIVE, label="negative").content.decode()
    example = Example.objects.get()
    assert example.status == ExampleStatus.NO_MODEL and live_queue.count == 0
    assert 'data-loop="silent"' in html and SILENT in html
    assert "No model is in the loop" not in html
    # The model is back: the example, which no model answered, says that plainly.
    RegisteredModel.objects.filter(pk=down_model.pk).update(status=ModelStatus.HEALTHY)
    cache.clear()
    page = client.get(reverse("annotation:example", args=["sentiment", example.pk]))
    assert 'data-loop="answering"' in page.content.decode()


def test_an_example_sent_to_an_empty_loop_says_no_model_is_in_the_loop(
    client, worker, sentiment_task, live_queue
):
    client.force_login(worker)
    html = submit(client, "sentiment", statement=POSITIVE, label="negative").content.decode()
    assert 'data-loop="empty"' in html and "No model is in the loop of this round" in html


@pytest.mark.parametrize("silent", [True, False])
def test_the_sandbox_tells_an_empty_loop_from_a_silent_one(
    client, worker, sentiment_task, owner, silent
):
    if silent:
        put_down_model_in_loop(sentiment_task, owner)
    client.force_login(worker)
    html = submit(
        client, "sentiment", statement=POSITIVE, label="negative", sandbox="on"
    ).content.decode()
    assert not Example.objects.exists()
    expected, other = (
        (SANDBOX_MODEL_SILENT, SANDBOX_NO_MODEL) if silent else (SANDBOX_NO_MODEL, SILENT)
    )
    assert expected in html and other not in html
