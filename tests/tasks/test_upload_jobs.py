"""Big context uploads: imported by a job (all or nothing) with a progress page and an API
status; the size and row caps refuse a file with a clear error."""

from __future__ import annotations

import json

import django_rq
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from rq import SimpleWorker

from core.errors import InvalidUpload, UploadTooLarge
from tasks import services
from tasks.models import Context, UploadJob, UploadStatus
from tasks.selectors import upload_progress
from tests.api.conftest import assert_error, client_for

pytestmark = pytest.mark.django_db(transaction=True)


def _contexts(count: int, bad_line: int | None = None) -> SimpleUploadedFile:
    lines = [
        json.dumps({"context": {"context": f"Passage number {index}."}}) for index in range(count)
    ]
    if bad_line is not None:
        lines[bad_line - 1] = json.dumps({"context": {"wrong_field": "x"}})
    return SimpleUploadedFile("contexts.jsonl", ("\n".join(lines) + "\n").encode())


def _run_default_queue() -> None:
    queue = django_rq.get_queue("default")
    SimpleWorker([queue], connection=queue.connection).work(burst=True)


def test_a_small_file_is_imported_in_its_request(task, settings):
    settings.UPLOAD_INLINE_MAX_BYTES = 10_000
    assert services.contexts_upload(task, _contexts(3)) == 3
    assert not UploadJob.objects.exists()


def test_a_big_file_is_imported_by_a_job_with_its_progress(task, owner, settings, redis_connection):
    settings.UPLOAD_INLINE_MAX_BYTES = 100
    upload = services.contexts_upload(task, _contexts(50), user=owner, tag="big")
    assert isinstance(upload, UploadJob) and upload.status == UploadStatus.QUEUED
    assert Context.objects.count() == 0
    progress = upload_progress(upload)
    assert (progress.done, progress.total, progress.state) == (0, upload.size, "queued")
    _run_default_queue()
    upload.refresh_from_db()
    assert (upload.status, upload.rows, upload.stored_name) == (UploadStatus.DONE, 50, "")
    assert upload.result_url == reverse("admin:tasks_task_change", args=[task.pk])
    assert set(Context.objects.values_list("tag", flat=True)) == {"big"}
    progress = upload_progress(upload)
    assert (progress.done, progress.percent, progress.finished) == (upload.size, 100.0, True)
    # The page and its polled partial: for the task's owners.
    client = django_client(owner)
    page = client.get(reverse("tasks:upload", args=[upload.pk])).content.decode()
    assert "Imported 50 rows" in page and 'data-state="done"' in page
    partial = client.get(reverse("tasks:upload_progress", args=[upload.pk]))
    assert partial.status_code == 200 and "hx-get" not in partial.content.decode()


def test_a_bad_big_file_imports_nothing_and_its_page_names_every_bad_line(
    task, owner, settings, redis_connection
):
    settings.UPLOAD_INLINE_MAX_BYTES = 100
    upload = services.contexts_upload(task, _contexts(40, bad_line=17), user=owner)
    _run_default_queue()
    upload.refresh_from_db()
    assert (upload.status, upload.error_code) == (UploadStatus.FAILED, "upload.invalid")
    assert {error["line"] for error in upload.errors} == {17}
    assert Context.objects.count() == 0
    page = django_client(owner).get(reverse("tasks:upload", args=[upload.pk])).content
    assert b"Nothing was imported" in page and b"<td>17</td>" in page


def test_a_big_file_with_invalid_json_keeps_its_line_and_column(
    task, owner, settings, redis_connection
):
    settings.UPLOAD_INLINE_MAX_BYTES = 100
    upload = _contexts(40)
    lines = upload.read().decode().splitlines()
    lines[16] = '{"context": {"context": "ok" "x": 1}}'
    upload = SimpleUploadedFile("contexts.jsonl", ("\n".join(lines) + "\n").encode())
    api = client_for(owner)
    body = api.post(f"/api/v1/tasks/{task.code}/contexts/", {"file": upload}, format="multipart")
    assert body.status_code == 202, body.content
    _run_default_queue()
    status = api.get(body.json()["url"]).json()
    assert status["status"] == "failed"
    assert [(e["line"], e["column"], e["code"]) for e in status["errors"]] == [
        (17, 30, "upload.E003")
    ]


def test_the_caps_refuse_a_file_with_a_clear_error(task, owner, settings):
    settings.UPLOAD_MAX_BYTES = 100
    with pytest.raises(UploadTooLarge) as caught:
        services.contexts_upload(task, _contexts(10))
    assert caught.value.status == 413 and caught.value.details["max_bytes"] == 100
    settings.UPLOAD_MAX_BYTES = 0
    settings.UPLOAD_MAX_ROWS = 5
    with pytest.raises(InvalidUpload) as caught:
        services.contexts_upload(task, _contexts(6))
    assert [(e["line"], e["code"]) for e in caught.value.details["errors"]] == [(6, "upload.E030")]
    assert Context.objects.count() == 0


def test_the_api_answers_202_and_the_upload_status(task, owner, settings, redis_connection):
    settings.UPLOAD_INLINE_MAX_BYTES = 100
    api = client_for(owner)
    url = f"/api/v1/tasks/{task.code}/contexts/"
    response = api.post(url, {"file": _contexts(20)}, format="multipart")
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["status"] == "queued" and body["url"] == f"/api/v1/uploads/{body['id']}/"
    _run_default_queue()
    status = api.get(body["url"]).json()
    assert (status["status"], status["rows"]) == ("done", 20)
    assert status["progress"]["percent"] == 100.0
    settings.UPLOAD_MAX_BYTES = 10
    assert_error(api.post(url, {"file": _contexts(2)}, format="multipart"), 413, "upload.too_large")
    assert_error(client_for(None).get(body["url"]), 404)


def django_client(user):
    from django.test import Client

    client = Client()
    client.force_login(user)
    return client
