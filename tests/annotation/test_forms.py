"""The config form builder and the admin preview of the generated forms."""

from __future__ import annotations

import pytest

from annotation.display import output_items
from annotation.forms import (
    FIELD_BUILDERS,
    CreateForm,
    MetadataForm,
    SelectionField,
    ValidateForm,
    sign_started_at,
    time_spent_ms,
)
from tasks import services as task_services
from tasks.config import parse_task_config
from tasks.config.types import FieldType
from tests.factories import UserFactory, demo_config
from tests.tasks.config.samples import supported_params


def test_every_field_type_has_a_builder():
    assert set(FIELD_BUILDERS) == set(FieldType)


def test_create_form_builds_inputs_and_presets_the_goal():
    config = parse_task_config(demo_config("sentiment"))
    form = CreateForm(config=config, goal_label="neutral")
    assert {"statement", "label"} <= set(form.fields)
    assert form.fields["label"].initial == "neutral"
    assert form.fields["statement"].max_length == 500
    assert form.initial["started_at"]


def test_create_form_cleans_a_selection_with_its_offset():
    config = parse_task_config(demo_config("qa"))
    form = CreateForm(
        {"question": "Who?", "answer_0": "Elias Brandt", "answer_1": "12"}, config=config
    )
    assert form.is_valid(), form.errors
    assert form.config_values() == {
        "question": "Who?",
        "answer": {"text": "Elias Brandt", "start": 12},
    }
    assert isinstance(form.fields["answer"], SelectionField)


def test_required_selection_is_reported():
    config = parse_task_config(demo_config("qa"))
    form = CreateForm({"question": "Who?"}, config=config)
    assert not form.is_valid()
    assert "answer" in form.errors


def test_validate_form_keeps_only_the_chosen_verdicts_fields():
    config = parse_task_config(demo_config("sentiment"))
    form = ValidateForm(
        {
            "label": "incorrect",
            "example_id": "3",
            "corrected_label": "neutral",
            "flag_reason": "ignored",
        },
        config=config,
    )
    assert form.is_valid(), form.errors
    assert form.metadata_values() == {"corrected_label": "neutral"}


def test_metadata_form_follows_model_wrong_conditions():
    config = parse_task_config(demo_config("sentiment"))
    fooled = MetadataForm(specs=config.create_metadata_fields(True))
    assert "model_explanation_wrong" in fooled.fields
    assert "model_explanation_right" not in fooled.fields


def test_prob_outputs_become_bars():
    config = parse_task_config(demo_config("sentiment"))
    items = output_items(
        config, {"label": "positive", "prob": {"negative": 0.1, "positive": 0.7, "neutral": 0.2}}
    )
    bars = next(item for item in items if item["kind"] == "prob")["bars"]
    assert [bar["label"] for bar in bars] == ["negative", "positive", "neutral"]
    assert bars[1]["percent"] == 70.0


def test_started_at_is_signed():
    assert time_spent_ms(sign_started_at()) is not None
    assert time_spent_ms("forged:value") is None
    assert time_spent_ms(None) is None


@pytest.mark.django_db
@pytest.mark.parametrize("sample", supported_params())
def test_admin_preview_renders_every_config(client, sample):
    name = sample.name
    owner = UserFactory(username=f"owner-{name}", is_staff=True)
    task = task_services.task_create(
        code=f"db-{name}", name=name, yaml_text=sample.text(), owners=[owner]
    )
    client.force_login(owner)
    response = client.get(f"/admin/tasks/task/{task.pk}/preview/frame/")
    assert response.status_code == 200
    html = response.content.decode()
    assert 'id="preview-create"' in html and 'id="preview-validate"' in html
    config = task.config
    for spec in config.input:
        if spec.type != FieldType.PROB:
            assert f'name="{spec.name}' in html


@pytest.mark.django_db
def test_admin_preview_is_for_owners_only(client, task):
    other = UserFactory(username="other-staff", is_staff=True)
    client.force_login(other)
    for url in (
        f"/admin/tasks/task/{task.pk}/preview/",
        f"/admin/tasks/task/{task.pk}/preview/frame/",
    ):
        assert client.get(url).status_code == 403


@pytest.mark.django_db
def test_task_change_form_links_the_preview(client, task, owner):
    client.force_login(owner)
    response = client.get(f"/admin/tasks/task/{task.pk}/change/")
    assert f"/admin/tasks/task/{task.pk}/preview/" in response.content.decode()


@pytest.mark.parametrize("sample", supported_params())
@pytest.mark.parametrize(("context_id", "retain"), [(42, False), (None, True)])
def test_the_cached_blank_create_form_is_the_form_crispy_renders(sample, context_id, retain):
    import re

    from crispy_forms.utils import render_crispy_form

    from annotation.blank_forms import blank_create_html

    name = sample.name
    config = sample.parse()
    goal = config.goal_field
    goal_label = goal.labels[-1] if goal is not None else ""
    page = {"task": {"code": f"t-{name}"}, "needs_context": bool(config.context)}
    key = (f"t-{name}", 1, sample.id)
    cached = [
        blank_create_html(
            key,
            config,
            goal_label=goal_label,
            retain=retain,
            context_id=context_id,
            template_context=page,
        )
        for _ in range(2)
    ]
    direct = render_crispy_form(
        CreateForm(
            config=config,
            goal_label=goal_label,
            initial={"context_id": context_id, "retain_input": retain},
        ),
        context=page,
    )
    signed = re.compile(r'name="started_at" value="([^"]+)"')
    # Every call signs its own start time, and the server can read it back.
    assert all(time_spent_ms(signed.search(html).group(1)) is not None for html in cached)
    assert signed.sub("", cached[1]) == signed.sub("", direct)
    assert "dynatask-" not in cached[1]  # no marker is left behind


@pytest.mark.parametrize("sample", supported_params())
def test_the_cached_blank_validate_form_is_the_form_crispy_renders(sample):
    import re

    from crispy_forms.utils import render_crispy_form

    from annotation.blank_forms import blank_validate_html

    config = sample.parse()
    key = (1, sample.id)
    cached = [blank_validate_html(key, config, example_id=example_id) for example_id in (7, 8)]
    direct = render_crispy_form(
        ValidateForm(config=config, initial={"example_id": 8, "config_version": 1})
    )
    signed = re.compile(r'name="started_at" value="([^"]+)"')
    assert all(time_spent_ms(signed.search(html).group(1)) is not None for html in cached)
    assert signed.sub("", cached[1]) == signed.sub("", direct)
    assert 'name="example_id" value="7"' in cached[0]
    assert "dynatask-" not in cached[1]
