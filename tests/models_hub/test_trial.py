"""The model in the loop is never a surprise: a registration sends the endpoint one request
built from the task's config and refuses a model whose answer cannot fit the task; the
admin's add form asks for loop membership (off unless ticked); the empty-loop warning links
to the loop page."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from core.errors import ServiceError
from models_hub import services
from models_hub.demo.sentiment import SentimentHandler
from models_hub.models import RegisteredModel
from models_hub.trial import trial_input
from tasks.config import parse_task_config
from tasks.selectors import round_warnings
from tests.annotation.conftest import ServerHandle
from tests.factories import TaskFactory, demo_config

pytestmark = pytest.mark.django_db


@pytest.fixture
def sentiment_server():
    handle = ServerHandle(SentimentHandler)
    yield handle
    handle.stop()


@pytest.fixture
def hate_task(owner):
    """A 2-label task (not-hateful, hateful) whose input the 3-label sentiment model reads."""
    return TaskFactory(code="hs", config_name="hs", owners=[owner])


def test_the_trial_input_fills_every_model_input_from_the_config():
    config = parse_task_config(demo_config("nli"))
    example = trial_input(config)
    assert set(example) == set(config.model_input_names)
    assert all(isinstance(example[s.name], str) and example[s.name] for s in config.context)


def test_a_three_label_model_on_a_two_label_task_is_refused(hate_task, owner, sentiment_server):
    with pytest.raises(ServiceError) as caught:
        services.model_register(
            task=hate_task, owner=owner, name="sentiment", endpoint_url=sentiment_server.url
        )
    assert caught.value.code == "model.answer_unfit"
    assert "does not fit the task" in caught.value.message
    assert "'label'" in caught.value.message  # the value error the model's answer gave
    assert not RegisteredModel.objects.exists()


def test_a_model_whose_answer_fits_is_registered(owner, sentiment_server):
    task = TaskFactory(code="sentiment", config_name="sentiment", owners=[owner])
    model = services.model_register(
        task=task, owner=owner, name="vader", endpoint_url=sentiment_server.url
    )
    assert model.pk


def test_an_endpoint_that_does_not_answer_is_registered_as_before(hate_task, owner):
    model = services.model_register(
        task=hate_task, owner=owner, name="down", endpoint_url="http://127.0.0.1:9/"
    )
    assert model.pk


def add_form(task, url, **extra):
    return {
        "task": task.pk,
        "owner": task.owners.first().pk,
        "name": "admin-added",
        "protocol": "dynatask",
        "endpoint_url": url,
        "connect_timeout": "3",
        "read_timeout": "30",
        "batch_size": "16",
        "max_concurrency": "2",
        "options": "{}",
        **extra,
    }


@pytest.fixture
def admin_client(admin_user_obj):
    web = Client()
    web.force_login(admin_user_obj)
    return web


def test_the_admin_add_form_asks_for_the_loop_off_by_default(admin_client, owner, sentiment_server):
    task = TaskFactory(code="sentiment", config_name="sentiment", owners=[owner])
    page = admin_client.get(reverse("admin:models_hub_registeredmodel_add")).content.decode()
    assert 'name="in_loop"' in page and "Put it in the loop" in page
    assert 'name="in_loop" checked' not in page

    response = admin_client.post(
        reverse("admin:models_hub_registeredmodel_add"), add_form(task, sentiment_server.url)
    )
    assert response.status_code == 302
    assert not RegisteredModel.objects.get(name="admin-added").in_loop_rounds.exists()

    data = add_form(task, sentiment_server.url, name="looped", in_loop="on")
    assert (
        admin_client.post(reverse("admin:models_hub_registeredmodel_add"), data).status_code == 302
    )
    assert list(RegisteredModel.objects.get(name="looped").in_loop_rounds.all()) == [
        task.rounds.get()
    ]


def test_the_admin_add_form_shows_an_unfit_answer_on_the_url(
    admin_client, hate_task, sentiment_server
):
    response = admin_client.post(
        reverse("admin:models_hub_registeredmodel_add"), add_form(hate_task, sentiment_server.url)
    )
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert "does not fit the task" in errors["endpoint_url"][0]
    assert not RegisteredModel.objects.exists()


def test_the_empty_loop_warning_links_to_the_loop_page(task):
    (warning,) = [w for w in round_warnings(task) if w.code == "loop.empty"]
    assert warning.fix_url == reverse("models_hub:loop", args=[task.code])
    assert warning.fix_label


def test_the_task_page_warning_carries_the_link(task, owner):
    web = Client()
    web.force_login(owner)
    page = web.get(reverse("tasks:detail", args=[task.code])).content.decode()
    loop_url = reverse("models_hub:loop", args=[task.code])
    assert f'href="{loop_url}" class="alert-link" data-fix>Choose the models in the loop' in page


def test_a_model_without_an_endpoint_is_not_told_its_health_is_checked(task, owner):
    web = Client()
    web.force_login(owner)
    data = {"name": "file-only", "protocol": "none", "endpoint_url": "", "connect_timeout": "3"}
    data.update(read_timeout="30", batch_size="16", max_concurrency="2", options="{}")
    response = web.post(reverse("models_hub:register", args=[task.code]), data, follow=True)
    page = response.content.decode()
    assert RegisteredModel.objects.filter(name="file-only").exists()
    assert "its health is checked" not in page
    assert "upload its predictions files" in page


def test_a_new_models_token_help_says_what_it_is_for(task, owner, admin_client):
    web = Client()
    web.force_login(owner)
    register = web.get(reverse("models_hub:register", args=[task.code])).content.decode()
    add = admin_client.get(reverse("admin:models_hub_registeredmodel_add")).content.decode()
    for page in (register, add):
        assert "the token your endpoint expects" in page
        assert "Leave blank to keep it" not in page
