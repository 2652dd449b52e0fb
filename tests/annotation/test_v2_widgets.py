"""The v2 components without a v1 twin (sliders, drop-downs, radio lists and multioptions with
instructions) render server-side through crispy, are checked on the server like every field,
and show in the admin's form preview."""

from __future__ import annotations

import re

import pytest
from crispy_forms.utils import render_crispy_form

from annotation.forms import CreateForm, MetadataForm, ValidateForm
from annotation.models import Example
from tasks.config import parse_task_config
from tests.annotation.conftest import open_form
from tests.factories import ContextFactory, TaskFactory
from tests.tasks.config.samples import FIXTURE_DIR

TEXT = (FIXTURE_DIR / "v2_claim_review.yaml").read_text(encoding="utf-8")
CONFIG = parse_task_config(TEXT)


def test_the_create_form_renders_each_component_as_its_widget():
    html = render_crispy_form(CreateForm(config=CONFIG, goal_label="refuted"))
    # simple-slider: a native range input on the 1..7 scale, labelled by the field's label.
    assert re.search(r'<input type="range" name="certainty"[^>]*min="1" max="7"', html)
    assert 'for="id_certainty"' in html
    # drop-down-single-select: a select with an empty first choice.
    assert re.search(r'<select name="topic"[^>]*>\s*<option value="" selected>', html)
    # multioptions-with-instructions: check boxes under folded instructions.
    assert re.search(r'type="checkbox"[^>]*name="tricks"', html)
    assert "<summary>Instructions: tricks</summary><p>Which tricks did you use?</p>" in html
    # initiate_open: the instructions start unfolded; Markdown is rendered.
    assert '<details class="field-instructions" open>' in html
    assert "<strong>source</strong>" in html
    # The goal: radio buttons, preset.
    assert re.search(r'type="radio"[^>]*name="verdict" value="refuted"[^>]*checked', html)


def test_the_metadata_form_renders_the_slider_groups_and_inline_radios():
    html = render_crispy_form(MetadataForm(specs=CONFIG.create_metadata_fields(False)))
    # multi-slider-selection: one labelled range per option, end words from options_slider.
    for index, label in enumerate(("expert", "layperson")):
        caption = f'<label class="scale-caption form-label mb-0" for="id_reader_ratings_{index}">'
        assert f"{caption}{label}</label>" in html
    assert html.count('name="reader_ratings_') == 2 and ">disagree<" in html
    # select-option-with-slider: radio buttons then a range; basic-input-with-slider: a text.
    assert 'type="radio" name="key_part_0" value="body"' in html
    assert re.search(r'type="range" name="key_part_1"[^>]*min="0" max="10"', html)
    assert 'type="text" name="rewording_0"' in html
    # horizontal-radio-button-options: inline radios.
    assert "form-check-inline" in html


def test_every_rating_is_checked_on_the_server():
    base = {"claim": "c", "topic": "health", "verdict": "refuted", "certainty": "4"}
    assert CreateForm(base, config=CONFIG).is_valid()
    for wrong in ("8", "0", "x"):
        form = CreateForm({**base, "certainty": wrong}, config=CONFIG)
        assert not form.is_valid() and "certainty" in form.errors
    assert not CreateForm({**base, "topic": "gardening"}, config=CONFIG).is_valid()

    specs = CONFIG.create_metadata_fields(False)
    metadata = {
        "difficulty": "easy",
        "reader_ratings_0": "10",
        "reader_ratings_1": "90",
        "key_part_0": "body",
        "key_part_1": "3",
        "rewording_0": "Better words",
        "rewording_1": "70",
    }
    form = MetadataForm(metadata, specs=specs)
    assert form.is_valid(), form.errors
    assert form.config_values() == {
        "difficulty": "easy",
        "reader_ratings": {"expert": 10, "layperson": 90},
        "key_part": {"label": "body", "score": 3},
        "rewording": {"text": "Better words", "score": 70},
    }
    for key, wrong in (("reader_ratings_1", ""), ("key_part_1", "11"), ("key_part_0", "title")):
        form = MetadataForm({**metadata, key: wrong}, specs=specs)
        assert not form.is_valid(), key


def test_the_validate_form_offers_only_the_configured_verdicts():
    form = ValidateForm(config=CONFIG)
    assert [value for value, _label in form.fields["label"].choices] == ["correct", "incorrect"]
    bound = ValidateForm(
        {"label": "flagged", "example_id": "1", "right_verdict": "refuted"}, config=CONFIG
    )
    assert not bound.is_valid() and "label" in bound.errors


def test_owner_text_in_instructions_cannot_reach_the_template_language():
    hostile = TEXT.replace(
        "instructions: Pick the topic.",
        "instructions: \"{{ 7|add:1 }} {% now 'Y' %} <script>alert(1)</script>\"",
    )
    html = render_crispy_form(CreateForm(config=parse_task_config(hostile)))
    assert "<script>" not in html
    assert "&#123;&#123; 7|add:1 &#125;&#125;" in html and ">8<" not in html


@pytest.mark.django_db(transaction=True)
def test_the_admin_preview_shows_the_v2_components(client, owner):
    task = TaskFactory(code="claims", yaml_text=TEXT, owners=[owner])
    client.force_login(owner)
    frame = client.get(f"/admin/tasks/task/{task.pk}/preview/frame/").content.decode()
    assert 'type="range" name="certainty"' in frame
    assert '<select name="topic"' in frame
    assert "reader_ratings" in frame and "key_part" in frame
    assert "/static/annotation/scales.js" in frame


@pytest.mark.django_db(transaction=True)
def test_the_create_page_refuses_an_off_scale_rating_and_saves_a_good_one(
    client, worker, owner, settings
):
    settings.ANNOTATION_SYNC_WAIT_SECONDS = 0
    task = TaskFactory(code="claims", yaml_text=TEXT, owners=[owner])
    ContextFactory(task=task, data={"snippet": "The council voted on Monday."})
    client.force_login(worker)
    page = open_form(client, "claims")
    assert "/static/annotation/scales.js" in page["html"]
    # creation_samples_title heads the page.
    assert '<h1 class="h4 mb-3">Review a claim <small' in page["html"]
    data = {
        "context_id": page["context_id"],
        "started_at": page["started_at"],
        "claim": "The council never voted.",
        "topic": "politics",
        "verdict": "refuted",
        "certainty": "9",
    }
    response = client.post("/tasks/claims/create", data)
    assert response.status_code in (200, 400)
    assert not Example.objects.exists()
    client.post("/tasks/claims/create", {**data, "certainty": "6"})
    example = Example.objects.get()
    assert example.input["certainty"] == 6 and example.input["topic"] == "politics"


@pytest.mark.django_db(transaction=True)
def test_the_external_validator_sends_the_worker_to_the_survey_after_n_examples(
    client, worker, owner, settings
):
    settings.ANNOTATION_SYNC_WAIT_SECONDS = 0
    text = TEXT.replace("required_number_of_examples: 5", "required_number_of_examples: 1")
    task = TaskFactory(code="claims", yaml_text=text, owners=[owner])
    ContextFactory(task=task, data={"snippet": "The council voted on Monday."})
    client.force_login(worker)
    page = open_form(client, "claims")
    data = {
        "context_id": page["context_id"],
        "started_at": page["started_at"],
        "claim": "The council never voted.",
        "topic": "politics",
        "verdict": "refuted",
        "certainty": "6",
    }
    client.post("/tasks/claims/create", data)
    assert Example.objects.count() == 1
    response = client.get("/tasks/claims/create")
    assert response.status_code == 302
    assert response["Location"] == "https://survey.example.org/claims?study=claims-2025"
