"""Registry rules: registration, SSRF at registration, the write-only token, loop, selectors."""

from __future__ import annotations

import random

import pytest
from django.test import override_settings

from core.errors import NotFound, PermissionDenied, ServiceError
from models_hub import calls as hub_calls
from models_hub import selectors, services
from models_hub.models import BudgetCharge, ModelStatus, RegisteredModel, RoundModel
from tasks import services as task_services
from tests.factories import TaskFactory, UserFactory
from tests.models_hub.hub_helpers import SECRET_TOKEN, model_server

pytestmark = pytest.mark.django_db


def register(task, owner, **fields):
    fields.setdefault("name", "m1")
    fields.setdefault("endpoint_url", "http://127.0.0.1:9/")
    return services.model_register(task=task, owner=owner, **fields)


def test_register_and_token_never_in_str_or_repr(task, user):
    model = register(task, user, auth_token=SECRET_TOKEN)
    assert selectors.endpoint_spec(RegisteredModel.objects.get(pk=model.pk)).token == SECRET_TOKEN
    assert SECRET_TOKEN not in str(model)
    assert SECRET_TOKEN not in repr(model)
    assert SECRET_TOKEN not in repr(selectors.endpoint_spec(model))
    assert model.status == ModelStatus.UNKNOWN and not model.is_published


def test_register_refused_when_task_closed_to_models(owner, user):
    task = TaskFactory(owners=[owner], accepts_models=False)
    with pytest.raises(PermissionDenied):
        register(task, user)
    # Task owners may register even when the task does not accept outside models.
    assert register(task, owner).pk


def test_register_name_unique_per_task(task, user):
    register(task, user)
    with pytest.raises(ServiceError) as error:
        register(task, user)
    assert error.value.code == "model.name_taken"


@pytest.mark.parametrize(
    "url",
    ["http://169.254.169.254/latest/meta-data/", "http://10.1.2.3/", "http://192.168.0.5:8080/"],
)
def test_ssrf_refused_at_registration(task, user, url):
    with override_settings(MODELS_HUB_ALLOWED_HOSTS=[]), pytest.raises(ServiceError) as error:
        register(task, user, endpoint_url=url)
    assert error.value.code == "model.address_refused"
    assert not RegisteredModel.objects.exists()


def test_metadata_address_refused_even_with_private_network_allowed(task, user):
    with override_settings(MODELS_HUB_ALLOWED_HOSTS=["169.254.0.0/16", "10.0.0.0/8"]):
        with pytest.raises(ServiceError) as error:
            register(task, user, endpoint_url="http://169.254.169.254/")
        assert error.value.code == "model.address_refused"
        assert register(task, user, endpoint_url="http://10.1.2.3/").pk


@pytest.mark.parametrize("url", ["ftp://127.0.0.1/", "file:///etc/passwd", "http://u:p@127.0.0.1/"])
def test_bad_scheme_or_credentials_refused(task, user, url):
    with pytest.raises(ServiceError) as error:
        register(task, user, endpoint_url=url)
    assert error.value.code == "model.address_refused"


def test_protocol_none_needs_no_endpoint(task, user):
    model = register(task, user, protocol="none", endpoint_url="")
    assert not model.has_endpoint
    with pytest.raises(ServiceError) as error:
        register(task, user, name="m2", protocol="dynatask", endpoint_url="")
    assert error.value.code == "model.endpoint_required"


def test_invalid_limits_give_codes(task, user):
    with pytest.raises(ServiceError) as error:
        register(task, user, batch_size=0)
    assert error.value.code == "model.invalid"
    assert "batch_size" in error.value.details


def test_card_edit_keeps_published_and_token(task, user):
    model = register(task, user, auth_token=SECRET_TOKEN)
    services.model_set_published(model, user, True)
    services.model_update_card(model, user, card="# New card", description="d", auth_token="")
    model.refresh_from_db()
    assert model.is_published
    assert model.card == "# New card"
    assert selectors.endpoint_spec(model).token == SECRET_TOKEN


def test_token_replaced_or_cleared(task, user):
    model = register(task, user, auth_token=SECRET_TOKEN)
    services.model_update_card(model, user, auth_token="other")
    model.refresh_from_db()
    assert selectors.endpoint_spec(model).token == "other"
    services.model_update_card(model, user, clear_auth_token=True)
    model.refresh_from_db()
    assert model.auth_token == ""


def test_only_owner_or_task_owner_edits(task, user, owner):
    model = register(task, user)
    stranger = UserFactory()
    with pytest.raises(PermissionDenied):
        services.model_update_card(model, stranger, card="x")
    with pytest.raises(PermissionDenied):
        services.model_set_published(model, stranger, True)
    services.model_update_card(model, owner, card="by the task owner")


def test_endpoint_change_is_checked_again(task, user):
    model = register(task, user)
    with override_settings(MODELS_HUB_ALLOWED_HOSTS=[]), pytest.raises(ServiceError) as error:
        services.model_update_card(model, user, endpoint_url="http://169.254.169.254/")
    assert error.value.code == "model.address_refused"
    assert RegisteredModel.objects.get(pk=model.pk).endpoint_url == "http://127.0.0.1:9/"


def test_only_task_owners_set_in_loop(task, user, owner):
    model = register(task, user)
    round = task.rounds.get()
    with pytest.raises(PermissionDenied):
        services.model_set_in_loop(round, [model], user)
    services.model_set_in_loop(round, [model], owner)
    assert list(RoundModel.objects.values_list("model_id", flat=True)) == [model.pk]
    services.model_set_in_loop(round, [model], owner)  # idempotent
    assert RoundModel.objects.count() == 1
    services.model_set_in_loop(round, [], owner)
    assert not RoundModel.objects.exists()


def test_in_loop_refuses_other_tasks_and_endpointless_models(task, user, owner):
    other = TaskFactory(owners=[owner])
    foreign = register(other, user)
    offline = register(task, user, name="file-only", protocol="none", endpoint_url="")
    round = task.rounds.get()
    for model, code in ((foreign, "model.wrong_task"), (offline, "model.no_endpoint")):
        with pytest.raises(ServiceError) as error:
            services.model_set_in_loop(round, [model], owner)
        assert error.value.code == code


def test_set_rounds_for_a_model(task, user, owner):
    model = register(task, user)
    task_services.round_open(task, close_previous=False)
    rounds = list(task.rounds.all())
    services.model_set_rounds(model, rounds, owner)
    assert set(model.in_loop_rounds.all()) == set(rounds)
    services.model_set_rounds(model, rounds[:1], owner)
    assert list(model.in_loop_rounds.all()) == rounds[:1]
    with pytest.raises(PermissionDenied):
        services.model_set_rounds(model, rounds, user)


def test_selectors_query_counts(task, user, owner, django_assert_num_queries):
    round = task.rounds.get()
    models = [register(task, user, name=f"m{index}") for index in range(3)]
    services.model_set_in_loop(round, models, owner)
    RegisteredModel.objects.filter(pk=models[0].pk).update(status=ModelStatus.UNHEALTHY)
    with django_assert_num_queries(1):
        in_loop = selectors.models_in_loop(round)
        assert [model.task.config for model in in_loop]  # task and config came along
    assert len(in_loop) == 3
    with django_assert_num_queries(1):
        picked = selectors.model_pick_for_round(round, rng=random.Random(1))
        assert picked.task.code == task.code
    assert picked.pk in {models[1].pk, models[2].pk}
    # The models, and whether the user owns the task (none when the owners are prefetched).
    with django_assert_num_queries(2):
        assert len(selectors.model_list_for_task(task, user)) == 3  # own models
    stranger = UserFactory()
    with django_assert_num_queries(2):
        assert selectors.model_list_for_task(task, stranger) == []


def test_pick_none_without_models(task):
    assert selectors.model_pick_for_round(task.rounds.get()) is None


def test_anonymous_models_hide_owner(task, user, owner):
    model = register(task, user, is_anonymous=True, is_published=True)
    stranger = UserFactory()
    assert selectors.model_get_visible(model.pk, stranger).owner_display == "anonymous"
    assert selectors.model_get_visible(model.pk, user).owner_display == user.username
    assert selectors.model_get_visible(model.pk, owner).owner_display == user.username
    [listed] = selectors.model_list_for_task(task, stranger)
    assert listed.owner_display == "anonymous"


def test_unpublished_model_hidden_from_strangers(task, user, owner):
    model = register(task, user)
    with pytest.raises(NotFound):
        selectors.model_get_visible(model.pk, UserFactory())
    assert selectors.model_get_visible(model.pk, owner).pk == model.pk


def test_predict_live_against_real_server(task, user):
    with model_server() as server:
        model = register(task, user, endpoint_url=server.url, auth_token=SECRET_TOKEN)
        model = RegisteredModel.objects.select_related("task__current_config").get(pk=model.pk)
        result = hub_calls.predict_live(model, [{"uid": "1", "context": "c", "statement": "great"}])
    assert result.outputs[0]["label"] == "positive"
    assert result.model_version == "const-1"


def test_registration_announces_the_model_after_commit(
    task, user, django_capture_on_commit_callbacks
):
    from models_hub.signals import model_registered

    received = []

    def receiver(sender, model, **kwargs):
        received.append(model.pk)

    model_registered.connect(receiver)
    try:
        with django_capture_on_commit_callbacks(execute=True):
            model = services.model_register(
                task=task, owner=user, name="announced", protocol="none", endpoint_url=""
            )
        assert received == [model.pk]
    finally:
        model_registered.disconnect(receiver)


@override_settings(MODELS_HUB_REGISTRATIONS_PER_DAY=2)
def test_registrations_per_user_and_task_are_limited(task, owner, user):
    from datetime import timedelta

    from django.utils import timezone

    from core.errors import TooManyRequests

    register(task, user, name="a"), register(task, user, name="b")
    with pytest.raises(TooManyRequests) as caught:
        register(task, user, name="c")
    assert caught.value.code == "model.registration_limit" and caught.value.status == 429
    assert 0 < caught.value.details["wait_seconds"] <= 86_400
    # Another task, and the task's owners, are not counted against it.
    assert register(TaskFactory(owners=[owner]), user, name="c").pk
    assert [register(task, owner, name=f"own-{n}").pk for n in range(3)]
    # A day after the first registration, one more is allowed.
    a_day_ago = timezone.now() - timedelta(days=1, seconds=1)
    first = BudgetCharge.objects.filter(budget__user=user, budget__task=task).earliest("created_at")
    BudgetCharge.objects.filter(pk=first.pk).update(created_at=a_day_ago)
    assert register(task, user, name="c").pk


def test_the_read_timeout_is_capped_and_staff_raise_one_models_cap(task, user, settings):
    from django.contrib.auth.models import Permission

    settings.MODELS_HUB_READ_TIMEOUT_CAP = 60
    with pytest.raises(ServiceError) as caught:
        register(task, user, read_timeout=61)
    assert caught.value.code == "model.invalid" and "at most 60 s" in caught.value.message
    assert list(caught.value.details) == ["read_timeout"]
    model = register(task, user, read_timeout=60)
    with pytest.raises(PermissionDenied):
        services.model_set_read_timeout_cap(model, user, 300)
    staff = UserFactory(username="staff", is_staff=True)
    staff.user_permissions.add(Permission.objects.get(codename="raise_read_timeout"))
    staff = type(staff).objects.get(pk=staff.pk)  # permissions are cached per instance
    services.model_set_read_timeout_cap(model, staff, 300)
    services.model_update_card(model, user, read_timeout=300)
    assert selectors.endpoint_spec(model).read_timeout == 300
    # A cap lowered later: calls use it at once; the stored value stands until changed.
    services.model_set_read_timeout_cap(model, staff, None)
    assert selectors.endpoint_spec(model).read_timeout == 60
    services.model_update_card(model, user, description="still slow")
    with pytest.raises(ServiceError):
        services.model_update_card(model, user, read_timeout=120)


def test_a_token_goes_only_where_its_owner_sent_it(task, owner, user, admin_user_obj):
    """``model_update_card``: the task's owner, staff with the task and a superuser may
    not move a stored token to another scheme, host or port; its owner may; a change that
    replaces or clears the token may; the port written out or left implicit is the same."""
    model = register(task, user, auth_token=SECRET_TOKEN, endpoint_url="http://127.0.0.1/")
    for editor in (owner, admin_user_obj):
        with pytest.raises(PermissionDenied) as refused:
            services.model_update_card(model, editor, endpoint_url="http://127.0.0.1:8/")
        assert refused.value.code == services.TOKEN_OWNER_ONLY
    model = RegisteredModel.objects.get(pk=model.pk)
    assert model.endpoint_url == "http://127.0.0.1/"
    services.model_update_card(model, owner, endpoint_url="http://127.0.0.1:80/v1")  # same place
    services.model_update_card(
        model, owner, endpoint_url="http://localhost:9/", auth_token="sk-the-task-owners"
    )
    assert (
        selectors.endpoint_spec(RegisteredModel.objects.get(pk=model.pk)).token
        == "sk-the-task-owners"
    )
    services.model_update_card(model, user, auth_token=SECRET_TOKEN)
    services.model_update_card(model, user, endpoint_url="http://127.0.0.1:8/")
    assert selectors.endpoint_spec(RegisteredModel.objects.get(pk=model.pk)).token == SECRET_TOKEN
