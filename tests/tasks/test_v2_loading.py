"""v2 configs load with ``manage.py load_task`` and in the admin's config editor, and their
warnings are shown in both places."""

from __future__ import annotations

import re
from io import StringIO

import pytest
from django.core.management import call_command
from django.urls import reverse

from tasks.models import Task
from tests.factories import UserFactory
from tests.shared_files import mlcommons_config_path
from tests.tasks.config.samples import FIXTURE_DIR, MLCOMMONS_TASKS, mlcommons, param

pytestmark = pytest.mark.django_db

CHECK_URL = "/admin/tasks/task/config/check/"
SLIP = FIXTURE_DIR / "v2_picture_label.yaml"


def check(client, text: str):
    return client.post(CHECK_URL, data=text.encode(), content_type="application/yaml")


def warnings(response) -> list[tuple[str, str]]:
    return re.findall(
        r'class="config-check-warning" data-code="([^"]+)" data-line="([^"]*)"',
        response.content.decode(),
    )


def test_load_task_lists_the_warnings_of_a_config_it_loads():
    err = StringIO()
    call_command("load_task", str(SLIP), code="pictures", name="Pictures", stderr=err)
    assert Task.objects.get(code="pictures").config.source_format == "v2"
    (line,) = err.getvalue().splitlines()
    assert line.startswith(f"{SLIP}:line 21: metadata.validate[0].labels: ")
    assert line.endswith("[config.W001]")


@pytest.mark.parametrize("sample", [param(mlcommons(name)) for name in MLCOMMONS_TASKS])
def test_load_task_loads_dynabench_v2_configs(sample):
    out = StringIO()
    call_command("load_task", str(sample.path()), code=f"v2-{sample.name}", name="V2", stdout=out)
    assert Task.objects.get(code=f"v2-{sample.name}").config.source_format == "v2"


def test_the_editor_check_shows_the_warnings_of_a_valid_config(client):
    client.force_login(UserFactory(username="builder", is_staff=True, is_superuser=True))
    response = check(client, SLIP.read_text(encoding="utf-8"))
    page = response.content.decode()
    assert "No problems, 1 warning." in page
    assert warnings(response) == [("config.W001", "21")]
    assert "/docs/task-config-errors/#config-w001" in page


@pytest.mark.parametrize("task", MLCOMMONS_TASKS)
def test_the_admin_saves_a_dynabench_v2_config(client, task):
    text = mlcommons_config_path(task).read_text(encoding="utf-8")
    client.force_login(UserFactory(username="admin2", is_staff=True, is_superuser=True))
    assert "No problems" in check(client, text).content.decode()
    data = {
        "code": f"saved-{task}",
        "name": "Saved",
        "config_yaml": text,
        "num_matching_validations": "3",
        "context_sampling": "least_used",
        "rounds-TOTAL_FORMS": "0",
        "rounds-INITIAL_FORMS": "0",
        "config_versions-TOTAL_FORMS": "0",
        "config_versions-INITIAL_FORMS": "0",
    }
    response = client.post(reverse("admin:tasks_task_add"), data)
    assert response.status_code == 302, response.content.decode()[:2000]
    assert Task.objects.get(code=f"saved-{task}").config.source_format == "v2"


def test_a_v2_chat_config_loads_with_load_task_and_in_the_editor(client):
    chat = FIXTURE_DIR / "v2_chat_compare.yaml"
    call_command("load_task", str(chat), code="v2-chat", name="V2 chat", stdout=StringIO())
    config = Task.objects.get(code="v2-chat").config
    assert config.source_format == "v2" and config.chat.models_per_turn == 2
    client.force_login(UserFactory(username="chatbuilder", is_staff=True, is_superuser=True))
    assert "No problems" in check(client, chat.read_text(encoding="utf-8")).content.decode()
