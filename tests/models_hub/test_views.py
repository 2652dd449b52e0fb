"""Site pages and admin of the models hub: permissions, the write-only token, thin forms."""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.test import Client, override_settings
from django.urls import include, path, reverse

from models_hub import services
from models_hub.models import RegisteredModel, RoundModel
from models_hub.selectors import endpoint_spec
from tests.factories import TaskFactory, UserFactory
from tests.models_hub.hub_helpers import SECRET_TOKEN

# Only the apps these pages link to: the pages are tested without the other apps' URLs.
urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("", include("tasks.urls")),
    path("", include("models_hub.urls")),
]
pytestmark = [pytest.mark.django_db, pytest.mark.urls(__name__)]

URL = "http://127.0.0.1:9/"


def form_data(**overrides):
    data = {
        "name": "My model",
        "description": "A model",
        "languages": "en",
        "license": "MIT",
        "card": "# Card\n\n**bold** <script>alert(1)</script>",
        "protocol": "dynatask",
        "endpoint_url": URL,
        "connect_timeout": "3",
        "read_timeout": "30",
        "batch_size": "16",
        "max_concurrency": "2",
        "options": "{}",
        "auth_token": SECRET_TOKEN,
    }
    data.update(overrides)
    return data


@pytest.fixture
def web():
    """Django's test client (``client`` is the model client in this package's conftest)."""
    return Client()


@pytest.fixture
def model(task, user):
    return services.model_register(
        task=task, owner=user, name="mine", endpoint_url=URL, auth_token=SECRET_TOKEN
    )


def test_register_requires_sign_in(web, task):
    url = reverse("models_hub:register", args=[task.code])
    response = web.get(url)
    assert response.status_code == 302 and reverse("login") in response["Location"]


def test_register_get_and_post(web, task, user):
    web.force_login(user)
    url = reverse("models_hub:register", args=[task.code])
    assert web.get(url).status_code == 200
    response = web.post(url, form_data())
    model = RegisteredModel.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("models_hub:detail", args=[model.pk])
    assert (
        model.owner == user
        and endpoint_spec(model).token == SECRET_TOKEN
        and model.batch_size == 16
    )


def test_register_refused_for_closed_task(web, owner, user):
    task = TaskFactory(owners=[owner], accepts_models=False)
    web.force_login(user)
    assert web.get(reverse("models_hub:register", args=[task.code])).status_code == 403


def test_register_hidden_task_is_404(web, owner, user):
    task = TaskFactory(owners=[owner], hidden=True)
    web.force_login(user)
    assert web.get(reverse("models_hub:register", args=[task.code])).status_code == 404


def test_register_ssrf_refusal_is_a_form_error(web, task, user):
    web.force_login(user)
    with override_settings(MODELS_HUB_ALLOWED_HOSTS=[]):
        response = web.post(
            reverse("models_hub:register", args=[task.code]),
            form_data(endpoint_url="http://169.254.169.254/latest/"),
        )
    assert response.status_code == 200
    assert "metadata" in response.content.decode()
    assert SECRET_TOKEN not in response.content.decode()
    assert not RegisteredModel.objects.exists()


def test_detail_renders_sanitised_card_without_token(web, model, user):
    services.model_update_card(model, user, card="**bold** <script>alert(1)</script>")
    services.model_set_published(model, user, True)
    response = web.get(reverse("models_hub:detail", args=[model.pk]))
    body = response.content.decode()
    assert response.status_code == 200
    assert "<strong>bold</strong>" in body and "<script>alert" not in body
    assert SECRET_TOKEN not in body


def test_unpublished_detail_is_404_for_strangers(web, model):
    web.force_login(UserFactory())
    assert web.get(reverse("models_hub:detail", args=[model.pk])).status_code == 404


def test_edit_page_never_renders_token_and_keeps_published(web, model, user):
    services.model_set_published(model, user, True)
    web.force_login(user)
    url = reverse("models_hub:edit", args=[model.pk])
    page = web.get(url)
    assert page.status_code == 200 and SECRET_TOKEN not in page.content.decode()
    data = form_data(name="mine", card="new card", auth_token="", is_published="on")
    assert web.post(url, data).status_code == 302
    model.refresh_from_db()
    assert (
        model.card == "new card"
        and model.is_published
        and endpoint_spec(model).token == SECRET_TOKEN
    )
    web.post(url, form_data(name="mine", auth_token="", clear_auth_token="on"))
    model.refresh_from_db()
    assert model.auth_token == "" and not model.is_published


def test_edit_by_stranger_is_forbidden(web, model, user):
    services.model_set_published(model, user, True)
    web.force_login(UserFactory())
    assert web.get(reverse("models_hub:edit", args=[model.pk])).status_code == 403


def test_edit_requires_sign_in(web, model):
    response = web.get(reverse("models_hub:edit", args=[model.pk]))
    assert response.status_code == 302


def test_loop_page_owner_only(web, task, model, owner, user):
    url = reverse("models_hub:loop", args=[task.code])
    web.force_login(user)
    assert web.get(url).status_code == 403
    web.force_login(owner)
    assert web.get(url).status_code == 200
    round = task.rounds.get()
    assert web.post(url, {f"round_{round.pk}": [model.pk]}).status_code == 302
    assert list(RoundModel.objects.values_list("round_id", "model_id")) == [(round.pk, model.pk)]
    web.post(url, {})
    assert not RoundModel.objects.exists()


def test_admin_change_page_hides_token(web, model, admin_user_obj):
    web.force_login(admin_user_obj)
    page = web.get(reverse("admin:models_hub_registeredmodel_change", args=[model.pk]))
    assert page.status_code == 200
    assert SECRET_TOKEN not in page.content.decode()
    listing = web.get(reverse("admin:models_hub_registeredmodel_changelist"))
    assert listing.status_code == 200 and SECRET_TOKEN not in listing.content.decode()


def test_admin_add_and_change_go_through_services(web, task, admin_user_obj, owner):
    web.force_login(admin_user_obj)
    data = form_data(task=task.pk, owner=owner.pk, name="admin-made", is_published="on")
    response = web.post(reverse("admin:models_hub_registeredmodel_add"), data)
    assert response.status_code == 302, response.content.decode()[:2000]
    model = RegisteredModel.objects.get(name="admin-made")
    assert (
        endpoint_spec(model).token == SECRET_TOKEN and model.is_published and model.owner == owner
    )

    round = task.rounds.get()
    change = form_data(owner=owner.pk, name="admin-made", card="edited", auth_token="")
    change.update(is_published="on", loop_rounds=[round.pk])
    response = web.post(reverse("admin:models_hub_registeredmodel_change", args=[model.pk]), change)
    assert response.status_code == 302
    model.refresh_from_db()
    assert (
        model.card == "edited" and model.is_published and endpoint_spec(model).token == SECRET_TOKEN
    )
    assert list(model.in_loop_rounds.all()) == [round]


def test_admin_scoped_to_task_owners(web, model, owner):
    other_owner = UserFactory(username="other-owner", is_staff=True)
    TaskFactory(owners=[other_owner])
    web.force_login(other_owner)
    assert web.get(
        reverse("admin:models_hub_registeredmodel_change", args=[model.pk])
    ).status_code in (
        302,
        403,
        404,
    )
    web.force_login(owner)
    assert (
        web.get(reverse("admin:models_hub_registeredmodel_change", args=[model.pk])).status_code
        == 200
    )


def test_admin_health_action_enqueues(web, model, admin_user_obj, redis_connection):
    import django_rq

    web.force_login(admin_user_obj)
    response = web.post(
        reverse("admin:models_hub_registeredmodel_changelist"),
        {"action": "check_health_now", "_selected_action": [model.pk]},
    )
    assert response.status_code == 302
    # Enqueued after commit: in this test transaction, run the captured callbacks.
    assert django_rq.get_queue("health").count in (0, 1)


def test_registrations_beyond_the_daily_limit_are_a_form_error(web, task, user, settings):
    settings.MODELS_HUB_REGISTRATIONS_PER_DAY = 1
    web.force_login(user)
    url = reverse("models_hub:register", args=[task.code])
    assert web.post(url, form_data(name="first")).status_code == 302
    response = web.post(url, form_data(name="second"))
    assert response.status_code == 200
    assert "a budget of 1 per task and dataset in 24 hours" in response.content.decode()
    assert RegisteredModel.objects.count() == 1


def test_a_read_timeout_over_the_cap_is_a_field_error_and_staff_raise_the_cap(
    web, model, user, owner, admin_user_obj, settings
):
    settings.MODELS_HUB_READ_TIMEOUT_CAP = 60
    web.force_login(user)
    url = reverse("models_hub:edit", args=[model.pk])
    response = web.post(url, form_data(read_timeout="120", auth_token=""))
    assert response.status_code == 200
    assert "at most 60 s for this model" in response.content.decode()
    assert RegisteredModel.objects.get(pk=model.pk).read_timeout == 30
    # The task's owner (staff, in the admin) cannot raise it: the cap is read-only there.
    web.force_login(owner)
    change_url = reverse("admin:models_hub_registeredmodel_change", args=[model.pk])
    assert 'name="read_timeout_cap"' not in web.get(change_url).content.decode()
    # A superuser raises this model's cap, and the owner may then ask for 120 s.
    web.force_login(admin_user_obj)
    assert 'name="read_timeout_cap"' in web.get(change_url).content.decode()
    change = form_data(owner=user.pk, name="mine", auth_token="", read_timeout_cap="300")
    assert web.post(change_url, change).status_code == 302
    assert RegisteredModel.objects.get(pk=model.pk).read_timeout_cap == 300
    web.force_login(user)
    assert web.post(url, form_data(read_timeout="120", auth_token="")).status_code == 302
    assert RegisteredModel.objects.get(pk=model.pk).read_timeout == 120


MOVED_URL = "http://localhost:9/"


def test_the_edit_page_refuses_moving_someone_elses_token(web, model, owner):
    """The task's owner edits a researcher's model: another host with the stored token is
    a field error (nothing saved); ticking "Clear the stored token" moves it without."""
    web.force_login(owner)
    url = reverse("models_hub:edit", args=[model.pk])
    response = web.post(url, form_data(name="mine", endpoint_url=MOVED_URL, auth_token=""))
    assert response.status_code == 200
    assert "Only the model&#x27;s owner may move its endpoint" in response.content.decode()
    model.refresh_from_db()
    assert model.endpoint_url == URL and endpoint_spec(model).token == SECRET_TOKEN
    data = form_data(name="mine", endpoint_url=MOVED_URL, auth_token="", clear_auth_token="on")
    assert web.post(url, data).status_code == 302
    model.refresh_from_db()
    assert model.endpoint_url == MOVED_URL and not model.has_token


def test_the_edit_page_lets_the_models_owner_move_its_token(web, model, user):
    web.force_login(user)
    url = reverse("models_hub:edit", args=[model.pk])
    data = form_data(name="mine", endpoint_url=MOVED_URL, auth_token="")
    assert web.post(url, data).status_code == 302
    model.refresh_from_db()
    assert model.endpoint_url == MOVED_URL and endpoint_spec(model).token == SECRET_TOKEN


def test_the_admin_refuses_moving_a_token_to_another_address_or_owner(
    web, model, user, admin_user_obj
):
    """Even a superuser: another address, or another owner, with the stored token is a
    field error; with "Clear the stored token" both go through, without the token."""
    web.force_login(admin_user_obj)
    url = reverse("admin:models_hub_registeredmodel_change", args=[model.pk])
    base = form_data(task=model.task_id, owner=user.pk, name="mine", auth_token="")
    other = UserFactory(username="new-owner")
    for change in ({"endpoint_url": MOVED_URL}, {"owner": other.pk}):
        response = web.post(url, {**base, **change})
        assert response.status_code == 200, change
        body = response.content.decode()
        assert "clear the stored token in the same change" in body.lower(), change
        model.refresh_from_db()
        assert model.endpoint_url == URL and model.owner == user, change
        assert endpoint_spec(model).token == SECRET_TOKEN, change
    data = {**base, "endpoint_url": MOVED_URL, "owner": other.pk, "clear_auth_token": "on"}
    assert web.post(url, data).status_code == 302
    model.refresh_from_db()
    assert model.endpoint_url == MOVED_URL and model.owner == other and not model.has_token
