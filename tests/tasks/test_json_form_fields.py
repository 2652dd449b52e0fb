"""JSON typed into a form (the admin, the model pages) is nested at most 64 levels: a form
error beyond, never a 500."""

from __future__ import annotations

import json

import pytest
from django import forms
from django.apps import apps
from django.contrib import admin
from django.test import RequestFactory
from django.urls import reverse

from core.bounded_json import MAX_JSON_DEPTH
from core.forms import BoundedJSONField
from models_hub.forms import ModelAdminForm, ModelEditForm, ModelRegisterForm
from models_hub.models import RegisteredModel
from tests.adversarial_json import ADVERSARIAL_NAMES, ADVERSARIAL_TIMEOUT, adversarial_json
from tests.factories import ContextFactory, UserFactory


def arrays(depth: int) -> str:
    return "[" * depth + "1" + "]" * depth


class OptionsForm(forms.Form):
    options = BoundedJSONField(required=False)


@pytest.mark.parametrize("depth", [100_000, 200, MAX_JSON_DEPTH + 1])
def test_json_nested_too_deep_is_a_form_error(depth):
    form = OptionsForm(data={"options": arrays(depth)})
    assert not form.is_valid()
    assert form.errors.as_data()["options"][0].code == "too_deep"
    assert f"at most {MAX_JSON_DEPTH} levels" in form.errors["options"][0]
    # The form shows the text again with its error: rendering must not parse it either.
    assert "[[[" in str(form["options"])


@pytest.mark.parametrize("depth", [0, 3, MAX_JSON_DEPTH])
def test_json_within_the_limit_is_read(depth):
    form = OptionsForm(data={"options": arrays(depth)})
    assert form.is_valid(), form.errors
    assert form.cleaned_data["options"] == json.loads(arrays(depth))


def test_invalid_json_keeps_djangos_code():
    form = OptionsForm(data={"options": "{oops"})
    assert not form.is_valid()
    assert form.errors.as_data()["options"][0].code == "invalid"


@pytest.mark.parametrize(
    ("text", "line", "column"),
    [
        ('{"batch": 4 "labels": []}', 1, 13),
        ('{\n  "batch": 4,\n  "labels": [1,, 2]\n}', 3, 16),
        ('{\n  "batch": 4,\n', 3, 1),
    ],
)
def test_invalid_json_names_its_line_and_column(text, line, column):
    form = OptionsForm(data={"options": text})
    assert not form.is_valid()
    assert form.errors.as_data()["options"][0].code == "invalid"
    assert f"at line {line}, column {column}." in form.errors["options"][0]


def _json_fields(form_class) -> dict[str, type]:
    return {
        name: type(field)
        for name, field in form_class.base_fields.items()
        if isinstance(field, forms.JSONField)
    }


@pytest.mark.django_db
def test_every_admin_and_model_form_bounds_its_json_fields():
    request = RequestFactory().get("/admin/")
    request.user = UserFactory(username="root", is_staff=True, is_superuser=True)
    found = {}
    for model in apps.get_models():
        if not admin.site.is_registered(model):
            continue
        model_admin = admin.site.get_model_admin(model)
        form_class = model_admin.get_form(request)
        for name, kind in _json_fields(form_class).items():
            found[f"{model._meta.label_lower}.{name}"] = kind
    for form_class in (ModelRegisterForm, ModelEditForm, ModelAdminForm):
        for name, kind in _json_fields(form_class).items():
            found[f"{form_class.__name__}.{name}"] = kind
    # The editable JSON of today; a new one is checked the day it appears.
    assert {
        "tasks.context.data",
        "models_hub.registeredmodel.options",
        "ModelRegisterForm.options",
    } <= set(found)
    unbounded = sorted(name for name, kind in found.items() if kind is not BoundedJSONField)
    assert not unbounded


MODEL_FORM = {
    "name": "Deep model",
    "description": "A model",
    "languages": "en",
    "license": "MIT",
    "card": "",
    "protocol": "none",
    "endpoint_url": "",
    "connect_timeout": "3",
    "read_timeout": "30",
    "batch_size": "16",
    "max_concurrency": "2",
}


@pytest.mark.django_db
@pytest.mark.parametrize("depth", [100_000, 200])
def test_the_model_register_page_refuses_deep_options_with_a_form_error(client, task, depth):
    client.force_login(UserFactory())
    response = client.post(
        reverse("models_hub:register", args=[task.code]),
        {**MODEL_FORM, "options": '{"note": ' + arrays(depth) + "}"},
    )
    assert response.status_code == 200
    assert f"at most {MAX_JSON_DEPTH} levels" in response.content.decode()
    assert not RegisteredModel.objects.exists()


@pytest.mark.django_db
def test_the_model_register_page_takes_options_within_the_limit(client, task):
    client.force_login(UserFactory())
    response = client.post(
        reverse("models_hub:register", args=[task.code]),
        {**MODEL_FORM, "options": '{"note": ' + arrays(MAX_JSON_DEPTH - 1) + "}"},
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    assert RegisteredModel.objects.get().options["note"]


@pytest.mark.django_db
@pytest.mark.parametrize("depth", [100_000, 200])
def test_the_admin_refuses_deep_json_with_a_form_error(client, owner, task, depth):
    context = ContextFactory(task=task, round=task.rounds.get(), data={"context": "x"})
    client.force_login(owner)
    url = reverse("admin:tasks_context_change", args=[context.pk])
    response = client.post(
        url,
        {
            "task": task.pk,
            "round": context.round_id,
            "data": arrays(depth),
            "tag": "",
            "metadata": "{}",
        },
    )
    assert response.status_code == 200
    assert f"at most {MAX_JSON_DEPTH} levels" in response.content.decode()
    context.refresh_from_db()
    assert context.data == {"context": "x"}


@pytest.mark.timeout(ADVERSARIAL_TIMEOUT)
@pytest.mark.parametrize("name", ADVERSARIAL_NAMES)
def test_a_form_field_reads_adversarial_json_of_the_largest_form_quickly(name, settings):
    # Django reads at most DATA_UPLOAD_MAX_MEMORY_SIZE bytes of form fields.
    text = adversarial_json(name, settings.DATA_UPLOAD_MAX_MEMORY_SIZE).decode()
    form = OptionsForm(data={"options": text})
    assert not form.is_valid()
    assert form.errors.as_data()["options"][0].code in {"too_deep", "invalid"}
