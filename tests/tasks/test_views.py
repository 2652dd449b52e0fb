"""Public pages of the tasks app."""

import pytest
from django.urls import reverse

from tasks.models import TaskProposal
from tests.factories import TaskFactory, UserFactory

pytestmark = pytest.mark.django_db


def test_home_lists_visible_tasks_only(client):
    TaskFactory(code="public", name="Public task")
    TaskFactory(code="secret", name="Secret task", hidden=True)
    page = client.get(reverse("tasks:home")).content.decode()
    assert "Public task" in page and "Secret task" not in page


def test_hidden_task_visible_to_its_owner(client):
    owner = UserFactory()
    TaskFactory(code="secret", name="Secret task", hidden=True, owners=[owner])
    assert client.get(reverse("tasks:detail", args=["secret"])).status_code == 404
    client.force_login(owner)
    assert client.get(reverse("tasks:detail", args=["secret"])).status_code == 200


def test_task_page_sanitises_markdown_instructions(client):
    TaskFactory(
        code="md", instructions="**bold** <script>alert(1)</script> [x](javascript:alert(1))"
    )
    page = client.get(reverse("tasks:detail", args=["md"])).content.decode()
    assert "<strong>bold</strong>" in page
    assert "<script>alert(1)" not in page
    assert "javascript:alert" not in page


def test_base_template_navigation(client):
    page = client.get(reverse("tasks:home")).content.decode()
    for label in ("Tasks", "Leaderboards", "Login"):
        assert label in page
    assert "/static/vendor/bootstrap/bootstrap.min.css" in page
    assert "/static/vendor/htmx/htmx.min.js" in page
    assert "cdn" not in page.lower()


def test_proposal_form(client):
    user = UserFactory()
    client.force_login(user)
    response = client.post(
        reverse("tasks:propose"), {"code": "newbie", "name": "New", "description": "d"}
    )
    assert response.status_code == 302
    assert TaskProposal.objects.get(code="newbie").proposer == user
    response = client.post(
        reverse("tasks:propose"),
        {"code": "bad", "name": "B", "description": "d", "config_yaml": "input: 1\n"},
    )
    assert response.status_code == 200 and "config.E" in response.content.decode()


def test_proposal_requires_login(client):
    assert client.get(reverse("tasks:propose")).status_code == 302


def test_task_page_links_every_capability_and_owner_tools_only_for_owners(client):
    owner = UserFactory()
    TaskFactory(code="linked", owners=[owner])
    page = client.get(reverse("tasks:detail", args=["linked"])).content.decode()
    for url in ("/tasks/linked/create", "/tasks/linked/validate", "/tasks/linked/leaderboard/"):
        assert url in page
    assert "Owner tools" not in page and "/tasks/linked/review" not in page
    client.force_login(owner)
    page = client.get(reverse("tasks:detail", args=["linked"])).content.decode()
    for url in ("/tasks/linked/review", "/tasks/linked/campaigns/", "/tasks/linked/datasets/"):
        assert url in page
