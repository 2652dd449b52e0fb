"""The loop as its owners run it: carried over to a new round, its models' health where the
loop is managed, and new models of the task's owners in the loop by default."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotation.selectors.tasks import LOOP_ANSWERING, LOOP_EMPTY, LOOP_SILENT, task_bundle
from core.errors import PermissionDenied, ServiceError
from models_hub import services
from models_hub.models import ModelStatus, RegisteredModel, RoundModel
from tasks import services as task_services
from tests.api.conftest import assert_error, client_for
from tests.factories import TaskFactory, UserFactory

pytestmark = pytest.mark.django_db

URL = "http://127.0.0.1:9/"


def _model(task, owner, name="m", **fields) -> RegisteredModel:
    return RegisteredModel.objects.create(
        task=task, owner=owner, name=name, endpoint_url=URL, **fields
    )


@pytest.fixture
def web():
    return Client()


# -- carry-over ---------------------------------------------------------------------------------


def test_carry_over_copies_the_loop_and_the_bundle_sees_it(
    task, owner, django_capture_on_commit_callbacks
):
    first = task.rounds.get()
    kept = _model(task, owner, "kept", status=ModelStatus.HEALTHY)
    services.model_set_in_loop(first, [kept], owner)
    assert services.loop_carry_over(first, first) == 1  # already there: nothing doubles
    assert RoundModel.objects.filter(round=first).count() == 1
    task_bundle(task.code)  # cached before the round opens
    with django_capture_on_commit_callbacks(execute=True):
        second = task_services.round_open(task)
    bundle = task_bundle(task.code)
    assert bundle.latest_round == second and bundle.pick_model(second) == kept


def test_no_carry_over_leaves_the_new_loop_empty(task, owner):
    services.model_set_in_loop(task.rounds.get(), [_model(task, owner)], owner)
    second = task_services.round_open(task, carry_over=False)
    assert task_bundle(task.code).loop_state(second.pk) == LOOP_EMPTY


def test_the_api_opens_a_round_with_the_carry_over_unless_switched_off(task, owner):
    services.model_set_in_loop(task.rounds.get(), [_model(task, owner)], owner)
    api = client_for(owner)
    response = api.post(f"/api/v1/tasks/{task.code}/rounds/", {}, format="json")
    assert response.status_code == 201 and response.json()["number"] == 2
    assert task.rounds.get(number=2).in_loop_models.count() == 1
    response = api.post(f"/api/v1/tasks/{task.code}/rounds/", {"carry_over": False}, format="json")
    assert task.rounds.get(number=3).in_loop_models.count() == 0


# -- the bundle tells an empty loop from a silent one ----------------------------------------


def test_the_bundle_knows_an_empty_loop_from_a_silent_one(
    task, owner, django_capture_on_commit_callbacks
):
    first = task.rounds.get()
    assert task_bundle(task.code).loop_state(first.pk) == LOOP_EMPTY
    model = _model(task, owner, status=ModelStatus.UNHEALTHY)
    with django_capture_on_commit_callbacks(execute=True):
        services.model_set_in_loop(first, [model], owner)
    bundle = task_bundle(task.code)
    assert bundle.loop_state(first.pk) == LOOP_SILENT and bundle.pick_model(first) is None
    model.status = ModelStatus.HEALTHY
    with django_capture_on_commit_callbacks(execute=True):
        model.save()
    assert task_bundle(task.code).loop_state(first.pk) == LOOP_ANSWERING
    assert task_bundle(task.code).loop_sizes == {first.pk: 1}


# -- health where the loop is managed ---------------------------------------------------------


def _with_health(model, **values) -> RegisteredModel:
    RegisteredModel.objects.filter(pk=model.pk).update(**values)
    model.refresh_from_db()
    return model


def test_the_loop_page_shows_each_loop_models_health_and_the_warnings(web, task, owner):
    first = task.rounds.get()
    up = _with_health(
        _model(task, owner, "up-model"),
        status=ModelStatus.HEALTHY,
        last_health_at=timezone.now() - timedelta(minutes=3),
        last_health_latency_ms=12.6789,
    )
    down = _with_health(
        _model(task, owner, "down-model"),
        status=ModelStatus.UNHEALTHY,
        last_health_at=timezone.now(),
        last_health_error="connection refused <b>by 127.0.0.1:9</b>",
    )
    services.model_set_in_loop(first, [up, down], owner)
    web.force_login(owner)
    page = web.get(reverse("models_hub:loop", args=[task.code])).content.decode()
    assert 'data-testid="loop-health"' in page
    assert f'data-model="{up.pk}" data-status="healthy"' in page
    assert f'data-model="{down.pk}" data-status="unhealthy"' in page
    assert "13 ms" in page and "12.6" not in page  # latency rounded
    assert "3\xa0minutes ago" in page
    assert "connection refused &lt;b&gt;by 127.0.0.1:9&lt;/b&gt;" in page  # escaped
    assert 'data-code="round.no_contexts"' in page  # the round's own warnings too


def test_the_loop_health_partial_is_for_the_task_owners(web, task, owner):
    url = reverse("models_hub:loop_health", args=[task.code])
    assert web.get(url).status_code == 302  # sign in first
    web.force_login(UserFactory(username="stranger"))
    assert web.get(url).status_code == 403
    web.force_login(owner)
    response = web.get(url)
    assert response.status_code == 200
    assert "No model is in the loop of this round." in response.content.decode()
    hidden = TaskFactory(code="hidden-task", hidden=True)
    assert web.get(reverse("models_hub:loop_health", args=[hidden.code])).status_code == 404


def test_the_loop_health_partial_lists_open_rounds_only(
    web, task, owner, django_assert_max_num_queries
):
    model = _model(task, owner, "old", status=ModelStatus.HEALTHY)
    services.model_set_in_loop(task.rounds.get(), [model], owner)
    task_services.round_open(task, carry_over=False)
    web.force_login(owner)
    with django_assert_max_num_queries(8):
        page = web.get(reverse("models_hub:loop_health", args=[task.code])).content.decode()
    assert 'data-round="2"' in page and 'data-round="1"' not in page and "old" not in page


# -- in the loop by default ---------------------------------------------------------------------


def test_an_owner_registering_on_their_task_joins_the_current_loop(task, owner):
    task_services.round_open(task, carry_over=False)
    model = services.model_register(task=task, owner=owner, name="mine", endpoint_url=URL)
    assert list(model.in_loop_rounds.values_list("number", flat=True)) == [2]
    assert task_bundle(task.code).pick_model(task.rounds.get(number=2)) == model


def test_the_default_is_off_for_others_and_for_models_without_an_endpoint(task, owner, user):
    theirs = services.model_register(task=task, owner=user, name="theirs", endpoint_url=URL)
    files = services.model_register(task=task, owner=owner, name="files", protocol="none")
    kept_out = services.model_register(
        task=task, owner=owner, name="out", endpoint_url=URL, in_loop=False
    )
    assert not RoundModel.objects.filter(model__in=[theirs, files, kept_out]).exists()


def test_only_owners_ask_for_the_loop_and_only_with_an_endpoint(task, owner, user):
    with pytest.raises(PermissionDenied):
        services.model_register(task=task, owner=user, name="x", endpoint_url=URL, in_loop=True)
    with pytest.raises(ServiceError) as caught:
        services.model_register(task=task, owner=owner, name="y", protocol="none", in_loop=True)
    assert caught.value.code == "model.no_endpoint"
    assert not RegisteredModel.objects.exists()


def test_the_register_form_offers_the_loop_to_owners_checked(web, task, owner, user):
    url = reverse("models_hub:register", args=[task.code])
    web.force_login(user)
    assert 'name="in_loop"' not in web.get(url).content.decode()
    web.force_login(owner)
    page = web.get(url).content.decode()
    assert "Put it in the loop of round 1" in page
    (checkbox,) = re.findall(r'<input[^>]*name="in_loop"[^>]*>', page)
    assert "checked" in checkbox
    data = {
        "name": "ticked",
        "protocol": "dynatask",
        "endpoint_url": URL,
        "connect_timeout": "3",
        "read_timeout": "30",
        "batch_size": "16",
        "max_concurrency": "2",
        "options": "{}",
        "in_loop": "on",
    }
    assert web.post(url, data).status_code == 302
    assert RegisteredModel.objects.get(name="ticked").in_loop_rounds.count() == 1
    web.post(url, {**data, "name": "unticked", "in_loop": ""})
    assert RegisteredModel.objects.get(name="unticked").in_loop_rounds.count() == 0
    web.post(url, {**data, "name": "files", "protocol": "none", "endpoint_url": ""})
    assert (
        RegisteredModel.objects.get(name="files").in_loop_rounds.count() == 0
    )  # no endpoint, no loop


def test_the_api_registers_an_owners_model_in_the_loop_by_default(task, owner, user):
    body = {"name": "api-model", "protocol": "dynatask", "endpoint_url": URL}
    response = client_for(owner).post(f"/api/v1/tasks/{task.code}/models/", body, format="json")
    assert response.status_code == 201, response.content
    assert RegisteredModel.objects.get(name="api-model").in_loop_rounds.count() == 1
    response = client_for(user).post(
        f"/api/v1/tasks/{task.code}/models/", {**body, "name": "b", "in_loop": True}, format="json"
    )
    assert_error(response, 403)
    response = client_for(user).post(
        f"/api/v1/tasks/{task.code}/models/", {**body, "name": "c"}, format="json"
    )
    assert response.status_code == 201
    assert RegisteredModel.objects.get(name="c").in_loop_rounds.count() == 0


def test_the_api_loop_shows_the_models_health_to_the_owners(task, owner):
    model = _with_health(
        _model(task, owner, "api-health"),
        status=ModelStatus.UNHEALTHY,
        last_health_at=timezone.now(),
        last_health_latency_ms=None,
        last_health_error="connection refused",
    )
    services.model_set_in_loop(task.rounds.get(), [model], owner)
    body = client_for(owner).get(f"/api/v1/tasks/{task.code}/rounds/1/models/").json()
    (entry,) = body["models"]
    assert entry["status"] == "unhealthy" and entry["last_health_error"] == "connection refused"
    assert entry["last_health_at"] and entry["last_health_latency_ms"] is None
    assert "auth_token" not in entry and "endpoint_url" not in entry
