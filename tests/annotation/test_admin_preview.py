"""The task builder's form preview: under the task in the admin, framed, the old URL moved."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tasks.models import Task
from tests.factories import TaskFactory, UserFactory

pytestmark = pytest.mark.django_db


def test_the_preview_lives_under_the_task(task):
    assert reverse("admin:tasks_task_form_preview", args=[task.pk]) == (
        f"/admin/tasks/task/{task.pk}/preview/"
    )
    assert reverse("admin:tasks_task_form_preview_frame", args=[task.pk]) == (
        f"/admin/tasks/task/{task.pk}/preview/frame/"
    )


def test_the_preview_page_frames_the_forms_and_keeps_the_site_styles_out(client, task, owner):
    client.force_login(owner)
    response = client.get(f"/admin/tasks/task/{task.pk}/preview/")
    assert response.status_code == 200
    page = response.content.decode()
    assert f'src="/admin/tasks/task/{task.pk}/preview/frame/"' in page
    assert 'id="nav-sidebar"' in page
    # The site's styles would restyle the admin (its sidebar first): only the frame has them.
    assert "bootstrap" not in page and "css/site.css" not in page
    frame = client.get(f"/admin/tasks/task/{task.pk}/preview/frame/")
    assert frame.status_code == 200
    assert frame["X-Frame-Options"] == "SAMEORIGIN"
    framed = frame.content.decode()
    assert "/static/vendor/bootstrap/bootstrap.min.css" in framed
    assert 'id="preview-create"' in framed and 'id="preview-validate"' in framed


def test_other_admin_pages_still_refuse_to_be_framed(client, task, owner):
    client.force_login(owner)
    response = client.get(f"/admin/tasks/task/{task.pk}/preview/")
    assert response["X-Frame-Options"] == "DENY"


def test_the_old_preview_url_redirects_to_the_new_one(client, task, owner):
    client.force_login(owner)
    response = client.get(f"/admin/annotation/example/{task.pk}/preview/")
    assert response.status_code == 301
    assert response["Location"] == f"/admin/tasks/task/{task.pk}/preview/"
    assert reverse("admin:annotation_form_preview", args=[task.pk]) == (
        f"/admin/annotation/example/{task.pk}/preview/"
    )


def test_the_task_page_links_the_preview(client, task, owner):
    client.force_login(owner)
    page = client.get(reverse("admin:tasks_task_change", args=[task.pk])).content.decode()
    assert f'<li><a href="/admin/tasks/task/{task.pk}/preview/">Preview forms</a></li>' in page


def test_only_the_tasks_owners_see_its_preview(client, task):
    urls = [f"/admin/tasks/task/{task.pk}/preview/", f"/admin/tasks/task/{task.pk}/preview/frame/"]
    other = UserFactory(username="other-owner", is_staff=True)
    TaskFactory(code="others", owners=[other])
    client.force_login(other)
    assert [client.get(url).status_code for url in urls] == [403, 403]
    client.force_login(UserFactory(username="a-worker"))
    assert all("/admin/login/" in client.get(url)["Location"] for url in urls)
    client.force_login(other)
    assert client.get("/admin/tasks/task/999999/preview/").status_code == 404


def test_a_task_without_a_config_says_so(client, admin_user_obj):
    bare = Task.objects.create(code="bare", name="Bare")
    client.force_login(admin_user_obj)
    page = client.get(f"/admin/tasks/task/{bare.pk}/preview/").content.decode()
    assert "This task has no config yet" in page and "<iframe" not in page
    assert client.get(f"/admin/tasks/task/{bare.pk}/preview/frame/").status_code == 404
