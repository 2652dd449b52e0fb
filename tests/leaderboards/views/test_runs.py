"""Run pages: the run page and its htmx progress partial (done/total, rate, ETA, state), the
failed run's first bad response and Retry (owners only), 404s, never 500s, for runs that
are missing or not visible, and the model page's live progress of its runs."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from leaderboards.models import EvaluationRun, EvaluationShard, RunStatus, RunTrigger
from tests.factories import UserFactory
from tests.leaderboards.evalkit import (
    import_sentiment,
    make_model,
)


# -- the pages ---------------------------------------------------------------------------------
@pytest.fixture
def published_model(eval_task, eval_owner):
    # Never called here: the runs below are written directly.
    return make_model(eval_task, eval_owner, "http://127.0.0.1:9/", is_published=True)


@pytest.fixture
def dataset(eval_task):
    return import_sentiment(eval_task, 4, evaluate=False)


def _saved_run(model, dataset, **fields) -> EvaluationRun:
    run = EvaluationRun.objects.create(
        model=model,
        dataset=dataset,
        config_version=dataset.config_version,
        trigger=RunTrigger.RERUN,
        total=fields.pop("total", 200),
    )
    EvaluationRun.objects.filter(pk=run.pk).update(**fields)
    run.refresh_from_db()
    return run


def _number(pattern: str, html: str) -> float:
    match = re.search(pattern, html)
    assert match, pattern
    return float(match.group(1))


@pytest.mark.django_db
def test_run_page_and_partial_show_the_numbers(client, published_model, dataset):
    run = _saved_run(
        published_model,
        dataset,
        done=50,
        status=RunStatus.RUNNING,
        started_at=timezone.now() - timedelta(seconds=10),
    )
    client.force_login(UserFactory(username="viewer"))
    page = client.get(reverse("leaderboards:run_detail", args=[run.pk]))
    partial = client.get(reverse("leaderboards:run_progress", args=[run.pk]))
    for response in (page, partial):
        assert response.status_code == 200
        html = response.content.decode()
        assert "50 / 200 examples" in html
        assert 'data-state="running"' in html and "Running" in html
        assert 4.0 < _number(r"Rate: ([\d.]+) examples/s", html) <= 5.0
        assert 25 <= _number(r"ETA: (\d+) s", html) <= 40
        # Still running: the partial polls itself.
        assert f'hx-get="{reverse("leaderboards:run_progress", args=[run.pk])}"' in html
    assert "<html" in page.content.decode() and "<html" not in partial.content.decode()


@pytest.mark.django_db
def test_finished_run_stops_polling(client, published_model, dataset):
    run = _saved_run(
        published_model,
        dataset,
        done=200,
        status=RunStatus.DONE,
        started_at=timezone.now() - timedelta(seconds=20),
        finished_at=timezone.now(),
    )
    html = client.get(reverse("leaderboards:run_progress", args=[run.pk])).content.decode()
    assert "200 / 200 examples" in html and 'data-state="done"' in html
    assert "hx-get" not in html and "ETA: 0 s" in html


@pytest.mark.django_db
def test_failed_run_shows_first_bad_response_and_retry_to_owners_only(
    client, eval_owner, published_model, dataset
):
    run = _saved_run(
        published_model,
        dataset,
        done=12,
        status=RunStatus.FAILED,
        error_code="model.bad_response",
        error_message="label 'banana' is not one of the labels",
        first_bad_response='{"outputs": [{"label": "banana"}]}',
        started_at=timezone.now() - timedelta(seconds=3),
        finished_at=timezone.now(),
    )
    retry_url = reverse("leaderboards:run_retry", args=[run.pk])
    for url in (
        reverse("leaderboards:run_detail", args=[run.pk]),
        reverse("leaderboards:run_progress", args=[run.pk]),
    ):
        client.force_login(eval_owner)
        html = client.get(url).content.decode()
        assert "12 / 200 examples" in html and 'data-state="failed"' in html
        assert "model.bad_response" in html
        assert "First bad response" in html
        assert "{&quot;outputs&quot;: [{&quot;label&quot;: &quot;banana&quot;}]}" in html
        assert f'action="{retry_url}"' in html and ">Retry</button>" in html
        assert "hx-get" not in html

        client.force_login(UserFactory(username=f"viewer-{url[-3:]}"))
        html = client.get(url).content.decode()
        assert "First bad response" in html
        assert retry_url not in html and "Retry</button>" not in html
        client.logout()
        html = client.get(url).content.decode()
        assert 'data-state="failed"' in html and retry_url not in html


@pytest.mark.django_db
def test_retry_is_for_owners(client, eval_owner, published_model, dataset, redis_connection):
    run = _saved_run(published_model, dataset, status=RunStatus.FAILED, error_code="x")
    EvaluationShard.objects.create(run=run, index=0, start=0, end=4, status=RunStatus.FAILED)
    url = reverse("leaderboards:run_retry", args=[run.pk])
    assert client.post(url).status_code == 302  # anonymous: to the login page
    assert client.post(url)["Location"].startswith(reverse("login"))
    client.force_login(UserFactory(username="viewer"))
    assert client.post(url).status_code == 403
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED

    client.force_login(eval_owner)
    response = client.post(url, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    assert 'data-state="queued"' in response.content.decode()
    run.refresh_from_db()
    assert run.status == RunStatus.QUEUED and run.error_code == ""
    assert run.shards.get().status == RunStatus.QUEUED
    # Retrying a run that is not failed is refused with a message, not an error page.
    response = client.post(url)
    assert response.status_code == 302
    assert response["Location"] == reverse("leaderboards:run_detail", args=[run.pk])


@pytest.mark.django_db
def test_missing_and_invisible_runs_are_404(client, eval_task, eval_owner, dataset):
    for name in ("run_detail", "run_progress"):
        assert client.get(reverse(f"leaderboards:{name}", args=[987654])).status_code == 404
    client.force_login(eval_owner)
    assert client.post(reverse("leaderboards:run_retry", args=[987654])).status_code == 404

    private = make_model(eval_task, eval_owner, "http://127.0.0.1:9/", name="private")
    private_run = _saved_run(private, dataset, status=RunStatus.RUNNING)
    hidden = import_sentiment(eval_task, 2, evaluate=False, slug="hidden", access_type="hidden")
    public = make_model(eval_task, eval_owner, "http://127.0.0.1:9/", name="pub", is_published=True)
    hidden_run = _saved_run(public, hidden, status=RunStatus.RUNNING)
    client.force_login(UserFactory(username="viewer"))
    for run in (private_run, hidden_run):
        for name in ("run_detail", "run_progress"):
            assert client.get(reverse(f"leaderboards:{name}", args=[run.pk])).status_code == 404
    client.force_login(eval_owner)
    for run in (private_run, hidden_run):
        assert client.get(reverse("leaderboards:run_detail", args=[run.pk])).status_code == 200


# session, user, the run (with model, task, dataset), the viewer's task access, the
# model-owner check, and the score.
PROGRESS_QUERIES = 6


@pytest.mark.django_db
def test_progress_partial_query_count_is_fixed(
    client, published_model, dataset, django_assert_max_num_queries
):
    run = _saved_run(published_model, dataset, done=5, status=RunStatus.RUNNING)
    client.force_login(UserFactory(username="viewer"))
    url = reverse("leaderboards:run_progress", args=[run.pk])
    client.get(url)
    with django_assert_max_num_queries(PROGRESS_QUERIES):
        assert client.get(url).status_code == 200


@pytest.mark.django_db
def test_model_page_shows_the_live_progress_of_its_runs(client, published_model, dataset):
    run = _saved_run(
        published_model,
        dataset,
        done=20,
        status=RunStatus.RUNNING,
        started_at=timezone.now() - timedelta(seconds=5),
    )
    client.force_login(UserFactory(username="watcher"))
    page = client.get(reverse("leaderboards:model", args=[published_model.pk])).content.decode()
    partial_url = reverse("leaderboards:model_runs_progress", args=[published_model.pk])
    assert f'hx-get="{partial_url}"' in page
    partial = client.get(partial_url).content.decode()
    assert "20 / 200 examples" in partial
    assert f'hx-get="{reverse("leaderboards:run_progress", args=[run.pk])}"' in partial


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("status", "trigger", "viewer", "shows_retry"),
    [
        (RunStatus.FAILED, RunTrigger.RERUN, "model_owner", True),
        (RunStatus.FAILED, RunTrigger.RERUN, "task_owner", True),
        (RunStatus.FAILED, RunTrigger.RERUN, "stranger", False),
        (RunStatus.FAILED, RunTrigger.RERUN, "anonymous", False),
        (RunStatus.DONE, RunTrigger.RERUN, "model_owner", False),
        (RunStatus.FAILED, RunTrigger.PREDICTIONS_UPLOAD, "model_owner", False),
    ],
)
def test_retry_shows_to_the_owners_of_a_failed_run_on_its_page_and_the_model_page(
    client, eval_task, eval_owner, dataset, status, trigger, viewer, shows_retry
):
    author = UserFactory(username="author")
    model = make_model(eval_task, author, "http://127.0.0.1:9/", name="auth", is_published=True)
    run = _saved_run(model, dataset, status=status, error_code="model.unreachable")
    EvaluationRun.objects.filter(pk=run.pk).update(trigger=trigger)
    users = {"model_owner": author, "task_owner": eval_owner, "stranger": UserFactory()}
    if viewer in users:
        client.force_login(users[viewer])
    retry_url = reverse("leaderboards:run_retry", args=[run.pk])
    for url in (
        reverse("leaderboards:run_detail", args=[run.pk]),
        reverse("leaderboards:model_runs_progress", args=[model.pk]),
    ):
        html = client.get(url).content.decode()
        assert (f'action="{retry_url}"' in html) is shows_retry, (url, html)
        if status == RunStatus.FAILED:
            assert 'data-testid="run-failed"' in html


# -- the sealed view of a run on a hidden dataset ------------------------------------------------
@pytest.mark.django_db
def test_a_models_owner_sees_how_far_a_hidden_run_went_and_nothing_else(client, eval_task):
    submitter = UserFactory(username="submitter")
    model = make_model(eval_task, submitter, "http://127.0.0.1:9/", is_published=True)
    hidden = import_sentiment(eval_task, 4, evaluate=False, access_type="hidden", name="Vault")
    run = _saved_run(
        model,
        hidden,
        total=4,
        done=3,
        failed_count=1,
        status=RunStatus.FAILED,
        error_code="run.finalize_failed",
        error_message="per tag odd: 0.25",
        first_bad_response="figures",
    )
    client.force_login(submitter)
    pages = [
        client.get(reverse("leaderboards:run_detail", args=[run.pk])).content.decode(),
        client.get(reverse("leaderboards:run_progress", args=[run.pk])).content.decode(),
        client.get(reverse("leaderboards:model", args=[model.pk])).content.decode(),
        client.get(reverse("leaderboards:model_runs_progress", args=[model.pk])).content.decode(),
    ]
    for html in pages:
        assert "Vault" not in html and "0.25" not in html and "figures" not in html
        assert "hidden dataset" in html
    run_page, progress = pages[:2]
    assert 'data-testid="sealed-note"' in run_page
    assert "3 / 4 examples" in progress and 'data-state="failed"' in progress
