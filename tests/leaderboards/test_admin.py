"""The leaderboards admin: dataset upload (all or nothing, owners only), the perturbation
actions, the run Retry action, and owners seeing only their own tasks' rows."""

from __future__ import annotations

import pytest
from django.contrib.messages import get_messages
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from leaderboards.models import Dataset, EvaluationRun, EvaluationShard, RunStatus, RunTrigger
from tests.factories import TaskFactory, UserFactory
from tests.leaderboards.evalkit import (
    import_sentiment,
    jsonl,
    make_model,
    sentiment_rows,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def other_owner(db):
    return UserFactory(username="other-owner", is_staff=True)


@pytest.fixture
def other_task(other_owner):
    return TaskFactory(code="nli", config_name="nli", owners=[other_owner])


def _upload(rows, name="rows.jsonl"):
    return SimpleUploadedFile(name, jsonl(rows).getvalue(), content_type="application/jsonl")


def _messages(response) -> list[str]:
    return [str(message) for message in get_messages(response.wsgi_request)]


def _failed_run(model, dataset) -> EvaluationRun:
    run = EvaluationRun.objects.create(
        model=model,
        dataset=dataset,
        config_version=dataset.config_version,
        trigger=RunTrigger.RERUN,
        total=dataset.row_count,
        status=RunStatus.FAILED,
        error_code="model.server_error",
    )
    EvaluationShard.objects.create(
        run=run, index=0, start=0, end=dataset.row_count, status=RunStatus.FAILED
    )
    return run


def test_dataset_upload_view(client, eval_task, eval_owner, other_owner):
    url = reverse("admin:leaderboards_dataset_upload", args=[eval_task.pk])
    client.force_login(other_owner)  # staff, but owns another task
    assert client.get(url).status_code == 403
    client.force_login(eval_owner)
    assert client.get(url).status_code == 200

    rows = sentiment_rows(4)
    rows[2]["label"] = "meh"
    fields = {"name": "Admin set", "slug": "admin-set", "access_type": "standard"}
    response = client.post(url, {"file": _upload(rows), **fields})
    assert response.status_code == 200
    html = response.content.decode()
    assert 'id="upload-errors"' in html and "<td>3</td>" in html
    assert not Dataset.objects.filter(slug="admin-set").exists()

    response = client.post(url, {"file": _upload(sentiment_rows(4)), **fields})
    dataset = Dataset.objects.get(task=eval_task, slug="admin-set")
    assert response.status_code == 302
    assert response["Location"] == reverse("admin:leaderboards_dataset_change", args=[dataset.pk])
    assert dataset.row_count == 4 and dataset.access_type == "standard"
    assert "Imported 4 examples." in _messages(response)


def test_perturbation_actions(client, eval_task, eval_owner, redis_connection):
    dataset = import_sentiment(eval_task, 10, evaluate=False)
    changelist = reverse("admin:leaderboards_dataset_changelist")
    client.force_login(eval_owner)
    response = client.post(
        changelist, {"action": "generate_robustness", "_selected_action": [dataset.pk]}
    )
    assert response.status_code == 302
    copy = Dataset.objects.get(perturbation_of=dataset, perturbation_kind="robustness")
    assert copy.generated and copy.row_count == 10
    browse = reverse("leaderboards:dataset_detail", args=[eval_task.code, copy.slug])
    assert any(browse in message for message in _messages(response))
    first_rows = list(copy.examples.order_by("position").values_list("inputs", flat=True))

    # Again: the same seed gives the same rows, in the same copy.
    client.post(changelist, {"action": "generate_robustness", "_selected_action": [dataset.pk]})
    assert Dataset.objects.filter(perturbation_of=dataset).count() == 1
    copy.refresh_from_db()
    assert list(copy.examples.order_by("position").values_list("inputs", flat=True)) == first_rows

    # Selecting a copy generates nothing from it.
    client.post(changelist, {"action": "generate_fairness", "_selected_action": [copy.pk]})
    assert not Dataset.objects.filter(perturbation_of=copy).exists()
    response = client.post(
        changelist, {"action": "generate_fairness", "_selected_action": [dataset.pk]}
    )
    assert Dataset.objects.filter(perturbation_of=dataset, perturbation_kind="fairness").exists()


def test_evaluate_again_action(client, eval_task, eval_owner, redis_connection):
    dataset = import_sentiment(eval_task, 3, evaluate=False)
    model = make_model(eval_task, eval_owner, "http://127.0.0.1:9/")
    client.force_login(eval_owner)
    response = client.post(
        reverse("admin:leaderboards_dataset_changelist"),
        {"action": "evaluate_again", "_selected_action": [dataset.pk]},
    )
    assert "Created 1 runs." in _messages(response)
    assert EvaluationRun.objects.get(model=model, dataset=dataset).status == RunStatus.QUEUED


def test_owners_see_only_their_tasks(client, eval_task, eval_owner, other_task, other_owner):
    mine = import_sentiment(eval_task, 2, evaluate=False, slug="mine", name="Mine")
    theirs = Dataset.objects.create(
        task=other_task, name="Theirs", slug="theirs", config_version=other_task.current_config
    )
    my_run = _failed_run(make_model(eval_task, eval_owner, "http://127.0.0.1:9/"), mine)
    their_model = make_model(other_task, other_owner, "http://127.0.0.1:9/", name="their")
    their_run = _failed_run(their_model, theirs)

    client.force_login(eval_owner)
    datasets = client.get(reverse("admin:leaderboards_dataset_changelist"))
    assert datasets.status_code == 200
    assert list(datasets.context["cl"].result_list) == [mine]
    runs = client.get(reverse("admin:leaderboards_evaluationrun_changelist"))
    assert list(runs.context["cl"].result_list) == [my_run]
    their_page = client.get(reverse("admin:leaderboards_dataset_change", args=[theirs.pk]))
    assert their_page.status_code in (302, 403, 404)
    assert (
        client.get(reverse("admin:leaderboards_dataset_change", args=[mine.pk])).status_code == 200
    )

    # A staff user who owns nothing has no leaderboards admin at all.
    client.force_login(UserFactory(username="staff-only", is_staff=True))
    assert client.get(reverse("admin:leaderboards_dataset_changelist")).status_code == 403

    # A superuser sees everything.
    client.force_login(UserFactory(username="root", is_staff=True, is_superuser=True))
    runs = client.get(reverse("admin:leaderboards_evaluationrun_changelist"))
    assert set(runs.context["cl"].result_list) == {my_run, their_run}


def test_run_retry_action(client, eval_task, eval_owner, other_task, other_owner, redis_connection):
    mine = import_sentiment(eval_task, 2, evaluate=False, slug="mine")
    theirs = Dataset.objects.create(
        task=other_task,
        name="Theirs",
        slug="theirs",
        config_version=other_task.current_config,
        row_count=2,
    )
    my_run = _failed_run(make_model(eval_task, eval_owner, "http://127.0.0.1:9/"), mine)
    their_run = _failed_run(
        make_model(other_task, other_owner, "http://127.0.0.1:9/", name="their"), theirs
    )
    done_run = _failed_run(make_model(eval_task, eval_owner, "http://127.0.0.1:9/", name="b"), mine)
    EvaluationRun.objects.filter(pk=done_run.pk).update(status=RunStatus.DONE)

    client.force_login(eval_owner)
    response = client.post(
        reverse("admin:leaderboards_evaluationrun_changelist"),
        {"action": "retry_failed", "_selected_action": [my_run.pk, their_run.pk, done_run.pk]},
    )
    assert response.status_code == 302
    assert "Retried 1 runs." in _messages(response)
    my_run.refresh_from_db()
    their_run.refresh_from_db()
    done_run.refresh_from_db()
    assert my_run.status == RunStatus.QUEUED and my_run.error_code == ""
    assert my_run.shards.get().status == RunStatus.QUEUED
    # Not this owner's task: untouched. A done run is not retried.
    assert their_run.status == RunStatus.FAILED
    assert done_run.status == RunStatus.DONE
