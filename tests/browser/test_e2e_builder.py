"""End to end: the admin builds a task from YAML in the admin editor, sees its errors with
line numbers, fixes them, saves, and sees the task."""

from __future__ import annotations

import pytest

from tasks.models import Task
from tests.browser.e2e_helpers import signed_in_page
from tests.factories import UserFactory, demo_config

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

GOOD_YAML = demo_config("sentiment")
# Two mistakes: an unknown metric (line 55) and a reference to a missing output (line 56).
BAD_YAML = GOOD_YAML.replace("type: macro_f1", "type: macro_f2").replace(
    "reference_name: label\ndelta", "reference_name: labels\ndelta"
)


def test_admin_builds_a_task_from_yaml_sees_errors_and_fixes_them(
    live_server, browser, login, shot
):
    admin = UserFactory(username="builder-admin", is_staff=True, is_superuser=True)
    context, page = signed_in_page(browser, login, admin)
    try:
        page.goto(f"{live_server.url}/admin/tasks/task/add/")
        page.wait_for_selector("textarea#id_config_yaml")
        shot(page, "add-task-form")

        page.fill("#id_code", "built-sentiment")
        page.fill("#id_name", "Built sentiment")
        page.fill("#id_description", "A task built in the admin's YAML editor.")
        page.locator("#id_config_yaml").fill(BAD_YAML)  # typed into the textarea
        shot(page, "yaml-with-mistakes")
        page.click("input[name=_save]")

        page.locator(".errorlist").first.wait_for()
        assert "2 problems" in page.locator(".errorlist").first.inner_text()
        # Each problem is listed under the editor with its line and code.
        joined = page.locator(".config-check-issues").inner_text()
        assert "Line 55" in joined and "macro_f2" in joined and "config.E050" in joined
        assert "Line 56" in joined and "'labels' is not an output field" in joined
        # The editor keeps the text and marks the bad lines.
        assert page.locator("#id_config_yaml").input_value() == BAD_YAML
        wrap = page.locator(".config-editor-wrap")
        assert wrap.get_attribute("data-error-lines") == "55,56"
        assert not Task.objects.filter(code="built-sentiment").exists()
        shot(page, "errors-with-line-numbers")

        page.locator("#id_config_yaml").fill(GOOD_YAML)
        shot(page, "yaml-fixed")
        page.click("input[name=_save]")
        page.wait_for_selector(".messagelist .success")
        assert "Built sentiment" in page.locator(".messagelist").inner_text()
        shot(page, "task-saved")

        task = Task.objects.get(code="built-sentiment")
        # Browsers submit textarea lines with CRLF; the config is the same text.
        assert task.current_config.yaml_text.replace("\r\n", "\n") == GOOD_YAML
        assert task.rounds.filter(number=1).exists()
        page.goto(f"{live_server.url}/tasks/built-sentiment/")
        page.wait_for_selector("h1")
        assert "Built sentiment" in page.locator("h1").first.inner_text()
        assert "Traceback" not in page.content()
        shot(page, "task-page")
        assert not page.js_errors, page.js_errors
    finally:
        context.close()
