"""The goal of an example, two facts: the label the platform asked for and the one the worker
chose. Both are stored, shown on the example page, exported and returned by the API."""

from __future__ import annotations

import json
import re

import pytest

from annotation.export import example_export_lines
from annotation.models import Example
from tests.annotation.conftest import POSITIVE, open_form

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def no_sync_wait(settings):
    settings.ANNOTATION_SYNC_WAIT_SECONDS = 0


def asked_and_other(client, code="sentiment"):
    page = open_form(client, code)
    asked = page["goal"]
    hidden = re.search(r'name="asked_label" value="([^"]+)"', page["html"]).group(1)
    assert hidden == asked  # the form carries what the banner asks for
    other = next(label for label in ("negative", "positive", "neutral") if label != asked)
    return page, asked, other


def test_the_banner_holds_the_label_choice(client, worker, sentiment_task):
    client.force_login(worker)
    html = open_form(client, "sentiment")["html"]
    banner = html[html.index('id="goal-banner"') : html.index('name="statement"')]
    assert 'data-goal-field="label"' in banner
    assert banner.count('name="label"') == 3  # the three target labels sit in the banner
    assert "data-goal-label=" in banner


def test_asked_and_chosen_labels_are_both_stored_and_shown(client, worker, sentiment_task):
    client.force_login(worker)
    page, asked, chosen = asked_and_other(client)
    response = client.post(
        "/tasks/sentiment/create",
        {
            "context_id": page["context_id"],
            "started_at": page["started_at"],
            "asked_label": asked,
            "statement": POSITIVE,
            "label": chosen,
        },
    )
    assert response.status_code == 200
    example = Example.objects.get()
    assert (example.asked_label, example.goal_label) == (asked, chosen)
    html = response.content.decode()
    shown = html[html.index('id="example-goal"') :]
    assert f"Asked for: <strong data-asked-label>{asked}</strong>" in shown
    assert f"Written for: <strong data-chosen-label>{chosen}</strong>" in shown
    assert "target changed by the worker" in shown

    line = json.loads(next(iter(example_export_lines(sentiment_task, None))))
    assert (line["asked_label"], line["goal_label"]) == (asked, chosen)
    detail = client.get(f"/api/v1/examples/{example.pk}/").json()
    assert (detail["asked_label"], detail["goal_label"]) == (asked, chosen)


def test_a_label_the_task_does_not_offer_is_not_stored(client, worker, sentiment_task):
    client.force_login(worker)
    page = open_form(client, "sentiment")
    client.post(
        "/tasks/sentiment/create",
        {
            "context_id": page["context_id"],
            "started_at": page["started_at"],
            "asked_label": "<b>joyful</b>",
            "statement": POSITIVE,
            "label": "positive",
        },
    )
    example = Example.objects.get()
    assert (example.asked_label, example.goal_label) == ("", "positive")
