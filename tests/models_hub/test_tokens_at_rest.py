"""Model endpoint tokens at rest: encrypted columns, calls that still carry the token, key
rotation, the migration of plain tokens, and tokens no key decrypts."""

from __future__ import annotations

import importlib
import io
from types import SimpleNamespace

import pytest
from cryptography.fernet import Fernet
from django.core.management import call_command
from django.db import connection
from django.db.models import TextField, Value
from django.test import Client, override_settings
from django.urls import reverse

from models_hub import calls as hub_calls
from models_hub import checks, selectors, services
from models_hub.errors import ModelCallError, ModelTokenUnreadable
from models_hub.models import ModelStatus, RegisteredModel
from tests.factories import ModelFactory
from tests.models_hub.hub_helpers import SECRET_TOKEN

pytestmark = pytest.mark.django_db

OLD_KEY = Fernet.generate_key().decode()
NEW_KEY = Fernet.generate_key().decode()
INPUTS = [{"uid": "1", "context": "c", "statement": "great"}]


def register(task, user, url="http://127.0.0.1:9/", **fields):
    fields.setdefault("name", "sealed-model")
    fields.setdefault("auth_token", SECRET_TOKEN)
    return services.model_register(task=task, owner=user, endpoint_url=url, **fields)


def stored_tokens(task) -> list[str]:
    """The token column of ``task``'s models as the database holds it (no field conversion)."""
    table = connection.ops.quote_name(RegisteredModel._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT auth_token FROM {table} WHERE task_id = %s ORDER BY id",  # noqa: S608
            [task.pk],
        )
        return [row[0] for row in cursor.fetchall()]


def store_plain(model: RegisteredModel, token: str) -> None:
    """Write ``token`` unencrypted, as rows were before the migration."""
    RegisteredModel.objects.filter(pk=model.pk).update(
        auth_token=Value(token, output_field=TextField())
    )


def test_the_column_holds_no_plain_token_whatever_the_write_path(task, user):
    register(task, user)
    ModelFactory(task=task, owner=user, name="factory-made", auth_token=SECRET_TOKEN)
    edited = register(task, user, name="edited")
    services.model_update_card(edited, user, auth_token=SECRET_TOKEN + "-new")
    updated = register(task, user, name="updated")
    RegisteredModel.objects.filter(pk=updated.pk).update(auth_token=SECRET_TOKEN)
    raw = stored_tokens(task)
    assert len(raw) == 4
    for value in raw:
        assert SECRET_TOKEN not in value and value.startswith("fernet:")
    values = RegisteredModel.objects.values_list("auth_token", flat=True)
    assert all(SECRET_TOKEN not in value for value in values)
    # Saving leaves the ciphertext on the instance too: nothing holds the token but a request.
    assert SECRET_TOKEN not in edited.auth_token


def test_calls_to_a_real_server_carry_the_token(task, user, misbehaving_server):
    model = register(task, user, url=misbehaving_server.url + "ok")
    model = RegisteredModel.objects.select_related("task__current_config").get(pk=model.pk)
    result = hub_calls.predict_live(model, INPUTS)
    assert result.outputs[0]["label"] == "positive"
    [call] = misbehaving_server.requests
    assert call["headers"]["Authorization"] == f"Bearer {SECRET_TOKEN}"
    assert hub_calls.model_record_health(model.pk).ok
    health_call = misbehaving_server.requests[-1]
    assert health_call["path"] == "/ok/health"
    assert health_call["headers"]["Authorization"] == f"Bearer {SECRET_TOKEN}"


def test_rotation_with_two_keys_then_the_old_key_dropped(task, user, misbehaving_server):
    with override_settings(DYNATASK_SECRET_KEYS=[OLD_KEY]):
        model = register(task, user, url=misbehaving_server.url + "ok")
        register(task, user, name="no-token", auth_token="")
    [before, empty] = stored_tokens(task)
    assert empty == ""
    out, err = io.StringIO(), io.StringIO()
    with override_settings(DYNATASK_SECRET_KEYS=[NEW_KEY, OLD_KEY]):
        # Both keys decrypt while the rotation has not run yet.
        assert selectors.endpoint_spec(model).token == SECRET_TOKEN
        call_command("rotate_model_secrets", stdout=out, stderr=err)
    assert "1 token(s) encrypted again" in out.getvalue()
    assert "0 token(s) cannot be decrypted" in out.getvalue() and err.getvalue() == ""
    [after, empty] = stored_tokens(task)
    assert after != before and SECRET_TOKEN not in after and empty == ""
    with override_settings(DYNATASK_SECRET_KEYS=[NEW_KEY]):
        model.refresh_from_db()
        assert selectors.endpoint_spec(model).token == SECRET_TOKEN
        model = RegisteredModel.objects.select_related("task__current_config").get(pk=model.pk)
        hub_calls.predict_live(model, INPUTS)
    assert misbehaving_server.requests[-1]["headers"]["Authorization"] == f"Bearer {SECRET_TOKEN}"


def test_tokens_sealed_before_the_keys_were_set_move_to_them(task, user):
    with override_settings(DYNATASK_SECRET_KEYS=[]):
        model = register(task, user)
    with override_settings(DYNATASK_SECRET_KEYS=[NEW_KEY]):
        # The key derived from SECRET_KEY still opens them, until the rotation.
        assert selectors.endpoint_spec(model).token == SECRET_TOKEN
        assert services.model_tokens_rotate().rotated == 1
    model.refresh_from_db()
    with override_settings(DYNATASK_SECRET_KEYS=[NEW_KEY], SECRET_KEY="a-new-secret-key"):
        assert selectors.endpoint_spec(model).token == SECRET_TOKEN
    with override_settings(DYNATASK_SECRET_KEYS=[OLD_KEY], SECRET_KEY="a-new-secret-key"):
        assert selectors.model_token_unreadable(model)


def test_rotation_forgets_the_cached_rows_of_the_tasks_it_touched(
    task, user, django_capture_on_commit_callbacks
):
    from models_hub.signals import model_rows_changed

    register(task, user)
    received = []

    def receiver(sender, task_ids, **kwargs):
        received.append(task_ids)

    model_rows_changed.connect(receiver)
    try:
        with django_capture_on_commit_callbacks(execute=True):
            report = services.model_tokens_rotate()
    finally:
        model_rows_changed.disconnect(receiver)
    assert report.rotated == 1 and received == [[task.pk]]


def test_a_token_no_key_decrypts_fails_calls_with_a_clear_message(task, user):
    with override_settings(DYNATASK_SECRET_KEYS=[OLD_KEY]):
        model = register(task, user, name="lost-key")
    with override_settings(DYNATASK_SECRET_KEYS=[NEW_KEY]):
        model = RegisteredModel.objects.select_related("task__current_config").get(pk=model.pk)
        assert selectors.model_token_unreadable(model)
        with pytest.raises(ModelTokenUnreadable) as caught:
            hub_calls.predict_live(model, INPUTS)
        assert isinstance(caught.value, ModelCallError)
        message = str(caught.value)
        assert "'lost-key'" in message and "enter the token again" in message
        assert caught.value.code == "model.token_unreadable"

        result = hub_calls.model_record_health(model.pk)
        model.refresh_from_db()
        assert not result.ok and result.error_code == "model.token_unreadable"
        assert model.status == ModelStatus.UNHEALTHY
        assert "enter the token again" in model.last_health_error

        out, err = io.StringIO(), io.StringIO()
        call_command("rotate_model_secrets", stdout=out, stderr=err)
        assert "1 token(s) cannot be decrypted" in out.getvalue()
        assert f"model {model.pk} (lost-key)" in err.getvalue()
        # The stored value is kept: putting the old key back would make it readable again.
        with override_settings(DYNATASK_SECRET_KEYS=[NEW_KEY, OLD_KEY]):
            assert selectors.endpoint_spec(model).token == SECRET_TOKEN


def test_pages_ask_for_the_token_again_and_never_show_it(task, user, admin_user_obj):
    with override_settings(DYNATASK_SECRET_KEYS=[OLD_KEY]):
        model = register(task, user, name="lost-key", is_published=True)
    sealed = RegisteredModel.objects.get(pk=model.pk).auth_token
    web = Client()
    with override_settings(DYNATASK_SECRET_KEYS=[NEW_KEY]):
        pages = [
            (user, reverse("models_hub:detail", args=[model.pk])),
            (user, reverse("models_hub:edit", args=[model.pk])),
            (admin_user_obj, reverse("admin:models_hub_registeredmodel_change", args=[model.pk])),
        ]
        for viewer, url in pages:
            web.force_login(viewer)
            response = web.get(url)
            body = response.content.decode()
            assert response.status_code == 200, url
            assert "enter the token again" in body, url
            assert SECRET_TOKEN not in body and sealed not in body, url
        # Entering it again makes it readable with the current key.
        web.force_login(user)
        services.model_update_card(model, user, auth_token=SECRET_TOKEN)
        assert not selectors.model_token_unreadable(RegisteredModel.objects.get(pk=model.pk))
        assert "enter the token again" not in web.get(pages[1][1]).content.decode()


def test_the_api_shows_neither_the_token_nor_its_ciphertext(task, user):
    from rest_framework.test import APIClient

    model = register(task, user)
    sealed = RegisteredModel.objects.get(pk=model.pk).auth_token
    api = APIClient()
    api.force_authenticate(user)
    response = api.get(f"/api/v1/models/{model.pk}/")
    body = response.content.decode()
    assert response.status_code == 200 and response.json()["endpoint"]["has_token"] is True
    assert SECRET_TOKEN not in body and sealed not in body and "fernet:" not in body


MIGRATION = ("models_hub", "0004_seal_model_tokens")


def _migration():
    return importlib.import_module(f"models_hub.migrations.{MIGRATION[1]}")


# The data migration reads only the editor's connection. A real schema editor cannot open
# inside the test's transaction on SQLite, so the functions get this stand-in.
EDITOR = SimpleNamespace(connection=connection)


def test_the_migration_encrypts_plain_tokens_once_and_reverses(task, user, apps_after):
    apps = apps_after(*MIGRATION)
    register(task, user, name="already-sealed")
    plain_model = register(task, user, name="plain")
    store_plain(plain_model, SECRET_TOKEN)
    register(task, user, name="no-token", auth_token="")
    already = stored_tokens(task)[0]
    assert stored_tokens(task)[1] == SECRET_TOKEN

    migration = _migration()
    migration.seal_tokens(apps, EDITOR)
    first_run = stored_tokens(task)
    assert first_run[0] == already and first_run[2] == ""
    assert first_run[1].startswith("fernet:") and SECRET_TOKEN not in first_run[1]
    plain_model.refresh_from_db()
    assert selectors.endpoint_spec(plain_model).token == SECRET_TOKEN

    migration.seal_tokens(apps, EDITOR)
    assert stored_tokens(task) == first_run

    migration.unseal_tokens(apps, EDITOR)
    assert stored_tokens(task) == [SECRET_TOKEN, SECRET_TOKEN, ""]


def test_the_backward_migration_stops_on_a_token_no_key_decrypts(task, user, apps_after):
    apps = apps_after(*MIGRATION)
    with override_settings(DYNATASK_SECRET_KEYS=[OLD_KEY]):
        register(task, user, name="lost-key")
    before = stored_tokens(task)
    with (
        override_settings(DYNATASK_SECRET_KEYS=[NEW_KEY]),
        pytest.raises(RuntimeError, match="lost-key"),
    ):
        _migration().unseal_tokens(apps, EDITOR)
    assert stored_tokens(task) == before


def test_the_rotation_command_encrypts_plain_tokens_left_behind(task, user):
    model = register(task, user)
    store_plain(model, SECRET_TOKEN)
    model.refresh_from_db()
    with pytest.raises(ModelTokenUnreadable):
        selectors.endpoint_spec(model)
    out = io.StringIO()
    call_command("rotate_model_secrets", stdout=out, stderr=io.StringIO())
    assert "1 token(s) stored unencrypted are now encrypted" in out.getvalue()
    [value] = stored_tokens(task)
    assert value.startswith("fernet:")
    model.refresh_from_db()
    assert selectors.endpoint_spec(model).token == SECRET_TOKEN


def test_the_checks_warn_without_keys_in_production_and_refuse_a_bad_key():
    with override_settings(DEBUG=False, DYNATASK_SECRET_KEYS=[]):
        assert [message.id for message in checks.check_secret_keys_set()] == ["models_hub.W001"]
        assert checks.check_secret_keys() == []
    with override_settings(DEBUG=True, DYNATASK_SECRET_KEYS=[]):
        assert checks.check_secret_keys_set() == []
    with override_settings(DEBUG=False, DYNATASK_SECRET_KEYS=[NEW_KEY]):
        assert checks.check_secret_keys_set() == [] and checks.check_secret_keys() == []
    with override_settings(DYNATASK_SECRET_KEYS=[NEW_KEY, "oops"]):
        [error] = checks.check_secret_keys()
        assert error.id == "models_hub.E001" and "key 2" in error.msg and "oops" not in error.msg
