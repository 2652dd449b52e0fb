"""The admin task builder: YAML editing with inline errors, uploads, rounds, proposals."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from tasks import services
from tasks.models import Context, ProposalStatus, Round, Task, TaskProposal
from tests.factories import TaskFactory, UserFactory, demo_config
from tests.tasks.config.samples import supported_params

pytestmark = pytest.mark.django_db


def task_form_data(**overrides):
    data = {
        "code": "built",
        "name": "Built in the admin",
        "description": "",
        "instructions": "",
        "config_yaml": demo_config("nli"),
        "active": "on",
        "accepts_models": "on",
        "num_matching_validations": "3",
        "context_sampling": "least_used",
        "context_sampling_tag": "",
        "rounds-TOTAL_FORMS": "0",
        "rounds-INITIAL_FORMS": "0",
        "config_versions-TOTAL_FORMS": "0",
        "config_versions-INITIAL_FORMS": "0",
    }
    data.update(overrides)
    return data


def test_admin_creates_task_with_config_and_round(client, admin_user_obj):
    client.force_login(admin_user_obj)
    response = client.post(reverse("admin:tasks_task_add"), task_form_data())
    assert response.status_code == 302, response.content.decode()[:2000]
    task = Task.objects.get(code="built")
    assert task.current_config.version == 1
    assert task.rounds.count() == 1


def test_invalid_yaml_shows_every_error_with_its_line_and_saves_nothing(client, admin_user_obj):
    client.force_login(admin_user_obj)
    broken = (
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
    response = client.post(reverse("admin:tasks_task_add"), task_form_data(config_yaml=broken))
    assert response.status_code == 200
    page = response.content.decode()
    assert "Line 3" in page and "Line 9" in page
    assert page.count('data-code="config.E') >= 3
    assert 'data-error-lines="3,5,8,9"' in page
    assert not Task.objects.filter(code="built").exists()


def test_yaml_syntax_error_reports_line_and_column(client, admin_user_obj):
    client.force_login(admin_user_obj)
    response = client.post(
        reverse("admin:tasks_task_add"), task_form_data(config_yaml="input:\n  - [unclosed\n")
    )
    page = response.content.decode()
    assert "column" in page
    assert not Task.objects.exists()


def test_editing_config_of_task_with_data_creates_a_version(client, admin_user_obj):
    task = TaskFactory(code="edit", config_name="nli")
    Context.objects.create(
        task=task,
        round=task.rounds.get(),
        config_version=task.current_config,
        data={"context": "x"},
    )
    client.force_login(admin_user_obj)
    new_yaml = demo_config("nli").replace("Write a hypothesis", "Now write a hypothesis")
    response = client.post(
        reverse("admin:tasks_task_change", args=[task.pk]),
        task_form_data(code="edit", config_yaml=new_yaml, **{"rounds-TOTAL_FORMS": "0"}),
    )
    assert response.status_code == 302, response.content.decode()[:3000]
    task.refresh_from_db()
    assert task.current_config.version == 2
    assert task.config_versions.count() == 2


def test_owner_sees_only_own_tasks(client):
    owner = UserFactory(username="own", is_staff=True)
    mine = TaskFactory(code="mine", owners=[owner])
    other = TaskFactory(code="other")
    client.force_login(owner)
    listing = client.get(reverse("admin:tasks_task_changelist")).content.decode()
    assert "mine" in listing and ">other<" not in listing
    assert client.get(reverse("admin:tasks_task_change", args=[mine.pk])).status_code == 200
    assert client.get(reverse("admin:tasks_task_change", args=[other.pk])).status_code in (
        302,
        403,
        404,
    )
    upload = reverse("admin:tasks_task_upload_contexts", args=[other.pk])
    assert client.get(upload).status_code == 403


def test_staff_without_tasks_cannot_use_the_builder(client):
    stranger = UserFactory(username="staffer", is_staff=True)
    TaskFactory(code="t1")
    client.force_login(stranger)
    assert client.get(reverse("admin:tasks_task_changelist")).status_code == 403


def test_upload_contexts_in_admin_success_and_line_errors(client, owner):
    task = TaskFactory(code="up", owners=[owner])
    client.force_login(owner)
    url = reverse("admin:tasks_task_upload_contexts", args=[task.pk])
    good = SimpleUploadedFile("c.jsonl", b'{"context": {"context": "hello"}}\n')
    response = client.post(url, {"file": good, "tag": "t"})
    assert response.status_code == 302
    assert task.contexts.count() == 1
    bad = SimpleUploadedFile("c.jsonl", b'{"context": {"context": "ok"}}\n{"context": {}}\n')
    response = client.post(url, {"file": bad})
    page = response.content.decode()
    assert response.status_code == 200
    assert "upload-errors" in page and '<td class="upload-error-line">2</td>' in page
    assert task.contexts.count() == 1


def test_open_round_in_admin(client, owner):
    task = TaskFactory(code="rounds", owners=[owner])
    client.force_login(owner)
    url = reverse("admin:tasks_task_open_round", args=[task.pk])
    assert client.get(url).status_code == 200
    response = client.post(url, {"description": "round two", "close_previous": "on"})
    assert response.status_code == 302
    assert list(Round.objects.filter(task=task).values_list("number", "is_open")) == [
        (1, False),
        (2, True),
    ]


def test_admin_accepts_and_rejects_proposals(client, admin_user_obj):
    proposer = UserFactory()
    first = services.proposal_submit(proposer=proposer, code="pa", name="A", description="d")
    second = services.proposal_submit(proposer=proposer, code="pb", name="B", description="d")
    client.force_login(admin_user_obj)
    accept = reverse("admin:tasks_taskproposal_decide", args=[first.pk, "accept"])
    assert client.post(accept, {"reason": "great"}).status_code == 302
    reject = reverse("admin:tasks_taskproposal_decide", args=[second.pk, "reject"])
    response = client.post(reject, {"reason": ""})
    assert response.status_code == 200  # a reason is required: the form shows the message
    assert client.post(reject, {"reason": "duplicate"}).status_code == 302
    statuses = dict(TaskProposal.objects.values_list("code", "status"))
    assert statuses == {"pa": ProposalStatus.ACCEPTED, "pb": ProposalStatus.REJECTED}
    assert Task.objects.get(code="pa").owners.filter(pk=proposer.pk).exists()


def test_owner_cannot_decide_proposals(client, owner):
    TaskFactory(code="own", owners=[owner])
    proposal = services.proposal_submit(proposer=owner, code="pc", name="C", description="d")
    client.force_login(owner)
    url = reverse("admin:tasks_taskproposal_decide", args=[proposal.pk, "accept"])
    assert client.post(url, {"reason": "me"}).status_code == 403


@pytest.mark.parametrize("sample", supported_params())
def test_configs_save_through_the_admin(client, admin_user_obj, sample):
    client.force_login(admin_user_obj)
    yaml_text = sample.text()
    code = sample.name.replace("_", "-")
    response = client.post(
        reverse("admin:tasks_task_add"), task_form_data(code=code, config_yaml=yaml_text)
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    assert Task.objects.get(code=code).current_config.yaml_text == yaml_text


def test_config_from_a_browser_textarea_is_stored_with_plain_newlines(client, admin_user_obj):
    client.force_login(admin_user_obj)
    crlf = demo_config("nli").replace("\n", "\r\n")
    response = client.post(reverse("admin:tasks_task_add"), task_form_data(config_yaml=crlf))
    assert response.status_code == 302
    assert "\r" not in Task.objects.get(code="built").current_config.yaml_text


def test_the_proposal_admin_shows_the_yaml_with_line_numbers_and_indentation(
    client, admin_user_obj
):
    yaml_text = demo_config("nli") + "# <script>alert('x')</script>\n"
    proposal = services.proposal_submit(
        proposer=UserFactory(), code="pd", name="D", description="d", config_yaml=yaml_text
    )
    client.force_login(admin_user_obj)
    for url in (
        reverse("admin:tasks_taskproposal_change", args=[proposal.pk]),
        reverse("admin:tasks_taskproposal_decide", args=[proposal.pk, "accept"]),
    ):
        page = client.get(url).content.decode()
        lines = yaml_text.rstrip("\n").split("\n")
        assert page.count('class="config-listing-number"') == len(lines)
        assert f'id="config-line-{len(lines)}">{len(lines)}</span>' in page
        assert "  - name: hypothesis\n    type: string\n" in page  # indentation kept
        assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page
        assert "<script>alert(" not in page
        assert "The config parses without problems." in page


def test_the_proposal_admin_marks_the_lines_of_a_config_that_no_longer_parses(
    client, admin_user_obj
):
    proposal = TaskProposal.objects.create(
        proposer=UserFactory(), code="pe", name="E", description="d", config_yaml="input: 1\n"
    )
    client.force_login(admin_user_obj)
    page = client.get(reverse("admin:tasks_taskproposal_change", args=[proposal.pk])).content
    page = page.decode()
    assert '<span class="config-listing-number has-problem" id="config-line-1">1</span>' in page
    assert 'data-code="config.E010" data-line="1"' in page
    assert '<a class="config-check-line" href="#config-line-1">' in page


def test_the_upload_page_shows_both_json_forms_and_aligned_error_rows(client, owner):
    task = TaskFactory(code="forms", owners=[owner])
    client.force_login(owner)
    url = reverse("admin:tasks_task_upload_contexts", args=[task.pk])
    page = client.get(url).content.decode()
    assert "{&quot;context&quot;: &quot;…&quot;, &quot;tag&quot;: &quot;news&quot;}" in page
    assert "{&quot;context&quot;: {&quot;context&quot;: &quot;…&quot;}" in page
    bad = SimpleUploadedFile("c.jsonl", b'{"context": "flat and fine"}\n{"context": 1}\n')
    page = client.post(url, {"file": bad}).content.decode()
    start = page.index('<table id="upload-errors">')
    table = page[start : page.index("</table>", start)]
    header_cells = table.count("<th ")
    rows = table.split("<tbody>")[1].split("</tr>")[:-1]
    assert rows and all(row.count("<td") == header_cells for row in rows)
    assert "errornote" not in table  # a block-level class on rows breaks the columns
    assert task.contexts.count() == 0
