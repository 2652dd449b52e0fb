"""Public pages of the tasks app."""

import re

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
    # Every script and stylesheet is served by the site (a random CSRF token may spell "cdn").
    assert not re.search(r'<(script|link)[^>]+(src|href)="(https?:)?//', page)


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


def test_the_proposal_page_shows_each_config_problem_with_its_line(client):
    client.force_login(UserFactory())
    broken = "input:\n  - name: text\n    type: strng\noutput:\n  - name: text\nbogus: 1\n"
    response = client.post(
        reverse("tasks:propose"),
        {"code": "bad", "name": "B", "description": "d", "config_yaml": broken},
    )
    assert response.status_code == 200
    page = response.content.decode()
    # Visible, not in a hidden "invalid-feedback" div: a summary above the editor, and
    # each problem under it with its line, column, path and code.
    assert "invalid-feedback" not in page
    assert 'config-errors" role="alert" id="id_config_yaml_error">' in page
    assert 'aria-describedby="id_config_yaml_error"' in page
    assert 'data-code="config.E025" data-line="3"' in page
    assert "Line 3, column 11" in page and '<code class="config-check-path">input[0].type' in page
    assert 'data-code="config.E011" data-line="6"' in page
    assert 'data-error-lines="1,3,6"' in page
    # The editor keeps the text, escaped.
    assert "    type: strng\noutput:" in page
    assert not TaskProposal.objects.filter(code="bad").exists()


def test_the_proposal_page_links_the_reference_and_offers_the_starters(client):
    client.force_login(UserFactory())
    page = client.get(reverse("tasks:propose")).content.decode()
    assert 'href="/docs/task-config/"' in page
    assert 'data-starter="nli"' in page
    # No live check for proposers: that endpoint is for those who may open the admin editor.
    assert "hx-post" not in page
