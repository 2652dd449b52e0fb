"""The crowdworker's comforts on the create, example and validate pages: length limits that
are counted and refused (never cut), shortcut markers, the progress line, flag and undo."""

from __future__ import annotations

import re

import pytest

from annotation.models import Example
from tests.annotation.conftest import POSITIVE, open_form, run_jobs, submit
from tests.factories import (
    CampaignFactory,
    CampaignWorkerFactory,
    ExampleFactory,
    UserFactory,
    campaign_session,
)

pytestmark = pytest.mark.django_db(transaction=True)

HX = {"HX-Request": "true"}


@pytest.fixture(autouse=True)
def no_sync_wait(settings):
    settings.ANNOTATION_SYNC_WAIT_SECONDS = 0
    settings.ANNOTATION_POLL_WAIT_SECONDS = 0


def field_tag(html: str, name: str) -> str:
    return re.search(rf'<textarea[^>]*name="{name}"[^>]*>', html).group(0)


# -- length limits ----------
def test_a_limited_field_is_counted_not_cut_by_the_browser(client, worker, sentiment_task):
    client.force_login(worker)
    tag = field_tag(open_form(client, "sentiment")["html"], "statement")
    assert 'data-max-length="500"' in tag
    assert "maxlength" not in tag  # the browser would cut a paste at the limit silently


def test_an_over_long_entry_is_refused_with_a_clear_error(client, worker, sentiment_task):
    client.force_login(worker)
    response = submit(client, "sentiment", statement="x" * 612, label="positive")
    assert response.status_code == 400
    html = response.content.decode()
    assert "This is 612 characters long; the limit is 500." in html
    assert "x" * 612 in html  # what the worker typed stays in the form, whole
    assert not Example.objects.exists()


def test_a_line_break_counts_as_one_character(client, worker, sentiment_model):
    client.force_login(worker)
    text = ("y" * 249 + "\r\n") * 2  # 500 with one-character breaks, 502 with CR LF
    response = submit(client, "sentiment", statement=text, label="positive")
    assert response.status_code == 200
    stored = Example.objects.get().input["statement"]
    assert "\r" not in stored and len(stored) <= 500


def test_metadata_fields_carry_their_limit_too(client, worker, sentiment_model):
    client.force_login(worker)
    submit(client, "sentiment", statement=POSITIVE, label="negative")
    run_jobs()
    example = Example.objects.get()
    html = client.get(f"/tasks/sentiment/examples/{example.pk}/").content.decode()
    assert 'data-max-length="' in field_tag(html, "metadata-example_explanation")
    assert "maxlength" not in field_tag(html, "metadata-example_explanation")


# -- shortcut markers ----------
def test_the_label_choices_and_the_verdicts_are_marked_for_the_number_keys(
    client, worker, sentiment_model
):
    client.force_login(worker)
    html = open_form(client, "sentiment")["html"]
    marked = re.findall(r'<input[^>]*data-shortcut-group="label"[^>]*>', html)
    assert [re.search(r'value="(\w+)"', tag).group(1) for tag in marked] == [
        "negative",
        "positive",
        "neutral",
    ]
    assert "annotation/shortcuts.js" in html and "annotation/char_counter.js" in html
    submit(client, "sentiment", statement=POSITIVE, label="negative")
    run_jobs()
    client.force_login(UserFactory(username="validator"))
    page = client.get("/tasks/sentiment/validate").content.decode()
    verdicts = re.findall(r'<input[^>]*data-shortcut-group="verdict"[^>]*>', page)
    assert [re.search(r'value="(\w+)"', tag).group(1) for tag in verdicts] == [
        "correct",
        "incorrect",
        "flagged",
    ]


def test_the_ask_user_verdict_buttons_have_keys(client, worker, owner, model_server_factory):
    from models_hub.demo.sentiment import SentimentHandler
    from tests.annotation.conftest import serve_in_loop
    from tests.factories import ContextFactory, TaskFactory, demo_config

    yaml_text = demo_config("sentiment").replace(
        "model_wrong_metric:\n  type: exact_match\n  reference_names: [label]",
        "model_wrong_metric:\n  type: ask_user",
    )
    task = TaskFactory(code="asked", yaml_text=yaml_text, owners=[owner])
    ContextFactory(task=task)
    serve_in_loop(task, owner, model_server_factory, SentimentHandler, "vader")
    client.force_login(worker)
    submit(client, "asked", statement=POSITIVE, label="negative")
    run_jobs()
    example = Example.objects.get()
    html = client.get(f"/tasks/asked/examples/{example.pk}/").content.decode()
    assert re.search(r'<button[^>]*value="true"[^>]*data-shortcut="w"', html)
    assert re.search(r'<button[^>]*value="false"[^>]*data-shortcut="r"', html)


# -- the progress line ----------
def test_the_progress_line_counts_todays_examples(client, worker, sentiment_model):
    client.force_login(worker)
    html = open_form(client, "sentiment")["html"]
    assert 'data-written="0" data-fooled="0"' in html
    submit(client, "sentiment", statement=POSITIVE, label="negative")
    run_jobs()
    html = open_form(client, "sentiment")["html"]
    line = re.search(r'<p[^>]*id="progress-line".*?</p>', html, re.DOTALL).group(0)
    assert 'data-written="1" data-fooled="1"' in line
    assert "1</strong> example written" in line and "fooled the model" in line
    # The verdict page shows the verdict, not the line (it would cost every submission a
    # query); the next create page counts the new example.
    html = submit(client, "sentiment", statement="The food was fine.", label="neutral")
    assert 'id="progress-line"' not in html.content.decode()
    assert 'data-written="2"' in open_form(client, "sentiment")["html"]


def test_the_progress_line_follows_a_retraction_and_a_verdict(client, worker, sentiment_model):
    """The line follows the writes at once: a retraction takes the example out of it; a
    validator's verdict counts on the validate page."""
    client.force_login(worker)
    open_form(client, "sentiment")
    submit(client, "sentiment", statement=POSITIVE, label="negative")
    run_jobs()
    assert 'data-written="1" data-fooled="1"' in open_form(client, "sentiment")["html"]
    example = Example.objects.get()
    client.post(f"/tasks/sentiment/examples/{example.pk}/retract")
    assert 'data-written="0" data-fooled="0"' in open_form(client, "sentiment")["html"]
    submit(client, "sentiment", statement="The food was fine.", label="neutral")
    run_jobs()
    assert 'data-written="1"' in open_form(client, "sentiment")["html"]
    validator = UserFactory(username="validator")
    client.force_login(validator)
    assert 'data-validated="0"' in client.get("/tasks/sentiment/validate").content.decode()
    offered = Example.objects.get(retracted=False)
    client.post(
        "/tasks/sentiment/validate",
        {
            "example_id": offered.pk,
            "label": "correct",
            "config_version": offered.config_version_id,
        },
    )
    assert 'data-validated="1"' in client.get("/tasks/sentiment/validate").content.decode()


def test_a_campaign_worker_sees_the_quota(client, sentiment_model, owner):
    campaign = CampaignFactory(task=sentiment_model.task, quota=10, created_by=owner)
    member = CampaignWorkerFactory(campaign=campaign)
    campaign_session(client, member)
    for _ in range(3):
        submit(client, "sentiment", statement=POSITIVE, label="negative")
    html = open_form(client, "sentiment")["html"]
    assert 'data-done="3" data-quota="10"' in html
    assert "3 of 10" in html


# -- flag and undo ----------
def flag_url(example, action: str = "flag") -> str:
    return f"/tasks/sentiment/examples/{example.pk}/{action}"


@pytest.fixture
def example(worker, sentiment_task):
    return ExampleFactory(task=sentiment_task, user=worker)


def test_flag_with_a_reason_then_undo(client, worker, example):
    client.force_login(worker)
    html = client.get(f"/tasks/sentiment/examples/{example.pk}/").content.decode()
    assert 'id="flag-form"' in html and 'name="reason"' in html
    response = client.post(flag_url(example), {"reason": "I picked the wrong label"}, headers=HX)
    part = response.content.decode()
    assert 'id="flagged-note"' in part and "I picked the wrong label" in part
    assert 'id="unflag"' in part
    example.refresh_from_db()
    assert (example.creator_flagged, example.flag_count) == (True, 1)
    part = client.post(flag_url(example, "unflag"), headers=HX).content.decode()
    assert 'id="flag-form"' in part and 'id="unflag"' not in part
    example.refresh_from_db()
    assert (example.creator_flagged, example.flag_count) == (False, 0)


def test_an_over_long_reason_comes_back_with_the_error(client, worker, example):
    client.force_login(worker)
    reason = "z" * 501
    response = client.post(flag_url(example), {"reason": reason}, headers=HX)
    assert response.status_code == 200  # htmx swaps successful answers only
    part = response.content.decode()
    assert "The reason is 501 characters long; the limit is 500." in part
    assert re.search(r'<details[^>]*id="flag-box"[^>]*open', part)
    assert f'value="{reason}"' in part
    example.refresh_from_db()
    assert not example.creator_flagged
    # Without htmx: back to the example's page, with the message.
    response = client.post(flag_url(example), {"reason": reason}, follow=True)
    assert "The reason is 501 characters long" in response.content.decode()


def test_only_the_writer_undoes_a_flag(client, worker, example):
    client.force_login(worker)
    client.post(flag_url(example), {"reason": ""})
    client.force_login(UserFactory(username="intruder"))
    assert client.post(flag_url(example, "unflag")).status_code == 404
    example.refresh_from_db()
    assert example.creator_flagged
