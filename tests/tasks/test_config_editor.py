"""The admin's config editor: the live check endpoint, the widget, who may use them."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse

from tasks.starter_configs import STARTERS
from tests.factories import TaskFactory, UserFactory, demo_config

pytestmark = pytest.mark.django_db

CHECK_URL = "/admin/tasks/task/config/check/"
BROKEN = (
    "input:\n"
    "  - name: statement\n"
    "    type: strng\n"
    "output:\n"
    "  - name: missing\n"
    "perf_metric:\n"
    "  type: accuracy\n"
    "  reference_name: statement\n"
    "surprise: 1\n"
)


def check(client, text: str | bytes, **headers):
    body = text.encode() if isinstance(text, str) else text
    return client.post(
        CHECK_URL, data=body, content_type="application/yaml; charset=utf-8", **headers
    )


def issues(response) -> list[tuple[str, str]]:
    """Return ``(code, line)`` for each problem listed in a check's fragment."""
    return re.findall(
        r'class="config-check-issue" data-code="([^"]+)" data-line="([^"]*)"',
        response.content.decode(),
    )


@pytest.fixture
def owner_client(client, owner, task):
    client.force_login(owner)
    return client


def test_the_url_of_the_check_is_under_the_task_admin():
    assert reverse("admin:tasks_task_config_check") == CHECK_URL


def test_a_broken_config_gets_every_problem_with_its_code_and_line(owner_client):
    response = check(owner_client, BROKEN)
    assert response.status_code == 200
    assert issues(response) == [
        ("config.E025", "3"),
        ("config.E032", "5"),
        ("config.E052", "8"),
        ("config.E011", "9"),
    ]
    page = response.content.decode()
    assert 'data-error-lines="3,5,8,9"' in page
    assert "Line 3, column 11" in page and "unknown field type &#x27;strng&#x27;" in page
    # Each code links to its row in the error catalogue served by the site.
    assert 'href="/docs/task-config-errors/#config-e025"' in page


def test_windows_line_endings_keep_the_line_numbers(owner_client):
    response = check(owner_client, BROKEN.replace("\n", "\r\n"))
    assert [line for _, line in issues(response)] == ["3", "5", "8", "9"]


def test_a_valid_config_gets_no_problems_and_an_outline(owner_client):
    response = check(owner_client, demo_config("nli"))
    assert response.status_code == 200
    page = response.content.decode()
    assert issues(response) == [] and 'data-error-lines=""' in page
    assert "No problems." in page
    assert "<dt>Sent to the model</dt><dd><code>uid</code>, <code>hypothesis</code>" in page


@pytest.mark.parametrize(
    ("text", "code"),
    [
        # An alias bomb ("billion laughs").
        (
            "a: &a [x, x, x, x, x, x, x, x, x]\n"
            + "".join(
                f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, "
                f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
                f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
                for i in range(8)
            ),
            "config.E003",
        ),
        ("goal_message: !!python/object/apply:os.system ['ls']\n", "config.E007"),
        ("input: " + "[" * 200 + "]" * 200 + "\n", "config.E003"),
        ("input:\n\t- name: x\n", "config.E001"),
        ("input: [unclosed\n", "config.E001"),
        ("\x00\x01 binary", "config.E001"),
        ("# nothing but a comment\n", "config.E004"),
        ("", "config.E004"),
        ("x" * 200_001, "config.E002"),
    ],
    ids=[
        "alias-bomb",
        "python-tag",
        "deep-nesting",
        "tab",
        "unclosed",
        "control-characters",
        "comment-only",
        "empty",
        "over-200k",
    ],
)
def test_hostile_yaml_gets_a_clear_message_never_a_500(owner_client, text, code):
    response = check(owner_client, text)
    assert response.status_code == 200
    codes = [found for found, _ in issues(response)]
    assert code in codes
    assert "config-check-message" in response.content.decode()


def test_a_body_that_is_not_utf8_is_refused_politely(owner_client):
    response = check(owner_client, b"input: \xff\xfe\n")
    assert response.status_code == 400
    assert "The config must be UTF-8 text." in response.content.decode()


def test_a_huge_body_is_refused_politely_before_it_is_read(owner_client):
    response = check(owner_client, "a" * 1_000_001)
    assert response.status_code == 413
    page = response.content.decode()
    assert 'class="config-check-refused"' in page
    assert "1,000,001 bytes: too large to check as you type" in page
    assert "a config may have 200,000 characters at most" in page


def test_the_check_is_post_only(owner_client):
    assert owner_client.get(CHECK_URL).status_code == 405


def test_the_check_needs_the_csrf_token(owner, task):
    client = Client(enforce_csrf_checks=True)
    client.force_login(owner)
    assert check(client, BROKEN).status_code == 403
    client.get(reverse("admin:tasks_task_add"))
    token = client.cookies["csrftoken"].value
    assert check(client, BROKEN, HTTP_X_CSRFTOKEN=token).status_code == 200


def test_only_those_who_may_open_an_editor_reach_the_check(client, task):
    assert check(client, BROKEN).status_code == 302  # anonymous: the admin's login
    worker = UserFactory(username="plain-worker")
    client.force_login(worker)
    response = check(client, BROKEN)
    assert response.status_code == 302 and "/admin/login/" in response["Location"]
    client.force_login(UserFactory(username="staff-no-task", is_staff=True))
    assert check(client, BROKEN).status_code == 403
    adder = UserFactory(username="staff-adder", is_staff=True)
    adder.user_permissions.add(Permission.objects.get(codename="add_task"))
    client.force_login(adder)
    assert check(client, BROKEN).status_code == 200
    other_owner = UserFactory(username="other-owner", is_staff=True)
    TaskFactory(code="other", owners=[other_owner])
    client.force_login(other_owner)
    assert check(client, BROKEN).status_code == 200
    client.force_login(UserFactory(username="root2", is_staff=True, is_superuser=True))
    assert check(client, BROKEN).status_code == 200


def test_the_check_reads_the_database_only_to_know_the_user(
    owner_client, django_assert_max_num_queries
):
    with django_assert_max_num_queries(3):  # the session, the user, their tasks
        assert check(owner_client, BROKEN).status_code == 200


# --- the widget ------------------------------------------------------------------------------
def test_the_editor_links_the_reference_and_offers_every_starter(client, admin_user_obj):
    client.force_login(admin_user_obj)
    page = client.get(reverse("admin:tasks_task_add")).content.decode()
    assert 'href="/docs/task-config/"' in page
    for starter in STARTERS:
        assert f'data-starter="{starter.slug}"' in page
    # The starters' texts travel with the page (one click, no round trip).
    assert 'id="id_config_yaml-starters" type="application/json"' in page
    assert f'hx-post="{CHECK_URL}"' in page and 'hx-ext="yaml-body"' in page
    assert 'hx-trigger="input changed delay:500ms"' in page
    # htmx is served by the site, never by a CDN.
    assert '<script src="/static/vendor/htmx/htmx.min.js">' in page
    assert "/static/tasks/config_editor.js" in page


def test_a_failed_save_lists_the_problems_under_the_editor(client, admin_user_obj):
    client.force_login(admin_user_obj)
    data = {
        "code": "built",
        "name": "Built",
        "config_yaml": BROKEN,
        "num_matching_validations": "3",
        "context_sampling": "least_used",
        "rounds-TOTAL_FORMS": "0",
        "rounds-INITIAL_FORMS": "0",
        "config_versions-TOTAL_FORMS": "0",
        "config_versions-INITIAL_FORMS": "0",
    }
    response = client.post(reverse("admin:tasks_task_add"), data)
    page = response.content.decode()
    assert "The config has 4 problems: each is listed under the editor with its line." in page
    assert issues(response) == [
        ("config.E025", "3"),
        ("config.E032", "5"),
        ("config.E052", "8"),
        ("config.E011", "9"),
    ]
    assert '<div class="config-editor-wrap" data-error-lines="3,5,8,9">' in page
