"""Dataset pages: access types and gold kept from non-owners, the upload page lists every bad
line."""

from __future__ import annotations

import io

import pytest
from django.urls import reverse

from leaderboards.models import Dataset, DatasetExample, EvaluationRun, Prediction
from leaderboards.selectors.datasets import dataset_examples_page
from tests.factories import DatasetFactory, UserFactory
from tests.leaderboards.boardkit import make_models, url
from tests.leaderboards.evalkit import (
    import_sentiment,
    jsonl,
    sentiment_rows,
)


@pytest.mark.django_db
def test_access_types_and_gold_visibility(client, eval_task, eval_owner):
    import_sentiment(eval_task, 3, evaluate=False, slug="open", name="Open set")
    import_sentiment(eval_task, 3, evaluate=False, slug="secret", access_type="hidden")
    stranger = UserFactory(username="stranger")
    client.force_login(stranger)
    listing = client.get(reverse("leaderboards:dataset_list", args=["sentiment"]))
    assert b"Open set" in listing.content and b"secret" not in listing.content
    hidden = client.get(reverse("leaderboards:dataset_detail", args=["sentiment", "secret"]))
    assert hidden.status_code == 404
    page = client.get(reverse("leaderboards:dataset_detail", args=["sentiment", "open"]))
    assert page.status_code == 200
    assert b"This is a good day number 0." in page.content
    assert b'class="gold"' not in page.content
    _, rows = dataset_examples_page(Dataset.objects.get(slug="open"), stranger)
    assert all(row.gold is None for row in rows)

    client.force_login(eval_owner)
    page = client.get(reverse("leaderboards:dataset_detail", args=["sentiment", "secret"]))
    assert page.status_code == 200 and b'class="gold"' in page.content


@pytest.mark.django_db
def test_upload_page_reports_lines(client, eval_task, eval_owner):
    url = reverse("leaderboards:dataset_upload", args=["sentiment"])
    client.force_login(UserFactory(username="stranger"))
    assert client.get(url).status_code == 403
    client.force_login(eval_owner)
    assert client.get(url).status_code == 200
    rows = sentiment_rows(3)
    rows[1]["label"] = "meh"
    upload = io.BytesIO(jsonl(rows).getvalue())
    upload.name = "rows.jsonl"
    fields = {"name": "Web", "slug": "web", "access_type": "scoring"}
    response = client.post(url, {"file": upload, **fields})
    assert response.status_code == 400
    assert b"value.E" in response.content and b"<td>2</td>" in response.content
    upload = io.BytesIO(jsonl(sentiment_rows(3)).getvalue())
    upload.name = "rows.jsonl"
    response = client.post(url, {"file": upload, **fields})
    assert response.status_code == 302
    assert Dataset.objects.get(slug="web").row_count == 3


@pytest.mark.django_db
def test_hidden_datasets_and_gold_invisible_to_non_owners(client, task, owner):
    public = DatasetFactory(task=task, slug="public-set", name="Public set")
    hidden = DatasetFactory(task=task, slug="secret-set", name="Secret set", access_type="hidden")
    author = UserFactory(username="author")
    (model,) = make_models(task, 1, [public, hidden], owner=author)
    example = DatasetExample.objects.create(
        dataset=public,
        position=0,
        uid="ex-1",
        inputs={"statement": "fine"},
        gold={"label": "GOLDLABELXYZ"},
    )
    run = EvaluationRun.objects.create(
        model=model, dataset=public, config_version=public.config_version, trigger="rerun"
    )
    EvaluationRun.objects.create(
        model=model, dataset=hidden, config_version=hidden.config_version, trigger="rerun"
    )
    Prediction.objects.create(run=run, example=example, output={"label": "positive"})

    for who in (None, author):
        if who:
            client.force_login(who)
        board = client.get(url("task", task.code)).content.decode()
        assert "Secret set" not in board and "secret-set" not in board
        assert "secret-set" not in client.get(url("task_json", task.code)).content.decode()
        page = client.get(url("model", model.pk)).content.decode()
        assert "Public set" in page
        assert "Secret set" not in page
        assert "GOLDLABELXYZ" not in page
        assert 'data-testid="example-browser"' not in page

    client.force_login(owner)
    board = client.get(url("task", task.code)).content.decode()
    assert "Secret set" in board
    page = client.get(url("model", model.pk)).content.decode()
    assert "Secret set" in page and "GOLDLABELXYZ" in page


@pytest.mark.django_db
def test_the_dataset_page_says_where_its_inputs_go(client, eval_task, eval_owner):
    import_sentiment(eval_task, 2, evaluate=False, slug="open")
    import_sentiment(eval_task, 2, evaluate=False, slug="secret", access_type="hidden")
    client.force_login(eval_owner)

    def sentence(slug: str) -> str:
        html = client.get(reverse("leaderboards:dataset_detail", args=["sentiment", slug]))
        start = html.content.decode().index('data-testid="inputs-to-others"')
        return html.content.decode()[start : start + 200]

    assert "every registered model" in sentence("open")
    assert "only to the models of the task's owners" in sentence("secret")


@pytest.mark.django_db
def test_the_upload_page_asks_where_the_inputs_go(client, eval_task, eval_owner):
    client.force_login(eval_owner)
    response = client.post(
        reverse("leaderboards:dataset_upload", args=["sentiment"]),
        {
            "file": io.BytesIO(jsonl(sentiment_rows(2)).getvalue()),
            "name": "Secret",
            "slug": "secret",
            "access_type": "hidden",
            "inputs_to_others": "yes",
        },
    )
    assert response.status_code == 302, response.content[-2000:]
    assert Dataset.objects.get(slug="secret").inputs_to_others is True


@pytest.mark.django_db(transaction=True)
def test_a_big_dataset_upload_is_imported_by_a_job_with_a_progress_page(
    client, eval_task, eval_owner, settings, redis_connection
):
    import django_rq
    from rq import SimpleWorker

    from tasks.models import UploadJob

    settings.UPLOAD_INLINE_MAX_BYTES = 1000
    client.force_login(eval_owner)
    rows = sentiment_rows(200)
    rows[150]["label"] = "furious"
    upload_url = reverse("leaderboards:dataset_upload", args=["sentiment"])

    def post(rows):
        data = {"name": "Big", "slug": "big", "access_type": "hidden"}
        return client.post(upload_url, {**data, "file": io.BytesIO(jsonl(rows).getvalue())})

    def work():
        queue = django_rq.get_queue("default")
        SimpleWorker([queue], connection=queue.connection).work(burst=True)

    response = post(rows)
    upload = UploadJob.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("tasks:upload", args=[upload.pk])
    page = client.get(response["Location"]).content.decode()
    assert 'data-state="queued"' in page and "hx-get" in page
    work()
    page = client.get(response["Location"]).content.decode()
    assert "Nothing was imported" in page and "<td>151</td>" in page
    assert not Dataset.objects.filter(slug="big").exists()

    rows[150]["label"] = "positive"
    post(rows)
    work()
    upload = UploadJob.objects.order_by("-pk").first()
    dataset = Dataset.objects.get(slug="big")
    assert (upload.rows, dataset.row_count, dataset.inputs_to_others) == (200, 200, False)
    page = client.get(reverse("tasks:upload", args=[upload.pk])).content.decode()
    assert "Imported 200 rows" in page
    assert reverse("leaderboards:dataset_detail", args=["sentiment", "big"]) in page
