"""A dataset's inputs, downloaded from its page: streamed JSON Lines without the gold, for
whoever may read the dataset's examples (the API's rule)."""

from __future__ import annotations

import json

import pytest
from django.http import StreamingHttpResponse
from django.urls import reverse

from tests.factories import UserFactory
from tests.leaderboards.evalkit import import_sentiment

pytestmark = pytest.mark.django_db


def inputs_url(slug: str) -> str:
    return reverse("leaderboards:dataset_inputs", args=["sentiment", slug])


def test_the_inputs_come_as_streamed_json_lines_without_gold(client, eval_task):
    import_sentiment(eval_task, 7, evaluate=False, slug="open", access_type="public")
    client.force_login(UserFactory(username="reader"))
    page = client.get(reverse("leaderboards:dataset_detail", args=["sentiment", "open"]))
    assert f'href="{inputs_url("open")}"' in page.content.decode()

    response = client.get(inputs_url("open"))
    assert response.status_code == 200
    assert isinstance(response, StreamingHttpResponse)
    assert response["Content-Type"].startswith("application/x-ndjson")
    assert 'filename="sentiment-open-inputs.jsonl"' in response["Content-Disposition"]
    lines = [json.loads(line) for line in b"".join(response.streaming_content).splitlines()]
    assert [line["uid"] for line in lines] == [f"u{index}" for index in range(7)]
    assert lines[0] == {
        "uid": "u0",
        "statement": "This is a good day number 0.",
        "context": "Describe your day.",
    }
    assert all("label" not in line for line in lines)  # never the gold, even a public one


def test_a_hidden_dataset_is_not_found_for_others_and_served_to_owners(
    client, eval_task, eval_owner
):
    import_sentiment(eval_task, 3, evaluate=False, slug="secret", access_type="hidden")
    client.force_login(UserFactory(username="stranger"))
    assert client.get(inputs_url("secret")).status_code == 404
    assert client.get(inputs_url("no-such-set")).status_code == 404
    client.force_login(eval_owner)
    response = client.get(inputs_url("secret"))
    assert response.status_code == 200
    assert len(b"".join(response.streaming_content).splitlines()) == 3


def test_the_download_costs_the_same_queries_for_any_size(
    client, eval_task, django_assert_max_num_queries
):
    import_sentiment(eval_task, 300, evaluate=False, slug="open", access_type="public")
    client.force_login(UserFactory(username="reader"))
    with django_assert_max_num_queries(12):
        response = client.get(inputs_url("open"))
        assert len(b"".join(response.streaming_content).splitlines()) == 300
